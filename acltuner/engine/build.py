"""Builds the native engine with CMake outside the Python package build: the
AArch64 cross build for boards (and for the qemu-run tests)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO_NATIVE = Path(__file__).resolve().parents[2] / "native"
AARCH64_TOOLCHAIN = REPO_NATIVE / "cmake" / "aarch64-linux-gnu.cmake"
AARCH64_TOOLS = ("aarch64-linux-gnu-gcc", "cmake")


class BuildError(RuntimeError):
    """A failed build; the message ends with the tail of the build log."""


def missing_tools(tools=AARCH64_TOOLS) -> list[str]:
    return [t for t in tools if shutil.which(t) is None]


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise BuildError(f"'{' '.join(cmd[:3])} ...' failed (exit {rc}), log {log}:\n{tail}")


def cross_build(build_dir: Path, toolchain: Path = AARCH64_TOOLCHAIN,
                cpu_flags: str = "", target: str = "acl-launcher") -> Path:
    """Configures (once) and builds `target` for the toolchain's board into build_dir;
    CMake makes a rebuild with nothing changed a no-op.  Returns the built file."""
    missing = missing_tools()
    if missing:
        raise BuildError(f"cannot cross-compile: {', '.join(missing)} not found "
                         f"(on Debian: apt-get install gcc-aarch64-linux-gnu)")
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "build.log"
    log.write_text("")
    if not (build_dir / "CMakeCache.txt").exists():
        _run(["cmake", "-S", str(REPO_NATIVE), "-B", str(build_dir),
              f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", f"-DACL_CPU_FLAGS={cpu_flags}",
              "-DCMAKE_BUILD_TYPE=Release"], log)
    _run(["cmake", "--build", str(build_dir), "--target", target, "--parallel"], log)
    return build_dir / target

"""Builds the native engine with CMake outside the Python package build: the
AArch64 cross build for boards (and for the qemu-run tests)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO_NATIVE = Path(__file__).resolve().parents[2] / "native"
AARCH64_TOOLCHAIN = REPO_NATIVE / "cmake" / "aarch64-linux-gnu.cmake"


class BuildError(RuntimeError):
    """A failed build; the message ends with the tail of the build log."""


def missing_tools(tools=("cmake", "aarch64-linux-gnu-gcc")) -> list[str]:
    return [t for t in tools if shutil.which(t) is None]


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise BuildError(f"'{' '.join(cmd[:3])} ...' failed (exit {rc}), log {log}:\n{tail}")


def cmake_build(build_dir: Path, targets: list[str], toolchain: Path | None = None,
                cpu_flags: str = "") -> list[Path]:
    """Configures build_dir once (for the toolchain's target, or the host) and builds
    `targets`; CMake makes a rebuild with nothing changed a no-op.  Returns the files."""
    missing = missing_tools(("cmake", "aarch64-linux-gnu-gcc") if toolchain else ("cmake",))
    if missing:
        raise BuildError(f"cannot build the engine: {', '.join(missing)} not found "
                         f"(on Debian: apt-get install cmake gcc-aarch64-linux-gnu)")
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "build.log"
    log.write_text("")
    if not (build_dir / "CMakeCache.txt").exists():
        configure = ["cmake", "-S", str(REPO_NATIVE), "-B", str(build_dir),
                     "-DCMAKE_BUILD_TYPE=Release"]
        if toolchain:
            configure += [f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", f"-DACL_CPU_FLAGS={cpu_flags}"]
        _run(configure, log)
    _run(["cmake", "--build", str(build_dir), "--parallel", "--target", *targets], log)
    return [build_dir / t for t in targets]


def cross_build(build_dir: Path, toolchain: Path = AARCH64_TOOLCHAIN, cpu_flags: str = "",
                target: str = "acl-launcher") -> Path:
    """Builds one target of the engine for an AArch64 board."""
    return cmake_build(build_dir, [target], toolchain, cpu_flags)[0]

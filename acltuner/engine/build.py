"""Builds the native engine with CMake outside the Python package build: the
launcher and library for a board (cross-compiled for AArch64 boards), and the
C test programs."""
from __future__ import annotations

import importlib.resources
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

REPO_NATIVE = Path(__file__).resolve().parents[2] / "native"
# Relative to the engine's sources, wherever they are (see native_sources).
AARCH64_TOOLCHAIN = Path("cmake") / "aarch64-linux-gnu.cmake"
BOARD_TARGETS = ["aclengine", "acl-launcher"]
# A step of the build as CMake's Makefiles print it ("[ 42%] Building C object
# ...") or Ninja does ("[17/41] Building C object ...").
_STEP = re.compile(r"\[\s*(?:(\d+)%|(\d+)/(\d+))\]\s*(.*)")


class BuildError(OSError):
    """A failed build; the message ends with the tail of the build log."""


def native_sources() -> Path:
    """The engine's C sources: the source tree of a checkout or an editable
    install, else the copy a wheel installs inside the package."""
    if (REPO_NATIVE / "CMakeLists.txt").is_file():
        return REPO_NATIVE
    packaged = Path(str(importlib.resources.files("acltuner") / "native"))
    if (packaged / "CMakeLists.txt").is_file():
        return packaged
    raise BuildError(f"cannot build the engine: its sources are in neither {REPO_NATIVE} nor "
                     f"{packaged}; reinstall acltuner from its source tree")


def host_isa() -> str:
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                      platform.machine().lower())


def missing_tools(tools=("cmake", "aarch64-linux-gnu-gcc")) -> list[str]:
    return [t for t in tools if shutil.which(t) is None]


def build_jobs() -> int:
    """How many compilers a build runs at once: one per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on macOS
        return os.cpu_count() or 1


def _run(cmd: list[str], log: Path, progress: Callable[[float, str], None] | None = None) -> None:
    """Runs cmd, its output into the log; each build step it prints goes to
    progress(fraction done, the step) too."""
    with log.open("a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace")
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            f.write(line)
            step = _STEP.match(line)
            if step and progress:
                percent, done, total, what = step.groups()
                progress(int(percent) / 100 if percent else int(done) / int(total), what)
        rc = proc.wait()
    if rc != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise BuildError(f"'{' '.join(cmd[:3])} ...' failed (exit {rc}), log {log}:\n{tail}")


def _cached_flags(build_dir: Path) -> str | None:
    """ACL_CPU_FLAGS of a configured build folder, None when not configured."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return None
    for line in cache.read_text().splitlines():
        if line.startswith("ACL_CPU_FLAGS:"):
            return line.split("=", 1)[1]
    return ""


def cmake_build(build_dir: Path, targets: list[str], toolchain: Path | None = None,
                cpu_flags: str = "", defines: dict[str, str] | None = None,
                progress: Callable[[float, str], None] | None = None) -> list[Path]:
    """Configures build_dir once (for the toolchain's target, or the host; with
    the CMake `defines`, e.g. {"ACL_SANITIZE": "thread"}, when given) and builds
    `targets`, build_jobs() compilers at once, each step reported to progress
    (as _run does); CMake makes a rebuild with nothing changed a no-op.
    Returns the files."""
    missing = missing_tools(("cmake", "aarch64-linux-gnu-gcc") if toolchain else ("cmake",))
    if missing:
        raise BuildError(f"cannot build the engine: {', '.join(missing)} not found "
                         f"(on Debian: apt-get install cmake gcc-aarch64-linux-gnu)")
    sources = native_sources()
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "build.log"
    log.write_text("")
    flags = _cached_flags(build_dir)
    if flags is not None and toolchain and flags != cpu_flags:
        # The flags only reach the compiler at the first configure: start afresh.
        (build_dir / "CMakeCache.txt").unlink()
        shutil.rmtree(build_dir / "CMakeFiles", ignore_errors=True)
        flags = None
    # Configured again when defines are given: a folder configured with others
    # (by hand, or by scripts/lint.sh) would otherwise keep them silently.
    if flags is None or defines:
        configure = ["cmake", "-S", str(sources), "-B", str(build_dir),
                     "-DCMAKE_BUILD_TYPE=Release"]
        if toolchain:
            configure += [f"-DCMAKE_TOOLCHAIN_FILE={sources / toolchain}",
                          f"-DACL_CPU_FLAGS={cpu_flags}"]
        configure += [f"-D{name}={value}" for name, value in (defines or {}).items()]
        _run(configure, log)
    _run(["cmake", "--build", str(build_dir), "--parallel", str(build_jobs()), "--target",
          *targets], log, progress)
    return [build_dir / t for t in targets]


def board_build_dir(board_name: str) -> Path:
    """build/board-NAME in a source checkout, else under the user's cache."""
    if native_sources() == REPO_NATIVE:
        base = REPO_NATIVE.parent / "build"
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        base = cache / "acltuner" / "build"
    return base / f"board-{board_name}"


def build_for_board(board, build_dir: str | Path | None = None,
                    progress: Callable[[float, str], None] | None = None) -> Path:
    """Builds the engine library and acl-launcher for `board` (an AArch64 board
    cross-compiled with its compiler flags; an x86_64 board on this machine)
    and returns the launcher, which carries the engine linked in.  progress:
    as in cmake_build."""
    build_dir = Path(build_dir) if build_dir else board_build_dir(board.name)
    if board.isa == "aarch64" and host_isa() != "aarch64":
        files = cmake_build(build_dir, BOARD_TARGETS, AARCH64_TOOLCHAIN,
                            " ".join(board.compiler_flags), progress=progress)
    elif board.isa == host_isa():
        files = cmake_build(build_dir, BOARD_TARGETS, progress=progress)
    else:
        raise BuildError(f"cannot build for board {board.name} ({board.isa}) on this "
                         f"{host_isa()} machine")
    return files[BOARD_TARGETS.index("acl-launcher")]


def board_engine_fingerprint(board) -> tuple[str | None, str]:
    """The fingerprint of the engine that measures `board`, and where it comes
    from: this machine's own build for a board of its ISA run without a
    wrapper, else the board's build folder (None until `acltuner build`)."""
    if board.isa == host_isa() and not board.launcher_wrapper:
        from acltuner.engine import native
        return native.fingerprint(), "this machine's engine"
    build_dir = board_build_dir(board.name)
    text = build_dir / "fingerprint" / "fingerprint.txt"
    if not text.is_file():
        return None, f"not built yet: acltuner build --board {board.name}"
    return text.read_text().strip(), str(build_dir)

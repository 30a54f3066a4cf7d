"""`acltuner build`: CMake's parallel build is capped at the cores this
process may use (an unbounded `make -j` starts every compiler at once), and
its progress is shown.  CMake itself is a stand-in here that records how it
was called and prints what CMake's Makefiles print."""
from __future__ import annotations

import os
import stat

from tests.support.cli_checks import invoke

FAKE_CMAKE = """#!/bin/sh
echo "$@" >> "{calls}"
case "$1" in
  --build) for p in 25 50 100; do echo "[ $p%] Building C object src/f$p.c.o"; done ;;
esac
"""


def test_build_uses_at_most_every_core_and_shows_progress(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cmake = bin_dir / "cmake"
    cmake.write_text(FAKE_CMAKE.format(calls=tmp_path / "calls"))
    cmake.chmod(cmake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = invoke("build", "--board", "split-host", "--build-dir", tmp_path / "b")
    assert result.exit_code == 0, result.output
    build_call = next(line.split() for line in (tmp_path / "calls").read_text().splitlines()
                      if line.startswith("--build"))
    jobs = build_call[build_call.index("--parallel") + 1]
    assert int(jobs) == len(os.sched_getaffinity(0))
    assert "100%" in result.stderr and "Building C object" in result.stderr
    assert result.stdout.splitlines()[-1] == str(tmp_path / "b" / "acl-launcher")
    quiet = invoke("build", "--board", "split-host", "--build-dir", tmp_path / "b", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""

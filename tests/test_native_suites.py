"""The engine's own C test programs (test_gemm: every micro-kernel through the
macro-kernel; test_conv: every algorithm x micro-kernel against the reference;
test_graph: every whole-model operation against naive loops), built and run
natively and, for the NEON family, under qemu."""
from __future__ import annotations

import re
import subprocess

import pytest

from acltuner.engine.build import AARCH64_TOOLCHAIN, cmake_build
from engine_backends import QEMU, REPO, aarch64_launcher

SUITES = [("test_gemm", []), ("test_conv", ["--cases", "150"]), ("test_graph", [])]
CLOSING = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)


def _run_suite(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    closing = CLOSING.findall(result.stdout)
    assert result.returncode == 0 and closing, (result.stdout[-3000:], result.stderr[-2000:])
    passed, failed = map(int, closing[-1])
    assert failed == 0 and passed > 100, closing[-1]


@pytest.mark.parametrize("suite,args", SUITES, ids=[s for s, _ in SUITES])
def test_host_suite(suite, args):
    (exe,) = cmake_build(REPO / "build" / "host-tests", [suite])
    _run_suite([str(exe), *args])


@pytest.mark.aarch64
@pytest.mark.parametrize("suite,args", SUITES, ids=[s for s, _ in SUITES])
def test_aarch64_suite_under_qemu(suite, args):
    if aarch64_launcher() is None:
        pytest.skip("no AArch64 cross compiler or qemu-aarch64")
    (exe,) = cmake_build(REPO / "build" / "aarch64", [suite], AARCH64_TOOLCHAIN)
    _run_suite(QEMU + [str(exe), *args])

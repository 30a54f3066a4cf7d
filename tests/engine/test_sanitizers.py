"""The engine's C suites built with sanitisers (native/CMakeLists.txt's
ACL_SANITIZE): ASan+UBSan over every suite, TSan over the thread pool's users.
Every report is fatal in these builds (-fno-sanitize-recover, halt_on_error),
so a suite that prints one exits non-zero; the stderr check is a second net.
Fewer random cases than the plain build: the point is memory and thread
safety along every code path, not more numerics."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acltuner.engine.build import cmake_build
from tests.support.c_suites import run_suite
from tests.support.engine_backends import REPO

# allocator_may_return_null: an allocation too large for ASan's allocator
# fails as malloc does (NULL, which the engine reports as an error) instead of
# aborting; the launcher refusing a 2^55-float arena is the behaviour under test.
ASAN_OPTIONS = "abort_on_error=0:exitcode=23:allocator_may_return_null=1"
SANITIZER_ENV = {
    "ASAN_OPTIONS": f"detect_leaks=1:{ASAN_OPTIONS}",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    "TSAN_OPTIONS": "halt_on_error=1:exitcode=66",
}
REPORT_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                "WARNING: ThreadSanitizer")

BUILDS = {"asan": "address,undefined", "tsan": "thread"}
SUITES = {
    "asan": [("test_gemm", []), ("test_graph", ["--cases", "100"]),
             ("test_conv", ["--cases", "24"]), ("test_gemm_int8", [])],
    # The pool itself, its claims and take-overs in the adaptive balance; then
    # its users: every split of every operation runs on its workers (one
    # micro-kernel per packing style: the kernels themselves run no threads).
    "tsan": [("test_pool", ["--cases", "100"]), ("test_gemm", []),
             ("test_graph", ["--cases", "40"]),
             ("test_conv", ["--kernel-per-style", "--cases", "12"])],
}
CASES = [(build, suite, args) for build, suites in SUITES.items() for suite, args in suites]


def sanitized_build(build: str, targets: list[str]):
    return cmake_build(REPO / "build" / f"sanitize-{build}", targets,
                       defines={"ACL_SANITIZE": BUILDS[build]})


def sanitizer_env() -> dict:
    return {**os.environ, **SANITIZER_ENV}


def assert_no_reports(stderr: str) -> None:
    found = [m for m in REPORT_MARKS if m in stderr]
    assert not found, stderr[-4000:]


@pytest.mark.parametrize("build,suite,args", CASES, ids=[f"{b}-{s}" for b, s, _ in CASES])
def test_suite_under_sanitizer(build, suite, args):
    (exe,) = sanitized_build(build, [suite])
    result = run_suite([str(exe), *args], env=sanitizer_env())
    assert_no_reports(result.stderr)


def test_launcher_protocol_fuzz_under_asan_and_ubsan():
    """The launcher's hand-written JSON and base64 readers and every command
    behind them, fed mutated lines: an ASan or UBSan report kills the
    launcher, which the fuzz counts as a crash."""
    (launcher,) = sanitized_build("asan", ["acl-launcher"])
    # No leak check: the fuzz ends by killing the launcher, which never exits normally.
    env = {**sanitizer_env(), "ASAN_OPTIONS": f"detect_leaks=0:{ASAN_OPTIONS}"}
    done = subprocess.run([sys.executable, "-m", "acltuner.cli", "bench", "fuzz", "--doors",
                           "launcher", "--cases", "10000", "--seed", "1", "--launcher",
                           str(launcher)], capture_output=True, text=True, env=env, timeout=900)
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1] == (
        "fuzz: cases=10000 tracebacks=0 crashes=0 hangs=0 partial_writes=0"), (
        lines[-10:], done.stderr[-3000:])
    assert done.returncode == 0

"""Runs one of the engine's C test programs (native/tests) and checks its
closing "N passed, N failed" line; shared by the plain and the sanitiser builds."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from acltuner.engine.build import cmake_build
from tests.support.engine_backends import REPO

CLOSING = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)
# The host build the tests share with scripts/lint.sh (which configures it the
# same way and builds every target, so in CI the tests find it built): warnings
# as errors, and the launcher's fault injection compiled in (it acts only when
# ACL_LAUNCHER_FAULTS is set).
CHECKS_BUILD = REPO / "build" / "checks"
CHECKS_DEFINES = {"ACL_WERROR": "ON", "ACL_FAULT_INJECTION": "ON"}


def checks_build(targets: list[str]) -> list[Path]:
    return cmake_build(CHECKS_BUILD, targets, defines=CHECKS_DEFINES)


def run_suite(cmd: list[str], env: dict | None = None,
              timeout: int = 900) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    closing = CLOSING.findall(result.stdout)
    assert result.returncode == 0 and closing, (result.stdout[-3000:], result.stderr[-4000:])
    passed, failed = map(int, closing[-1])
    assert failed == 0 and passed > 100, closing[-1]
    return result

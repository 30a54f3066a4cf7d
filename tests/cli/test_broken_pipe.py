"""A reader that leaves early (`acltuner plan show P | head -1`) ends the
command quietly: no `[Errno 32] Broken pipe`, no traceback."""
from __future__ import annotations

import subprocess
import sys


def test_a_closed_stdout_ends_the_command_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "acltuner.cli", "board", "list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # long before the command, still importing, writes anything
    err = proc.stderr.read().decode()
    proc.wait()
    assert err == ""

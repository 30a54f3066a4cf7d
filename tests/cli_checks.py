"""Assertions shared by the command-line tests."""
from __future__ import annotations


def assert_one_line_error(result, *needles):
    """A failed command printed exactly one line, no traceback, containing every needle."""
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]

"""-q/--quiet and -v/--verbose: on every command of the tree, before or after
the command's name, and not both at once."""
from __future__ import annotations

import click
import pytest

from acltuner.cli import main
from tests.support.cli_checks import assert_one_line_error, invoke


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield path + (name,)
        if isinstance(command, click.Group):
            yield from _commands(command, path + (name,))


COMMANDS = list(_commands(main))


def test_the_tree_is_walked():
    assert ("tune",) in COMMANDS and ("records", "stats") in COMMANDS
    assert ("board", "list") in COMMANDS and len(COMMANDS) > 20


@pytest.mark.parametrize("flag", ["-q", "--quiet", "-v", "--verbose"])
def test_every_command_takes_the_flags_after_its_name(flag):
    for path in COMMANDS:
        # --help stops before the command runs, after the flag was parsed.
        result = invoke(*path, flag, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert "-q, --quiet" in result.output and "-v, --verbose" in result.output, path


@pytest.mark.parametrize("flag", ["-q", "-v"])
def test_every_command_takes_the_flags_before_its_name(flag):
    for path in COMMANDS:
        result = invoke(flag, *path, "--help")
        assert result.exit_code == 0, (path, result.output)


def test_quiet_and_verbose_together_is_one_line():
    assert_one_line_error(invoke("-q", "records", "stats", "-v", "--help"),
                          "-q/--quiet and -v/--verbose")
    assert_one_line_error(invoke("tasks", "-q", "--verbose", "x.onnx"),
                          "-q/--quiet and -v/--verbose")

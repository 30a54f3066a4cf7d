"""The click group every acltuner command group is made of: one-line errors,
and -q/--quiet and -v/--verbose on the group and on every command in it."""
from __future__ import annotations

import click

from acltuner.app.errors import USER_ERRORS

# Where the verbosity lives: the context's meta, which a command's context
# shares with its group's, so `acltuner -q tune` and `acltuner tune -q` agree.
_VERBOSITY = "acltuner.verbosity"
QUIET, NORMAL, VERBOSE = -1, 0, 1


def _set_verbosity(ctx: click.Context, param: click.Parameter, given: bool) -> None:
    if not given:
        return
    level = QUIET if param.name == "quiet" else VERBOSE
    if ctx.meta.get(_VERBOSITY, level) != level:
        raise click.ClickException("-q/--quiet and -v/--verbose cannot be given together")
    ctx.meta[_VERBOSITY] = level


def _add_verbosity_options(command: click.Command) -> None:
    if any(p.name == "quiet" for p in command.params):
        return
    command.params += [
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, is_eager=True,
                     callback=_set_verbosity,
                     help="Only results and errors: no progress, no informational lines."),
        click.Option(["-v", "--verbose"], is_flag=True, expose_value=False, is_eager=True,
                     callback=_set_verbosity,
                     help="More detail: every batch of progress, per-task details.")]


def verbosity() -> int:
    """QUIET, NORMAL or VERBOSE, as the command line asked (NORMAL outside a
    command, e.g. in a thread of its own: read it in the command)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_VERBOSITY, NORMAL) if ctx else NORMAL


class Group(click.Group):
    """Turns the engine's and the input checks' errors into one line and exit
    code 1, and gives itself and every command added to it -q and -v."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _add_verbosity_options(self)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        _add_verbosity_options(cmd)
        super().add_command(cmd, name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise  # stdout's reader left (`... | head`): click's main exits quietly
        except USER_ERRORS as e:
            raise click.ClickException(str(e)) from None

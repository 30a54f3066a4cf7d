"""The click group every acltuner command group is made of."""
from __future__ import annotations

import click

from acltuner.engine import native
from acltuner.engine.launcher import LauncherError


# The errors a command reports as one line: bad input, a refusing engine or
# launcher, a file that cannot be read.  Anything else is a bug (a traceback).
USER_ERRORS = (native.EngineError, LauncherError, ValueError, OSError)


class Group(click.Group):
    """Turns the engine's and the input checks' errors into one line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as e:
            raise click.ClickException(str(e)) from None

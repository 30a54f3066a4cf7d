"""The click group every acltuner command group is made of."""
from __future__ import annotations

import click

from acltuner.engine import native
from acltuner.engine.launcher import LauncherError


class Group(click.Group):
    """Turns the engine's and the input checks' errors into one line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (native.EngineError, LauncherError, ValueError, OSError) as e:
            raise click.ClickException(str(e)) from None

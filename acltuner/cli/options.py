"""Options several commands share, each with its command's own help."""
from __future__ import annotations

import click


def host_option(help: str):
    """--host HOST: the board reached over the user's own ssh, where the
    command does what `help` says."""
    return click.option("--host", default=None, metavar="HOST", help=help)

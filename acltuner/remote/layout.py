"""Where a deployed launcher lives on a board: one folder per engine version,
relative to the remote user's home unless ACLTUNER_REMOTE_DIR says otherwise."""
from __future__ import annotations

import os
import posixpath

from acltuner.engine import native
from acltuner.engine.launcher import LAUNCHER_NAME

REMOTE_DIR_ENV = "ACLTUNER_REMOTE_DIR"
DEFAULT_REMOTE_DIR = ".cache/acltuner"  # ssh starts remote commands in the home folder


def engine_version() -> str:
    """The engine version this acltuner was built with, which a board's launcher must match."""
    return native.version()


def remote_launcher_path(version: str | None = None) -> str:
    base = os.environ.get(REMOTE_DIR_ENV) or DEFAULT_REMOTE_DIR
    return posixpath.join(base, version or engine_version(), LAUNCHER_NAME)

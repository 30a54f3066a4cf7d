"""What a command may fail with as a user's error, not a bug."""
from __future__ import annotations

from acltuner.engine import native
from acltuner.engine.launcher import LauncherError

# The errors a command reports as one line: bad input, a refusing engine or
# launcher, a file that cannot be read.  Anything else is a bug (a traceback).
USER_ERRORS = (native.EngineError, LauncherError, ValueError, OSError)

"""Writing a file so that it holds either its old content or the whole new one,
whenever the process or the machine stops."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    # The temporary file lives next to the target: os.replace is atomic only
    # within one file system.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes it private; these files are meant to be shared
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    # The rename is durable only once the directory entry is on disk too.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def check_writable(path: str | os.PathLike) -> None:
    """Raises ValueError, one line naming `path`, unless write_atomic can
    write there (a file is made in its folder and removed): checked before a
    long run that writes it at its end."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: cannot write: it is a folder")
    if not path.parent.is_dir():
        raise ValueError(f"{path}: cannot write: no folder {path.parent}")
    try:
        with tempfile.NamedTemporaryFile(prefix=f".{path.name}.", suffix=".tmp",
                                         dir=path.parent):
            pass
    except OSError as e:
        raise ValueError(f"{path}: cannot write: {e.strerror or e}") from None

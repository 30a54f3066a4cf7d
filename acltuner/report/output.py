"""The report folder: checked before anything is read or measured, and every
file in it written whole or not at all, each OS error one line naming the path."""
from __future__ import annotations

from pathlib import Path

from acltuner.atomic import check_writable, write_atomic
from acltuner.report.gather import ReportError

# A file the report writes in every folder, to check the folder with.
PROBE = "summary.json"


def check_folder(out: Path) -> None:
    """A folder the report can be written in: an existing folder whose files
    it may replace, or a new one in an existing folder it may write in."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"{out}: cannot write the report there: it is a file, not a folder")
    try:
        check_writable(out / PROBE if out.is_dir() else out)
    except ValueError as e:
        raise ReportError(str(e)) from None


def make_folder(out: Path) -> None:
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise ReportError(f"{out}: cannot make the folder: {e.strerror or e}") from None


def write(path: Path, data: bytes | str) -> None:
    """`path` holds its old content or all of `data`, never a part of it."""
    try:
        write_atomic(path, data)
    except OSError as e:
        raise ReportError(f"{path}: cannot write: {e.strerror or e}") from None


def remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as e:
        raise ReportError(f"{path}: cannot remove: {e.strerror or e}") from None

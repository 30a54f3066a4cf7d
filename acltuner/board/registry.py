"""Boards by name: the shipped configs/boards/NAME.yaml, and "host" (this
machine, detected each time rather than stored)."""
from __future__ import annotations

import difflib
import os

from acltuner.board.detect import detect
from acltuner.board.files import load_file
from acltuner.board.model import Board, BoardError
from acltuner.paths import configs_dir

HOST = "host"


def list_boards() -> list[str]:
    """The shipped boards' names, sorted, then "host"."""
    return sorted(p.stem for p in (configs_dir() / "boards").glob("*.yaml")) + [HOST]


def load_board(name_or_path: str | os.PathLike) -> Board:
    """"host", a shipped board's name, or the path of a board file (a path
    object, or a string with a slash or a .yaml/.yml suffix)."""
    text = os.fspath(name_or_path)
    if text == HOST:
        return detect("/")
    if not isinstance(name_or_path, str) or "/" in text or text.endswith((".yaml", ".yml")):
        return load_file(text)
    path = configs_dir() / "boards" / f"{text}.yaml"
    if path.is_file():
        return load_file(path)
    known = list_boards()
    close = difflib.get_close_matches(text, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    where = "" if len(known) > 1 else (f"; none found in {path.parent}: "
                                       f"set ACLTUNER_CONFIGS to acltuner's configs/ folder")
    raise BoardError(f"unknown board '{text}'{hint}; known boards: {', '.join(known)}{where}")

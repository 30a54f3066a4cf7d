"""Boards by name: the shipped configs/boards/NAME.yaml, and "host" (this
machine, detected each time rather than stored)."""
from __future__ import annotations

import dataclasses
import difflib
import os

from acltuner.board.detect import detect
from acltuner.board.files import load_file
from acltuner.board.model import Board, BoardError
from acltuner.paths import configs_dir

HOST = "host"
# `acltuner --allow-wrapper`: the board files this process loads may start
# their launcher through their launcher_wrapper (Board.wrapper).
_wrappers_allowed = False


def allow_wrappers(allowed: bool) -> None:
    global _wrappers_allowed
    _wrappers_allowed = allowed


def wrappers_allowed() -> bool:
    """Whether this process was given --allow-wrapper, for the acltuner
    processes it starts."""
    return _wrappers_allowed


def list_boards() -> list[str]:
    """The shipped boards' names, sorted, then "host"."""
    return sorted(p.stem for p in (configs_dir() / "boards").glob("*.yaml")) + [HOST]


def load_board(name_or_path: str | os.PathLike) -> Board:
    """"host", a shipped board's name, or the path of a board file (a path
    object, or a string with a slash or a .yaml/.yml suffix); a file's
    launcher_wrapper runs only after allow_wrappers(True)."""
    text = os.fspath(name_or_path)
    if text == HOST:
        return detect("/")
    shipped = configs_dir() / "boards" / f"{text}.yaml"
    if not isinstance(name_or_path, str) or "/" in text or text.endswith((".yaml", ".yml")):
        return _allowing(load_file(text))
    if shipped.is_file():
        return _allowing(load_file(shipped))
    known = list_boards()
    close = difflib.get_close_matches(text, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    where = "" if len(known) > 1 else (f"; none found in {shipped.parent}: "
                                       f"set ACLTUNER_CONFIGS to acltuner's configs/ folder")
    raise BoardError(f"unknown board '{text}'{hint}; known boards: {', '.join(known)}{where}")


def _allowing(board: Board) -> Board:
    return dataclasses.replace(board, wrapper_allowed=_wrappers_allowed)

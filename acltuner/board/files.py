"""Board YAML files: read with one-line errors, written atomically so that an
interrupted write never leaves half a board behind."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from acltuner.atomic import write_atomic
from acltuner.board.model import Board, BoardError
from acltuner.validate import parse_yaml


def load_file(path: str | os.PathLike) -> Board:
    text = Path(path).read_text()
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise BoardError(f"{path}: not valid YAML: {problem}{where}") from None
    return Board.from_dict(data, source=str(path))


def dump_yaml(board: Board) -> str:
    # Flow style for lists of scalars only: `cpus: [0, 1]`, clusters one field per line.
    return yaml.safe_dump(board.to_dict(), sort_keys=False, default_flow_style=None)


def save_file(board: Board, path: str | os.PathLike) -> None:
    """Writes the board as YAML: a temporary file next to PATH, then one rename."""
    write_atomic(path, dump_yaml(board))

"""A farm's members: the boards one `tune` measures on at once, each a board
description and where its launcher runs (a host over ssh, or this machine,
optionally on a subset of its cores).

farm.yaml (schema_version 1):

    schema_version: 1
    board: odroid-n2plus         # the farm's board (a name or a file), members' default
    members:
      - name: odroid-1           # unique; the worker's name and the progress bar's label
        host: odroid-1           # over ssh; leave out for a launcher on this machine
      - name: local-0
        cpus: [0]                # this machine's cores the launcher gets (ACL_CPUS)
        board: split-one.yaml    # a member's own board file (it must be of the farm's class)
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from acltuner.board.model import Board
from acltuner.board.registry import load_board
from acltuner.one_line import OneLineError
from acltuner.validate import FieldError, Wording, at, parse_yaml

SCHEMA_VERSION = 1
# The environment variable that tells a worker process which member it serves.
MEMBER_ENV = "ACLTUNER_FARM_MEMBER"
# The highest cpu id the engine pins to (CPU_SETSIZE - 1).
MAX_CPU = 1023

_WORDING = Wording(line="{path}: {why}", top="",
                   missing=("{parent}", "missing field '{key}'"),
                   unknown=("{parent}", "unknown field '{key}'{hint}"))
_FARM_FIELDS = ("schema_version", "board", "members")
_MEMBER_FIELDS = ("name", "host", "cpus", "board")


class FarmError(OneLineError):
    """A farm that cannot tune: a bad farm file, or members that disagree."""


@dataclass(frozen=True)
class Member:
    name: str
    board: Board
    host: str | None = None          # None: this machine
    cpus: tuple[int, ...] = ()       # this machine's (or the host's) cores; () all

    @property
    def where(self) -> str:
        place = self.host or "this machine"
        return place + (f" cpus {','.join(map(str, self.cpus))}" if self.cpus else "")

    def launcher_board(self) -> Board:
        """The board with the member's cores pinned: its launcher runs under
        `env ACL_CPUS=..`, so that the engine's cpu i is the machine's i-th of them."""
        if not self.cpus:
            return self.board
        pin = ["env", f"ACL_CPUS={','.join(map(str, self.cpus))}"]
        return dataclasses.replace(self.board, launcher_wrapper=pin + self.board.wrapper(),
                                   wrapper_allowed=True)

    def to_env(self) -> str:
        return json.dumps({"name": self.name, "board": self.board.to_dict(),
                           "wrapper_allowed": self.board.wrapper_allowed,
                           "host": self.host, "cpus": list(self.cpus)})

    @classmethod
    def from_env(cls) -> Member:
        text = os.environ.get(MEMBER_ENV)
        if not text:
            raise FarmError(f"this worker serves no board: {MEMBER_ENV} is not set (start it "
                            f"with acltuner farm worker --board B --host H)")
        d = json.loads(text)
        board = Board.from_dict(d["board"], f"${MEMBER_ENV}")
        return cls(d["name"], dataclasses.replace(board, wrapper_allowed=d["wrapper_allowed"]),
                   d["host"], tuple(d["cpus"]))


def members_from_hosts(board: Board, hosts: list[str]) -> list[Member]:
    """`--hosts h1,h2`: one member per host, each named after it."""
    if len(set(hosts)) != len(hosts):
        raise FarmError(f"--hosts names a host twice: {','.join(hosts)}")
    return [Member(host, board, host) for host in hosts]


def load_farm(path: str | os.PathLike,
              default_board: str | None = None) -> tuple[str, list[Member]]:
    """The farm's board (a name or a path, the file's own board before
    `default_board`) and its members; a member without a board gets the farm's."""
    try:
        data = parse_yaml(Path(path).read_text())
    except OSError as e:
        raise FarmError(f"{path}: cannot read it: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise FarmError(f"{path}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    try:
        return _members(data, Path(path).parent, default_board)
    except FieldError as e:
        raise FarmError(f"{path}: {e}") from None


def _members(data, folder: Path, default_board: str | None) -> tuple[str, list[Member]]:
    d = _WORDING.mapping(data, "", _FARM_FIELDS, ("schema_version", "members"))
    version = _WORDING.check(d["schema_version"], "schema_version", int)
    if version != SCHEMA_VERSION:
        raise _WORDING.error("schema_version", f"unsupported version {version} (this "
                                               f"acltuner reads {SCHEMA_VERSION})")
    farm_board = _board_ref(_WORDING.check(d.get("board", default_board), "board", str,
                                           nonempty=True,
                                           what="a board name or file (here or as --board)"),
                            folder)
    raw = _WORDING.check(d["members"], "members", list, nonempty=True)
    boards: dict[str, Board] = {}
    members, names = [], set()
    for i, m in enumerate(raw):
        where = at("members", i)
        m = _WORDING.mapping(m, where, _MEMBER_FIELDS, ("name",))
        name = _WORDING.check(m["name"], at(where, "name"), str, nonempty=True)
        if name in names:
            raise _WORDING.error(at(where, "name"), f"'{name}' names another member too")
        names.add(name)
        host = _WORDING.check(m.get("host"), at(where, "host"), str, null=True, nonempty=True)
        if host and host.startswith("-"):
            raise _WORDING.error(at(where, "host"), f"'{host}' must not start with '-'")
        cpus = _WORDING.check(m.get("cpus", []), at(where, "cpus"), list)
        cpus = tuple(_WORDING.check(c, at(at(where, "cpus"), j), int, minimum=0,
                                    maximum=MAX_CPU) for j, c in enumerate(cpus))
        board = _board_ref(_WORDING.check(m.get("board", farm_board), at(where, "board"), str,
                                          nonempty=True), folder)
        if board not in boards:
            boards[board] = load_board(board)
        members.append(Member(name, boards[board], host, cpus))
    return farm_board, members


def _board_ref(name: str, folder: Path) -> str:
    """A board file named relative to the farm file's folder, else a board's name."""
    local = folder / name
    return str(local) if local.is_file() else name

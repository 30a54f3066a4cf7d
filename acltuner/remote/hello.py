"""Checks a board's launcher by its hello answer: the same protocol and engine
version as this acltuner, the board's ISA, and every core the board file uses."""
from __future__ import annotations

from acltuner.board.machine import check_cores
from acltuner.board.model import Board
from acltuner.engine.launcher import PROTOCOL_VERSION, LauncherError

# The micro-kernel family a launcher reports, by the ISA it belongs to.
ISA_OF_FAMILY = {"neon": "aarch64", "avx2": "x86_64", "avx512": "x86_64"}


def check_hello(board: Board, host: str, hello: dict, version: str) -> None:
    """Raises LauncherError or BoardError, one line each, when the launcher on
    `host` cannot measure `board` for this acltuner (engine `version`)."""
    if hello.get("protocol") != PROTOCOL_VERSION or hello.get("version") != version:
        raise LauncherError(f"{host} runs acl-launcher {hello.get('version')} (protocol "
                            f"{hello.get('protocol')}), this acltuner is {version} (protocol "
                            f"{PROTOCOL_VERSION}): run acltuner deploy --board {board.name} "
                            f"--host {host}")
    family = hello.get("isa")
    isa = ISA_OF_FAMILY.get(family, family) if family is not None else None
    if isa != board.isa:
        raise LauncherError(f"the acl-launcher on {host} runs {hello.get('isa')} kernels "
                            f"({isa}) but board {board.name} is {board.isa}")
    check_cores(board, int(hello["cpus"]), host)

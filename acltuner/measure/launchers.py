"""Opening the launcher that measures a board: this machine's build, the
board's own build through its wrapper (qemu), or the one deployed on a host
over ssh."""
from __future__ import annotations

from acltuner.board.machine import check_cores
from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.build import build_for_board, host_isa
from acltuner.engine.launcher import LauncherClient, default_launcher_path

# A measurement of a big layer on a slow board, with its reference run, can take
# tens of seconds; a launcher silent for this long is hung.
LAUNCHER_TIMEOUT_S = 300.0


def launcher_command(board: Board) -> list[str]:
    """How to start a launcher that measures on `board` from this machine."""
    wrapper = board.wrapper()
    if board.isa == host_isa():
        return [*wrapper, default_launcher_path()]
    if wrapper:  # e.g. qemu: the board's own build, run through the wrapper
        # A wrapper such as qemu-user sees this machine's cores as the engine
        # here does: a core the board lacks is named before minutes of building.
        check_cores(board, native.cpu_count(), "this machine")
        return [*wrapper, str(build_for_board(board))]
    raise ValueError(f"board {board.name} is {board.isa} and this machine is {host_isa()}: "
                     f"reach the board with --host, or give the board file a launcher_wrapper "
                     f"(e.g. qemu-aarch64) to measure it here")


def open_launcher(board: Board, host: str | None, realtime: bool = False) -> LauncherClient:
    """The launcher that measures `board`: on `host` over ssh (deployed there
    by `acltuner deploy`), else on this machine; checked against the board's
    cores.  realtime: at the lowest real-time priority, where allowed."""
    if host:
        from acltuner.remote.launcher import RemoteLauncherClient
        return RemoteLauncherClient(board, host, timeout_s=LAUNCHER_TIMEOUT_S, realtime=realtime)
    client = LauncherClient(launcher_command(board), timeout_s=LAUNCHER_TIMEOUT_S,
                            realtime=realtime)
    try:
        check_cores(board, client.hello_info["cpus"], "this machine")
    except Exception:
        client.close()
        raise
    return client

"""Whether the machine that measures a board has the board's cores: a launcher
pins one worker per core id, so every core a board file names must exist there."""
from __future__ import annotations

from acltuner.board.model import Board, BoardError


def check_cores(board: Board, cpus: int, machine: str) -> None:
    """Raises BoardError naming the first core of `board` beyond the `cpus`
    cores (ids 0..cpus-1) that `machine` reports."""
    for cluster in board.clusters:
        for cpu in sorted(cluster.cpus):
            if cpu >= cpus:
                # None: the launcher's ACL_CPUS names no core it may run on.
                have = f"only cpu0-cpu{cpus - 1}" if cpus > 1 else "only cpu0" if cpus else "none"
                raise BoardError(f"board {board.name} uses cpu{cpu} (cluster {cluster.name}, "
                                 f"{cluster.core_type}) but {machine} has {have}")

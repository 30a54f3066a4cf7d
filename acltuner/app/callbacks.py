"""What a whole tune reports beyond the tuner's own progress: the session
around it (the launcher, the records' lock, the doctor's findings, the
in-context check, the end) and a farm's members."""
from __future__ import annotations

from typing import TYPE_CHECKING

from acltuner.tuner.callbacks import TuneReporter

if TYPE_CHECKING:
    from pathlib import Path

    from acltuner.board.model import Board
    from acltuner.farm.dispatch import Farm, FarmStats
    from acltuner.plan import Plan
    from acltuner.tuner.in_context import ContextCheck
    from acltuner.tuner.tune import TaskReport
    from acltuner.tuner.tuner_config import TunerConfig


class SessionReporter(TuneReporter):
    """Every method does nothing here; a caller overrides those it shows."""

    def started(self, model: str, board: Board, host: str | None, strategy: str,
                config: TunerConfig, caches: str, records: Path) -> None:
        """The launcher is up (on `host`, None: this machine) and the first task
        is next; caches: the measurements' caches, e.g. "cold (8 MiB evicted)"."""

    def records_busy(self, lock: Path) -> None:
        """Another tune holds the records file's lock: this one waits for it."""

    def doctor(self, problems: list) -> None:
        """What `board doctor` found wrong with the measuring machine (Findings),
        checked before tuning starts; the tune goes on."""

    def untuned_in_model(self, what: str, reason: str) -> None:
        """What is tuned in the whole model, on one launcher (the int8 tasks:
        "3 int8 task(s)"; the graph's products) was not, and keeps its default
        configs."""

    def in_context(self, check: ContextCheck) -> None:
        """The tuned plan was run whole against the default one (check_in_context)."""

    def finished(self, plan: Plan, reports: list[TaskReport], reconnects: int) -> None:
        """The plan is written; reconnects: how often the connection to the board
        dropped and was made again."""

    def farm_progress(self, farm: Farm) -> None:
        """A farm member answered a batch (farm.stats: measurements per member
        so far); called from the farm's task threads."""

    def farm_done(self, stats: FarmStats, troubles: list[str]) -> None:
        """A farm tune ended: what each member measured, and one line for each
        member that failed, was lost or rebooted."""

"""How a tune reports its progress to whoever runs it, in a module of its
own so that a caller can implement it without loading the tuner."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acltuner.tuner.tune import TaskReport


class TuneReporter:
    """Every method does nothing here; a caller overrides those it shows."""

    def planned(self, units: list[tuple[int, int]]) -> None:
        """The tune's units (tasks, pinned parts) are next, each as (its budget
        of measurements, the measurements the records already hold for it)."""

    def measured(self, count: int) -> None:
        """`count` more configs were measured and recorded (from several
        threads where tasks are tuned side by side)."""

    def progress(self, text: str) -> None:
        """One line on the task being searched, after every batch of measurements."""

    def task_done(self, report: TaskReport) -> None:
        """A task is tuned (or, with the default strategy, given its default)."""

"""`tune --transfer auto|off`: the transfer model (transfer.py) kept beside a
records file and brought up to date with it before each task.

auto uses it when the records hold at least transfer.min_tasks tasks other
than the one being tuned (on any board, engine or protocol: the target is
relative to each task's median, so they all teach the ranking); off never
reads nor writes the model file, and the search starts as without it (random
initial batch, the task's own model alone).
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from acltuner.board.model import Board
from acltuner.board.registry import list_boards, load_board
from acltuner.taskgen.tasks import Task
from acltuner.tuner.records import Record, RecordStore
from acltuner.tuner.search import Prior
from acltuner.tuner.transfer import Sample, TransferModel, board_clusters
from acltuner.tuner.tuner_config import TransferSettings

TRANSFER_MODES = ("auto", "off")

log = logging.getLogger(__name__)


def transfer_path(records_path: str | Path) -> Path:
    """records.jsonl -> records.transfer.json, in the same folder."""
    path = Path(records_path)
    return path.with_name(path.stem + ".transfer.json")


def samples(records: list[Record]) -> list[Sample]:
    """The usable measurements, grouped by board, engine, protocol and task."""
    return [Sample(r.board, f"{r.board}|{r.engine}|{r.measure.label}|{r.task}", r.shape,
                   r.config, r.median_ms)
            for r in records if r.usable and r.median_ms]


def known_boards(board: Board) -> dict[str, list[dict]]:
    """fingerprint -> board_clusters() of the board being tuned and every
    board file shipped (records of an unknown board keep their placement
    columns but not their cores' clocks)."""
    boards = {}
    for name in list_boards():
        try:
            other = load_board(name)
        except ValueError:
            continue  # a broken board file is `board show`'s to report, not the tune's
        boards[other.fingerprint] = board_clusters(other)
    boards[board.fingerprint] = board_clusters(board)
    return boards


class WarmStart:
    def __init__(self, mode: str, settings: TransferSettings, board: Board, store: RecordStore):
        if mode not in TRANSFER_MODES:
            raise ValueError(f"transfer must be one of {', '.join(TRANSFER_MODES)}, got {mode!r}")
        self.mode, self.settings, self.board, self.store = mode, settings, board, store
        self.path = transfer_path(store.path)
        # The model and known_boards(), made together on the first prior.
        self._loaded: tuple[TransferModel, dict[str, list[dict]]] | None = None
        # A farm tunes tasks side by side in threads: a refresh (which may
        # refit with other feature columns) must not run inside a prediction.
        self._lock = threading.Lock()

    def _load(self) -> TransferModel:
        """The saved model, or a new one: the file is a cache of the records,
        so one that cannot be read (damaged, another version's features) is
        refitted from them and replaced, with a warning."""
        if self.path.exists():
            try:
                return TransferModel.load(self.path, self.settings.xgboost)
            except ValueError as e:
                log.warning("%s; refitting it from the records", e)
        return TransferModel(self.settings.xgboost)

    def prior(self, task: Task) -> Prior | None:
        """The transfer model's scores for this task's configs, or None (off,
        or too few other tasks in the records)."""
        if self.mode == "off":
            return None
        data = samples(self.store.records)
        others = {r.task for r in self.store.records if r.usable} - {task.key}
        if len(others) < self.settings.min_tasks:
            return None
        with self._lock:
            if self._loaded is None:
                boards = known_boards(self.board)
                self._loaded = self._load(), boards
            model, boards = self._loaded
            if model.refresh(data, boards):
                model.save(self.path)
        clusters, shape = board_clusters(self.board), task.shape

        def predict(configs):
            with self._lock:
                return model.predict(clusters, shape, configs)
        return predict

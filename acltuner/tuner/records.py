"""The tuning log: one JSON line per measurement, appended as tuning goes.

The log is also the tuning cache.  Several models share one records file, and a
task key already measured on a board with an engine (its version and build
fingerprint, native.engine_id(): records of an engine built from other sources
or flags are not reused) and measurement
options (the protocol: warm or cold caches, repeats) is not measured again
there: its configs, failed ones included, are looked up instead.  Records of
other boards, engine versions and protocols stay in the file, ignored by the
queries: a time taken with warm caches says little about one taken cold.

The file is only ever appended to, batch by batch, each batch flushed and
fsynced before append() returns, so a tuning run killed at any moment loses at
most the batch it was writing.  What such a kill leaves, a cut-off last line,
is skipped with a warning when the file is read and removed by the next append.
A line damaged elsewhere (not JSON: a disk error, an editor) is reported by its
number and skipped, and the other records are kept; a JSON line that is not a
record (another tool's schema, a hand edit) stops the load with its field named.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.one_line import OneLineError
from acltuner.validate import (JSON, FieldError, at, conv_shape, exec_config, now, parse_json,
                             timestamp, versioned)
from acltuner.engine.measure_options import MeasureOptions
from acltuner.measure.runner import STAGES, Result

if TYPE_CHECKING:
    from acltuner.engine.launcher import Measurement

SCHEMA_VERSION = 3
_FIELDS = ("schema_version", "board", "engine", "task", "shape", "config", "measure", "ok",
           "error", "median_ms", "min_ms", "times_ms", "ci_pct", "throttled", "stages",
           "correct", "max_rel_err", "strategy", "time")
# Version 1 had no "measure": all its records were taken with these options,
# warm caches, and are read as such.
V1_MEASURE = MeasureOptions(warmup=1, min_repeat_ms=30.0, min_repeats=3, max_repeats=50,
                            evict_bytes=0)
# Each option's kind, that of its default.
_MEASURE_KINDS = {f.name: type(f.default) for f in fields(MeasureOptions)}
# Version 3 added the noise control (its options, each record's spread and
# throttling); versions 1 and 2 are read as measured without it.
_V2_MEASURE_KINDS = {name: _MEASURE_KINDS[name] for name in ("warmup", "min_repeat_ms",
                                                            "min_repeats", "max_repeats",
                                                            "evict_bytes")}
_V3_FIELDS = ("ci_pct", "throttled")
# The last line is searched for backwards from the end in blocks of this size.
_TAIL_BLOCK = 4096

log = logging.getLogger(__name__)


def default_records_path() -> Path:
    """$ACLTUNER_RECORDS, else records.jsonl in the user's cache folder."""
    env = os.environ.get("ACLTUNER_RECORDS")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "acltuner" / "records.jsonl"


class RecordsError(OneLineError):
    """A record or records file that does not follow the schema (one line)."""


@dataclass(frozen=True)
class Record:
    """One measurement of one config of one task.  ok=False: the config could
    not be run (error says why); correct=False: it ran with a wrong output."""
    board: str
    engine: str
    task: str
    shape: ConvShape
    config: ExecConfig
    measure: MeasureOptions
    ok: bool
    error: str | None
    median_ms: float | None
    min_ms: float | None
    times_ms: tuple[float, ...]
    stages: dict[str, float]
    correct: bool | None
    max_rel_err: float | None
    strategy: str
    time: str
    ci_pct: float | None = None  # the median's 95% confidence half-width, % of it
    throttled: bool = False      # a clock dropped or the board got hot meanwhile

    @property
    def usable(self) -> bool:
        """Ran and gave the right output: a candidate for the best config."""
        return self.ok and self.correct is True

    def result(self) -> Result:
        """The measurement as the search reads it: a config that ran with a
        wrong output is as failed as one that did not run."""
        return Result(self.config, self.usable, self.median_ms if self.usable else None,
                      dict(self.stages), self.error)

    @classmethod
    def from_measurement(cls, board: str, engine: str, task_key: str, shape: ConvShape,
                         config: ExecConfig, measurement: Measurement, strategy: str, *,
                         measure: MeasureOptions) -> "Record":
        rel = measurement.max_rel_err
        return cls(board=board, engine=engine, task=task_key, shape=shape, config=config,
                   measure=measure, ok=measurement.ok, error=measurement.error,
                   median_ms=measurement.median_ms, min_ms=measurement.min_ms,
                   times_ms=tuple(measurement.times_ms),
                   stages=dict(measurement.stages), correct=measurement.correct,
                   # An output holding NaN or inf has no finite error, JSON has no
                   # number for it, and correct=False already says it is wrong.
                   max_rel_err=rel if rel is not None and math.isfinite(rel) else None,
                   strategy=strategy, time=now(), ci_pct=measurement.ci_pct,
                   throttled=measurement.throttled)

    def to_dict(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "board": self.board, "engine": self.engine,
                "task": self.task, "shape": self.shape.to_dict(),
                "config": self.config.to_dict(), "measure": self.measure.to_dict(),
                "ok": self.ok, "error": self.error,
                "median_ms": self.median_ms, "min_ms": self.min_ms,
                "times_ms": list(self.times_ms), "ci_pct": self.ci_pct,
                "throttled": self.throttled, "stages": dict(self.stages),
                "correct": self.correct, "max_rel_err": self.max_rel_err,
                "strategy": self.strategy, "time": self.time}

    @classmethod
    def from_dict(cls, d: Any, where: str = "record") -> "Record":
        """Checks d against the schema; `where` (file:line) starts every error."""
        try:
            return cls._parse(d)
        except FieldError as e:
            raise RecordsError(f"{where}: {e}") from None

    @classmethod
    def _parse(cls, d: Any) -> "Record":
        version = d.get("schema_version") if isinstance(d, dict) else None
        old_fields = [f for f in _FIELDS if f not in _V3_FIELDS]
        if version == 1:
            versioned(d, [f for f in old_fields if f != "measure"], 1)
            measure = V1_MEASURE
        elif version == 2:
            versioned(d, old_fields, 2)
            measure = _measure_options(JSON.get(d, "measure", "", dict), _V2_MEASURE_KINDS)
        else:
            versioned(d, _FIELDS, SCHEMA_VERSION)
            measure = _measure_options(JSON.get(d, "measure", "", dict), _MEASURE_KINDS)
        ok = JSON.get(d, "ok", "", bool)
        error = JSON.get(d, "error", "", str, null=True)
        if ok == (error is not None):
            raise FieldError("error must be null when ok is true and a message when ok is "
                                "false")
        stages = JSON.mapping(JSON.get(d, "stages", "", dict), "stages", STAGES)
        # A failed measurement has no timings; a successful one has them all.
        stage_names = STAGES if ok else tuple(stages)
        noise = {} if version in (1, 2) else {
            "ci_pct": JSON.get(d, "ci_pct", "", float, null=True, minimum=0),
            "throttled": JSON.get(d, "throttled", "", bool)}
        return cls(board=JSON.get(d, "board", "", str), engine=JSON.get(d, "engine", "", str),
                   task=JSON.get(d, "task", "", str),
                   shape=conv_shape(JSON.get(d, "shape", "", dict), "shape"),
                   config=exec_config(JSON.get(d, "config", "", dict), "config"),
                   measure=measure, ok=ok, error=error,
                   median_ms=JSON.get(d, "median_ms", "", float, null=not ok, minimum=0),
                   min_ms=JSON.get(d, "min_ms", "", float, null=not ok, minimum=0),
                   times_ms=tuple(JSON.check(t, at("times_ms", i), float, minimum=0)
                                  for i, t in enumerate(JSON.get(d, "times_ms", "", list))),
                   stages={s: JSON.get(stages, s, "stages", float, minimum=0)
                           for s in stage_names},
                   correct=JSON.get(d, "correct", "", bool, null=True),
                   max_rel_err=JSON.get(d, "max_rel_err", "", float, null=True, minimum=0),
                   strategy=JSON.get(d, "strategy", "", str), time=timestamp(d, "time", ""),
                   **noise)


def _measure_options(value: Any, kinds: dict[str, type]) -> MeasureOptions:
    d = JSON.mapping(value, "measure", kinds)
    return MeasureOptions(**{key: JSON.get(d, key, "measure", kind, minimum=0)
                             for key, kind in kinds.items()})


def _is_json(line: bytes) -> bool:
    try:
        parse_json(line)
    except ValueError:  # UnicodeDecodeError included
        return False
    return True


def _last_line(f: IO[bytes], size: int) -> tuple[int, bytes, bool]:
    """The file's last line: where it starts, its text, and whether its newline
    was written.  A file ending in a blank line has that blank line last."""
    block = _TAIL_BLOCK
    while True:
        start = max(0, size - block)
        f.seek(start)
        tail = f.read(size - start)
        terminated = tail.endswith(b"\n")
        body = tail[:-1] if terminated else tail
        cut = body.rfind(b"\n")
        if cut >= 0 or start == 0:
            return start + cut + 1, body[cut + 1:], terminated
        block *= 2


@contextlib.contextmanager
def tuning_lock(path: str | os.PathLike, on_wait) -> Iterator[None]:
    """Held by one tune of the records file `path` at a time: an exclusive
    flock of PATH.lock beside it (never removed, so that every tune locks the
    one file).  A second tune calls on_wait(lock path) once, then waits."""
    lock = Path(f"{path}.lock")
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(lock)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


class RecordStore:
    """A records file: loaded when opened, appended to batch by batch.

    `records` holds every record of the file in file order, whatever its board,
    engine and protocol; the queries see only the board, engine version and
    measurement options they are given.  Records appended by another process
    after this one opened the file are not seen until the file is opened again.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.records: list[Record] = []
        self.damaged: list[int] = []  # line numbers skipped as not JSON
        self._by_task: dict[tuple[str, str, MeasureOptions, str], list[Record]] = {}
        # flock orders the appends of processes; this, those of a farm's threads.
        self._appending = threading.Lock()
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH)  # not halfway through another process's append
            lines = f.read().split(b"\n")
        last = len(lines) if lines[-1] else len(lines) - 1
        skipped = []  # the warnings, given once the file is known to be records
        for number, raw in enumerate(lines[:last], 1):
            where = f"{self.path}:{number}"
            try:
                d = parse_json(raw)
            except ValueError as e:
                if number == last:
                    skipped.append(f"{where}: ignoring the cut-off last line (an interrupted "
                                   f"write); the next append removes it")
                    break
                skipped.append(f"{where}: skipping a damaged line (not valid JSON: {e}); the "
                               f"other records are kept")
                self.damaged.append(number)
                continue
            try:
                record = Record.from_dict(d, where)
            except RecordsError:
                if self.damaged and not self.records:  # e.g. a number in an indented JSON
                    raise self._not_records() from None
                raise
            self._index(record)
        # Records all, but for a cut-off last record (a tune killed in its
        # first append); else another file (a plan, a model) given for one.
        if not self.records and (self.damaged or (skipped and not lines[0].startswith(b"{"))):
            raise self._not_records()
        for warning in skipped:
            log.warning("%s", warning)

    def _not_records(self) -> RecordsError:
        return RecordsError(f"{self.path}: not a records file: no line of it is a record")

    def _index(self, record: Record) -> None:
        self.records.append(record)
        key = (record.board, record.engine, record.measure, record.task)
        self._by_task.setdefault(key, []).append(record)

    def append(self, records: Iterable[Record]) -> None:
        """Appends a batch and returns once it is on disk (flushed and fsynced)."""
        records = list(records)
        dicts = [r.to_dict() for r in records]
        for d in dicts:  # a line that would stop the file from loading is never written
            Record.from_dict(d, "record to append")
        data = "".join(json.dumps(d, separators=(",", ":"), allow_nan=False) + "\n"
                       for d in dicts).encode()
        if not data:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._appending, open(self.path, "a+b") as f:
            # One writer at a time, so no one takes another's half-written
            # batch for a cut-off line.
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(self._mend_tail(f) + data)
            f.flush()
            os.fsync(f.fileno())
            for record in records:
                self._index(record)

    def _mend_tail(self, f: IO[bytes]) -> bytes:
        """Removes a cut-off last line; returns what must precede new lines."""
        size = f.seek(0, os.SEEK_END)
        if not size:
            return b""
        start, line, terminated = _last_line(f, size)
        if not _is_json(line):
            log.warning("%s: removing the cut-off last line (an interrupted write)", self.path)
            f.truncate(start)
            return b""
        # A whole record whose newline was not written: end it first.
        return b"" if terminated else b"\n"

    def measured(self, board: str, engine: str, task_key: str, *,
                 measure: MeasureOptions) -> dict[str, Record]:
        """Every config measured for the task with these options, failed ones
        included, keyed by str(config); a config measured more than once maps
        to its latest record."""
        return {str(r.config): r
                for r in self._by_task.get((board, engine, measure, task_key), [])}

    def best(self, board: str, engine: str, task_key: str, *,
             measure: MeasureOptions) -> Record | None:
        """The fastest (median) record that ran with a correct output, but for
        a time taken again (throttled, or too spread) that has a later record."""
        records = self._by_task.get((board, engine, measure, task_key), [])
        # A usable record ran, so it has a median (the schema requires it).
        usable = [(r.median_ms, r) for r in trusted(records, measure)
                  if r.usable and r.median_ms is not None]
        return min(usable, key=lambda t: t[0])[1] if usable else None

    def tasks_done(self, board: str, engine: str, *, measure: MeasureOptions) -> set[str]:
        """The task keys with a best record on this board and engine version,
        measured with these options: a model holding one of them can take its
        config without measuring.  Whether a task's budget was spent is the
        search's call (measured())."""
        return {task for (b, e, m, task) in self._by_task
                if (b, e, m) == (board, engine, measure)
                and self.best(b, e, task, measure=measure)}


def trusted(records: list[Record], measure: MeasureOptions) -> list[Record]:
    """The records of one task (in file order) but those that measure says
    to take again and that were: a config's later record replaces them."""
    last = {str(r.config): i for i, r in enumerate(records)}
    return [r for i, r in enumerate(records)
            if not (measure.needs_again(r) and last[str(r.config)] > i)]

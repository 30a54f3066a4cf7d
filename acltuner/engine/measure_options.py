"""The launcher's measure options: how every config is timed, one type from
the tuner's settings to the measure request on the wire.  Its fields and
defaults are the engine's ACL_MEASURE_OPTIONS (aclengine.h), which the
launcher decodes requests by; tests/engine/test_measure_options.py holds them equal."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol


class Timed(Protocol):
    """What needs_again reads: a launcher Measurement's fields, or a record's."""

    @property
    def ok(self) -> bool: ...

    @property
    def throttled(self) -> bool: ...

    @property
    def ci_pct(self) -> float | None: ...


@dataclass(frozen=True)
class MeasureOptions:
    """How every config is timed (the launcher's measure options).  They are
    the measurement protocol: records keep them, and a record measured under
    other options is not reused (tuner/records.py).  evict_bytes > 0 times
    with cold caches, 0 with warm ones (PROTOCOL.md).  ci_target_pct > 0
    repeats until the median is known within that many percent, or
    max_repeat_ms of runs (0: no cap); cooldown_ms idles before each config."""
    warmup: int = 1
    min_repeat_ms: float = 30.0
    min_repeats: int = 3
    max_repeats: int = 50
    evict_bytes: int = 0
    ci_target_pct: float = 0.0
    max_repeat_ms: float = 0.0
    cooldown_ms: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def label(self) -> str:
        """The caches' state in a few words, e.g. "cold (8 MiB evicted)"."""
        caches = "warm" if not self.evict_bytes else \
            f"cold ({self.evict_bytes / 2**20:g} MiB evicted)"
        return caches + (f", median +-{self.ci_target_pct:g}%" if self.ci_target_pct else "")

    def needs_again(self, m: Timed) -> bool:
        """Whether a measurement (or its record) is one to take again: the clock dropped or the
        board got hot during it, or its spread kept the median from being
        known within the target before the time cap."""
        return m.ok and (m.throttled or (self.ci_target_pct > 0 and m.ci_pct is not None
                                         and m.ci_pct > self.ci_target_pct))

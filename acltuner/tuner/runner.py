"""Measurement: runs the configurations of one task on the device through a
launcher (local, under qemu, or over ssh) and returns what the search learns from."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherClient, Measurement

if TYPE_CHECKING:
    from acltuner.tuner.records import Record

# The parts of a convolution the engine times: pre-processing (packing,
# transforms), the GEMM, post-processing.
STAGES = ("pre_ms", "gemm_ms", "post_ms")


@dataclass(frozen=True)
class Result:
    """One measured configuration.  ok is False for a failed run and for a run whose
    output did not match the reference: neither may ever be chosen."""
    config: ExecConfig
    ok: bool
    median_ms: float | None
    stages: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class MeasureOptions:
    """How every config is timed (the launcher's measure options).  They are
    the measurement protocol: records keep them, and a record measured under
    other options is not reused (records.py).  evict_bytes > 0 times with cold
    caches, 0 with warm ones (PROTOCOL.md).  ci_target_pct > 0 repeats until
    the median is known within that many percent, or max_repeat_ms of runs
    (0: no cap); cooldown_ms idles before each config."""
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

    def needs_again(self, m: Measurement | Record) -> bool:
        """Whether a measurement (or its record) is one to take again: the clock dropped or the
        board got hot during it, or its spread kept the median from being
        known within the target before the time cap."""
        return m.ok and (m.throttled or (self.ci_target_pct > 0 and m.ci_pct is not None
                                         and m.ci_pct > self.ci_target_pct))


def result_of(config: ExecConfig, m: Measurement) -> Result:
    if m.ok and not m.correct:
        return Result(config, False, m.median_ms, dict(m.stages or {}),
                      f"wrong output (max relative error {m.max_rel_err})")
    return Result(config, m.ok, m.median_ms if m.ok else None, dict(m.stages or {}), m.error)


# A config that runs longer than this is taken for hung: HANG_FLOOR_S plus
# every run of one measurement (warmup and max_repeats) at HANG_SLOWDOWN
# times the task's default config's median, each after reading the eviction
# buffer at EVICT_BYTES_PER_S or better, plus the noise control's cooldown
# and time cap.  Generous on purpose: a board under qemu on a busy machine
# evicts at a few tens of MB/s, and a config taken for hung is lost.
HANG_FLOOR_S = 30.0
HANG_SLOWDOWN = 50.0
EVICT_BYTES_PER_S = 2.0e7


class Runner:
    """Measures configurations of the task last loaded."""

    def __init__(self, client: LauncherClient, options: MeasureOptions = MeasureOptions()):
        self.client = client
        self.options = options
        # The task's default config's median (or, if the default failed, the
        # first config that ran): it scales the hang timeout; until then the
        # client's own timeout applies.
        self.default_ms: float | None = None

    def load(self, shape: ConvShape, seed: int = 0) -> None:
        self.client.load(shape, seed=seed)
        self.default_ms = None

    def hang_timeout_s(self) -> float | None:
        if self.default_ms is None:
            return None
        o = self.options
        run_s = HANG_SLOWDOWN * self.default_ms / 1e3 + o.evict_bytes / EVICT_BYTES_PER_S
        return (HANG_FLOOR_S + (o.warmup + o.max_repeats) * run_s
                + (o.cooldown_ms + o.max_repeat_ms) / 1e3)

    def measure(self, configs: list[ExecConfig]) -> list[tuple[Result, Measurement]]:
        """Measures configs in order; a config that crashes or hangs the
        launcher is a failed result (LauncherClient.measure)."""
        o = self.options
        pairs = []
        for config in configs:
            m = self.client.measure(config, warmup=o.warmup, min_repeat_ms=o.min_repeat_ms,
                                    min_repeats=o.min_repeats, max_repeats=o.max_repeats,
                                    ci_target_pct=o.ci_target_pct,
                                    max_repeat_ms=o.max_repeat_ms, cooldown_ms=o.cooldown_ms,
                                    evict_bytes=o.evict_bytes, timeout_s=self.hang_timeout_s())
            result = result_of(config, m)
            if self.default_ms is None and result.ok:
                self.default_ms = result.median_ms
            pairs.append((result, m))
        return pairs

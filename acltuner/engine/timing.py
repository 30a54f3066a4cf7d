"""Repeat-until-enough timing, the in-process twin of the launcher's measure."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def repeat_ms(fn: Callable[[], object], *, warmup: int = 1, min_repeat_ms: float = 100.0,
              min_repeats: int = 3, max_repeats: int = 1000) -> list[float]:
    """Wall times (ms) of fn after warm-up, repeated until both min_repeats runs and
    min_repeat_ms of measured time are reached (like TVM's min_repeat_ms)."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    while len(times) < max_repeats and (len(times) < min_repeats or sum(times) < min_repeat_ms):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def median_ms(fn: Callable[[], object], **kw) -> float:
    return statistics.median(repeat_ms(fn, **kw))

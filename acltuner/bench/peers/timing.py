"""The timing loop every peer's run() shares."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(once: Callable[[], T], repeat: int, warmup: int) -> tuple[list[float], T]:
    """Seconds of each of `repeat` calls of once() after `warmup` untimed
    ones, and the last call's result."""
    for _ in range(warmup):
        once()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = once()
        times.append(time.perf_counter() - start)
    return times, result

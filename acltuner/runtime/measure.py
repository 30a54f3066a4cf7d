"""Timing a program's runs, and checking its outputs against onnxruntime."""
from __future__ import annotations

import resource
import time
from dataclasses import dataclass

import numpy as np

from acltuner.taskgen.onnxrt import session
from acltuner.runtime.profile import ProfileEntry
from acltuner.runtime.program import Program


@dataclass(frozen=True)
class Latency:
    median_ms: float
    p10_ms: float
    p90_ms: float
    profiles: list[list[ProfileEntry]]  # one per timed run


def time_runs(program: Program, inputs: dict[str, np.ndarray], repeat: int,
              warmup: int) -> tuple[Latency, dict[str, np.ndarray]]:
    """Latencies of `repeat` runs after `warmup` untimed ones, and the last outputs."""
    for _ in range(warmup):
        program.run(inputs)
    times, profiles = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        outputs = program.run(inputs)
        times.append((time.perf_counter() - start) * 1e3)
        profiles.append(program.last_profile)
    p10, median, p90 = np.percentile(times, [10, 50, 90])
    return Latency(float(median), float(p10), float(p90), profiles), outputs


def peak_rss_mb() -> float:
    """This process's peak resident set (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass(frozen=True)
class Difference:
    max_abs: float
    max_rel: float  # max |diff| / max |reference| of the worst output


def check(model_path: str, inputs: dict[str, np.ndarray],
          outputs: dict[str, np.ndarray]) -> Difference:
    """The outputs against onnxruntime running the original model on the same inputs."""
    reference = session(model_path).run(list(outputs), inputs)
    max_abs = max_rel = 0.0
    for out, ref in zip(outputs.values(), reference):
        diff = float(np.max(np.abs(out.astype(np.float64) - ref), initial=0.0))
        scale = float(np.max(np.abs(ref), initial=0.0))
        max_abs = max(max_abs, diff)
        max_rel = max(max_rel, diff / scale if scale else diff)
    return Difference(max_abs, max_rel)

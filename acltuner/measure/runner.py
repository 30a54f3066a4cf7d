"""What the tuner measures through: a Runner times configurations of one
task (on a launcher or a farm) and gives back each config's Result."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import Measurement
from acltuner.engine.measure_options import MeasureOptions

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


def result_of(config: ExecConfig, m: Measurement) -> Result:
    if m.ok and not m.correct:
        return Result(config, False, m.median_ms, dict(m.stages or {}),
                      f"wrong output (max relative error {m.max_rel_err})")
    return Result(config, m.ok, m.median_ms if m.ok else None, dict(m.stages or {}), m.error)


class Runner(Protocol):
    """Measures configurations of the task last loaded.  default_ms: the
    task's default config's median once measured (it scales a hang's
    timeout), None until then."""
    options: MeasureOptions
    default_ms: float | None

    def load(self, shape: ConvShape, seed: int = 0) -> None: ...

    def measure(self, configs: list[ExecConfig]) -> list[tuple[Result, Measurement]]:
        """Measures configs in order; a config that fails is a failed Result, never raised."""

"""A Runner over one launcher: on this machine, under qemu or on a board over
ssh, whatever LauncherClient drives."""
from __future__ import annotations

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherClient, Measurement
from acltuner.engine.measure_options import MeasureOptions
from acltuner.measure.runner import Result, result_of

# A config that runs longer than this is taken for hung: HANG_FLOOR_S plus
# every run of one measurement (warmup and max_repeats) at HANG_SLOWDOWN
# times the task's default config's median, each after reading the eviction
# buffer at EVICT_BYTES_PER_S or better, plus the noise control's cooldown
# and time cap.  Generous on purpose: a board under qemu on a busy machine
# evicts at a few tens of MB/s, and a config taken for hung is lost.
HANG_FLOOR_S = 30.0
HANG_SLOWDOWN = 50.0
EVICT_BYTES_PER_S = 2.0e7


class LauncherRunner:
    """Measures configurations of the task last loaded into `client`."""

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
        pairs = []
        for config in configs:
            m = self.client.measure(config, self.options, timeout_s=self.hang_timeout_s())
            result = result_of(config, m)
            if self.default_ms is None and result.ok:
                self.default_ms = result.median_ms
            pairs.append((result, m))
        return pairs

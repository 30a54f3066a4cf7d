"""Running a plan inside a launcher (a board's, over ssh or under qemu): the
model is compiled here for the launcher's engine, its one native graph built
in the launcher (LauncherGraph), and the launcher times the runs itself, so
the latency is the board's, without the round trips.

A board has no onnxruntime: a model with nodes outside the native engine is
refused before anything is sent.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from acltuner.engine.launcher import LauncherClient
from acltuner.engine.launcher_graph import LauncherGraph
from acltuner.runtime.inputs import random_inputs
from acltuner.runtime.load import load
from acltuner.runtime.measure import Latency
from acltuner.runtime.profile import COPIES_OP, HOST_COPIES, ProfileEntry
from acltuner.runtime.program import Program
from acltuner.runtime.target import launcher_target


@dataclass(frozen=True)
class RemoteRun:
    latency: Latency  # over the launcher's own run times; profiles: one, of per-node medians
    outputs: dict[str, np.ndarray]  # the last run's, by name, as the ONNX model gives them
    peak_rss_mb: float  # the launcher process's


class RemoteProgram:
    """A plan's model built into the graph of a running launcher (`client`,
    which the caller keeps and closes: a local one, or a board's over ssh);
    `program` describes it (inputs, outputs, arena_bytes, warnings).  Its runs
    balance strictly unless told (they measure plans: the in-context check).
    model, force and board: as in load()."""

    def __init__(self, plan_path: str | os.PathLike, client: LauncherClient, *,
                 model: str | os.PathLike | None = None, force: bool = False,
                 board: str | os.PathLike | None = None, balance: str = "strict"):
        self.client = client
        self.program: Program = load(
            plan_path, model=model, force=force, board=board, engine=launcher_target(client),
            make_graph=functools.partial(LauncherGraph, client), native_only=True,
            balance=balance)

    def run(self, inputs: dict[str, np.ndarray] | np.ndarray, repeat: int = 20,
            warmup: int = 3) -> RemoteRun:
        """`warmup` untimed runs, then `repeat` timed ones, on the launcher; each
        run copies the inputs into its arena and the outputs out."""
        timed = self.program.measure(inputs, repeat, warmup)
        profile = [*timed.profile, ProfileEntry(HOST_COPIES, "copies into and out of the "
                                                "launcher's arena", timed.copy_ms, COPIES_OP)]
        p10, median, p90 = np.percentile(timed.times_ms, [10, 50, 90])
        return RemoteRun(Latency(float(median), float(p10), float(p90), [profile]),
                         timed.outputs, timed.peak_rss_mb)


def run_remote(plan_path: str | os.PathLike, launcher_command: Sequence[str],
               inputs: dict[str, np.ndarray] | None = None, *, repeat: int = 20, warmup: int = 3,
               force: bool = False, board: str | os.PathLike | None = None,
               timeout_s: float = 600.0) -> tuple[RemoteRun, Program, dict[str, np.ndarray]]:
    """The plan run `repeat` times inside the launcher; inputs default to the
    seeded random ones `acltuner run` uses.  Returns the run, the program (for
    reports) and the inputs it ran on (for a --check against onnxruntime)."""
    with LauncherClient(launcher_command, timeout_s=timeout_s) as client:
        remote = RemoteProgram(plan_path, client, force=force, board=board)
        inputs = random_inputs(remote.program) if inputs is None else inputs
        return remote.run(inputs, repeat, warmup), remote.program, inputs

"""The native nodes of a plan with delegated segments, timed two ways in one
process, run for run in turns: with the segments run by onnxruntime, and with
their last outputs given back instead (no onnxruntime thread between the
native stages).  Equal times mean that a segment's threads leave the
engine's pinned workers alone; an onnxruntime pool that spun on their cores
once made every native node after it wait (issue 27).

    python -m acltuner.bench.delegated PLAN RUNS   # one JSON line, or null
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def neighbours(plan: str, runs: int) -> dict | None:
    """{"native_ms_run", "native_ms_replayed", "ratio"}: the sums over the
    native nodes of their median times, the copies in and out left out; None
    for a plan with nothing delegated."""
    from acltuner.runtime import load
    from acltuner.runtime.inputs import random_inputs
    from acltuner.runtime.profile import COPIES_OP, DELEGATED_OP

    program = load(plan)
    if not program.delegated:
        return None
    inputs = random_inputs(program)
    program.run(inputs)  # the outputs a replay gives back
    times: dict[bool, dict[str, list[float]]] = {False: defaultdict(list), True: defaultdict(list)}
    for _ in range(runs):
        for replay in (False, True):
            program.replay_delegated(replay)
            program.run(inputs)
            for e in program.last_profile:
                if e.op not in (DELEGATED_OP, COPIES_OP):
                    times[replay][e.node].append(e.ms)
    program.replay_delegated(False)
    run, replayed = (sum(statistics.median(v) for v in times[r].values()) for r in (False, True))
    return {"native_ms_run": run, "native_ms_replayed": replayed, "ratio": run / replayed}


if __name__ == "__main__":
    print(json.dumps(neighbours(sys.argv[1], int(sys.argv[2]))))

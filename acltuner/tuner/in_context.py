"""The tuned plan checked in context: a task's winner is measured alone, and
in the whole model (other layers around it, their data in the caches) it can
lose to its default.  So the whole model runs in the launcher that measured
the tasks, tuned and default plans alternating; a node that is slower in the
model with its tuned config than with its default takes the default, and the
plan kept is the faster of tuned and that mix if it beats the default plan by
a margin, else the default plan.  A tuned plan is then never slower than the
default one, as far as the measurement can tell.

Plans are compared on the sum of their nodes' medians over the same runs, not
on the median of whole runs: on a shared host one run's noise lands on one
node, which its median drops, while a whole run's time carries every node's
noise at once.  On whole-run medians, AlexNet's tuned plan (its 5x5 through
Winograd 1.58 against 2.98 ms in the model) lost to its default, 15.70
against 15.33 ms, and the default was kept; chosen on its nodes, a tune of
the same model kept its tuned plan, 12.6-14.1 ms against the default's
15.7-17.5 in 4 interleaved rounds of `acltuner run`.  The whole-run medians
are still what the tune reports."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from acltuner.engine.config import ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.engine.launcher_graph import LauncherGraph
from acltuner.plan import InContext, Plan
from acltuner.runtime.inputs import random_inputs
from acltuner.runtime.load import LoweredPlan, lower_plan, read_model
from acltuner.runtime.target import launcher_target

# A node keeps its tuned config unless the default is this much faster in the
# model, and a plan replaces the default plan only if it is this much faster:
# within it, two plans are the same as far as runs on a shared machine can
# tell, and the default is the one known not to lose.
MARGIN = 0.03


@dataclass(frozen=True)
class ContextCheck:
    kept: str                   # "tuned", "default" or "mixed"
    ms: dict[str, float]        # each candidate plan's whole-model median
    nodes_ms: dict[str, float]  # the sum of its nodes' medians: what chose
    reverted: tuple[str, ...]   # nodes whose default was faster in the model
    plan: Plan                  # the plan kept
    skipped: str | None = None  # why the check did not run
    ort_ms: float | None = None  # onnxruntime's whole-model median, on the same inputs
    ort_threads: int | None = None


def with_configs(plan: Plan, configs: dict[str, ExecConfig]) -> Plan:
    nodes = tuple(dataclasses.replace(n, config=configs[n.node]) if n.node in configs else n
                  for n in plan.nodes)
    return dataclasses.replace(plan, nodes=nodes)


def _default_plan(plan: Plan) -> Plan:
    return with_configs(plan, {n.node: n.default_config for n in plan.nodes if not n.pinned})


class WholeModelRuns:
    """Candidate plans, each lowered once, run in turns in one launcher.  The
    launcher holds one graph at a time, so each turn builds its plan's graph
    again (its weights packed again: seconds for a large model on this
    machine)."""

    def __init__(self, client: LauncherClient, plans: dict[str, LoweredPlan]):
        self.plans = plans
        self.backend = functools.partial(LauncherGraph, client)
        self.inputs: dict[str, np.ndarray] | None = None
        self.ms: dict[str, list[float]] = {name: [] for name in plans}
        self.node_ms: dict[str, dict[str, list[float]]] = {name: {} for name in plans}

    def rounds(self, count: int, repeat: int) -> None:
        """`count` rounds, each running every plan `repeat` times in turn, so a
        drift of the machine's speed reaches them all alike."""
        for _ in range(count):
            for name, plan in self.plans.items():
                program = plan.program(self.backend, balance="strict")
                if self.inputs is None:
                    self.inputs = random_inputs(program)
                run = program.measure(self.inputs, repeat=repeat, warmup=1)
                self.ms[name].append(float(np.median(run.times_ms)))
                for entry in run.profile:
                    self.node_ms[name].setdefault(entry.node, []).append(entry.ms)

    def median(self, name: str) -> float:
        return float(np.median(self.ms[name]))

    def node_median(self, name: str, node: str) -> float | None:
        times = self.node_ms[name].get(node)
        return float(np.median(times)) if times else None

    def nodes_total(self, name: str) -> float:
        return float(sum(np.median(times) for times in self.node_ms[name].values()))


def alone_gain_ms(plan: Plan) -> float:
    """What the tasks measured alone predict the tuned plan saves over the
    default plan: the sum over its changed nodes of default minus tuned time."""
    return sum(n.default_ms - n.tuned_ms for n in plan.nodes
               if not n.pinned and n.config != n.default_config
               and n.tuned_ms is not None and n.default_ms is not None)


def contradicted(plan: Plan, runs: WholeModelRuns) -> bool:
    """Whether the tasks alone predict the tuned plan faster by MARGIN of the
    model and the whole model says it is not.  A spell of the host's noise
    over the tuned plan's turns gives that verdict too, and does not come
    back in more rounds; a layer slower in the model does.  Once, a tune of
    PP-OCRv5's detector measured its tuned plan at 63.9 ms against the
    default's 57.8 and kept the default, where four checks since measured
    the tuned plan at 39.9-49.4 ms against 53.4-71.3."""
    base = runs.nodes_total("default")
    return (alone_gain_ms(plan) > MARGIN * base
            and runs.nodes_total("tuned") >= base * (1 - MARGIN))


def check_in_context(plan: Plan, client: LauncherClient, *, rounds: int = 3, repeat: int = 10,
                     progress: Callable[[str], None] = lambda _: None,
                     ort: bool = False) -> ContextCheck:
    """`plan` (tuned) against its default plan in the launcher, which
    must run the whole model natively; pinned nodes keep their pin.  Where
    the rounds contradict the tasks measured alone (contradicted), as many
    again run and the choice is made on all of them.  ort:
    time onnxruntime too, here, on the same inputs (rounds x repeat runs, after
    the plans: the launcher must run on this machine)."""
    default = _default_plan(plan)
    if default.nodes == plan.nodes:
        return ContextCheck("tuned", {}, {}, (), plan, "every node's tuned config is its default")
    progress(f"in context: the whole model, tuned and default plans, {rounds} rounds")
    target = launcher_target(client)
    try:
        model = read_model(plan)
        lowered = {name: lower_plan(p, model, target, native_only=True)
                   for name, p in (("tuned", plan), ("default", default))}
        runs = WholeModelRuns(client, lowered)
        runs.rounds(rounds, repeat)
        if contradicted(plan, runs):
            progress("in context: the default plan ran faster than the tasks alone predict, "
                     f"{rounds} rounds more")
            runs.rounds(rounds, repeat)
    except ValueError as e:  # nodes outside the engine: the launcher cannot run it
        return ContextCheck("tuned", {}, {}, (), plan, str(e))
    reverted = []
    for node in plan.nodes:
        if node.pinned or node.config == node.default_config:
            continue
        tuned, base = (runs.node_median(k, node.node) for k in ("tuned", "default"))
        if tuned is not None and base is not None and base < tuned * (1 - MARGIN):
            reverted.append(node.node)
    ms = {name: runs.median(name) for name in ("tuned", "default")}
    nodes_ms = {name: runs.nodes_total(name) for name in ("tuned", "default")}
    candidates = {"tuned": plan, "default": default}
    if reverted and len(reverted) < sum(1 for n in plan.nodes if n.config != n.default_config):
        mixed = with_configs(plan, {n.node: n.default_config for n in plan.nodes
                                     if n.node in reverted})
        progress(f"in context: {len(reverted)} node(s) faster with their default, "
                 f"measuring that mix")
        again = WholeModelRuns(client, {"tuned": lowered["tuned"],
                               "mixed": lower_plan(mixed, model, target, native_only=True)})
        again.rounds(rounds, repeat)
        # The mix against the tuned plan of the same rounds, scaled to the first.
        ms["mixed"] = again.median("mixed") * ms["tuned"] / again.median("tuned")
        nodes_ms["mixed"] = (again.nodes_total("mixed") * nodes_ms["tuned"]
                             / again.nodes_total("tuned"))
        candidates["mixed"] = mixed
    ort_ms = ort_threads = None
    if ort:
        from acltuner.runtime.compare_ort import ort_latency
        progress("in context: onnxruntime, the whole model on the same inputs")
        assert runs.inputs is not None  # the rounds ran, on these inputs
        ort_ms, ort_threads = ort_latency(plan.model_path, runs.inputs, rounds * repeat, 1)
    kept = choose(nodes_ms)
    return ContextCheck(kept, ms, nodes_ms, tuple(reverted),
                        _marked(plan, candidates[kept], InContext(kept, ms, nodes_ms), reverted,
                                runs),
                        ort_ms=ort_ms, ort_threads=ort_threads)


def _marked(tuned: Plan, kept: Plan, check: InContext, reverted: list[str],
            runs: WholeModelRuns) -> Plan:
    """The plan kept, recording the check: its whole-model medians, and each
    node it sent back to its default, with the tuned config dropped, why, and
    both configs' times in the model."""
    before = {n.node: n for n in tuned.nodes}
    nodes = tuple(
        n if n.config == before[n.node].config else before[n.node].revert(
            "node" if n.node in reverted else "plan", runs.node_median("tuned", n.node),
            runs.node_median("default", n.node))
        for n in kept.nodes)
    return dataclasses.replace(kept, nodes=nodes, in_context=check)


def choose(ms: dict[str, float]) -> str:
    """The plan to keep from each plan's time ("default" and the others):
    the fastest other if it beats the default by MARGIN, else the default."""
    challenger = min((name for name in ms if name != "default"), key=ms.__getitem__)
    return challenger if ms[challenger] < ms["default"] * (1 - MARGIN) else "default"

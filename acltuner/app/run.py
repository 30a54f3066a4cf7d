"""`acltuner run`'s work: a plan's whole model run here or inside a board's
launcher, its outputs checked against onnxruntime, its nodes timed beside
onnxruntime's."""
from __future__ import annotations

# The largest relative difference (max |diff| / max |reference|, per output)
# `run --check` accepts from onnxruntime, or else from a float64 reference.
CHECK_TOLERANCE = 1e-3
# The same for a plan tuned with --precision fp16: half precision rounds to
# 2^-11 relative, and each GEMM K block (up to 256 products) sums in it.
FP16_CHECK_TOLERANCE = 1e-2
# How long the float64 reference may take before the check gives up on it.
REFERENCE_TIMEOUT_S = 300


def run_plan(plan_path, *, model_path, named, files, repeat, warmup, force, board_name, balance,
             host, warn):
    """(program, inputs, latency, outputs, peak RSS MB) of the plan run on
    `host` (None: here); warn(line) for each of the program's warnings."""
    args = (plan_path, model_path, named, files, repeat, warmup, force, board_name, balance, warn)
    return _run_on_host(host, *args) if host else _run_here(*args)


def check_tolerance(precision: str) -> float:
    """`run --check`'s relative tolerance for a plan tuned at `precision`."""
    return FP16_CHECK_TOLERANCE if precision == "fp16" else CHECK_TOLERANCE


def check_outputs(program, inputs, outputs):
    """outputs against onnxruntime's, and a float64 reference where they differ."""
    from acltuner.runtime.measure import check
    return check(program.plan.model_path, inputs, outputs,
                 check_tolerance(program.plan.precision), REFERENCE_TIMEOUT_S)


def compare_with_ort(program, inputs, nodes, repeat, warmup):
    """(onnxruntime's profile, the rows of the comparison)."""
    from acltuner.runtime.compare_ort import compare, node_aliases, profile_onnxruntime
    plan = program.plan
    ort = profile_onnxruntime(plan.model_path, inputs, repeat, warmup)
    return ort, compare(nodes, ort, node_aliases(plan.model_path, plan.input_shapes))


def _run_here(plan_path, model_path, named, files, repeat, warmup, force, board_name, balance,
              warn):
    """The plan in this process: (program, inputs, latency, outputs, peak RSS MB)."""
    from acltuner.runtime import load
    from acltuner.runtime.inputs import random_inputs, read_inputs
    from acltuner.runtime.measure import peak_rss_mb, time_runs
    program = load(plan_path, model=model_path, force=force, board=board_name, balance=balance)
    for warning in program.warnings:
        warn(warning)
    inputs = read_inputs(program, named, files) or random_inputs(program)
    latency, outputs = time_runs(program, inputs, repeat, warmup)
    return program, inputs, latency, outputs, peak_rss_mb()


def _run_on_host(host, plan_path, model_path, named, files, repeat, warmup, force, board_name,
                 balance, warn):
    """The plan inside the launcher on `host`, timed there; the same tuple, with
    the launcher's peak RSS."""
    from acltuner.remote.launcher import RemoteLauncherClient
    from acltuner.runtime.inputs import random_inputs, read_inputs
    from acltuner.runtime.remote import RemoteProgram
    from acltuner.plan import load_plan, plan_board
    board = plan_board(load_plan(plan_path), board_name)
    with RemoteLauncherClient(board, host, timeout_s=600) as client:
        remote = RemoteProgram(plan_path, client, model=model_path, force=force,
                               board=board_name, balance=balance)
        for warning in remote.program.warnings:
            warn(warning)
        inputs = read_inputs(remote.program, named, files) or random_inputs(remote.program)
        result = remote.run(inputs, repeat, warmup)
    return remote.program, inputs, result.latency, result.outputs, result.peak_rss_mb

"""`acltuner run`: a plan's whole model, here or on a board."""
from __future__ import annotations

import io

import click

from acltuner.app.run import CHECK_TOLERANCE, FP16_CHECK_TOLERANCE, REFERENCE_TIMEOUT_S
from acltuner.cli.options import host_option
from acltuner.runtime.quant_steps import STEP_TOLERANCE


@click.command("run")
@click.argument("plan_path", metavar="PLAN.json")
@click.argument("files", nargs=-1, metavar="[F.npy ...]")
@click.option("--input", "named", multiple=True, metavar="NAME=F.npy",
              help="The file for a model input (repeatable); plain F.npy arguments fill the "
                   "other inputs in the model's order.  Default: seeded random inputs.")
@click.option("--output", "output_path", default=None, metavar="F.npy",
              help="Save the output (.npy; a model with several outputs: an .npz by name).")
@click.option("--repeat", default=20, show_default=True, type=click.IntRange(1),
              help="Timed runs.")
@click.option("--warmup", default=3, show_default=True, type=click.IntRange(0),
              help="Untimed runs first.")
@click.option("--check", is_flag=True,
              help=f"Compare the outputs with onnxruntime running the original model.  Where "
                   f"they differ by more than {CHECK_TOLERANCE:g} relative to the largest "
                   f"output, judge both against a float64 reference (onnx's reference "
                   f"evaluator, up to {REFERENCE_TIMEOUT_S} s) and fail only if ours is more "
                   f"than {CHECK_TOLERANCE:g} from it (or there is no reference in time).  A "
                   f"plan tuned with --precision fp16 takes {FP16_CHECK_TOLERANCE:g}.  An output "
                   f"a DequantizeLinear makes (an int8 model's) is compared in steps of its "
                   f"scale instead: one step of difference passes, a rounding; more passes "
                   f"only if ours is no more steps from the quantized model run in float64 "
                   f"than onnxruntime's.")
@click.option("--profile", is_flag=True, help="Time per node, slowest first.")
@click.option("--compare-ort", is_flag=True,
              help="Time per node beside onnxruntime's own profile of the original model "
                   "(the better of 1 and 2 threads), matched by node name, most time lost "
                   "first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--board", "board_name", default=None, metavar="NAME|FILE",
              help="The board running the plan (default: the plan's own board).")
@click.option("--force", is_flag=True,
              help="Run a plan whose model, board or engine differ, with warnings.")
@click.option("--balance", type=click.Choice(["adaptive", "strict"]), default="adaptive",
              show_default=True,
              help="adaptive: each core starts on its planned share, and cores done early take "
                   "over what a core held by another thread has not run, so the plan keeps its "
                   "speed beside an application's other threads; beside a busy core it also "
                   "times runs on one unpinned thread and keeps the faster way.  strict: each "
                   "core runs its "
                   "share only, as the tuner measured it.  Outputs are identical.")
@host_option(help="Run on this ssh host, inside the launcher 'acltuner deploy' put there, "
                  "and report the board's latency (--check still compares here).")
@click.option("--model", "model_path", default=None, metavar="MODEL.onnx",
              help="The model to run, instead of the file the plan names (a model moved on "
                   "its own; it must still be the one tuned).")
def run(plan_path, files, named, output_path, repeat, warmup, check, profile, compare_ort,
        as_json, board_name, force, balance, host, model_path):
    """Run a plan's whole model natively with its tuned convolutions.

    Every convolution runs with the plan's config; the other operators run on
    all the board's cores; nodes the engine does not cover run through
    onnxruntime (listed as delegated).  Prints the latency (median, p10, p90),
    the peak RSS and, with --check, the largest difference from onnxruntime:
    max |diff| / max |reference| over the outputs.  Where that exceeds 1e-3,
    the model also runs in float64 (onnx's reference evaluator), and ours' and
    onnxruntime's errors from it are printed the same way: a float32 engine
    can be the inexact one (onnxruntime's Sigmoid far below 1, a long sum
    added left to right), and the check fails only if ours is more than 1e-3
    from the float64 outputs.

    With --host the whole model runs on the board, in its launcher (the model
    must then run entirely natively): the latency, profile and peak RSS are the
    board's; inputs and outputs travel over ssh.

    \b
    Examples:
      acltuner run resnet18.plan.json --check
      acltuner run model.plan.json image.npy --output logits.npy --profile
      acltuner run r18.plan.json --host odroid --check
      acltuner run model.plan.json --compare-ort
    """
    import numpy as np

    from acltuner.app.run import check_outputs, compare_with_ort, run_plan
    from acltuner.atomic import check_writable, write_atomic
    from acltuner.runtime.profile import summarize
    from acltuner.runtime.render import render_json, render_text
    if compare_ort and host:
        raise click.UsageError("--compare-ort compares with onnxruntime on this machine; "
                               "it cannot be combined with --host")
    if output_path:
        check_writable(output_path)
    program, inputs, latency, outputs, rss_mb = run_plan(
        plan_path, model_path=model_path, named=list(named), files=list(files), repeat=repeat,
        warmup=warmup, force=force, board_name=board_name, balance=balance, host=host,
        warn=_warn)
    diff = check_outputs(program, inputs, outputs) if check else None
    if output_path:
        saved = io.BytesIO()
        if len(outputs) == 1:
            np.save(saved, next(iter(outputs.values())))
        else:
            np.savez(saved, **outputs)
        try:
            write_atomic(output_path, saved.getvalue())
        except OSError as e:  # a full disk, say: the path, not the temporary file's
            raise click.ClickException(f"{output_path}: cannot write: {e.strerror or e}") from None
    nodes = summarize(latency.profiles)
    compared = compare_with_ort(program, inputs, nodes, repeat, warmup) if compare_ort else None
    if as_json:
        click.echo(render_json(latency, rss_mb, program, nodes, diff, profile, compared))
    else:
        click.echo(render_text(latency, repeat, warmup, rss_mb, program, nodes, diff, profile,
                               compared))
    if diff is not None and not diff.passed:
        raise click.ClickException(_check_failure(diff))


def _check_failure(diff) -> str:
    if not diff.quantized_passed:
        text = (f"check failed: a quantized output is {diff.max_steps:.3g} steps of its scale "
                f"from onnxruntime's int8 > {STEP_TOLERANCE:g}")
        steps = diff.steps64
        if steps.ours is None:
            return f"{text}, and no float64 reference to judge by: {steps.problem}"
        return (f"{text}, and ours is {steps.ours:.3g} steps from a float64 reference "
                f"(onnxruntime {steps.onnxruntime:.3g})")
    judged = diff.float64
    text = (f"check failed: max relative difference from onnxruntime {diff.max_rel:.3g} "
            f"> {diff.tolerance:g}")
    if judged.ours is None:
        return f"{text}, and no float64 reference to judge by: {judged.problem}"
    return (f"{text}, and ours is {judged.ours:.3g} from a float64 reference "
            f"(onnxruntime {judged.onnxruntime:.3g}) > {diff.tolerance:g}")


def _warn(warning: str) -> None:
    click.echo(f"warning: {warning}", err=True)

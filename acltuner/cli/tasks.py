"""`acltuner tasks`: a model's convolutions, merged into tuning tasks."""
from __future__ import annotations

import json

import click


@click.command("tasks")
@click.argument("model", metavar="MODEL.onnx")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
              help="Static shape of a model input with dynamic dims (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def tasks(model: str, input_shapes: tuple[str, ...], as_json: bool) -> None:
    """The tuning tasks of an ONNX model: its convolutions grouped by shape.

    Convolutions with the same input, weight and output dimensions, strides,
    pads, dilations and groups are one task, whatever BatchNormalization,
    residual Add and Relu/Clip each absorbs.  One row per task, most FLOPs
    first: the key, how many convolutions share it, GFLOPs of all of them, the
    share (%) of the model's convolution FLOPs, its kinds (what `tune --pin
    kind=KIND:...` selects) and the engine's algorithms that can run it.
    Non-2-D convolutions are listed as skipped on stderr.

    \b
    Example:
      acltuner tasks resnet101.onnx
      acltuner tasks model.onnx --input-shape input=1,3,224,224 --json
    """
    from acltuner.onnx.model import parse_input_shapes
    from acltuner.taskgen.tasks import generate_tasks
    from acltuner.tuner.pins import kinds_of
    ts = generate_tasks(model, parse_input_shapes(input_shapes))
    first = {n.name for n in ts.conv_nodes if ts.reads_model_input(n)}
    rows = [(t, 100.0 * t.flops / ts.flops, kinds_of(t.shape, bool(first & set(t.nodes))))
            for t in ts.tasks]
    if as_json:
        click.echo(json.dumps({
            "model": model, "convolutions": ts.convolutions, "skipped": ts.skipped,
            "tasks": [{"key": t.key, "nodes": len(t.nodes), "node_names": t.nodes,
                       "flops": t.flops, "share": share, "kinds": kinds,
                       "algorithms": t.algorithms}
                      for t, share, kinds in rows]}, indent=2))
        return
    for line in ts.skipped:
        click.echo(f"skipped: {line}", err=True)
    width = max(len(t.key) for t in ts.tasks)
    kinds_width = max(len("kinds"), *(len(",".join(k)) for _, _, k in rows))
    click.echo(f"{'key':{width}s}  nodes  GFLOPs  share%  {'kinds':{kinds_width}s}  algorithms")
    for t, share, kinds in rows:
        click.echo(f"{t.key:{width}s}  {len(t.nodes):5d}  {t.flops / 1e9:6.3f}  {share:6.2f}  "
                   f"{','.join(kinds):{kinds_width}s}  {','.join(t.algorithms)}")
    click.echo(f"{ts.convolutions} convolutions -> {len(ts.tasks)} tasks")

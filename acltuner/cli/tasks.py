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

    A quantized model's convolutions that run in int8 are int8 tasks, their
    keys ending in their dtypes (-qu8s8u8: uint8 in, int8 weights, uint8
    out) and their algorithm conv_int8 (tuned over its int8 kernels and
    splits in the whole model); a float task whose every convolution runs in
    int8 is not listed, nor tuned.  The graph's products (MatMul, Gemm) are
    tuned in the whole model too (`tune --help`), and not listed here.

    \b
    Example:
      acltuner tasks resnet101.onnx
      acltuner tasks model.onnx --input-shape input=1,3,224,224 --json
    """
    from acltuner.onnx.model import parse_input_shapes
    from acltuner.taskgen.int8 import INT8_ALGORITHM
    from acltuner.tuner.int8_tasks import split_int8
    from acltuner.taskgen.tasks import generate_tasks
    from acltuner.tuner.pins import kinds_of
    shapes = parse_input_shapes(input_shapes)
    ts, int8 = split_int8(generate_tasks(model, shapes), shapes)
    first = {n.name for n in ts.conv_nodes if ts.reads_model_input(n)}
    every = [(t, t.algorithms, "fp32") for t in ts.tasks] + \
        [(t, [INT8_ALGORITHM], "int8") for t in int8]
    every.sort(key=lambda row: -row[0].flops)  # stable: float tasks first at equal FLOPs
    flops = sum(t.flops for t, _, _ in every)
    rows = [(t, algorithms, kind, 100.0 * t.flops / flops,
             kinds_of(t.shape, bool(first & set(t.nodes)))) for t, algorithms, kind in every]
    if as_json:
        click.echo(json.dumps({
            "model": model, "convolutions": ts.convolutions, "products": ts.products,
            "skipped": ts.skipped,
            "tasks": [{"key": t.key, "nodes": len(t.nodes), "node_names": t.nodes,
                       "flops": t.flops, "share": share, "kinds": kinds,
                       "algorithms": algorithms, "precision": kind}
                      for t, algorithms, kind, share, kinds in rows]}, indent=2))
        return
    for line in ts.skipped:
        click.echo(f"skipped: {line}", err=True)
    if not rows:
        click.echo(f"{ts.convolutions} convolutions: no task (the model's {ts.products} MatMul "
                   f"and Gemm products are tuned in the whole model)")
        return
    width = max(len(t.key) for t, *_ in rows)
    kinds_width = max(len("kinds"), *(len(",".join(k)) for *_, k in rows))
    click.echo(f"{'key':{width}s}  nodes  GFLOPs  share%  {'kinds':{kinds_width}s}  algorithms")
    for t, algorithms, _, share, kinds in rows:
        click.echo(f"{t.key:{width}s}  {len(t.nodes):5d}  {t.flops / 1e9:6.3f}  {share:6.2f}  "
                   f"{','.join(kinds):{kinds_width}s}  {','.join(algorithms)}")
    tail = f" ({len(int8)} int8)" if int8 else ""
    if ts.products:  # they have no key of their own: a product's shape comes from lowering
        plural = "s" if ts.products != 1 else ""
        tail += f"; {ts.products} product{plural} (MatMul or Gemm), tuned in the whole model"
    click.echo(f"{ts.convolutions} convolutions -> {len(rows)} tasks{tail}")

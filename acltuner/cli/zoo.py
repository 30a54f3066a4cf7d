"""`acltuner zoo`: models to try, built locally."""
from __future__ import annotations

import json

import click


@click.command("zoo")
@click.argument("name", required=False)
@click.option("-o", "--output", metavar="MODEL.onnx", help="Where to write the model.")
@click.option("--list", "list_models", is_flag=True, help="List the models and exit.")
@click.option("--json", "as_json", is_flag=True,
              help="With --list: print one JSON object, {\"models\": [NAME, ...]}.")
def zoo(name: str | None, output: str | None, list_models: bool, as_json: bool) -> None:
    """Write a zoo model: a CNN with seeded random weights and a static
    1x3x224x224 input, built locally (nothing is downloaded).

    \b
    Examples:
      acltuner zoo --list
      acltuner zoo --list --json
      acltuner zoo resnet18 -o resnet18.onnx
    """
    from acltuner.zoo import MODELS, build
    if as_json and not list_models:
        raise click.UsageError("--json goes with --list")
    if list_models:
        click.echo(json.dumps({"models": list(MODELS)}) if as_json else "\n".join(MODELS))
        return
    if not name or not output:
        raise click.UsageError("give a model NAME and -o MODEL.onnx (or --list)")
    from acltuner.atomic import write_atomic
    write_atomic(output, build(name).SerializeToString())
    click.echo(f"wrote {output}")

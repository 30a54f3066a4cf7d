"""`acltuner plan`: plan files."""
from __future__ import annotations

import json
import shlex

import click

from acltuner.cli.group import Group
from acltuner.cli.options import host_option


@click.group(cls=Group)
def plan() -> None:
    """Inspect plan files written by 'acltuner tune'."""


@plan.command("show")
@click.argument("plan_path", metavar="PLAN.json")
@click.option("--board", "board_name", default=None, metavar="NAME|FILE",
              help="The board to check the plan against (default: the plan's own board).")
@click.option("--force", is_flag=True,
              help="Show a plan whose model, board or engine differ, with warnings.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--model", "model_path", default=None, metavar="MODEL.onnx",
              help="The plan's model, instead of the file the plan names (a model moved on "
                   "its own; it must still be the one tuned).")
def plan_show(plan_path: str, board_name: str | None, force: bool, as_json: bool,
              model_path: str | None) -> None:
    """Validate a plan and print each convolution's configuration.

    The plan is checked as 'acltuner run' checks it, and refused with the
    same line: when its model file is missing or changed since tuning
    (sha256), when it was tuned for another board or with another engine
    version (--force shows it anyway, with warnings), or when a node's config
    cannot run on its convolution or has a core weight count other than the
    board's cores.

    \b
    Example:
      acltuner plan show resnet18.plan.json
    """
    from acltuner.runtime.load import check
    checked = check(plan_path, model=model_path, force=force, board=board_name)
    p = checked.plan
    for warning in checked.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(p.to_dict(), indent=2))
        return
    t = p.tuning
    click.echo(f"model {p.model_path}\nboard {p.board_name} ({p.board_fingerprint}), engine "
               f"{p.engine_version}, strategy {p.strategy}, {t.measurements} measurements in "
               f"{t.wall_s:.1f} s")
    if p.board is not None and p.board.launcher_wrapper:
        click.echo(f"launcher_wrapper {shlex.join(p.board.launcher_wrapper)} (the plan's: never "
                   f"run; a wrapper runs only from --board FILE with acltuner --allow-wrapper)")
    if p.in_context is not None:
        click.echo(p.in_context.describe())
    width = max(len(n.node) for n in p.nodes)
    for n in p.nodes:
        times = f"{n.tuned_ms:8.3f} ms" if n.tuned_ms else "not measured"
        if n.default_ms:
            times += f"  default {n.default_ms:8.3f} ms"
        pinned = f"  pinned ({n.pinned})" if n.pinned else ""
        reverted = f"  {n.reverted.describe()}" if n.reverted else ""
        click.echo(f"{n.node:{width}s}  {str(n.config):52s}  {times}{pinned}{reverted}")


@plan.command("edit")
@click.argument("plan_path", metavar="PLAN.json")
@click.option("--set", "settings", multiple=True, required=True, metavar="NODE=CONFIG",
              help="The config of the Conv node NODE: ALGORITHM, ALGORITHM/KERNEL or "
                   "ALGORITHM/KERNEL/WEIGHTS/wN as 'plan show' prints it ('-': no kernel). "
                   "Repeatable.")
@click.option("-o", "--output", "output_path", default=None, metavar="FILE",
              help="Write the edited plan here instead of over PLAN.json.")
@click.option("--board", "board_name", default=None, metavar="NAME|FILE",
              help="The board the plan runs on (default: the plan's own board).")
@host_option(help="Check the configs with the launcher on this ssh host (a board's plan).")
@click.option("--force", is_flag=True,
              help="Edit a plan whose model, board or engine differ, with warnings.")
def plan_edit(plan_path: str, settings: tuple[str, ...], output_path: str | None,
              board_name: str | None, host: str | None, force: bool) -> None:
    """Set the configuration of some of a plan's convolutions by hand.

    ALGORITHM alone keeps the node's cores and workloads and takes the ArmNN
    rule's micro-kernel for that algorithm; ALGORITHM/KERNEL keeps the node's
    cores and workloads.  Each config is checked by the engine that runs the
    plan (the board's launcher) against the node's shape, and the weights
    against the board's cores; any bad setting refuses the whole edit in one
    line and leaves the file as it was.  The plan is written atomically,
    the edited nodes marked pinned, their tuned time dropped (not measured).
    A quantized model's convolutions that run in int8 take conv_int8 only,
    with one of the int8 kernels `acltuner engine list` shows, or '-' for
    conv_int8's own pick.

    \b
    Examples:
      acltuner plan edit r18.plan.json --set conv1=direct_nhwc
      acltuner plan edit r18.plan.json --set layer1.0.conv1=im2col/6x16-hybrid-avx2/1:1/w4
      acltuner plan edit r18-int8.plan.json --set conv1=conv_int8/8x32c4-rows-avx512vnni/1:1/w8
    """
    from acltuner.app.plan_edit import edit_plan_file
    for node in edit_plan_file(plan_path, settings, output_path=output_path, board_name=board_name,
                               host=host, force=force,
                               warn=lambda line: click.echo(f"warning: {line}", err=True)):
        click.echo(f"{node.node}: {node.config}")

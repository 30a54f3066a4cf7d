"""`acltuner plan`: plan files."""
from __future__ import annotations

import json

import click

from acltuner.cli.group import Group
from acltuner.engine import native


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
def plan_show(plan_path: str, board_name: str | None, force: bool, as_json: bool) -> None:
    """Validate a plan and print each convolution's configuration.

    The plan is refused, with one line saying what differs, when its model
    file changed since tuning (sha256), when it was tuned for another board,
    or with another engine version; --force shows it anyway, with warnings.

    \b
    Example:
      acltuner plan show resnet18.plan.json
    """
    from acltuner.plan import check_plan, load_plan, plan_board
    p = load_plan(plan_path)
    board = plan_board(p, board_name)
    for warning in check_plan(p, p.model_path, board.fingerprint, native.local_engine_id(), force):
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(p.to_dict(), indent=2))
        return
    t = p.tuning
    click.echo(f"model {p.model_path}\nboard {p.board_name} ({p.board_fingerprint}), engine "
               f"{p.engine_version}, strategy {p.strategy}, {t.measurements} measurements in "
               f"{t.wall_s:.1f} s")
    width = max(len(n.node) for n in p.nodes)
    for n in p.nodes:
        times = (f"{n.tuned_ms:8.3f} ms  default {n.default_ms:8.3f} ms"
                 if n.tuned_ms and n.default_ms else "not measured")
        pinned = f"  pinned ({n.pinned})" if n.pinned else ""
        click.echo(f"{n.node:{width}s}  {str(n.config):52s}  {times}{pinned}")

"""`acltuner farm worker`: one board of a farm, served as a Dask worker."""
from __future__ import annotations

import os
import sys

import click

from acltuner.cli.group import Group


@click.group("farm", cls=Group)
def farm() -> None:
    """Board farms: many boards of one class tuning one model at once.

    `acltuner tune --hosts h1,h2` or `--farm farm.yaml` starts a farm of its
    own on this machine; for a standing farm, start a Dask scheduler
    (`dask scheduler`) and one `acltuner farm worker` per board, then tune
    with `--scheduler tcp://HOST:8786`.
    """


@farm.command("worker")
@click.argument("scheduler", metavar="tcp://HOST:PORT")
@click.option("--board", "board_name", required=True, metavar="NAME|FILE",
              help="The board's description (its class must be the tune's).")
@click.option("--host", default=None, metavar="HOST",
              help="The board's ssh host, where 'acltuner deploy' put its launcher "
                   "(default: this machine).")
@click.option("--cpus", default=None, metavar="C1,C2,..",
              help="Only these cores of the machine the launcher runs on (ACL_CPUS), e.g. "
                   "one machine standing in for several one-core boards.")
@click.option("--name", default=None, help="The member's name [default: the host, or "
                                           "local-CPUS].")
def worker(scheduler, board_name, host, cpus, name):
    """Serve one board to the Dask scheduler at tcp://HOST:PORT.

    A thin wrapper over `dask worker`: one thread (one measurement at a time
    on the board), the resource `board=1` that the tuner's measurements ask
    for, and the board this worker measures in its environment.  The
    worker's process holds the board's launcher session (over ssh with
    --host); nothing but the launcher runs on the board.

    \b
    Example, on the workstation:
      dask scheduler --port 8786 &
      acltuner farm worker tcp://127.0.0.1:8786 --board odroid-n2plus --host odroid1 &
      acltuner farm worker tcp://127.0.0.1:8786 --board odroid-n2plus --host odroid2 &
      acltuner tune model.onnx -o plan.json --board odroid-n2plus --scheduler tcp://127.0.0.1:8786
    """
    from acltuner.board.registry import load_board
    from acltuner.farm.cluster import worker_options
    from acltuner.farm.members import Member
    pinned = tuple(int(c) for c in cpus.split(",")) if cpus else ()
    member = Member(name or host or f"local-{cpus or 'all'}", load_board(board_name), host,
                    pinned)
    options = worker_options(member)
    resources = ",".join(f"{k}={v}" for k, v in options["resources"].items())
    env = {**os.environ, **options["env"]}
    argv = [sys.executable, "-m", "distributed.cli.dask_worker", scheduler,
            "--nthreads", str(options["nthreads"]), "--name", member.name,
            "--resources", resources, "--memory-limit", str(options["memory_limit"])]
    os.execvpe(argv[0], argv, env)

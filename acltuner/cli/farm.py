"""`acltuner farm worker`: one board of a farm, served as a Dask worker."""
from __future__ import annotations

import os
import sys

import click

from acltuner.cli.group import Group
from acltuner.cli.options import host_option


@click.group("farm", cls=Group)
def farm() -> None:
    """Board farms: many boards of one class tuning one model at once.

    `acltuner tune --hosts h1,h2` or `--farm farm.yaml` starts a farm of its
    own on this machine; for a standing farm, start a Dask scheduler
    (`dask scheduler`) and one `acltuner farm worker` per board, then tune
    with `--scheduler tcp://HOST:8786`.
    """


def tls_options(command):
    """--tls-ca-file, --tls-cert and --tls-key: Dask's TLS (farm_security)."""
    for name, what in (("--tls-key", "The private key of --tls-cert (PEM)."),
                       ("--tls-cert", "This end's certificate, signed by the CA (PEM)."),
                       ("--tls-ca-file", "The CA that signs the farm's certificates (PEM): the "
                                         "scheduler, workers and client talk over TLS and "
                                         "admit only holders of a certificate it signed.")):
        command = click.option(name, type=click.Path(exists=True, dir_okay=False), default=None,
                               metavar="FILE", help=what)(command)
    return command


@farm.command("worker")
@click.argument("scheduler", metavar="tcp://HOST:PORT")
@click.option("--board", "board_name", required=True, metavar="NAME|FILE",
              help="The board's description (its class must be the tune's).")
@host_option(help="The board's ssh host, where 'acltuner deploy' put its launcher "
                  "(default: this machine).")
@click.option("--cpus", default=None, metavar="C1,C2,..",
              help="Only these cores of the machine the launcher runs on (ACL_CPUS), e.g. "
                   "one machine standing in for several one-core boards.")
@click.option("--name", default=None, help="The member's name [default: the host, or "
                                           "local-CPUS].")
@click.option("--listen-address", default=None, metavar="IP",
              help="The address of this machine's interface that reaches the scheduler, the "
                   "only one the worker listens on [default: 127.0.0.1 for a scheduler on "
                   "127.0.0.1; required for any other].")
@tls_options
def worker(scheduler, board_name, host, cpus, name, listen_address, tls_ca_file, tls_cert,
           tls_key):
    """Serve one board to the Dask scheduler at tcp://HOST:PORT.

    A thin wrapper over `dask worker`: one thread (one measurement at a time
    on the board), the resource `board=1` that the tuner's measurements ask
    for, and the board this worker measures in its environment.  The
    worker's process holds the board's launcher session (over ssh with
    --host); nothing but the launcher runs on the board.  Its ports (Dask's
    and the HTTP one) listen on one interface only: 127.0.0.1 for a
    scheduler on 127.0.0.1, else --listen-address.  With the --tls options
    (and a tls:// scheduler started with the same), only holders of a
    certificate the CA signed can reach it.

    \b
    Example, on the workstation:
      dask scheduler --port 8786 &
      acltuner farm worker tcp://127.0.0.1:8786 --board odroid-n2plus --host odroid1 &
      acltuner farm worker tcp://127.0.0.1:8786 --board odroid-n2plus --host odroid2 &
      acltuner tune model.onnx -o plan.json --board odroid-n2plus --scheduler tcp://127.0.0.1:8786
    """
    from acltuner.board.registry import load_board
    from acltuner.farm.cluster import farm_security, listen_host, worker_options
    from acltuner.farm.members import Member
    listen = listen_host(scheduler, listen_address)
    farm_security(tls_ca_file, tls_cert, tls_key)  # all three or none
    tls = [word for option, value in (("--tls-ca-file", tls_ca_file), ("--tls-cert", tls_cert),
                                      ("--tls-key", tls_key)) if value for word in (option, value)]
    pinned = tuple(int(c) for c in cpus.split(",")) if cpus else ()
    member = Member(name or host or f"local-{cpus or 'all'}", load_board(board_name), host,
                    pinned)
    options = worker_options(member)
    resources = ",".join(f"{k}={v}" for k, v in options["resources"].items())
    env = {**os.environ, **options["env"]}
    argv = [sys.executable, "-m", "distributed.cli.dask_worker", scheduler,
            "--nthreads", str(options["nthreads"]), "--name", member.name,
            "--resources", resources, "--memory-limit", str(options["memory_limit"]),
            "--host", listen, "--dashboard-address", f"{listen}:0", *tls]
    os.execvpe(argv[0], argv, env)

"""`acltuner build` and `acltuner deploy`: the engine for a board, built here and
copied to it."""
from __future__ import annotations

import click


_BOARD_OPTION = click.option(
    "--board", "board_name", required=True, metavar="NAME|FILE",
    help="A board from 'acltuner board list' or a board YAML file.")
_HOST_HELP = ("ssh destination as your ssh config knows it (alias, user@host); ssh runs with "
              "your keys and agent, never prompts, and honours $ACLTUNER_SSH_CONFIG (ssh -F).")


@click.command("build")
@_BOARD_OPTION
@click.option("--build-dir", type=click.Path(file_okay=False), default=None,
              help="Build folder [default: build/board-NAME in a source checkout, else "
                   "~/.cache/acltuner/build/board-NAME].")
def build(board_name: str, build_dir: str | None) -> None:
    """Build the engine and acl-launcher for a board.

    An AArch64 board is cross-compiled (gcc-aarch64-linux-gnu, the board's
    compiler_flags); an x86_64 board is built for this machine.  The folder is
    kept per board, so a build with nothing changed is quick.  The launcher is
    statically linked: it is the one file `acltuner deploy` copies.  A
    compiler runs per core at once, the progress on stderr; the last line
    printed is the launcher's path.

    \b
    Example:
      acltuner build --board odroid-n2plus
    """
    from acltuner.board.registry import load_board
    from acltuner.cli.group import QUIET, verbosity
    from acltuner.cli.progress import Progress
    from acltuner.engine.build import build_for_board, build_jobs
    b = load_board(board_name)
    quiet = verbosity() == QUIET
    if not quiet:
        target = " ".join([b.isa, *b.compiler_flags])
        click.echo(f"building the engine for board {b.name} ({target}), {build_jobs()} jobs",
                   err=True)
    shown = Progress(every_s=0)

    def progress(done: float, step: str) -> None:
        shown.update(f"[{done:4.0%}] {step}")
    launcher = build_for_board(b, build_dir, None if quiet else progress)
    shown.clear()
    click.echo(str(launcher))


@click.command("deploy")
@_BOARD_OPTION
@click.option("--host", required=True, metavar="HOST", help=_HOST_HELP)
@click.option("--build-dir", type=click.Path(file_okay=False), default=None,
              help="Build folder (see 'acltuner build').")
def deploy(board_name: str, host: str, build_dir: str | None) -> None:
    """Build the board's launcher, copy it to HOST and check it there.

    The launcher goes to ~/.cache/acltuner/VERSION/ on HOST ($ACLTUNER_REMOTE_DIR
    instead of ~/.cache/acltuner), copied only when it changed, and is started
    through the board's launcher_wrapper: its protocol and engine version must
    equal this acltuner's, its ISA the board's, and HOST must have every core
    the board file uses.

    \b
    Example:
      acltuner deploy --board odroid-n2plus --host odroid
      acltuner tune resnet18.onnx -o r18.plan.json --board odroid-n2plus --host odroid
    """
    from acltuner.board.registry import load_board
    from acltuner.remote.deploy import deploy as deploy_to
    b = load_board(board_name)
    d = deploy_to(b, host, build_dir)
    state = "copied to" if d.copied else "already on"
    click.echo(f"{d.local} {state} {host}:{d.remote}")
    click.echo(f"{host}: acl-launcher {d.hello['version']}, {d.hello['isa']} kernels, "
               f"{d.hello['cpus']} cpus: ready for board {b.name}")

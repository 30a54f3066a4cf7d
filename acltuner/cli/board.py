"""`acltuner board`: the boards acltuner knows, and detecting one."""
from __future__ import annotations

import json

import click

from acltuner.cli.group import Group
from acltuner.cli.options import host_option


@click.group(cls=Group)
def board() -> None:
    """Target boards: CPU clusters, core types, clocks, ISA and compiler flags.

    A board is a YAML file (configs/boards/NAME.yaml) or `host`, this machine
    as its kernel describes it.  Wherever a board is asked for, give a shipped
    board's NAME, `host`, or the path of a board file.

    \b
    Examples:
      acltuner board list
      acltuner board show odroid-n2plus
      acltuner board detect -o configs/boards/myboard.yaml    (run on the board)
    """


def _board_summary(b) -> str:
    return " + ".join(f"{len(c.cpus)}x {c.core_type} {c.max_freq_mhz or '?'} MHz"
                      for c in b.clusters)


def _board_fields(b) -> dict:
    from acltuner.engine.build import board_engine_fingerprint
    engine, _ = board_engine_fingerprint(b)
    return {**b.to_dict(), "ncores": b.ncores, "armnn_threads": b.armnn_threads,
            "fingerprint": b.fingerprint, "engine_fingerprint": engine}


@board.command("list")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object, {\"boards\": [...]}, each board as 'board show "
                   "--json' prints it.")
def board_list(as_json: bool) -> None:
    """One line per known board: name, ISA and clusters (LITTLE to big).

    `host` is detected from this machine each time; the others are the files
    in configs/boards/ (ACLTUNER_CONFIGS=DIR reads DIR/boards/ instead).
    """
    from acltuner.board import list_boards, load_board
    boards = {name: load_board(name) for name in list_boards()}
    if as_json:
        click.echo(json.dumps({"boards": [_board_fields(b) for b in boards.values()]}, indent=2))
        return
    for name, b in boards.items():
        click.echo(f"{name:16s} {b.isa:8s} {_board_summary(b)}")


@board.command("show")
@click.argument("board_name", metavar="NAME|FILE")
@click.option("--json", "as_json", is_flag=True,
              help="Print the board file's fields plus ncores, armnn_threads, fingerprint and "
                   "engine_fingerprint as one JSON object.")
def board_show(board_name: str, as_json: bool) -> None:
    """A board's clusters, ISA, flags, fingerprint, engine and ArmNN threads.

    The fingerprint hashes what measurements depend on (ISA, and each
    cluster's core type, cpus and clock), not names: tuning records are kept
    per fingerprint.  The engine line is the fingerprint of the engine that
    measures the board (its sources and compile flags, the board's
    compiler_flags included): records are kept per engine too.  ArmNN's
    default thread count is the smallest cluster's core count (ACLTuner
    paper, Appendix B.1): 2 on both the Odroid N2+ (2+4) and the Tinker Edge
    R (4+2).

    \b
    Examples:
      acltuner board show tinker-edge-r
      acltuner board show host --json
      acltuner board show ./myboard.yaml
    """
    from acltuner.board import load_board
    from acltuner.board.cpulist import format_cpulist
    b = load_board(board_name)
    if as_json:
        click.echo(json.dumps(_board_fields(b), indent=2))
        return
    click.echo(f"board        {b.name}")
    if b.description:
        click.echo(f"description  {b.description}")
    click.echo(f"isa          {b.isa}")
    for c in b.clusters:
        capacity = "" if c.capacity is None else f"  capacity {c.capacity}"
        features = "" if c.features is None else f"  features {' '.join(c.features) or '-'}"
        click.echo(f"cluster      {c.name:8s} {c.core_type:12s} cpus {format_cpulist(c.cpus):6s}"
                   f" {c.max_freq_mhz or '?'} MHz{capacity}{features}")
    click.echo(f"compiler     {' '.join(b.compiler_flags) or '(the build default)'}")
    if b.launcher_wrapper:
        click.echo(f"launcher     {' '.join(b.launcher_wrapper)} <launcher>")
    click.echo(f"fingerprint  {b.fingerprint}")
    from acltuner.engine.build import board_engine_fingerprint
    engine, source = board_engine_fingerprint(b)
    click.echo(f"engine       {engine or '-'} ({source})")
    click.echo(f"ArmNN default threads: {b.armnn_threads}")


@board.command("detect")
@click.option("--sysfs", "root", default="/", show_default=True, metavar="ROOT",
              type=click.Path(exists=True, file_okay=False),
              help="Read ROOT/proc/cpuinfo and ROOT/sys/devices/system/cpu: a copy "
                   "recorded on a board, or / for this machine.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Also write the board file here; the board is named after the file.")
def board_detect(root: str, as_json: bool, output: str | None) -> None:
    """A board file from what a Linux kernel reports.

    Cores of the same type and clock form a cluster, ordered LITTLE to big by
    the kernel's cpu_capacity, then clock.  Check the result (a VM has no
    clocks, for one) and edit the name and description as you like.

    On a board without acltuner, record what detect reads, copy the folder
    here and point --sysfs at it:

    \b
      for f in /proc/cpuinfo /sys/devices/system/cpu/online \\
          /sys/devices/system/cpu/cpu[0-9]*/{cpu_capacity,cpufreq/cpuinfo_max_freq}; do
        [ -r $f ] && mkdir -p rec${f%/*} && cat $f > rec$f
      done

    \b
    Examples:
      acltuner board detect                      this machine, as YAML
      acltuner board detect --sysfs rec -o configs/boards/myboard.yaml
    """
    from dataclasses import replace
    from pathlib import Path

    from acltuner.board import detect, dump_yaml, save_file
    b = detect(root)
    if output:
        b = replace(b, name=Path(output).stem)
        save_file(b, output)
        click.echo(f"wrote {output} (fingerprint {b.fingerprint})", err=True)
    click.echo(json.dumps(_board_fields(b), indent=2) if as_json else dump_yaml(b), nl=as_json)


@board.command("doctor")
@click.option("--board", "board_name", default="host", show_default=True, metavar="NAME|FILE",
              help="The board file the machine is checked against.")
@host_option(help="Check this ssh host (the board) instead of this machine.")
@click.option("--sysfs", "root", default=None, metavar="ROOT",
              type=click.Path(exists=True, file_okay=False),
              help="Check a recording: ROOT/proc and ROOT/sys as a board's kernel wrote them.")
def board_doctor(board_name: str, host: str | None, root: str | None) -> None:
    """Whether a machine measures a board faithfully: one line per finding.

    Checks the cpufreq governor (performance or userspace, not one that
    scales with the load), each cluster's clock against the board file (top
    clock, a cap, the clock now), the thermal zones against their trip
    points, other processes busy on the board's cores, and that every core
    is the core type the board file says (MIDR part from /proc/cpuinfo) with
    the Arm features it lists per cluster (asimddp, asimdhp, i8mm: the
    Features line of /proc/cpuinfo).
    Lines start with `ok` or `FIX` and a FIX line ends with its fix.  `tune`
    runs the same checks first and prints the FIX lines as warnings.

    Exit status: 0 when every check is ok, 1 when a line says FIX.

    \b
    Examples:
      acltuner board doctor                              this machine
      acltuner board doctor --board odroid-n2plus --host odroid
      acltuner board doctor --board rpi4 --sysfs rec     a recording
    """
    from acltuner.app.doctor import doctor, problems
    from acltuner.board import load_board
    if host and root:
        raise click.UsageError("give --host or --sysfs, not both")
    findings = doctor(load_board(board_name), host, root)
    for f in findings:
        click.echo(f.line())
    raise SystemExit(1 if problems(findings) else 0)

"""The `acltuner` command line: one module per command or command group."""
from __future__ import annotations

import click

from acltuner import __version__
from acltuner.cli import (bench, board, build, engine, farm, plan, records, report, run, tasks,
                          tune, zoo)
from acltuner.cli.group import Group


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="acltuner")
@click.option("--allow-wrapper", is_flag=True,
              help="Let the board files this command reads (--board, configs/boards, a farm "
                   "file's boards) start their launcher through their launcher_wrapper, a "
                   "command shown before it runs.  A plan's wrapper never runs.")
def main(allow_wrapper: bool) -> None:
    """Tune and run CNN convolutions for ARM big.LITTLE boards.

    acltuner measures every convolution algorithm x GEMM micro-kernel x per-core
    work split of a model's convolutions on the target and keeps the fastest.

    \b
    A session:
      acltuner zoo resnet18 -o resnet18.onnx          a model to try (or bring your own)
      acltuner tasks resnet18.onnx                    its convolutions, merged into tasks
      acltuner tune resnet18.onnx -o r18.plan.json    search every task on this board
      acltuner run r18.plan.json --check              run the whole model with its plan
      acltuner records stats                          what the records hold (tune's)
      acltuner report r18.plan.json -o r18-report    the tuning as figures (index.html)

    \b
    Also:
      acltuner board list | show NAME | detect        the boards acltuner knows
      acltuner engine list                            what this build of the engine can run
      acltuner bench gemm | conv | search | compare   benchmarks (ratios, side by side)
      acltuner tune ... --hosts h1,h2 | --farm F.yaml   tune on many boards at once (a farm)
    """
    from acltuner.board.registry import allow_wrappers
    allow_wrappers(allow_wrapper)



for command in (engine.engine, bench.bench, records.records, board.board, build.build,
                build.deploy, farm.farm, tasks.tasks, zoo.zoo, plan.plan, tune.tune, run.run,
                report.report):
    main.add_command(command)

"""`acltuner report`: a plan and its records as a folder of figures."""
from __future__ import annotations

import click

from acltuner.cli.records import DEFAULT_RECORDS


@click.command("report")
@click.argument("plan_path", metavar="PLAN.json")
@click.option("-o", "--output", "out_dir", required=True, metavar="DIR",
              help="The folder to write index.html, the PNG figures and summary.json into: "
                   "made if missing, in a folder that must exist; checked first.")
@click.option("--records", "records_path", default=None, metavar="FILE",
              help=f"The records the plan was tuned with [default: {DEFAULT_RECORDS}].")
@click.option("--compare", "compare_path", default=None, metavar="PLAN2.json",
              help="Another plan to show side by side, node by node (another board, another "
                   "version of the model, before and after a change).")
@click.option("--ort", is_flag=True,
              help="Put onnxruntime's times beside the engine's: its whole-run latency "
                   "beside ours, the sum of its profile's nodes beside the sum of ours.")
@click.option("--profile", "profile_path", default=None, metavar="F.json",
              help="The engine's profile saved from `acltuner run PLAN --profile --json` "
                   "(with --ort: and --compare-ort), e.g. on the board with --host; by default "
                   "the report runs the plan here.")
@click.option("--repeat", default=20, show_default=True, type=click.IntRange(1),
              help="Timed runs when the report runs the plan here.")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="The tuner config the plan was tuned with, for its cost-model settings "
                   "and round size (default: configs/tuner.yaml).")
def report(plan_path, out_dir, records_path, compare_path, ort, profile_path, repeat,
           config_path):
    """Write a self-contained report of a tuned plan: open DIR/index.html.

    \b
    The figures (PNG, also listed in summary.json):
      tuning_curves   per task, the best time so far against measurements, per
                      strategy in the records; dashed: the default's time
      layer_speedups  per layer in model order, the config it runs over the
                      default, coloured by algorithm / micro-kernel, the per-core
                      weights on top; hatched: sent back to its default by the
                      in-context check (tables and summary.json say why)
      model_time      whole runs' latency, then the sum of the profile's nodes
                      by op kind; with --ort, onnxruntime's beside each: like
                      is compared with like only
      placement       big.LITTLE boards: the per-core weights, layers x cores
      cost_model      predicted against measured time (log-log) on each task's
                      last round, with Spearman's rank correlation; the model is
                      refitted from the records, which keep no predictions
      compare         with --compare, both plans' times and speedups per node

    The page needs no network and no script.  Every file is written whole or
    not at all.  Needs matplotlib: pip install 'acltuner[report]'.

    \b
    Examples:
      acltuner report r18.plan.json --records records.jsonl -o r18-report
      acltuner run r18.plan.json --host odroid --profile --json > r18.profile.json
      acltuner report r18.plan.json --profile r18.profile.json -o r18-report
      acltuner report new.plan.json --compare old.plan.json --ort -o diff-report
    """
    from pathlib import Path

    from acltuner.report.build import Options, write_report
    from acltuner.tuner.records import default_records_path
    from acltuner.tuner.tuner_config import load_tuner_config
    options = Options(records_path=str(records_path or default_records_path()),
                      compare_path=compare_path, ort=ort, profile_path=profile_path,
                      repeat=repeat, tuner_config=load_tuner_config(config_path))
    summary = write_report(Path(out_dir), plan_path, options)
    click.echo(f"{len(summary['figures'])} figures, summary.json and "
               f"{Path(out_dir) / 'index.html'} written")

"""`acltuner records`: the tuning logs."""
from __future__ import annotations

import click

from acltuner.cli.group import Group

# tuner.records.default_records_path in words, for the help of the commands
# that read or write the records.
DEFAULT_RECORDS = "$ACLTUNER_RECORDS or ~/.cache/acltuner/records.jsonl"


@click.group(cls=Group)
def records() -> None:
    """Inspect records files: the tuning logs, one JSON line per measurement."""


@records.command("stats")
@click.argument("file", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def records_stats(file: str | None, as_json: bool) -> None:
    """Per board, engine version and task: measurements, failed ones, the best
    config and its median time, the default config's time and the speedup.

    FILE: a records file [default: the one `tune` uses, $ACLTUNER_RECORDS or
    ~/.cache/acltuner/records.jsonl].

    failed: the config could not run; incorrect: it ran with a wrong output.
    pruned: the (algorithm, kernel) branches the search stops sampling at
    random, too slow after configs/tuner.yaml's pruning.after tries (--json
    names them).  The total row adds the best and default times of the tasks that have both
    (each task once, however many nodes share it) and divides them.

    \b
    Example:
      acltuner records stats
      acltuner records stats records.jsonl
      acltuner records stats records.jsonl --json | jq '.totals'
    """
    from pathlib import Path

    from acltuner.tuner import record_stats
    from acltuner.tuner.records import RecordStore
    from acltuner.tuner.records import default_records_path
    file = file or str(default_records_path())
    if not Path(file).is_file():
        # RecordStore starts an empty log where there is none; here that is a typo.
        raise click.ClickException(f"{file}: no such records file")
    from acltuner.tuner.tuner_config import load_tuner_config
    tables = record_stats.summarize(RecordStore(file).records, load_tuner_config().pruning)
    click.echo(record_stats.render_json(*tables) if as_json else record_stats.render_text(*tables))

"""Reading a tune's records file in the tests, where a time taken again (the
noise control of tuner.yaml's measure section) must not count twice."""
from __future__ import annotations

import json
from pathlib import Path


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def latest(records: list[dict]) -> list[dict]:
    """Each measured config once, as its last record, in the order first
    measured; fails if an earlier record of a config was not one to take
    again (throttled, or spread beyond the target): nothing else is measured twice."""
    last: dict[tuple, dict] = {}
    for r in records:
        key = (r["board"], r["engine"], json.dumps(r["measure"], sort_keys=True), r["task"],
               json.dumps(r["config"], sort_keys=True))
        earlier = last.get(key)
        assert earlier is None or earlier["throttled"] or (
            earlier["ci_pct"] is not None
            and earlier["ci_pct"] > r["measure"]["ci_target_pct"]), \
            f"a configuration was measured twice: {key}"
        last[key] = r
    return list(last.values())

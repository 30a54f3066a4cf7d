"""The file doors: each turns a seed file into a damaged one and calls the
loader the CLI calls on it, in this process (as the CLI does)."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

import yaml

from acltuner.bench.fuzz.mutate import mutate_bytes, mutate_value
from acltuner.bench.fuzz.onnx_cases import onnx_case
from acltuner.bench.fuzz.seeds import Seeds


def _json_text(rng: random.Random, doc) -> bytes:
    # allow_nan: NaN and Infinity are what a hand-edited or foreign file may hold.
    text = json.dumps(doc, indent=rng.choice([None, 2]), allow_nan=True)
    if rng.random() < 0.1 and isinstance(doc, dict) and doc:
        key = rng.choice(list(doc))  # the key again, later in the object: json keeps the last
        value = json.dumps(rng.choice([None, 1, "x"]))
        text = text.rstrip()[:-1] + f', {json.dumps(key)}: {value}}}'
    return text.encode("utf-8", "surrogatepass")


def _yaml_text(rng: random.Random, doc) -> bytes:
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    if rng.random() < 0.1 and isinstance(doc, dict) and doc:
        text += f"{rng.choice(list(doc))}: 1\n"  # a duplicate key
    return text.encode("utf-8", "surrogatepass")


def _structured(rng: random.Random, seed: bytes, parse, dump) -> bytes:
    if rng.random() < 0.3:
        return mutate_bytes(rng, seed)
    return dump(rng, mutate_value(rng, parse(seed)))


def _plan(rng: random.Random, seeds: Seeds) -> tuple[bytes, str]:
    return _structured(rng, seeds.plan, json.loads, _json_text), ".plan.json"


def _records(rng: random.Random, seeds: Seeds) -> tuple[bytes, str]:
    lines = seeds.records.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    if rng.random() < 0.3:
        lines[i] = mutate_bytes(rng, lines[i])
    else:
        mutated = _json_text(rng, mutate_value(rng, json.loads(lines[i])))
        lines[i] = mutated.replace(b"\n", b" ") + b"\n"
    return b"".join(lines), ".jsonl"


def _board(rng: random.Random, seeds: Seeds) -> tuple[bytes, str]:
    return _structured(rng, rng.choice(seeds.boards), yaml.safe_load, _yaml_text), ".yaml"


def _tuner(rng: random.Random, seeds: Seeds) -> tuple[bytes, str]:
    return _structured(rng, seeds.tuner, yaml.safe_load, _yaml_text), ".yaml"


def _pins(rng: random.Random, seeds: Seeds) -> tuple[bytes, str]:
    return _structured(rng, seeds.pins, yaml.safe_load, _yaml_text), ".yaml"


def _onnx(rng: random.Random, seeds: Seeds) -> tuple[bytes, str]:
    return onnx_case(rng, seeds.model)


def _load_model(path: Path) -> None:
    from acltuner.taskgen.tasks import generate_tasks
    generate_tasks(str(path), {})


def _load_plan(path: Path) -> None:
    from acltuner.plan import load_plan
    load_plan(path)


def _load_records(path: Path) -> None:
    from acltuner.tuner.records import RecordStore
    RecordStore(path)


def _load_board(path: Path) -> None:
    from acltuner.board.registry import load_board
    load_board(path)


def _load_tuner(path: Path) -> None:
    from acltuner.tuner.tuner_config import load_tuner_config
    load_tuner_config(path)


def _load_pins(path: Path) -> None:
    from acltuner.tuner.pins import load_pins
    load_pins(path)


# name -> (makes a damaged file's bytes and suffix, loads it as the CLI does)
FILE_DOORS: dict[str, tuple[Callable, Callable[[Path], None]]] = {
    "onnx": (_onnx, _load_model),
    "plan": (_plan, _load_plan),
    "records": (_records, _load_records),
    "board": (_board, _load_board),
    "tuner": (_tuner, _load_tuner),
    "pins": (_pins, _load_pins),
}

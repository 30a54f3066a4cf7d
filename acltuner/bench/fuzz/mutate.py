"""Mutations of structured values (a parsed JSON or YAML document) and of raw
bytes, drawn from one seeded random.Random so that a case can be replayed."""
from __future__ import annotations

import copy
import math
import random
from typing import Any

# Values a checker has to refuse or bound: huge, negative, non-finite, of the
# wrong kind, deeply nested.
EXTREMES: list[Any] = [
    0, -1, 1, -(2 ** 31), 2 ** 31, 2 ** 53 + 1, 2 ** 64, -(2 ** 64), 10 ** 30, 10 ** 400,
    1e308, -1e308, 5e-324, math.nan, math.inf, -math.inf, 0.5, -0.0, True, False, None,
    "", "x" * 1000, "\u0000", "../../../../etc/passwd", "/etc/passwd", "\ud800", [], {},
    [1, 2, 3], {"a": 1}, "1", "NaN",
]


def nested(depth: int) -> Any:
    value: Any = 0
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in value: dict keys and list indexes, depth first."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, prefix + (i,))
    return found


def _replacement(rng: random.Random, old: Any) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return copy.deepcopy(rng.choice(EXTREMES))
    if roll < 0.65 and isinstance(old, (int, float)) and not isinstance(old, bool):
        return old + rng.choice([-1, 1]) * (rng.choice([1, 2, 1000]) if isinstance(old, int)
                                           else rng.random())
    if roll < 0.75:
        return nested(rng.choice([10, 50]))  # deeper ones: mutate_bytes
    if roll < 0.85 and isinstance(old, str):
        return old[:rng.randrange(len(old) + 1)] + rng.choice(["", "\x7f", "é", "\n", '"'])
    return rng.choice([str(old), [old], {"v": old}, None])


def mutate_value(rng: random.Random, doc: Any, edits: int | None = None) -> Any:
    """A deep copy of doc with 1-3 fields deleted, replaced or added."""
    doc = copy.deepcopy(doc)
    for _ in range(edits or rng.choice([1, 1, 1, 2, 3])):
        paths = _paths(doc)
        where = rng.choice(paths)
        if not where:
            doc = _replacement(rng, doc)
            continue
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        key, action = where[-1], rng.random()
        if action < 0.3:
            del parent[key]
        elif action < 0.4 and isinstance(parent, dict):
            extra = rng.choice(["extra", "schema_version", "path", key + "_"])
            # A copy: an EXTREMES list or dict put in as it is was edited
            # in place by later edits, and once put inside itself made every
            # later document circular (json.dumps stopped the fuzz).
            parent[extra] = copy.deepcopy(rng.choice(EXTREMES))
        else:
            parent[key] = _replacement(rng, parent[key])
    return doc


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """data truncated, bit-flipped, with bytes inserted or removed, or spliced."""
    roll = rng.random()
    if roll < 0.25 or not data:
        return data[:rng.randrange(len(data) + 1)]
    if roll < 0.55:
        flipped = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 8])):
            i = rng.randrange(len(flipped))
            flipped[i] ^= 1 << rng.randrange(8)
        return bytes(flipped)
    if roll < 0.75:
        i = rng.randrange(len(data) + 1)
        junk = rng.choice([b"\xff\xfe", b"\x00", b"{", b"]", b"\xc3", b"\n",
                           bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))])
        return data[:i] + junk + data[i:]
    if roll < 0.8:
        # Nesting deeper than a recursive parser's stack (the structured
        # mutations stop short of Python's recursion limit).
        i, depth = rng.randrange(len(data) + 1), rng.choice([1000, 100000])
        return data[:i] + b"[" * depth + b"]" * depth + data[i:]
    if roll < 0.9:
        i = rng.randrange(len(data))
        j = min(len(data), i + rng.randrange(1, 64))
        return data[:i] + data[j:]
    i, j = sorted(rng.randrange(len(data) + 1) for _ in range(2))
    return data[:j] + data[i:]  # a repeated stretch


def random_bytes(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size)

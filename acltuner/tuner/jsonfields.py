"""Reading the fields of the JSON files acltuner writes (records, plans).

People edit plans by hand and records files outlive acltuner versions, so every
field is checked on the way in and each problem is reported as one line naming
the field by its path, e.g. `nodes[3].config.workloads must be >= 1, got 0`.
Both files also share the timestamp format defined here.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, fields
from datetime import datetime, timezone
from typing import Any, Iterable

from acltuner.engine.config import ConvShape, ExecConfig

_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               list: "a list", dict: "an object"}
# ConvShape's annotations are strings (postponed evaluation); map them to types.
_ANNOTATIONS = {"int": int, "float": float, "str": str, "bool": bool}


class FieldError(ValueError):
    """One field that is missing, of the wrong type or out of range."""


def at(path: str, key: str | int) -> str:
    """The path of a member: `nodes` + 3 -> `nodes[3]`, `nodes[3]` + `config` ->
    `nodes[3].config`; the top level has the empty path."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    for kind in (bool, dict, list):  # bool before int: True is an int to Python
        if isinstance(value, kind):
            return _KIND_NAMES[kind]
    return repr(value)


def _is_kind(value: Any, kind: type) -> bool:
    # JSON has no separate bool and integer types mixing: true is not 1 here,
    # while 3 is a perfectly good number where a float is expected.
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def check(value: Any, path: str, kind: type, *, null: bool = False,
          minimum: float | None = None) -> Any:
    """`value` if it is of `kind` (and >= minimum), None if it is null and null
    is allowed; numbers come back as float, integers as int."""
    name = path or "the top level"
    if value is None and null:
        return None
    if not _is_kind(value, kind):
        raise FieldError(f"{name} must be {_KIND_NAMES[kind]}, got {_describe(value)}")
    if kind is float:
        value = float(value)
        if not math.isfinite(value):  # json.loads accepts NaN and Infinity
            raise FieldError(f"{name} must be a finite number, got {value}")
    if minimum is not None and value < minimum:
        raise FieldError(f"{name} must be >= {minimum:g}, got {value:g}")
    return value


def get(d: dict, key: str, path: str, kind: type, **options: Any) -> Any:
    """d[key], which must be present, checked like check()."""
    if key not in d:
        raise FieldError(f"{at(path, key)} is missing")
    return check(d[key], at(path, key), kind, **options)


def known_keys(d: dict, path: str, allowed: Iterable[str]) -> None:
    """Rejects fields the schema does not have: in a hand-edited file they are
    usually typos of ones it does."""
    unknown = sorted(set(d) - set(allowed))
    if unknown:
        raise FieldError(f"{path or 'the top level'} has unknown field(s) {', '.join(unknown)}")


def _build(cls: type, path: str, **args: Any) -> Any:
    """cls(**args), with the path in front of the checks the class does itself."""
    try:
        return cls(**args)
    except ValueError as e:
        raise FieldError(f"{path}: {e}") from None


def exec_config(value: Any, path: str) -> ExecConfig:
    d = check(value, path, dict)
    known_keys(d, path, ("algorithm", "ukernel", "core_weights", "workloads"))
    weights_path = at(path, "core_weights")
    weights = [check(w, at(weights_path, i), int, minimum=0)
               for i, w in enumerate(get(d, "core_weights", path, list))]
    return _build(ExecConfig, path, algorithm=get(d, "algorithm", path, str),
                  ukernel=get(d, "ukernel", path, str, null=True), core_weights=tuple(weights),
                  workloads=get(d, "workloads", path, int, minimum=1))


def conv_shape(value: Any, path: str) -> ConvShape:
    d = check(value, path, dict)
    shape_fields = fields(ConvShape)
    known_keys(d, path, (f.name for f in shape_fields))
    args = {f.name: get(d, f.name, path, _ANNOTATIONS.get(f.type, f.type))
            for f in shape_fields if f.name in d or f.default is MISSING}
    return _build(ConvShape, path, **args)


def now() -> str:
    """The current time as both files write it: ISO 8601, UTC, milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def timestamp(d: dict, key: str, path: str) -> str:
    text = get(d, key, path, str)
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise FieldError(f"{at(path, key)} must be an ISO 8601 time, got {text!r}") from None
    return text


def versioned(d: Any, fields, version: int) -> None:
    """A document's header: an object with only known fields and a schema_version
    this acltuner reads."""
    check(d, "", dict)
    known_keys(d, "", fields)
    found = get(d, "schema_version", "", int)
    if found != version:
        raise FieldError(f"schema_version {found} is not supported (this acltuner reads "
                         f"{version})")

"""Checking the fields of the files acltuner reads: plans and records (JSON),
the tuner config and board files (YAML).

People edit these files by hand and they outlive acltuner versions, so every
field is checked on the way in and the first problem is one line naming the
field by its path, e.g. `nodes[3].config.workloads`; the loaders put the file
in front.  The checks are the same for every format; the sentences are not
(a plan's field "must be an integer, got 1.5", a board's "expected an integer
>= 0, got string '2.0 GHz'") because users and their scripts know each
format's, so each format states its own in a Wording.  The JSON files also
share the objects and the timestamp format defined at the end.
"""
from __future__ import annotations

import difflib
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from acltuner.engine.config import ConvShape, ExecConfig

KINDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
         list: "a list", dict: "an object"}
# ConvShape's field types: its annotations are strings (postponed evaluation).
_SHAPE_KINDS = get_type_hints(ConvShape)


class FieldError(ValueError):
    """One field that is missing, unknown, of the wrong kind or out of range;
    `path` is the field's, for callers that word the file differently by field."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.path = path


def at(path: str, key: str | int) -> str:
    """The path of a member: `nodes` + 3 -> `nodes[3]`, `nodes[3]` + `config` ->
    `nodes[3].config`; the top level has the empty path."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


_FLOAT_MAX = int(sys.float_info.max)
_TOO_DEEP = "nested too deeply"


def parse_json(raw: bytes | str) -> Any:
    """json.loads, where nesting too deep for Python's parser is a ValueError
    like any other bad JSON."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


def parse_yaml(text: str) -> Any:
    """yaml.safe_load, where nesting too deep for Python is a YAMLError like
    any other bad YAML."""
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise yaml.MarkedYAMLError(problem=_TOO_DEEP) from None


def is_kind(value: Any, kind: type) -> bool:
    # Neither JSON nor YAML mixes up booleans and integers: true is not 1 here,
    # while 3 is a perfectly good number where a float is expected.
    if isinstance(value, bool):
        return kind is bool
    if kind is float:  # an integer too large for a double is not a usable number
        return isinstance(value, float) or (isinstance(value, int) and abs(value) <= _FLOAT_MAX)
    return isinstance(value, kind)


def describe(value: Any) -> str:
    """A wrong value quoted back: its kind for containers, else the value."""
    if value is None:
        return "null"
    for kind in (bool, dict, list):  # bool before int: True is an int to Python
        if isinstance(value, kind):
            return KINDS[kind]
    return repr(value)


def _bound(minimum: float | None, maximum: float | None, exclusive: bool) -> str:
    if minimum is None:
        return ""
    if maximum is None:
        return f"{'>' if exclusive else '>='} {minimum:g}"
    return f"in ({minimum:g}, {maximum:g}]" if exclusive else f"from {minimum:g} to {maximum:g}"


def _within(value: Any, minimum: float | None, maximum: float | None, exclusive: bool) -> bool:
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        return False
    return maximum is None or value <= maximum


@dataclass(frozen=True)
class Wording:
    """How one format words its problems.  `missing` and `unknown` are (path,
    problem) templates over {parent}, {field} (the member's path), {key},
    {keys} (all unknown ones) and {hint} (a close known name)."""
    line: str = "{path} {why}"
    top: str = "the top level"  # the document's own path; "" for the bare problem
    verb: str = "must be"
    kinds: Mapping[type, str] = field(default_factory=lambda: KINDS)
    shown: Callable[[Any], str] = describe
    # "an integer >= 1" as one expectation, rather than the kind first, then the range
    bound_with_kind: bool = False
    missing: tuple[str, str] = ("{field}", "is missing")
    unknown: tuple[str, str] = ("{parent}", "has unknown field(s) {keys}")

    def error(self, path: str, why: str) -> FieldError:
        where = path or self.top
        return FieldError(self.line.format(path=where, why=why) if where else why, path)

    def check(self, value: Any, path: str, kind: type, *, null: bool = False,
              minimum: float | None = None, maximum: float | None = None,
              exclusive: bool = False, nonempty: bool = False,
              choices: Iterable | None = None, what: str | None = None) -> Any:
        """`value` if it is of `kind`, within the bounds (an exclusive minimum
        with `exclusive`), non-empty and among `choices` as asked; None if it is
        null and null is allowed.  Numbers come back as float.  `what` names
        the expectation instead of the kind."""
        if value is None and null:
            return None
        noun = what or (f"a non-empty {self.kinds[kind].split(' ', 1)[1]}" if nonempty
                        else self.kinds[kind])
        bound = _bound(minimum, maximum, exclusive)
        wrong = (not is_kind(value, kind) or (nonempty and not value)
                 or (choices is not None and value not in choices))
        if not wrong and kind is float:
            value = float(value)
            if not math.isfinite(value):  # json.loads and YAML accept NaN and infinities
                raise self.error(path, f"{self.verb} a finite number, got {value}")
        if wrong or (self.bound_with_kind and not _within(value, minimum, maximum, exclusive)):
            expected = f"{noun} {bound}" if bound and self.bound_with_kind else noun
            raise self.error(path, f"{self.verb} {expected}, got {self.shown(value)}")
        if not _within(value, minimum, maximum, exclusive):
            raise self.error(path, f"{self.verb} {bound}, got {value:g}")
        return value

    def get(self, d: Mapping, key: str, path: str, kind: type, **options: Any) -> Any:
        """d[key], which must be present, checked like check()."""
        if key not in d:
            raise self._member_error(self.missing, path, key, [key], ())
        return self.check(d[key], at(path, key), kind, **options)

    def mapping(self, value: Any, path: str, known: Iterable[str] | None,
                required: Iterable[str] = ()) -> Mapping:
        """`value` as a mapping holding every `required` field and, unless
        `known` is None, no field but those: in a hand-edited file an unknown
        one is usually a typo of a known one."""
        d = self.check(value, path, dict)
        if known is not None:
            known = list(known)
            unknown = [key for key in d if key not in known]
            if unknown:
                raise self._member_error(self.unknown, path, str(unknown[0]),
                                         sorted(map(str, unknown)), known)
        for key in required:
            if key not in d:
                raise self._member_error(self.missing, path, key, [key], ())
        return d

    def _member_error(self, template: tuple[str, str], parent: str, key: str,
                      keys: list[str], known: Iterable[str]) -> FieldError:
        close = difflib.get_close_matches(key, sorted(known), n=1)
        names = {"parent": parent, "field": at(parent, keys[0]), "key": key,
                 "keys": ", ".join(keys), "hint": f" (did you mean '{close[0]}'?)" if close else ""}
        return self.error(template[0].format(**names), template[1].format(**names))


JSON = Wording()


def _build(cls: type, path: str, **args: Any) -> Any:
    """cls(**args), with the path in front of the checks the class does itself."""
    try:
        return cls(**args)
    except ValueError as e:
        raise FieldError(f"{path}: {e}", path) from None


def exec_config(value: Any, path: str) -> ExecConfig:
    d = JSON.mapping(value, path, ("algorithm", "ukernel", "core_weights", "workloads"))
    weights_path = at(path, "core_weights")
    weights = [JSON.check(w, at(weights_path, i), int, minimum=0)
               for i, w in enumerate(JSON.get(d, "core_weights", path, list))]
    return _build(ExecConfig, path, algorithm=JSON.get(d, "algorithm", path, str),
                  ukernel=JSON.get(d, "ukernel", path, str, null=True),
                  core_weights=tuple(weights),
                  workloads=JSON.get(d, "workloads", path, int, minimum=1))


def conv_shape(value: Any, path: str) -> ConvShape:
    shape_fields = fields(ConvShape)
    d = JSON.mapping(value, path, (f.name for f in shape_fields))
    args = {f.name: JSON.get(d, f.name, path, _SHAPE_KINDS[f.name])
            for f in shape_fields if f.name in d or f.default is MISSING}
    return _build(ConvShape, path, **args)


def now() -> str:
    """The current time as the JSON files write it: ISO 8601, UTC, milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def timestamp(d: Mapping, key: str, path: str) -> str:
    text = JSON.get(d, key, path, str)
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise JSON.error(at(path, key), f"must be an ISO 8601 time, got {text!r}") from None
    return text


def versioned(d: Any, known: Iterable[str], version: int) -> None:
    """A JSON document's header: an object with only known fields and a
    schema_version this acltuner reads."""
    JSON.mapping(d, "", known)
    found = JSON.get(d, "schema_version", "", int)
    if found != version:
        raise FieldError(f"schema_version {found} is not supported (this acltuner reads "
                         f"{version})", "schema_version")


def read_versioned_json(path: str | os.PathLike, version: int) -> dict:
    """A JSON file holding an object of this schema_version; ValueError, one
    line naming the file, for anything else (unreadable, not JSON, another
    version).  The caller checks the fields."""
    path = Path(path)
    try:
        data = parse_json(path.read_bytes())
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise ValueError(f"{path}: not valid JSON: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict) or data.get("schema_version") != version:
        got = data.get("schema_version") if isinstance(data, dict) else data
        raise ValueError(f"{path}: schema_version: must be {version}, got {got!r}")
    return data

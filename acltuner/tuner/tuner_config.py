"""The tuner's settings: configs/tuner.yaml, validated, with overrides merged.

Every problem is one ValueError line naming the file and the field, e.g.
"configs/tuner.yaml: search.trials: must be an integer >= 1, got 'ten'", because
the tune command prints it as is.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from acltuner.paths import configs_dir
from acltuner.tuner.runner import MeasureOptions

DEFAULT_PATH = configs_dir() / "tuner.yaml"
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class SearchSettings:
    initial_random: int
    top_k: int
    random_per_round: int
    trials: int
    early_stopping: int | None
    candidates_per_round: int

    @property
    def batch(self) -> int:
        """Configs measured per round."""
        return self.top_k + self.random_per_round


@dataclass(frozen=True)
class MeasureSettings:
    cache: str  # "warm" or "cold"
    evict_factor: float
    evict_max_mb: float
    warmup: int
    min_repeat_ms: float
    min_repeats: int
    max_repeats: int

    def options(self, largest_cache_bytes: int) -> MeasureOptions:
        """The launcher's measure options on a machine whose largest cache is
        largest_cache_bytes (0: unknown, evict the most allowed)."""
        evict = 0
        if self.cache == "cold":
            most = int(self.evict_max_mb * 2**20)
            evict = min(most, int(self.evict_factor * largest_cache_bytes) or most)
        return MeasureOptions(warmup=self.warmup, min_repeat_ms=float(self.min_repeat_ms),
                              min_repeats=self.min_repeats, max_repeats=self.max_repeats,
                              evict_bytes=max(evict, 0))


@dataclass(frozen=True)
class TunerConfig:
    xgboost: dict  # xgboost.train parameters plus num_boost_round; CostModel's argument
    search: SearchSettings
    measure: MeasureSettings


def _int(minimum: int):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            return f"must be an integer >= {minimum}"
    return check


def _number(ok, what: str):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not ok(v):
            return f"must be a number {what}"
    return check


def _string(v):
    if not isinstance(v, str) or not v:
        return "must be a non-empty string"


def _optional(check):
    return lambda v: None if v is None else check(v)


_XGBOOST = {
    "objective": _string, "eval_metric": _string,
    "learning_rate": _number(lambda v: v > 0, "> 0"), "max_depth": _int(0),
    "min_child_weight": _number(lambda v: v >= 0, ">= 0"),
    "gamma": _number(lambda v: v >= 0, ">= 0"), "reg_alpha": _number(lambda v: v >= 0, ">= 0"),
    "subsample": _number(lambda v: 0 < v <= 1, "in (0, 1]"),
    "colsample_bytree": _number(lambda v: 0 < v <= 1, "in (0, 1]"),
    "num_boost_round": _int(1), "nthread": _int(1),
}
_MEASURE = {
    "cache": lambda v: None if v in ("warm", "cold") else "must be warm or cold",
    "evict_factor": _number(lambda v: v > 0, "> 0"),
    "evict_max_mb": _number(lambda v: 0 < v <= 16384, "in (0, 16384]"),
    "warmup": _int(0), "min_repeat_ms": _number(lambda v: v >= 0, ">= 0"),
    "min_repeats": _int(1), "max_repeats": _int(1),
}
_SEARCH = {
    "initial_random": _int(0), "top_k": _int(0), "random_per_round": _int(0),
    "trials": _int(1), "early_stopping": _optional(_int(1)), "candidates_per_round": _int(1),
}


def _merge(base: Mapping, overrides: Mapping) -> dict:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_tuner_config(path: str | Path | None = None,
                      overrides: Mapping | None = None) -> TunerConfig:
    """Reads path (default configs/tuner.yaml) and applies overrides, a mapping
    shaped like the file, e.g. {"search": {"trials": 200, "early_stopping": 5}};
    the merged result is validated as a whole."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"{path}: must be a mapping with schema_version, xgboost, search and "
                         f"measure")
    data = _merge(raw, overrides or {})

    def fail(field: str, why: str):
        node, missing = overrides or {}, object()
        for part in field.split("."):
            node = node.get(part, missing) if isinstance(node, Mapping) else missing
        where = str(path) if node is missing else f"{path} (overridden)"
        raise ValueError(f"{where}: {field}: {why}")

    if data.get("schema_version") != SCHEMA_VERSION:
        fail("schema_version", f"must be {SCHEMA_VERSION}, got {data.get('schema_version')!r}")
    unknown = set(data) - {"schema_version", "xgboost", "search", "measure"}
    if unknown:
        fail(sorted(unknown)[0], "unknown field")
    sections = {}
    for section, checks, open_ended in (("xgboost", _XGBOOST, True), ("search", _SEARCH, False),
                                        ("measure", _MEASURE, False)):
        values = data.get(section)
        if not isinstance(values, Mapping):
            fail(section, "must be a mapping")
        for key, check in checks.items():
            if key not in values:
                fail(f"{section}.{key}", "missing")
            why = check(values[key])
            if why:
                fail(f"{section}.{key}", f"{why}, got {values[key]!r}")
        for key in sorted(set(values) - set(checks)):
            # xgboost takes more parameters than Table 6's; they pass through.
            if not open_ended:
                fail(f"{section}.{key}", "unknown field")
            if not isinstance(values[key], (str, int, float, bool)):
                fail(f"{section}.{key}", f"must be a scalar, got {values[key]!r}")
        sections[section] = dict(values)
    search = SearchSettings(**sections["search"])
    if search.batch < 1:
        fail("search.top_k", "top_k + random_per_round must be >= 1")
    if search.candidates_per_round < search.top_k:
        fail("search.candidates_per_round", f"must be >= top_k ({search.top_k}), "
             f"got {search.candidates_per_round}")
    measure = MeasureSettings(**sections["measure"])
    if measure.max_repeats < measure.min_repeats:
        fail("measure.max_repeats", f"must be >= min_repeats ({measure.min_repeats}), "
             f"got {measure.max_repeats}")
    return TunerConfig(xgboost=sections["xgboost"], search=search, measure=measure)

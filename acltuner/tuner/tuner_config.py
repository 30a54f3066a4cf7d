"""The tuner's settings: configs/tuner.yaml, validated, with overrides merged.

Every problem is one ValueError line naming the file and the field, e.g.
"configs/tuner.yaml: search.trials: must be an integer >= 1, got 'ten'", because
the tune command prints it as is.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from acltuner.engine.measure_options import MeasureOptions
from acltuner.paths import configs_dir
from acltuner.validate import KINDS, FieldError, Wording, at, describe, parse_yaml

DEFAULT_PATH = configs_dir() / "tuner.yaml"
SCHEMA_VERSION = 4
# What each older version lacks, for the error that names it.
_OLDER = {3: "version 3 had no transfer and pruning sections, search.score_all_below nor "
             "measure.realtime: add them from the shipped configs/tuner.yaml"}


@dataclass(frozen=True)
class SearchSettings:
    initial_random: int
    top_k: int
    random_per_round: int
    trials: int
    early_stopping: int | None
    candidates_per_round: int
    score_all_below: int

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
    ci_target_pct: float
    max_repeat_ms: float
    cooldown_ms: float
    realtime: bool  # the launcher at the lowest real-time priority (its "realtime" request)

    def options(self, largest_cache_bytes: int) -> MeasureOptions:
        """The launcher's measure options on a machine whose largest cache is
        largest_cache_bytes (0: unknown, evict the most allowed)."""
        evict = 0
        if self.cache == "cold":
            most = int(self.evict_max_mb * 2**20)
            evict = min(most, int(self.evict_factor * largest_cache_bytes) or most)
        # The other options are the settings of their name, of the option's
        # kind (YAML's 30 is 30.0).
        defaults = MeasureOptions()
        given = {f.name: type(getattr(defaults, f.name))(getattr(self, f.name))
                 for f in fields(MeasureOptions) if f.name != "evict_bytes"}
        return MeasureOptions(**given, evict_bytes=max(evict, 0))


@dataclass(frozen=True)
class TransferSettings:
    min_tasks: int      # --transfer auto uses the model when the records hold this many other tasks
    initial: int        # the first batch: the transfer model's best-ranked configs
    decay: float        # the prior's weight: decay / (decay + the task's own measurements)
    # TransferModel's parameters: xgboost's, num_boost_round, refresh_rounds, max_trees
    xgboost: dict


@dataclass(frozen=True)
class PruningSettings:
    after: int | None   # measurements of a branch before it may be pruned; null: off
    margin_pct: float   # pruned when its best is this much slower than the task's best


@dataclass(frozen=True)
class TunerConfig:
    xgboost: dict  # xgboost.train parameters plus num_boost_round; CostModel's argument
    search: SearchSettings
    measure: MeasureSettings
    transfer: TransferSettings
    pruning: PruningSettings


_WORDING = Wording(line="{path}: {why}", top="", kinds={**KINDS, dict: "a mapping"},
                   bound_with_kind=True, missing=("{field}", "missing"),
                   unknown=("{field}", "unknown field"))
_POSITIVE = {"kind": float, "minimum": 0, "exclusive": True}
_NOT_NEGATIVE = {"kind": float, "minimum": 0}
_FRACTION = {"kind": float, "minimum": 0, "maximum": 1, "exclusive": True}
_NAME = {"kind": str, "nonempty": True}


def _integer(minimum: int, **options) -> dict:
    return {"kind": int, "minimum": minimum, **options}


# Each field's check() arguments.
_XGBOOST = {
    "objective": _NAME, "eval_metric": _NAME, "learning_rate": _POSITIVE,
    "max_depth": _integer(0), "min_child_weight": _NOT_NEGATIVE, "gamma": _NOT_NEGATIVE,
    "reg_alpha": _NOT_NEGATIVE, "subsample": _FRACTION, "colsample_bytree": _FRACTION,
    "num_boost_round": _integer(1), "nthread": _integer(1),
}
_MEASURE = {
    "cache": {"kind": str, "choices": ("warm", "cold"), "what": "warm or cold"},
    "evict_factor": _POSITIVE,
    "evict_max_mb": {**_FRACTION, "maximum": 16384},
    "warmup": _integer(0), "min_repeat_ms": _NOT_NEGATIVE,
    "min_repeats": _integer(1), "max_repeats": _integer(1),
    "ci_target_pct": _NOT_NEGATIVE, "max_repeat_ms": _NOT_NEGATIVE, "cooldown_ms": _NOT_NEGATIVE,
    "realtime": {"kind": bool},
}
_SEARCH = {
    "initial_random": _integer(0), "top_k": _integer(0), "random_per_round": _integer(0),
    "trials": _integer(1), "early_stopping": _integer(1, null=True),
    "candidates_per_round": _integer(1), "score_all_below": _integer(0),
}
_TRANSFER = {"min_tasks": _integer(1), "initial": _integer(1), "decay": _NOT_NEGATIVE,
             "num_boost_round": _integer(1), "refresh_rounds": _integer(1),
             "max_trees": _integer(1), "max_depth": _integer(1), "learning_rate": _POSITIVE,
             "min_child_weight": _NOT_NEGATIVE, "subsample": _FRACTION,
             "colsample_bytree": _FRACTION, "nthread": _integer(1)}
_PRUNING = {"after": _integer(1, null=True), "margin_pct": _NOT_NEGATIVE}


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
        raw = parse_yaml(path.read_text())
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"{path}: must be a mapping with schema_version, xgboost, search, "
                         f"measure, transfer and pruning")
    data = _merge(raw, overrides or {})
    try:
        return _parse(data)
    except FieldError as e:
        node, missing = overrides or {}, object()
        for part in e.path.split("."):
            node = node.get(part, missing) if isinstance(node, Mapping) else missing
        where = str(path) if node is missing else f"{path} (overridden)"
        raise ValueError(f"{where}: {e}") from None


def _section(data: Mapping, name: str, checks: dict, open_ended: bool) -> dict:
    # xgboost takes more parameters than Table 6's; they pass through.
    values = _WORDING.mapping(_WORDING.get(data, name, "", dict), name,
                              None if open_ended else checks)
    section = {key: _WORDING.get(values, key, name, **options) for key, options in checks.items()}
    for key in sorted(set(values) - set(checks)):
        if not isinstance(values[key], (str, int, float, bool)):
            raise _WORDING.error(at(name, key), f"must be a scalar, got {describe(values[key])}")
        section[key] = values[key]
    return section


def _parse(data: Mapping) -> TunerConfig:
    version = data.get("schema_version")
    if isinstance(version, int) and version in _OLDER:
        raise _WORDING.error("schema_version", f"must be {SCHEMA_VERSION}, got {version}; "
                                               f"{_OLDER[version]}")
    _WORDING.check(data.get("schema_version"), "schema_version", int, choices=(SCHEMA_VERSION,),
                   what=str(SCHEMA_VERSION))
    _WORDING.mapping(data, "", ("schema_version", "xgboost", "search", "measure", "transfer",
                                "pruning"))
    xgboost = _section(data, "xgboost", _XGBOOST, True)
    search = SearchSettings(**_section(data, "search", _SEARCH, False))
    if search.batch < 1:
        raise _WORDING.error("search.top_k", "top_k + random_per_round must be >= 1")
    if search.candidates_per_round < search.top_k:
        raise _WORDING.error("search.candidates_per_round", f"must be >= top_k ({search.top_k}), "
                                                            f"got {search.candidates_per_round}")
    measure = MeasureSettings(**_section(data, "measure", _MEASURE, False))
    if measure.max_repeats < measure.min_repeats:
        raise _WORDING.error("measure.max_repeats", f"must be >= min_repeats "
                                                    f"({measure.min_repeats}), "
                                                    f"got {measure.max_repeats}")
    t = _section(data, "transfer", _TRANSFER, False)
    transfer = TransferSettings(min_tasks=t.pop("min_tasks"), initial=t.pop("initial"),
                                decay=float(t.pop("decay")),
                                xgboost={"objective": "reg:squarederror", **t})
    pruning = PruningSettings(**_section(data, "pruning", _PRUNING, False))
    return TunerConfig(xgboost=xgboost, search=search, measure=measure, transfer=transfer,
                       pruning=pruning)

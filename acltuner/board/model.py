"""A board as data: its CPU clusters (LITTLE to big), ISA and build flags.

Boards are YAML files (configs/boards/*.yaml, schema_version 1), so a new board
is a file, not code.  `Board.from_dict` checks a file's fields and reports the
first problem as one line naming the file and the field."""
from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from acltuner.board.features import FEATURES, canonical
from acltuner.one_line import OneLineError
from acltuner.validate import KINDS, FieldError, Wording, at, is_kind

SCHEMA_VERSION = 1
ISAS = ("aarch64", "x86_64")


class BoardError(OneLineError):
    """An unusable board description: one line, naming the source and the field."""


@dataclass(frozen=True)
class Cluster:
    name: str
    core_type: str
    cpus: tuple[int, ...]
    max_freq_mhz: int  # 0 when the kernel does not say (a VM without cpufreq)
    capacity: int | None = None  # the kernel's cpu_capacity (1024 = the fastest core)
    # The tracked Arm features (board/features.py); None: not known, as in a
    # board file older than the field or an x86 machine.
    features: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Board:
    name: str
    isa: str
    clusters: tuple[Cluster, ...]
    compiler_flags: list[str] = field(default_factory=list)
    launcher_wrapper: list[str] = field(default_factory=list)
    description: str = ""
    # A wrapper is a command this machine (or the board, over ssh) runs: only
    # one from a board file here, loaded with the user's opt-in, is ever run.
    wrapper_allowed: bool = field(default=False, compare=False, repr=False)

    @property
    def ncores(self) -> int:
        """Cpu ids run 0..ncores-1; ids missing from every cluster (offline cores) stay unused."""
        return max(cpu for c in self.clusters for cpu in c.cpus) + 1

    @property
    def cluster_of(self) -> list[int]:
        """For each cpu id, the index of its cluster (-1 for an id in no cluster)."""
        out = [-1] * self.ncores
        for i, c in enumerate(self.clusters):
            for cpu in c.cpus:
                out[cpu] = i
        return out

    @property
    def armnn_threads(self) -> int:
        """ArmNN's default thread count: the smallest cluster's core count (paper, Appendix B.1)."""
        return min(len(c.cpus) for c in self.clusters)

    @property
    def fingerprint(self) -> str:
        """Short hash of what measurements depend on, and of the wrapper the
        launcher runs through (left out when none, as before it counted);
        names and descriptions are only labels."""
        canonical = {"isa": self.isa, "clusters": [
            {"core_type": c.core_type, "cpus": list(c.cpus), "max_freq_mhz": c.max_freq_mhz}
            for c in self.clusters]}
        if self.launcher_wrapper:
            canonical["launcher_wrapper"] = list(self.launcher_wrapper)
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def wrapper(self) -> list[str]:
        """The launcher_wrapper to start the launcher through: refused in one
        line unless it came from a board file with the user's opt-in (never
        from a plan or a farm's answer)."""
        if self.launcher_wrapper and not self.wrapper_allowed:
            raise BoardError(f"board {self.name} starts its launcher through the command "
                             f"`{shlex.join(self.launcher_wrapper)}` (launcher_wrapper): "
                             f"it runs only from a board file on this machine, with "
                             f"acltuner --allow-wrapper (a plan's is never run: give --board)")
        return list(self.launcher_wrapper)

    def to_dict(self) -> dict:
        clusters = []
        for c in self.clusters:
            d = {"name": c.name, "core_type": c.core_type, "cpus": list(c.cpus),
                 "max_freq_mhz": c.max_freq_mhz}
            if c.capacity is not None:
                d["capacity"] = c.capacity
            if c.features is not None:
                d["features"] = list(c.features)
            clusters.append(d)
        return {"schema_version": SCHEMA_VERSION, "name": self.name,
                "description": self.description, "isa": self.isa, "clusters": clusters,
                "compiler_flags": list(self.compiler_flags),
                "launcher_wrapper": list(self.launcher_wrapper)}

    @classmethod
    def from_dict(cls, data, source: str = "<board>") -> Board:
        try:
            return _board(data)
        except FieldError as e:
            raise BoardError(f"{source}: {e}") from None


def speed_order(clusters: Sequence[Cluster]) -> list[Cluster]:
    """Clusters LITTLE to big: by capacity when every cluster has one (it folds in
    both the core's speed per clock and its clock), then by max frequency; ties
    by first cpu, so that the order is unique."""
    use_capacity = all(c.capacity is not None for c in clusters)
    return sorted(clusters, key=lambda c: (c.capacity if use_capacity else 0,
                                           c.max_freq_mhz, min(c.cpus)))


_BOARD_FIELDS = ("schema_version", "name", "description", "isa", "clusters", "compiler_flags",
                 "launcher_wrapper")
_BOARD_REQUIRED = ("schema_version", "name", "isa", "clusters")
_CLUSTER_FIELDS = ("name", "core_type", "cpus", "max_freq_mhz", "capacity", "features")
_CLUSTER_REQUIRED = ("name", "core_type", "cpus", "max_freq_mhz")

_YAML_KINDS = {bool: "boolean", int: "integer", float: "number", str: "string",
               list: "list", dict: "mapping", type(None): "nothing (null)"}


def _shown(value) -> str:
    """How a wrong value is quoted back: its YAML kind, and the value when short."""
    kind = _YAML_KINDS.get(type(value), type(value).__name__)
    text = repr(value)
    return kind if value is None or len(text) > 40 else f"{kind} {text}"


_WORDING = Wording(line="{path}: {why}", top="", verb="expected",
                   kinds={**KINDS, dict: "a mapping of fields"}, shown=_shown,
                   bound_with_kind=True, missing=("{parent}", "missing field '{key}'"),
                   unknown=("{parent}", "unknown field '{key}'{hint}"))


def _strings(value, where: str) -> list[str]:
    items = _WORDING.check(value, where, list, what="a list of strings")
    return [_WORDING.check(v, at(where, i), str, nonempty=True) for i, v in enumerate(items)]


def _cluster(data, where: str) -> Cluster:
    d = _WORDING.mapping(data, where, _CLUSTER_FIELDS, _CLUSTER_REQUIRED)
    cpus = _WORDING.check(d["cpus"], at(where, "cpus"), list, nonempty=True,
                          what="a non-empty list of cpu ids")
    return Cluster(
        name=_WORDING.check(d["name"], at(where, "name"), str, nonempty=True),
        core_type=_WORDING.check(d["core_type"], at(where, "core_type"), str, nonempty=True),
        cpus=tuple(_WORDING.check(c, at(at(where, "cpus"), i), int, minimum=0)
                   for i, c in enumerate(cpus)),
        max_freq_mhz=_WORDING.check(d["max_freq_mhz"], at(where, "max_freq_mhz"), int,
                                    minimum=0),
        capacity=_WORDING.check(d.get("capacity"), at(where, "capacity"), int, null=True,
                                minimum=1, maximum=1024),
        features=_features(d.get("features"), at(where, "features")))


def _features(value, where: str) -> tuple[str, ...] | None:
    """Optional, so that files written before the field still load."""
    if value is None:
        return None
    names = _WORDING.check(value, where, list, what="a list of feature names")
    for i, name in enumerate(names):
        _WORDING.check(name, at(where, i), str, choices=FEATURES,
                       what=f"one of {', '.join(FEATURES)}")
        if name in names[:i]:
            raise _WORDING.error(at(where, i), f"'{name}' is listed twice")
    return canonical(names)


def _board(data) -> Board:
    d = _WORDING.mapping(data, "", _BOARD_FIELDS, _BOARD_REQUIRED)
    version = d["schema_version"]
    if not is_kind(version, int) or version != SCHEMA_VERSION:
        raise _WORDING.error("schema_version", f"unsupported version {version!r} "
                                               f"(this acltuner reads {SCHEMA_VERSION})")
    isa = _WORDING.check(d["isa"], "isa", str, choices=ISAS, what=f"one of {', '.join(ISAS)}")
    raw = _WORDING.check(d["clusters"], "clusters", list, nonempty=True,
                         what="a non-empty list of clusters")
    clusters = tuple(_cluster(c, f"clusters[{i}]") for i, c in enumerate(raw))
    _check_clusters(clusters)
    return Board(name=_WORDING.check(d["name"], "name", str, nonempty=True), isa=isa,
                 clusters=clusters,
                 compiler_flags=_strings(d.get("compiler_flags", []), "compiler_flags"),
                 launcher_wrapper=_strings(d.get("launcher_wrapper", []), "launcher_wrapper"),
                 description=_WORDING.check(d.get("description", ""), "description", str))


def _check_clusters(clusters: tuple[Cluster, ...]) -> None:
    """Each cpu in one cluster, names unique, and LITTLE to big as the tuner assumes."""
    owner: dict[int, int] = {}
    names: dict[str, int] = {}
    for i, c in enumerate(clusters):
        for cpu in c.cpus:
            if cpu in owner:
                also = "" if owner[cpu] == i else f" (also in clusters[{owner[cpu]}])"
                raise _WORDING.error(f"clusters[{i}].cpus", f"cpu {cpu} is listed twice{also}")
            owner[cpu] = i
        if c.name in names:
            raise _WORDING.error(f"clusters[{i}].name", f"'{c.name}' is also the name of "
                                                        f"clusters[{names[c.name]}]")
        names[c.name] = i
    ordered = speed_order(clusters)
    if list(clusters) != ordered:
        raise _WORDING.error("clusters", "not ordered LITTLE to big (by capacity, then "
                                         "max_freq_mhz): expected "
                                         + ", ".join(c.name for c in ordered))

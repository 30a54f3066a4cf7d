"""A board as data: its CPU clusters (LITTLE to big), ISA and build flags.

Boards are YAML files (configs/boards/*.yaml, schema_version 1), so a new board
is a file, not code.  `Board.from_dict` checks a file's fields and reports the
first problem as one line naming the file and the field."""
from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

SCHEMA_VERSION = 1
ISAS = ("aarch64", "x86_64")


class BoardError(ValueError):
    """An unusable board description: one line, naming the source and the field."""


@dataclass(frozen=True)
class Cluster:
    name: str
    core_type: str
    cpus: tuple[int, ...]
    max_freq_mhz: int  # 0 when the kernel does not say (a VM without cpufreq)
    capacity: int | None = None  # the kernel's cpu_capacity (1024 = the fastest core)


@dataclass(frozen=True)
class Board:
    name: str
    isa: str
    clusters: tuple[Cluster, ...]
    compiler_flags: list[str] = field(default_factory=list)
    launcher_wrapper: list[str] = field(default_factory=list)
    description: str = ""

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
        """Short hash of what measurements depend on; names and descriptions are only labels."""
        canonical = {"isa": self.isa, "clusters": [
            {"core_type": c.core_type, "cpus": list(c.cpus), "max_freq_mhz": c.max_freq_mhz}
            for c in self.clusters]}
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        clusters = []
        for c in self.clusters:
            d = {"name": c.name, "core_type": c.core_type, "cpus": list(c.cpus),
                 "max_freq_mhz": c.max_freq_mhz}
            if c.capacity is not None:
                d["capacity"] = c.capacity
            clusters.append(d)
        return {"schema_version": SCHEMA_VERSION, "name": self.name,
                "description": self.description, "isa": self.isa, "clusters": clusters,
                "compiler_flags": list(self.compiler_flags),
                "launcher_wrapper": list(self.launcher_wrapper)}

    @classmethod
    def from_dict(cls, data, source: str = "<board>") -> Board:
        return _Checker(source).board(data)


def speed_order(clusters: Sequence[Cluster]) -> list[Cluster]:
    """Clusters LITTLE to big: by capacity when every cluster has one (it folds in
    both the core's speed per clock and its clock), then by max frequency; ties
    by first cpu, so that the order is unique."""
    use_capacity = all(c.capacity is not None for c in clusters)
    return sorted(clusters, key=lambda c: (c.capacity if use_capacity else 0,
                                           c.max_freq_mhz, min(c.cpus)))


_BOARD_FIELDS = {"schema_version", "name", "description", "isa", "clusters",
                 "compiler_flags", "launcher_wrapper"}
_BOARD_REQUIRED = ("schema_version", "name", "isa", "clusters")
_CLUSTER_FIELDS = {"name", "core_type", "cpus", "max_freq_mhz", "capacity"}
_CLUSTER_REQUIRED = ("name", "core_type", "cpus", "max_freq_mhz")

_YAML_KINDS = {bool: "boolean", int: "integer", float: "number", str: "string",
               list: "list", dict: "mapping", type(None): "nothing (null)"}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value) -> str:
    """How a wrong value is quoted back: its YAML kind, and the value when short."""
    kind = _YAML_KINDS.get(type(value), type(value).__name__)
    text = repr(value)
    return kind if value is None or len(text) > 40 else f"{kind} {text}"


class _Checker:
    """Builds a Board from parsed YAML, stopping at the first problem."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str) -> BoardError:
        return BoardError(f"{self.source}: {where}: {message}" if where
                          else f"{self.source}: {message}")

    def mapping(self, data, where: str, known: set[str], required: Sequence[str]) -> dict:
        if not isinstance(data, dict):
            raise self.fail(where, f"expected a mapping of fields, got {_shown(data)}")
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(str(key), sorted(known), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise self.fail(where, f"unknown field '{key}'{hint}")
        for key in required:
            if key not in data:
                raise self.fail(where, f"missing field '{key}'")
        return data

    def text(self, value, where: str, allow_empty: bool = False) -> str:
        if not isinstance(value, str) or not (value or allow_empty):
            raise self.fail(where, f"expected a non-empty string, got {_shown(value)}")
        return value

    def integer(self, value, where: str, lo: int, hi: int | None = None) -> int:
        if not _is_int(value) or value < lo or (hi is not None and value > hi):
            bound = f">= {lo}" if hi is None else f"from {lo} to {hi}"
            raise self.fail(where, f"expected an integer {bound}, got {_shown(value)}")
        return value

    def strings(self, value, where: str) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list of strings, got {_shown(value)}")
        return [self.text(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def cluster(self, data, where: str) -> Cluster:
        d = self.mapping(data, where, _CLUSTER_FIELDS, _CLUSTER_REQUIRED)
        cpus = d["cpus"]
        if not isinstance(cpus, list) or not cpus:
            raise self.fail(f"{where}.cpus", f"expected a non-empty list of cpu ids, "
                                             f"got {_shown(cpus)}")
        capacity = d.get("capacity")
        return Cluster(
            name=self.text(d["name"], f"{where}.name"),
            core_type=self.text(d["core_type"], f"{where}.core_type"),
            cpus=tuple(self.integer(c, f"{where}.cpus[{i}]", 0) for i, c in enumerate(cpus)),
            max_freq_mhz=self.integer(d["max_freq_mhz"], f"{where}.max_freq_mhz", 0),
            capacity=None if capacity is None else self.integer(
                capacity, f"{where}.capacity", 1, 1024))

    def board(self, data) -> Board:
        d = self.mapping(data, "", _BOARD_FIELDS, _BOARD_REQUIRED)
        version = d["schema_version"]
        if not _is_int(version) or version != SCHEMA_VERSION:
            raise self.fail("schema_version", f"unsupported version {version!r} "
                                              f"(this acltuner reads {SCHEMA_VERSION})")
        isa = d["isa"]
        if isa not in ISAS:
            raise self.fail("isa", f"expected one of {', '.join(ISAS)}, got {_shown(isa)}")
        raw = d["clusters"]
        if not isinstance(raw, list) or not raw:
            raise self.fail("clusters", f"expected a non-empty list of clusters, got {_shown(raw)}")
        clusters = tuple(self.cluster(c, f"clusters[{i}]") for i, c in enumerate(raw))
        self.check_clusters(clusters)
        return Board(name=self.text(d["name"], "name"), isa=isa, clusters=clusters,
                     compiler_flags=self.strings(d.get("compiler_flags", []), "compiler_flags"),
                     launcher_wrapper=self.strings(d.get("launcher_wrapper", []),
                                                   "launcher_wrapper"),
                     description=self.text(d.get("description", ""), "description",
                                           allow_empty=True))

    def check_clusters(self, clusters: tuple[Cluster, ...]) -> None:
        """Each cpu in one cluster, names unique, and LITTLE to big as the tuner assumes."""
        owner: dict[int, int] = {}
        names: dict[str, int] = {}
        for i, c in enumerate(clusters):
            for cpu in c.cpus:
                if cpu in owner:
                    also = "" if owner[cpu] == i else f" (also in clusters[{owner[cpu]}])"
                    raise self.fail(f"clusters[{i}].cpus", f"cpu {cpu} is listed twice{also}")
                owner[cpu] = i
            if c.name in names:
                raise self.fail(f"clusters[{i}].name", f"'{c.name}' is also the name of "
                                                       f"clusters[{names[c.name]}]")
            names[c.name] = i
        ordered = speed_order(clusters)
        if list(clusters) != ordered:
            raise self.fail("clusters", "not ordered LITTLE to big (by capacity, then "
                                        "max_freq_mhz): expected "
                                        + ", ".join(c.name for c in ordered))

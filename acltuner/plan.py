"""The plan: what tuning chose for every convolution node of one model.

A plan is a versioned JSON file people may read and edit, so loading it checks
every field and reports the first problem as one line naming the file and the
field.  It records the model's sha256, the board's fingerprint and the engine
it was tuned with (engine_version: the version with the build's fingerprint,
native.engine_id()); check_plan() refuses to run it against anything else
unless forced, since configs tuned for one of those are not the fastest, or
may not even run, on another.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from acltuner.atomic import write_atomic
from acltuner.board.model import Board, BoardError
from acltuner.board.registry import HOST, load_board
from acltuner.engine.config import PRECISIONS, ExecConfig
from acltuner.one_line import OneLineError
from acltuner.validate import (JSON, FieldError, at, exec_config, now, parse_json, timestamp,
                             versioned)

# Version 2 added a node's optional `pinned`, version 3 the in-context check's
# optional `in_context` and a node's `reverted`, version 4 `precision` (the
# micro-kernels tuning was allowed: fp32, or fp16 with `tune --precision
# fp16`; fp32 when absent, as in every older plan); older plans still load.
# Plans written since version 3 hold model.path relative to the plan's folder
# (older ones an absolute path, which still loads).  Version 5 added no
# field: a convolution that runs in int8 has its int8 task's key and config
# (algorithm conv_int8, its int8 kernel and split); in older plans it has
# its float task's, and runs with the first int8 kernel on that split.
# Version 6 added in_context's `nodes_ms`, the sums the check chose on.
# Version 7 added no field: a node may be a MatMul or Gemm the native graph
# computes, its config of algorithm "matmul" naming the micro-kernel of its
# product (tuner/product_search.py); older plans run every product on the
# rule's kernel.
SCHEMA_VERSION = 7
_TOP_FIELDS = ("schema_version", "model", "input_shapes", "board", "engine_version", "created",
               "strategy", "tuning", "nodes", "in_context", "precision")
_NODE_FIELDS = ("node", "task", "config", "tuned_ms", "default_ms", "default_config", "pinned",
                "reverted")
# The fields each older version did not have yet.
_LATER_FIELDS = {1: ("pinned", "reverted", "in_context", "precision"),
                 2: ("reverted", "in_context", "precision"), 3: ("precision",), 4: (), 5: (),
                 6: ()}
_REVERTED_FIELDS = ("config", "tuned_ms", "why", "in_model_ms", "default_in_model_ms")
# Why the in-context check sent a node back to its default config.
REVERT_REASONS = {"node": "slower in the model than its default",
                  "plan": "the default plan was kept"}
CANDIDATES = ("tuned", "default", "mixed")  # the plans the in-context check runs whole
_SHA256 = re.compile(r"[0-9a-f]{64}")
_HASH_CHUNK = 1 << 20


class PlanError(OneLineError):
    """A plan file that cannot be used, or a plan made for another model, board
    or engine version (one line)."""


@dataclass(frozen=True)
class Reverted:
    """The in-context check sent a node back to its default config: the tuned
    config it dropped, that config's time measured alone while tuning, why
    (a key of REVERT_REASONS), and the node's median time in the whole model
    with each config (None: not in the profile)."""
    config: ExecConfig
    tuned_ms: float | None
    why: str
    in_model_ms: float | None
    default_in_model_ms: float | None

    def to_dict(self) -> dict:
        return {"config": self.config.to_dict(), "tuned_ms": self.tuned_ms, "why": self.why,
                "in_model_ms": self.in_model_ms, "default_in_model_ms": self.default_in_model_ms}

    def describe(self) -> str:
        """Why, and the config dropped with its times, for people."""
        alone = "not measured" if self.tuned_ms is None else f"{self.tuned_ms:.3f} ms"
        in_model = "" if self.in_model_ms is None or self.default_in_model_ms is None else (
            f"; in the model {self.in_model_ms:.3f} ms, the default "
            f"{self.default_in_model_ms:.3f} ms")
        return (f"reverted to its default, {REVERT_REASONS[self.why]}: tuned {self.config} "
                f"({alone} alone{in_model})")


@dataclass(frozen=True)
class PlanNode:
    """One Conv node (or a graph product: product_search.py): the config to
    run it with and the default it replaces; `tuned_ms` is the time of
    `config`, measured alone while tuning (in the model for int8 and product
    nodes).  `pinned` is the user's choice that set the config instead of the
    search, as written (`tune --pin`, `plan edit --set`), absent from the file
    if none; `reverted`, the tuned config the in-context check replaced by the
    default."""
    node: str
    task: str
    config: ExecConfig
    default_config: ExecConfig
    tuned_ms: float | None = None
    default_ms: float | None = None
    pinned: str | None = None
    reverted: Reverted | None = None

    def to_dict(self) -> dict:
        return {"node": self.node, "task": self.task, "config": self.config.to_dict(),
                "tuned_ms": self.tuned_ms, "default_ms": self.default_ms,
                "default_config": self.default_config.to_dict(),
                **({"pinned": self.pinned} if self.pinned is not None else {}),
                **({"reverted": self.reverted.to_dict()} if self.reverted else {})}

    def revert(self, why: str, in_model_ms: float | None,
               default_in_model_ms: float | None) -> "PlanNode":
        """This node sent back to its default config, with the default's time."""
        return replace(
            self, config=self.default_config, tuned_ms=self.default_ms,
            reverted=Reverted(self.config, self.tuned_ms, why, in_model_ms, default_in_model_ms))


def times_text(times: Mapping[str, float]) -> str:
    """Plans' times as the tune and `plan show` print them: "tuned 1.000 ms, ..."."""
    return ", ".join(f"{name} {ms:.3f} ms" for name, ms in times.items())


@dataclass(frozen=True)
class InContext:
    """The in-context check's whole-model medians (ms) of the plans it ran (a
    subset of CANDIDATES, tuned and default among them), the sums of their
    nodes' medians in those runs (nodes_ms, what chose; absent in plans of
    before schema version 6, which chose on ms) and the one kept."""
    kept: str
    ms: dict[str, float]
    nodes_ms: dict[str, float] | None = None

    def to_dict(self) -> dict:
        return {"kept": self.kept, "ms": dict(self.ms),
                **({"nodes_ms": dict(self.nodes_ms)} if self.nodes_ms is not None else {})}

    def describe(self) -> str:
        text = (f"whole model (in-context check, medians): {times_text(self.ms)}; "
                f"kept the {self.kept} plan")
        if self.nodes_ms is not None:
            text += f", on its nodes' medians summed: {times_text(self.nodes_ms)}"
        return text


@dataclass(frozen=True)
class Tuning:
    """What tuning cost: wall time, the tuner's own share of it, measurements taken."""
    wall_s: float
    tuner_s: float
    measurements: int


@dataclass(frozen=True)
class Plan:
    """A tuned model: its file and inputs, the board and engine it was tuned
    on, how tuning went, and one PlanNode per Conv node."""
    model_path: str
    model_sha256: str
    input_shapes: dict[str, tuple[int, ...]]
    board_name: str
    board_fingerprint: str
    engine_version: str
    strategy: str
    tuning: Tuning
    nodes: tuple[PlanNode, ...]
    created: str = field(default_factory=now)
    # The whole board description, so a plan for a board file runs without that
    # file; None in plans written before it was recorded.
    board: Board | None = None
    # What the in-context check measured; None where it did not run.
    in_context: InContext | None = None
    # The micro-kernels tuning could choose (tuner/precision.py): "fp32", or
    # "fp16" where fp16 kernels were allowed.
    precision: str = "fp32"

    def to_dict(self) -> dict:
        return {"schema_version": SCHEMA_VERSION,
                "model": {"path": self.model_path, "sha256": self.model_sha256},
                "input_shapes": {name: list(dims) for name, dims in self.input_shapes.items()},
                "board": {"name": self.board_name, "fingerprint": self.board_fingerprint,
                          **({"description": self.board.to_dict()} if self.board else {})},
                "engine_version": self.engine_version, "created": self.created,
                "strategy": self.strategy,
                "tuning": {"wall_s": self.tuning.wall_s, "tuner_s": self.tuning.tuner_s,
                           "measurements": self.tuning.measurements},
                "nodes": [node.to_dict() for node in self.nodes],
                **({"in_context": self.in_context.to_dict()} if self.in_context else {}),
                "precision": self.precision}

    @classmethod
    def from_dict(cls, d: Any, where: str = "plan") -> "Plan":
        """Checks d against the schema; `where` (the file) starts every error."""
        try:
            return _parse(d)
        except FieldError as e:
            raise PlanError(f"{where}: {e}") from None


def _member(d: Mapping, key: str, allowed: tuple[str, ...]) -> Mapping:
    """The object d[key], holding no fields but `allowed`."""
    return JSON.mapping(JSON.get(d, key, "", dict), key, allowed)


def _parse_node(value: Any, path: str, fields: tuple[str, ...]) -> PlanNode:
    d = JSON.mapping(value, path, fields)
    node = PlanNode(node=JSON.get(d, "node", path, str), task=JSON.get(d, "task", path, str),
                    config=exec_config(JSON.get(d, "config", path, dict), at(path, "config")),
                    default_config=exec_config(JSON.get(d, "default_config", path, dict),
                                               at(path, "default_config")),
                    tuned_ms=JSON.get(d, "tuned_ms", path, float, null=True, minimum=0),
                    default_ms=JSON.get(d, "default_ms", path, float, null=True, minimum=0),
                    pinned=JSON.get(d, "pinned", path, str, nonempty=True) if "pinned" in d
                    else None,
                    reverted=_parse_reverted(d["reverted"], at(path, "reverted"))
                    if "reverted" in d else None)
    if node.reverted is not None and node.config != node.default_config:
        raise FieldError(f"{at(path, 'config')} must be its default_config: the node is marked "
                         f"reverted")
    return node


def _parse_reverted(value: Any, path: str) -> Reverted:
    d = JSON.mapping(value, path, _REVERTED_FIELDS)
    return Reverted(config=exec_config(JSON.get(d, "config", path, dict), at(path, "config")),
                    tuned_ms=JSON.get(d, "tuned_ms", path, float, null=True, minimum=0),
                    why=JSON.get(d, "why", path, str, choices=REVERT_REASONS,
                                 what=" or ".join(map(repr, REVERT_REASONS))),
                    **{key: JSON.get(d, key, path, float, null=True, minimum=0)
                       for key in ("in_model_ms", "default_in_model_ms")})


def _parse_in_context(value: Any, path: str, version: int) -> InContext:
    d = JSON.mapping(value, path, ("kept", "ms", "nodes_ms") if version >= 6 else ("kept", "ms"))

    def times(key: str) -> dict[str, float]:
        times_path = at(path, key)
        return {name: JSON.check(v, at(times_path, name), float, minimum=0)
                for name, v in JSON.mapping(JSON.get(d, key, path, dict), times_path, CANDIDATES,
                                            required=("tuned", "default")).items()}
    ms = times("ms")
    nodes_ms = times("nodes_ms") if "nodes_ms" in d else None
    if nodes_ms is not None and nodes_ms.keys() != ms.keys():
        raise FieldError(f"{at(path, 'nodes_ms')} names {', '.join(nodes_ms)}, "
                         f"{at(path, 'ms')} {', '.join(ms)}: they must name the same plans",
                         at(path, "nodes_ms"))
    return InContext(kept=JSON.get(d, "kept", path, str, choices=ms,
                                   what=" or ".join(map(repr, ms))), ms=ms, nodes_ms=nodes_ms)


def _parse(d: Any) -> Plan:
    version = d.get("schema_version") if isinstance(d, dict) else None
    if not (type(version) is int and version in _LATER_FIELDS):
        version = SCHEMA_VERSION
    later = _LATER_FIELDS.get(version, ())
    versioned(d, [f for f in _TOP_FIELDS if f not in later], version)
    node_fields = tuple(f for f in _NODE_FIELDS if f not in later)
    model = _member(d, "model", ("path", "sha256"))
    model_path = JSON.get(model, "path", "model", str)
    sha = JSON.get(model, "sha256", "model", str)
    if not _SHA256.fullmatch(sha):
        raise FieldError(f"model.sha256 must be 64 lowercase hex digits, got {sha!r}")
    input_shapes = {}
    for name, dims in JSON.get(d, "input_shapes", "", dict).items():
        path = at("input_shapes", name)
        input_shapes[name] = tuple(JSON.check(x, at(path, i), int, minimum=1)
                                   for i, x in enumerate(JSON.check(dims, path, list)))
    board = _member(d, "board", ("name", "fingerprint", "description"))
    board_name = JSON.get(board, "name", "board", str)
    board_fingerprint = JSON.get(board, "fingerprint", "board", str)
    description = None
    if "description" in board:
        try:
            description = Board.from_dict(board["description"], "board.description")
        except BoardError as e:
            raise FieldError(str(e)) from None
        if description.fingerprint != board_fingerprint:
            raise FieldError(f"board.description has fingerprint {description.fingerprint}, "
                                f"not board.fingerprint {board_fingerprint}")
    engine_version = JSON.get(d, "engine_version", "", str)
    created = timestamp(d, "created", "")
    strategy = JSON.get(d, "strategy", "", str)
    spent = _member(d, "tuning", ("wall_s", "tuner_s", "measurements"))
    tuning = Tuning(wall_s=JSON.get(spent, "wall_s", "tuning", float, minimum=0),
                    tuner_s=JSON.get(spent, "tuner_s", "tuning", float, minimum=0),
                    measurements=JSON.get(spent, "measurements", "tuning", int, minimum=0))
    nodes = tuple(_parse_node(value, at("nodes", i), node_fields)
                  for i, value in enumerate(JSON.get(d, "nodes", "", list)))
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        if node.node in seen:  # the runtime looks configs up by node name
            raise FieldError(f"nodes[{i}].node {node.node!r} appears more than once")
        seen.add(node.node)
    return Plan(model_path=model_path, model_sha256=sha, input_shapes=input_shapes,
                board_name=board_name, board_fingerprint=board_fingerprint,
                engine_version=engine_version, strategy=strategy, tuning=tuning, nodes=nodes,
                created=created, board=description,
                in_context=_parse_in_context(d["in_context"], "in_context", version)
                if "in_context" in d else None,
                precision=JSON.get(d, "precision", "", str, choices=PRECISIONS,
                                   what=" or ".join(map(repr, PRECISIONS)))
                if "precision" in d else "fp32")


def plan_board(plan: Plan, override: str | os.PathLike | None = None) -> Board:
    """The board a plan runs on: `override` (a name or board file) if given,
    else the board it was tuned for: detected again when that was this machine
    (so a plan moved elsewhere is caught by its fingerprint), else the
    description the plan recorded, else the shipped board of that name."""
    if override is not None:
        return load_board(override)
    if plan.board is not None and plan.board_name != HOST:
        return plan.board
    return load_board(plan.board_name)


def save_plan(plan: Plan, path: str | os.PathLike) -> None:
    """Writes the plan so that `path` holds either the old plan or the whole
    new one, whenever the process or the machine stops."""
    path = Path(path)
    # A plan that would not load again is refused before anything is written.
    data = plan.to_dict()
    # The model's path relative to the plan's folder: the two can move together.
    data["model"]["path"] = os.path.relpath(Path(plan.model_path).resolve(),
                                            path.parent.resolve())
    Plan.from_dict(data, f"plan to save as {path}")
    write_atomic(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def load_plan(path: str | os.PathLike) -> Plan:
    """The plan at `path`, its model path absolute: a relative one (as
    save_plan writes it) is relative to the plan's folder, an absolute one (as
    plans held before) stays."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        data = parse_json(raw)
    except ValueError as e:
        raise PlanError(f"{path}: not valid JSON: {e}") from None
    plan = Plan.from_dict(data, str(path))
    if Path(plan.model_path).is_absolute():
        return plan
    return replace(plan, model_path=str((path.parent / plan.model_path).resolve()))


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_plan(plan: Plan, model_path: str | os.PathLike, board_fingerprint: str,
               engine_id: str, force: bool = False) -> list[str]:
    """Refuses, with one PlanError line naming every difference, to run a plan
    on a model changed since tuning, another board or another engine (its
    version or its build's fingerprint: native.engine_id()).
    With force it returns those differences as warnings instead ([] if none)."""
    differences = []
    sha = sha256_file(model_path)
    if sha != plan.model_sha256:
        differences.append(f"model {model_path} changed since tuning (sha256 {sha[:12]}..., "
                           f"the plan's is {plan.model_sha256[:12]}...)")
    if board_fingerprint != plan.board_fingerprint:
        wrapper = plan.board.launcher_wrapper if plan.board is not None else []
        why = (f" (the plan's board has launcher_wrapper `{shlex.join(wrapper)}`, part of its "
               f"fingerprint, which is not run)") if wrapper else ""
        differences.append(f"plan for board {plan.board_name} ({plan.board_fingerprint}) but "
                           f"running on {board_fingerprint}{why}")
    if engine_id != plan.engine_version:
        differences.append(f"plan tuned with engine {plan.engine_version} but running engine "
                           f"{engine_id}")
    if differences and not force:
        raise PlanError("; ".join(differences) + "; use --force to run it anyway")
    return differences

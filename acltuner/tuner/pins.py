"""User pins (ai3's per-layer selection): the algorithm, and optionally the
GEMM micro-kernel, a convolution runs with, chosen by the user instead of the
search, for one node by its ONNX name or for every node of a kind.

A pin fixes only what it names: the placement and workloads are the ArmNN
rule's (armnn_default.py), and a pin without a micro-kernel gets the rule's
micro-kernel for that algorithm.  Every pin is checked against the engine that
measures (the launcher's hello and check) before anything is measured, and a
bad one is one line naming it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acltuner.armnn_default import armnn_ukernel
from acltuner.board.model import Board
from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.taskgen.int8 import INT8_ALGORITHM, is_depthwise
from acltuner.tuner.precision import allowed_ukernels
from acltuner.validate import JSON, FieldError, at, parse_yaml

PINS_SCHEMA_VERSION = 1


def _depthwise(s: ConvShape) -> bool:
    return not s.transposed and s.group == s.c and s.group > 1


# The kinds a selector names: each a test of a node's shape (its input tensor
# for "first"), the words `tune --help` shows.
KINDS: dict[str, tuple[Callable[[ConvShape, bool], bool], str]] = {
    "depthwise": (lambda s, first: _depthwise(s), "one group per input channel"),
    "grouped": (lambda s, first: not s.transposed and s.group > 1 and not _depthwise(s),
                "groups of several channels"),
    "pointwise": (lambda s, first: not s.transposed and (s.kh, s.kw) == (1, 1) and s.group == 1,
                  "1x1, not grouped"),
    "strided": (lambda s, first: not s.transposed and (s.stride_h, s.stride_w) != (1, 1),
                "stride > 1"),
    "winograd": (lambda s, first: (not s.transposed and s.kh == s.kw and 3 <= s.kh <= 6
                                   and s.group == 1
                                   and (s.stride_h, s.stride_w, s.dil_h, s.dil_w) == (1, 1, 1, 1)),
                 "3x3 to 6x6, stride 1, not dilated or grouped: what Winograd runs"),
    "first": (lambda s, first: first, "reads a model input"),
    "transposed": (lambda s, first: s.transposed, "ConvTranspose"),
}


def kinds_help() -> str:
    return "; ".join(f"{name} ({words})" for name, (_, words) in KINDS.items())


def kinds_of(shape: ConvShape, reads_model_input: bool) -> list[str]:
    return [name for name, (test, _) in KINDS.items() if test(shape, reads_model_input)]


@dataclass(frozen=True)
class Pin:
    """One pin: of `node`, or of every node of `kind`; `origin` says where the
    user wrote it, for errors ("--pin" or "FILE: pins[2]")."""
    algorithm: str
    ukernel: str | None
    node: str | None = None
    kind: str | None = None
    origin: str = "--pin"

    @property
    def target(self) -> str:
        return f"kind={self.kind}" if self.kind else str(self.node)

    @property
    def text(self) -> str:
        """The pin as --pin takes it, which plans and progress show."""
        sep = ":" if self.kind else "="
        return f"{self.target}{sep}{self.algorithm}{'/' + self.ukernel if self.ukernel else ''}"

    def error(self, why: str) -> ValueError:
        where = "pin" if self.origin == "--pin" else f"{self.origin}:"
        return ValueError(f"{where} {self.text}: {why}")


def _algorithm_kernel(text: str, where: str) -> tuple[str, str | None]:
    algorithm, slash, ukernel = text.partition("/")
    if not algorithm or "/" in ukernel or (slash and not ukernel):
        raise ValueError(f"{where}: expected ALGORITHM or ALGORITHM/KERNEL, got {text!r}")
    return algorithm, ukernel or None


def _check_kind(kind: str, where: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"{where}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    return kind


def parse_pin(text: str) -> Pin:
    """NODE=ALGORITHM[/KERNEL] or kind=KIND:ALGORITHM[/KERNEL]."""
    where = f"pin {text!r}"
    target, eq, config = text.partition("=")
    if not eq or not target:
        raise ValueError(f"{where}: expected NODE=ALGORITHM[/KERNEL] or "
                         f"kind=KIND:ALGORITHM[/KERNEL]")
    # No algorithm's name holds a colon, so kind=X:Y is a selector, never node "kind".
    if target == "kind" and ":" in config:
        kind, _, config = config.partition(":")
        return Pin(*_algorithm_kernel(config, where), kind=_check_kind(kind, where))
    return Pin(*_algorithm_kernel(config, where), node=target)


_ENTRY_FIELDS = ("node", "kind", "algorithm", "ukernel")


def _parse_entry(value: Any, path: str, origin: str) -> Pin:
    d = JSON.mapping(value, path, _ENTRY_FIELDS, required=("algorithm",))
    if ("node" in d) == ("kind" in d):
        raise FieldError(f"{path}: needs exactly one of node and kind", path)
    node = JSON.get(d, "node", path, str, nonempty=True) if "node" in d else None
    kind = JSON.get(d, "kind", path, str, choices=tuple(KINDS),
                    what=f"one of {', '.join(KINDS)}") if "kind" in d else None
    return Pin(algorithm=JSON.get(d, "algorithm", path, str, nonempty=True),
               ukernel=JSON.get(d, "ukernel", path, str, nonempty=True) if "ukernel" in d else None,
               node=node, kind=kind, origin=origin)


def load_pins(path: str | Path) -> list[Pin]:
    """A pins file: schema_version 1 and a list `pins` of {node | kind,
    algorithm, ukernel (optional)}."""
    path = Path(path)
    try:
        data = parse_yaml(path.read_text())
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    try:
        JSON.mapping(data, "", ("schema_version", "pins"), required=("schema_version", "pins"))
        JSON.get(data, "schema_version", "", int, choices=(PINS_SCHEMA_VERSION,),
                 what=str(PINS_SCHEMA_VERSION))
        entries = JSON.get(data, "pins", "", list)
        return [_parse_entry(value, at("pins", i), f"{path}: {at('pins', i)}")
                for i, value in enumerate(entries)]
    except FieldError as e:
        raise ValueError(f"{path}: {e}") from None


@dataclass(frozen=True)
class EngineRules:
    """What checks a config against the engine that measures: its algorithms
    (name -> uses a micro-kernel), micro-kernels (name -> the hello's entry),
    ISA and check(shape, algorithm, ukernel) -> None or why not."""
    algorithms: dict[str, bool]
    ukernels: dict[str, dict]
    isa: str
    check: Callable[[ConvShape, str, str | None], str | None]
    int8_ukernels: tuple[str, ...] = ()  # conv_int8's kernels, fastest first

    @classmethod
    def of(cls, client, precision: str = "fp32", board: Board | None = None) -> "EngineRules":
        """The engine's rules with the micro-kernels a tune at `precision`
        may choose on `board` (precision.allowed_ukernels; fp32 needs no board)."""
        hello = client.hello_info
        ukernels = allowed_ukernels({uk["name"]: uk for uk in hello["ukernels"]}, precision,
                                    board)
        return cls({a["name"]: a["uses_ukernel"] for a in hello["algorithms"]},
                   ukernels, hello["isa"], client.check,
                   tuple(native.hello_int8_ukernels(hello)))

    def int8_config(self, shape: ConvShape, ukernel: str | None, core_weights: Iterable[int],
                    workloads: int) -> ExecConfig:
        """The config of a convolution that runs in int8: conv_int8 with one of
        the engine's int8 kernels, or none, conv_int8's own pick (always for a
        depthwise shape, which runs a direct loop); ValueError (why) otherwise."""
        if ukernel is not None and is_depthwise(shape):
            raise ValueError(f"{INT8_ALGORITHM} runs a depthwise convolution with a direct loop "
                             f"and takes no micro-kernel")
        if ukernel is not None and ukernel not in self.int8_ukernels:
            raise ValueError(f"unknown int8 micro-kernel {ukernel!r}; this engine's: "
                             f"{', '.join(self.int8_ukernels) or 'none'}")
        return ExecConfig(INT8_ALGORITHM, ukernel, tuple(core_weights), workloads)

    def config(self, shape: ConvShape, algorithm: str, ukernel: str | None,
               core_weights: Iterable[int], workloads: int) -> ExecConfig:
        """The config, with the rule's micro-kernel for `algorithm` when
        ukernel is None; ValueError (why, without its subject) if the engine
        has no such algorithm or kernel, or cannot run `shape` with them."""
        if algorithm not in self.algorithms:
            raise ValueError(f"unknown algorithm {algorithm!r}; this engine's: "
                             f"{', '.join(self.algorithms)}")
        if not self.algorithms[algorithm]:
            if ukernel is not None:
                raise ValueError(f"{algorithm} takes no micro-kernel")
        elif ukernel is None:
            ukernel = armnn_ukernel(shape, algorithm, list(self.ukernels.values()), self.isa,
                                    self.check)
            if ukernel is None:  # every kernel refuses: the first one says why
                why = self.check(shape, algorithm, next(iter(self.ukernels)))
                raise ValueError(f"{algorithm} cannot run it: {why}")
        elif ukernel not in self.ukernels:
            raise ValueError(f"unknown micro-kernel {ukernel!r}; this engine's: "
                             f"{', '.join(self.ukernels)}")
        why = self.check(shape, algorithm, ukernel)
        if why is not None:
            raise ValueError(f"{algorithm}{'/' + ukernel if ukernel else ''} cannot run it: {why}")
        return ExecConfig(algorithm, ukernel, tuple(core_weights), workloads)


@dataclass(frozen=True)
class PinnedNode:
    config: ExecConfig
    pin: Pin


def resolve_pins(pins: Iterable[Pin], nodes: Iterable[tuple[str, ConvShape, bool]],
                 rules: EngineRules, default_of: Callable[[ConvShape], ExecConfig],
                 int8_nodes: Iterable[tuple[str, ConvShape]] = ()) -> dict[str, PinnedNode]:
    """The config of every pinned node.  nodes: (name, task shape, reads a
    model input) of the float convolutions in model order; int8_nodes: (name,
    shape) of those that run in int8, which only conv_int8[/KERNEL] pins (and
    conv_int8 pins nothing else).  A node's own pin overrides a kind's; two
    kinds pinning one node differently, a pin of the same node twice
    differently, an unknown node and a kind matching nothing are errors."""
    floats = {name: (shape, first) for name, shape, first in nodes}
    int8s = {name: (shape, False) for name, shape in int8_nodes}
    chosen: dict[str, PinnedNode] = {}
    pins = list(pins)
    own = {pin.node for pin in pins if pin.node is not None}
    for pin in pins:
        in_int8 = pin.algorithm == INT8_ALGORITHM
        pool = int8s if in_int8 else floats
        if pin.node is not None:
            if pin.node in int8s and not in_int8:
                raise pin.error(f"{pin.node} runs in int8 (a quantized model's convolution): "
                                f"pin it to {INT8_ALGORITHM} or {INT8_ALGORITHM}/KERNEL")
            if pin.node in floats and in_int8:
                raise pin.error(f"{pin.node} runs in float: {INT8_ALGORITHM} runs only the "
                                f"convolutions of a quantized model")
            if pin.node not in pool:
                raise pin.error(f"no convolution named {pin.node!r} in the model "
                                f"(its convolutions: {some_names([*floats, *int8s])})")
            matched = [pin.node]
        else:
            matched = [name for name, (shape, first) in pool.items()
                       if pin.kind in kinds_of(shape, first)]
            if not matched:
                raise pin.error(f"no {'int8 ' if in_int8 else ''}convolution of the model is "
                                f"{pin.kind}")
        for name in matched:
            if pin.kind and name in own:  # its own pin overrides the kind's
                continue
            shape, _ = pool[name]
            default = default_of(shape)
            try:
                config = (rules.int8_config(shape, pin.ukernel, default.core_weights,
                                            default.workloads) if in_int8 else
                          rules.config(shape, pin.algorithm, pin.ukernel, default.core_weights,
                                       default.workloads))
            except ValueError as e:
                raise pin.error(f"node {name}: {e}" if pin.kind else str(e)) from None
            before = chosen.get(name)
            if before is not None and before.config != config:
                raise pin.error(f"node {name} is pinned differently by {before.pin.text}")
            chosen[name] = PinnedNode(config, pin)
    return chosen


def some_names(names: Iterable[str], most: int = 8) -> str:
    names = list(names)
    listed = ", ".join(names[:most])
    return f"{listed}{', ...' if len(names) > most else ''}"

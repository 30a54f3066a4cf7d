"""Lowering: an ONNX model and its plan -> native stages and delegated segments.

The model is walked in graph order.  Convolutions come from onnx.graph's
conv_nodes (with their BatchNormalization, residual Add and Relu/Clip fused)
and run with the plan's config; chains of nodes that one operation covers
come from the patterns of ops/ (a channel shuffle); other nodes go through
the operator table (ops/); a node the table does not cover joins the current
run of delegated nodes, which becomes one onnxruntime segment, and ends the
native stage before it (a native graph runs all its operations at once).

Layouts: new 4-D activations are NHWC; every tensor keeps the layout it was
made in, and a transpose is inserted only when a consumer needs another one
(a convolution reading a tensor rebuilt by Reshape, a Flatten of a feature
map...), once per tensor and layout.  A convolution whose algorithm reads
NCHW (READS_NCHW) takes an input held in NCHW as it is: a model's image
coming from the host is then copied into the arena, not transposed there.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto

from acltuner.engine.config import ExecConfig
from acltuner.engine.graph import conv_attrs
from acltuner.onnx.activation import DEFAULT_DOMAINS
from acltuner.runtime import ops
from acltuner.runtime.ir import Buffer, Deferred, DelegatedSegment, NativeStage, Op, Stage, Value
from acltuner.runtime.layout import NHWC, Perm, identity, inverse, preferred, same_memory, then
from acltuner.runtime.ops import quant
from acltuner.runtime.ops.registry import Action, shape
from acltuner.runtime.product_kernels import PRODUCT_ALGORITHM, matmul_ukernel, target_check
from acltuner.runtime.target import Target, local_target
from acltuner.onnx.graph import ConvNode, OnnxGraph, node_name, subgraph_names, \
    conv_nodes
from acltuner.taskgen.int8 import INT8_ALGORITHM, Int8ConvNode

# The native graph API's largest rank.
MAX_RANK = 6


class Lowering:
    """The stages built so far and the tensors of the current native stage."""

    def __init__(self, model: onnx.ModelProto, target: Target,
                 weights: dict[str, np.ndarray] | None,
                 configs: dict[str, ExecConfig] | None = None):
        self.g = OnnxGraph(model, weights)
        self.target = target  # the engine the stages are for
        self.configs = configs or {}  # the plan's, by node name
        self.stages: list[Stage] = []
        self.stage = NativeStage()
        self.producer: dict[str, NativeStage] = {}  # tensors computed natively, by stage
        self.visited: set[str] = set()  # nodes lowered or delegated so far, by name
        # Nodes reading a uint8 tensor itself (conv_int8, quant.u8_chains):
        # a DequantizeLinear only they read does not run.
        self.u8_readers: set[str] = set()

    # Tensors of the current stage.

    def _register(self, name: str, value: Value) -> Value:
        self.stage.values.setdefault(name, []).append(value)
        return value

    def _produce(self, name: str, value: Value) -> Value:
        """`value` is tensor `name`, computed by this stage."""
        self.producer[name] = self.stage
        return self._register(name, value)

    def produce(self, name: str, value: Value) -> Value:
        """`value` is tensor `name`, computed by this stage (for ops/)."""
        return self._produce(name, value)

    def _export(self, name: str) -> None:
        """Tensor `name` is needed on the host: the native stage computing it (if
        one did) copies it out after running."""
        stage = self.producer.get(name)
        if stage is not None:
            stage.exports[name] = stage.values[name][0]

    def _import(self, name: str, perm: Perm | None = None) -> Value:
        """A tensor computed before this stage: copied in from the host at run time,
        in layout `perm` (None: the one new tensors get), which that copy makes."""
        self._export(name)
        dims = shape(self.g, name)
        value = Value(Buffer(math.prod(dims)), dims, preferred(len(dims)) if perm is None else perm)
        self.stage.imports[name] = value
        return self._register(name, value)

    def get(self, name: str, perm: Perm | None = None, prefer: Perm | None = None) -> Value:
        """Tensor `name` in layout `perm` (None: any), transposed now if needed.
        A tensor the stage imports comes in `perm`, else in `prefer` (None:
        the one new tensors get): a reader that wants ONNX order, as a
        MatMul's operands, gets it from the copy in, not from NHWC and a
        transpose."""
        if name in self.g.constants:
            rank = self.g.constants[name].ndim
            return self.operand(name, rank, identity(rank) if perm is None else perm)
        values = self.stage.values.get(name) or [self._import(name, perm or prefer)]
        if perm is None:
            return values[0]
        for v in values:
            if v.perm == perm:
                return v
        return self._register(name, self.convert(values[0], perm, f"{name} (layout)"))

    def convert(self, value: Value, perm: Perm, label: str) -> Value:
        """`value` in layout `perm`: the same buffer when that moves no data."""
        q = then(inverse(value.perm), perm)
        if same_memory(value.dims, q):
            return value.relabel(value.shape, perm)
        out = Value(Buffer(value.size), value.shape, perm)
        self.emit("transpose", label, "transpose", {"x": value, "out": out}, perm=q)
        return out

    def operand(self, name: str, rank: int, perm: Perm) -> Value:
        """Tensor `name` broadcast to `rank` (leading 1s, as numpy) in layout `perm`."""
        if name in self.g.constants:
            key = (name, rank, perm)  # each constant once per stage and layout
            if key not in self.stage.constant_values:
                data = self.g.constants[name]
                padded = data.reshape((1,) * (rank - data.ndim) + data.shape)
                self.stage.constant_values[key] = self.constant(padded, perm)
            return self.stage.constant_values[key]
        value = self.get(name)
        if len(value.shape) == rank:
            return self.get(name, perm)
        plain = self.get(name, identity(len(value.shape)))
        dims = (1,) * (rank - len(plain.shape)) + plain.shape
        return self.convert(plain.relabel(dims, identity(rank)), perm,
                            f"{name} (broadcast layout)")

    def constant(self, data: np.ndarray, perm: Perm) -> Value:
        """A constant in the arena (float32, laid out in `perm`), for the program's lifetime."""
        data = np.asarray(data, dtype=np.float32)
        buffer = Buffer(data.size, np.ascontiguousarray(data.transpose(perm)))
        self.stage.constants.append(buffer)
        return Value(buffer, data.shape, perm)

    def new(self, name: str | None, shape: tuple[int, ...], perm: Perm) -> Value:
        """A fresh buffer for tensor `name` (None: a temporary)."""
        value = Value(Buffer(math.prod(shape)), tuple(shape), perm)
        return value if name is None else self._produce(name, value)

    @staticmethod
    def view(value: Value, dims: tuple[int, ...]) -> Value:
        """The buffer of `value`, in its layout's order, seen with other dims."""
        return value.relabel(dims, identity(len(dims)))

    def alias(self, name: str, value: Value) -> Value:
        """Tensor `name` is `value` (Identity, Dropout, a Reshape that moves nothing)."""
        return self._produce(name, value)

    def emit(self, kind: str, node: str, what: str, tensors: dict, **args) -> None:
        self.stage.ops.append(Op(kind, node, what, tensors, args))

    def emit_product(self, product: tuple[int, int, int, int], kind: str, node: str, what: str,
                     tensors: dict, **args) -> None:
        """emit() for a product whose kernel the plan may choose: (batches, M, K, N)."""
        self.stage.ops.append(Op(kind, node, what, tensors, args, product))

    def product_ukernel(self, node: str, m: int, k: int, n: int) -> str:
        """The micro-kernel of node's M x K x N product: the plan's choice
        (a config of PRODUCT_ALGORITHM), else the rule's (matmul_ukernel)."""
        config = self.configs.get(node)
        if config is None or config.algorithm != PRODUCT_ALGORITHM:
            return matmul_ukernel(m, k, n, self.target)
        ukernel = config.ukernel
        why = target_check(self.target, m, k, n, ukernel)
        if why or ukernel is None:
            raise ValueError(f"node {node}: its config {config} cannot run its {m}x{k}x{n} "
                             f"product here: {why or 'it names no micro-kernel'}")
        return ukernel

    # Stages.

    def _close_stage(self) -> None:
        if self.stage.ops or self.stage.exports or self.stage.imports:
            self.stages.append(self.stage)
        self.stage = NativeStage()

    def delegate(self, nodes: list[onnx.NodeProto]) -> None:
        quant.flush(self)  # uint8 tensors stay in this stage: their float forms still needed
        produced = {t for n in nodes for t in n.output if t}
        members = {id(n) for n in nodes}
        inputs: list[str] = []
        for n in nodes:
            for t in [*n.input, *sorted(subgraph_names(n))]:
                if t and t not in produced and t not in self.g.constants and t not in inputs:
                    inputs.append(t)
        outputs = [t for n in nodes for t in n.output if t and (
            t in self.g.outputs or any(id(c) not in members for c in self.g.consumers[t]))]
        for t in inputs:
            self._export(t)
        for t in outputs:
            self.producer.pop(t, None)
        self._close_stage()
        self.stages.append(DelegatedSegment(nodes, inputs, outputs))

    def finish(self) -> list[Stage]:
        for t in self.g.outputs:
            self._export(t)
        self._close_stage()
        return self.stages


# The algorithms that read an NCHW input (the engine's conv_read_nchw).
READS_NCHW = frozenset({"direct_nhwc"})


def _conv_action(conv: ConvNode, config: ExecConfig, target: Target):
    reason = target.check(conv.shape, config.algorithm, config.ukernel)
    if reason is not None:
        raise ValueError(f"Conv node '{conv.name}': the plan's config {config} cannot run it: "
                         f"{reason}")

    def lower(low: Lowering) -> None:
        n, oh, ow, oc = conv.shape.output_shape
        if low.g.rank(conv.input) == 3:  # NLC is the NHWC of height 1
            x = _height_one(low.get(conv.input, NLC))
            residual = _height_one(low.get(conv.residual, NLC)) if conv.residual else None
            out = low.new(None, (n, oc, oh, ow), NHWC)
            low.alias(conv.output, out.relabel((n, oc, ow), NLC))
        else:
            x = low.get(conv.input, prefer=identity(4)) if config.algorithm in READS_NCHW \
                else low.get(conv.input, NHWC)
            if x.perm not in (NHWC, identity(4)):
                x = low.get(conv.input, NHWC)
            residual = low.get(conv.residual, NHWC) if conv.residual else None
            out = low.new(conv.output, (n, oc, oh, ow), NHWC)
        low.emit("conv", conv.name, f"conv {config}", {"x": x, "residual": residual, "out": out},
                 **conv_attrs(conv.shape, config,
                              Deferred(lambda: conv.weight, conv.conv_weight.nbytes), conv.bias),
                 x_nchw=x.perm != NHWC)
    return lower


NLC = (0, 2, 1)


def _height_one(v: Value) -> Value:
    """An NCL tensor stored NLC, seen as the NCHW tensor of height 1 stored NHWC."""
    n, c, length = v.shape
    return v.relabel((n, c, 1, length), NHWC)


def _static_float(g: OnnxGraph, t: str) -> bool:
    tt = g.types.get(t)
    dims = g.static_shape(t)
    return (tt is not None and tt.elem_type == TensorProto.FLOAT and dims is not None
            and len(dims) <= MAX_RANK)


def _native_action(g: OnnxGraph, node: onnx.NodeProto):
    """How to lower a non-convolution node natively, or None to delegate it."""
    if node.domain in DEFAULT_DOMAINS and node.op_type in quant.OPS:
        return quant.action(g, node)  # uint8 tensors: not the float check below
    handler = ops.HANDLERS.get(node.op_type) if node.domain in DEFAULT_DOMAINS else None
    if handler is None:
        return None
    # Native operations are float32 over static shapes; constants (shapes, pads,
    # bounds) are read by the handlers themselves.
    used = [t for t in node.output if t and (t in g.outputs or g.consumers.get(t))]
    tensors = [t for t in node.input if t and t not in g.constants] + used
    if not all(_static_float(g, t) for t in tensors):
        return None
    return handler(g, node)


def pattern_actions(g: OnnxGraph, model: onnx.ModelProto, claimed: set[str]
                    ) -> dict[str, tuple[list[str], Action]]:
    """The chains of nodes a pattern covers, by their last node's name: their
    names and action.  A node belongs to one chain at most, and not to one
    of `claimed` (fused convolutions)."""
    found: dict[str, tuple[list[str], Action]] = {}
    for node in model.graph.node:
        if node.domain not in DEFAULT_DOMAINS or node_name(node) in claimed:
            continue
        for pattern in ops.PATTERNS:
            match = pattern(g, node)
            if match is None:
                continue
            nodes, action = match
            names = [node_name(n) for n in nodes]
            tensors = [t for t in nodes[0].input if t and t not in g.constants] + \
                [nodes[-1].output[0]]
            if claimed.isdisjoint(names) and all(_static_float(g, t) for t in tensors):
                found[names[-1]] = names, action
                claimed.update(names)
                break
    return found


def int8_chains(g: OnnxGraph, convs: list[ConvNode], int8: list[Int8ConvNode]
                ) -> dict[str, tuple[Int8ConvNode, list[str]]]:
    """The convolutions that run as conv_int8, by name: each one's int8 node
    and the nodes it replaces (quant.int8_chain); the rest run in float."""
    by_conv = {q.name: q for q in int8}
    found = {}
    for c in convs:
        q8 = by_conv.get(c.name)
        names = quant.int8_chain(g, c, q8) if q8 is not None else None
        if q8 is not None and names is not None:
            found[c.name] = q8, names
    return found


def lower(model: onnx.ModelProto, configs: dict[str, ExecConfig],
          target: Target | None = None,
          weights: dict[str, np.ndarray] | None = None,
          int8: list[Int8ConvNode] | None = None) -> tuple[list[Stage], OnnxGraph]:
    """The stages running `model` (simplified, shapes inferred) with conv configs by
    node name on `target` (default: this process's engine), and the model's
    tensors (types, constants) they refer to (weights: as OnnxGraph's).
    int8: the model's int8 convolutions (taskgen.int8, read from the model
    as written, whose int8 weights loading folded into floats), run as
    conv_int8 on their config's split (a fully connected one without a
    config on the graph's); without, they run in float."""
    low = Lowering(model, target or local_target(), weights, configs)
    convs, _ = conv_nodes(model, weights)  # non-2-D convolutions have no handler: delegated
    missing = [c.name for c in convs if c.name not in configs]
    if missing:
        raise ValueError(f"the plan has no config for Conv node(s) {', '.join(missing[:5])}"
                         f"{' ...' if len(missing) > 5 else ''}: tune this model again")
    # A fused convolution, or a chain of nodes a pattern covers, is lowered
    # where its last node was: by then its other inputs (a residual) have
    # been computed too.
    runs_int8 = int8_chains(low.g, convs, int8 or [])
    chains: dict[str, tuple[list[str], Action]] = {}
    for c in convs:
        if c.name in runs_int8:
            q8, names = runs_int8[c.name]
            chains[names[-1]] = names, quant.int8_conv_action(low.g, c.name, c.input, q8,
                                                              configs[c.name])
            low.u8_readers.add(c.name)
        elif configs[c.name].algorithm == INT8_ALGORITHM:
            raise ValueError(f"Conv node {c.name}: its config {configs[c.name]} is an int8 "
                             f"convolution's, and it does not run in int8 here: tune this "
                             f"model again")
        else:
            chains[([c.name, *c.fused])[-1]] = ([c.name, *c.fused],
                                                _conv_action(c, configs[c.name], low.target))
    for q8 in int8 or []:
        found = quant.int8_fc(low.g, q8, configs.get(q8.name))
        if found is not None:
            chains[found[0][-1]] = found
            low.u8_readers.add(q8.name)
    if int8 is not None:
        fused = {n for names, _ in chains.values() for n in names}
        for last, (names, action) in quant.u8_chains(low.g, model).items():
            if fused.isdisjoint(names):
                chains[last] = names, action
                low.u8_readers.add(names[0])
    chains.update(pattern_actions(low.g, model, {n for names, _ in chains.values()
                                                 for n in names}))
    at_end = {last: action for last, (_, action) in chains.items()}
    members = {last: names for last, (names, _) in chains.items()}
    absorbed = {name for names, _ in chains.values() for name in names[:-1]}
    pending: list[onnx.NodeProto] = []
    for node in model.graph.node:
        name = node_name(node)
        if name in absorbed:
            continue
        action = at_end.get(name) or _native_action(low.g, node)
        if action is None:
            pending.append(node)
            continue
        if pending:
            low.delegate(pending)
            low.visited.update(node_name(n) for n in pending)
            pending = []
        action(low)
        low.visited.update(members.get(name, [name]))
    if pending:
        low.delegate(pending)
    return low.finish(), low.g

"""Tuning tasks: the model's convolutions grouped by signature (paper section 2.2).

Convolutions with the same input, weight and output dimensions and the same
attributes are one task, whatever epilogue each fuses: the epilogue costs the
same under every configuration, so the best configuration is shared.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from acltuner.engine import native
from acltuner.engine.config import ConvShape
from acltuner.onnx.graph import ConvNode, conv_nodes
from acltuner.onnx.model import ModelError, load_model_detached


@dataclass
class Task:
    key: str
    shape: ConvShape  # the signature: act "none", no residual
    nodes: list[str]
    flops: int  # all nodes together
    algorithms: list[str]


@dataclass
class TaskSet:
    model_path: str
    convolutions: int
    tasks: list[Task]  # most FLOPs first
    conv_nodes: list[ConvNode]
    skipped: list[str]  # one line per Conv or ConvTranspose that is not tunable
    model_inputs: tuple[str, ...] = ()  # the graph's inputs, by name
    products: int = 0  # MatMul and Gemm nodes (PRODUCT_OPS), tuned in the whole model

    def reads_model_input(self, node: ConvNode) -> bool:
        return node.input in self.model_inputs

    @property
    def flops(self) -> int:
        return sum(t.flops for t in self.tasks)


# The operators whose products the tuner chooses a micro-kernel for.
PRODUCT_OPS = ("MatMul", "Gemm")


def signature(shape: ConvShape) -> ConvShape:
    return dataclasses.replace(shape, act="none", act_min=0.0, act_max=0.0, act_alpha=0.0,
                               act_beta=0.0, has_residual=False)


def task_key(s: ConvShape) -> str:
    """e.g. n1.c64.h56.w56-oc64-k3x3-s1x1-p1.1.1.1-d1x1-g1 (pads top.left.bottom.right);
    a ConvTranspose's ends in -t and its output padding, e.g. -g1-t-o1x1."""
    transposed = f"-t-o{s.out_pad_h}x{s.out_pad_w}" if s.transposed else ""
    return (f"n{s.n}.c{s.c}.h{s.h}.w{s.w}-oc{s.oc}-k{s.kh}x{s.kw}-s{s.stride_h}x{s.stride_w}"
            f"-p{s.pad_top}.{s.pad_left}.{s.pad_bottom}.{s.pad_right}-d{s.dil_h}x{s.dil_w}"
            f"-g{s.group}{transposed}")


def applicable_algorithms(shape: ConvShape) -> list[str]:
    """The engine's algorithms that run `shape` directly or with at least one micro-kernel
    (not the test oracle `reference`, which tuning never chooses)."""
    kernels = [uk.name for uk in native.ukernels()]
    return [a for a in native.algorithms() if a != "reference"
            and any(native.check(shape, a, uk) is None
                   for uk in (kernels if native.uses_ukernel(a) else [None]))]


def generate_tasks(model_path: str | Path,
                   input_shapes: dict[str, tuple[int, ...]] | None = None) -> TaskSet:
    # Detached: shape inference and the checker copy every initializer, 5-10 s
    # of a 575 MB VGG-19's tasks; the convolutions need only its weights' dims.
    model, weights = load_model_detached(model_path, input_shapes)
    nodes, skipped = conv_nodes(model, weights)
    # A model of products only (an MLP, a transformer block) has nothing for
    # the tasks here, but its products are tuned in the whole model
    # (tuner/product_search.py).
    products = sum(n.op_type in PRODUCT_OPS for n in model.graph.node)
    if not nodes and not products:
        why = f" ({'; '.join(skipped)})" if skipped else ""
        raise ModelError(f"{model_path}: no 2-D Conv or ConvTranspose, nor MatMul or Gemm, to "
                         f"tune{why}")
    groups: dict[ConvShape, list[str]] = {}
    for node in nodes:
        groups.setdefault(signature(node.shape), []).append(node.name)
    tasks = [Task(task_key(s), s, names, s.flops * len(names), applicable_algorithms(s))
             for s, names in groups.items()]
    # Stable: equal FLOPs keep the order of first appearance in the graph.
    tasks.sort(key=lambda t: -t.flops)
    return TaskSet(str(model_path), len(nodes), tasks, nodes, skipped,
                   tuple(i.name for i in model.graph.input), products)

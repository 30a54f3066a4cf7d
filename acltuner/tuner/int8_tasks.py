"""The int8 tasks of a quantized model's task set: its convolutions that the
runtime runs as conv_int8 (runtime.lower.int8_chains), taken out of the
float tasks.  Here, above both, because the runtime decides which patterns
run in int8 and taskgen only reads them."""
from __future__ import annotations

import dataclasses

from acltuner.onnx.graph import OnnxGraph
from acltuner.onnx.model import load_model, read_model
from acltuner.runtime.lower import int8_chains
from acltuner.taskgen.int8 import Int8Task, int8_conv_nodes, int8_tasks
from acltuner.taskgen.tasks import TaskSet


def split_int8(taskset: TaskSet, input_shapes: dict[str, tuple[int, ...]] | None = None
               ) -> tuple[TaskSet, list[Int8Task]]:
    """The model's convolutions that run in int8 (conv_int8: its int8
    patterns the lowering runs so, runtime.lower.int8_chains) as int8 tasks,
    and its float tasks without them: a float task whose every convolution
    runs in int8 is gone, its configs never running.  The taskset's
    conv_nodes stay all of them."""
    raw = read_model(taskset.model_path)
    if not any(n.op_type == "DequantizeLinear" for n in raw.graph.node):
        return taskset, []
    loaded = OnnxGraph(load_model(taskset.model_path, input_shapes))
    runs = int8_chains(loaded, taskset.conv_nodes, int8_conv_nodes(raw, loaded)[0])
    tasks = []
    for t in taskset.tasks:
        names = [n for n in t.nodes if n not in runs]
        if names:
            tasks.append(dataclasses.replace(t, nodes=names,
                                             flops=t.flops // len(t.nodes) * len(names)))
    int8 = int8_tasks([q8 for q8, _ in runs.values()])
    return dataclasses.replace(taskset, tasks=tasks), int8

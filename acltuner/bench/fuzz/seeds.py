"""The real files the file doors mutate: a small ONNX model, the plan and the
records that tuning it writes (two random configs per task, and the
ArmNN-rule default), every shipped board file, configs/tuner.yaml and a pins
file of the model."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from acltuner.paths import configs_dir


@dataclass
class Seeds:
    model: bytes
    plan: bytes
    records: bytes
    boards: list[bytes]
    tuner: bytes
    pins: bytes


def small_model() -> onnx.ModelProto:
    """Conv + BatchNormalization + Relu + residual Add, then a Conv: what the front end folds
    and fuses."""
    rng = np.random.default_rng(0)

    def init(name, *dims):
        return numpy_helper.from_array(rng.standard_normal(dims).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"],
                         name="bn1"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu1"),
        helper.make_node("Add", ["r", "x"], ["a"], name="add1"),
        helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2", strides=[2, 2]),
    ]
    var = numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "var")
    graph = helper.make_graph(
        nodes, "fuzz_seed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [init("w1", 4, 4, 3, 3), init("b1", 4), init("g", 4), init("beta", 4), init("mean", 4),
         var, init("w2", 8, 4, 1, 1)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


PINS = (b"schema_version: 1\npins:\n  - {node: conv1, algorithm: im2col}\n"
        b"  - {kind: pointwise, algorithm: gemm1x1, ukernel: 8x8-hybrid-avx2}\n")


def make_seeds(folder: Path) -> Seeds:
    from acltuner.app.tune import run_tune
    model_path = folder / "seed.onnx"
    onnx.save(small_model(), model_path)
    plan_path, records_path = folder / "seed.plan.json", folder / "seed.records.jsonl"
    run_tune(str(model_path), str(plan_path), board_name="host", trials=2,
             early_stopping=None, strategy="random", records_path=str(records_path),
             input_shapes=(), config_path=None, seed=0)
    boards = sorted((configs_dir() / "boards").glob("*.yaml"))
    return Seeds(model=model_path.read_bytes(), plan=plan_path.read_bytes(),
                 records=records_path.read_bytes(), boards=[b.read_bytes() for b in boards],
                 tuner=(configs_dir() / "tuner.yaml").read_bytes(), pins=PINS)

"""One shape path for tasks, tune and run: sizes that a model computes from
tensor shapes (Shape -> Gather -> arithmetic -> Concat, as exporters write
for Resize and Reshape with dynamic inputs) become static once --input-shape
fixes the input, and a model `tasks` accepts is not refused by `run`."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from acltuner.app.run import CHECK_TOLERANCE
from tests.support.cli_checks import default_plan, invoke, run_check

_SHAPE = "x=1,3,16,20"


def _int_size(nodes, name: str, axis: int, factor: int) -> str:
    """shape(c)[axis] * factor, as a 1-D int64 tensor, in integer arithmetic."""
    nodes += [helper.make_node("Gather", ["s", f"i{axis}"], [f"{name}_d"], axis=0),
              helper.make_node("Mul", [f"{name}_d", f"k{factor}"], [f"{name}_m"]),
              helper.make_node("Unsqueeze", [f"{name}_m", "axis0"], [name])]
    return name


def _float_size(nodes, name: str, axis: int, factor: int) -> str:
    """The same through float, Floor and back, as older exporters write it."""
    nodes += [helper.make_node("Gather", ["s", f"i{axis}"], [f"{name}_d"], axis=0),
              helper.make_node("Cast", [f"{name}_d"], [f"{name}_f"], to=TensorProto.FLOAT),
              helper.make_node("Mul", [f"{name}_f", f"f{factor}"], [f"{name}_m"]),
              helper.make_node("Floor", [f"{name}_m"], [f"{name}_fl"]),
              helper.make_node("Cast", [f"{name}_fl"], [f"{name}_i"], to=TensorProto.INT64),
              helper.make_node("Unsqueeze", [f"{name}_i", "axis0"], [name])]
    return name


def _resize_sizes(size) -> list[onnx.NodeProto]:
    nodes = [helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Slice", ["s", "zero1", "two1"], ["nc"])]
    h, w = size(nodes, "h_out", 2, 2), size(nodes, "w_out", 3, 2)
    return nodes + [helper.make_node("Concat", ["nc", h, w], ["sz"], axis=0),
                    helper.make_node("Resize", ["c", "", "", "sz"], ["r"], mode="nearest")]


def _resize_scales() -> list[onnx.NodeProto]:
    return [helper.make_node("Resize", ["c", "", "scales"], ["r"], mode="nearest")]


def _reshape_computed() -> list[onnx.NodeProto]:
    """Height folded into channels: [n, c * 2, h / 2, w], the sizes from Shape."""
    nodes = [helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
             helper.make_node("Gather", ["s", "i1"], ["ch"], axis=0),
             helper.make_node("Gather", ["s", "i2"], ["hh"], axis=0),
             helper.make_node("Gather", ["s", "i3"], ["ww"], axis=0),
             helper.make_node("Mul", ["ch", "k2"], ["ch2"]),
             helper.make_node("Div", ["hh", "k2"], ["hh2"])]
    nodes += [helper.make_node("Unsqueeze", [t, "axis0"], [f"{t}_u"])
              for t in ("n", "ch2", "hh2", "ww")]
    return nodes + [helper.make_node("Concat", ["n_u", "ch2_u", "hh2_u", "ww_u"], ["shape"],
                                     axis=0),
                    helper.make_node("Reshape", ["c", "shape"], ["r"])]


_MIDDLES = {
    "resize_sizes_int": (lambda: _resize_sizes(_int_size), 8),
    "resize_sizes_float": (lambda: _resize_sizes(_float_size), 8),
    "resize_scales": (_resize_scales, 8),
    "reshape_computed": (_reshape_computed, 16),
}


def _model(middle: str, path) -> None:
    """Conv -> the middle -> Conv, with input x of dynamic height and width."""
    nodes_of, channels = _MIDDLES[middle]
    rng = np.random.default_rng(0)
    ints = {f"i{a}": np.array(a, np.int64) for a in range(4)}
    ints.update(k2=np.array(2, np.int64), axis0=np.array([0], np.int64),
                zero1=np.array([0], np.int64), two1=np.array([2], np.int64))
    floats = {"f2": np.array(2.0, np.float32), "scales": np.array([1, 1, 2, 2], np.float32),
              "w1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
              "w2": rng.standard_normal((4, channels, 3, 3)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1] * 4),
             *nodes_of(),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1] * 4)]
    used = {t for n in nodes for t in n.input}
    graph = helper.make_graph(
        nodes, middle, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in {**ints, **floats}.items() if k in used])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)


@pytest.mark.parametrize("middle", list(_MIDDLES))
def test_shapes_computed_from_shapes_pass_tasks_tune_and_run(middle, tmp_path):
    path = tmp_path / f"{middle}.onnx"
    _model(middle, path)
    tasks = invoke("tasks", path, "--input-shape", _SHAPE)
    assert tasks.exit_code == 0, tasks.output
    assert "2 convolutions -> 2 tasks" in tasks.output
    report = run_check(default_plan(path, tmp_path, "--input-shape", _SHAPE))
    assert report["max_rel_diff"] <= CHECK_TOLERANCE
    assert report["delegated"] == []  # the Resize and Reshape too, once their sizes are static


def test_output_dims_the_exporter_declared_are_worked_out_again(tmp_path):
    """-1 for "any", or sizes for another input size: inference redoes them."""
    path = tmp_path / "declared.onnx"
    _model("resize_scales", path)
    model = onnx.load(path)
    dims = model.graph.output[0].type.tensor_type.shape.dim
    for value in (-1, 4, 99, 99):
        dims.add().dim_value = value
    onnx.save(model, path)
    report = run_check(default_plan(path, tmp_path, "--input-shape", _SHAPE))
    assert report["max_rel_diff"] <= CHECK_TOLERANCE


def _stale_value_info(model: onnx.ModelProto) -> None:
    """The Reshape's output [1, 16, 8, 20] declared as of rank 2."""
    model.graph.value_info.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [16, 160]))


def _stale_output(model: onnx.ModelProto) -> None:
    """The output [1, 4, 8, 20] declared as of rank 2, in another exporter's layout."""
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 160]))


def _stale_in_subgraph(model: onnx.ModelProto) -> None:
    """An If after the Reshape whose branches, Relu twice, declare the tensor
    between their Relus as of rank 2."""
    graph = model.graph
    branches = {}
    for branch in ("then", "else"):
        branches[f"{branch}_branch"] = helper.make_graph(
            [helper.make_node("Relu", ["r"], [f"{branch}_a"]),
             helper.make_node("Relu", [f"{branch}_a"], [f"{branch}_b"])],
            branch, [], [helper.make_tensor_value_info(f"{branch}_b", TensorProto.FLOAT, None)],
            value_info=[helper.make_tensor_value_info(f"{branch}_a", TensorProto.FLOAT,
                                                      [16, 160])])
    conv2 = next(n for n in graph.node if n.name == "conv2")
    conv2.input[0] = "ri"
    graph.node.insert(list(graph.node).index(conv2),
                      helper.make_node("If", ["cond"], ["ri"], **branches))
    graph.initializer.append(numpy_helper.from_array(np.array(True), "cond"))


@pytest.mark.parametrize("stale", [_stale_value_info, _stale_output, _stale_in_subgraph],
                         ids=["value_info", "output", "subgraph"])
def test_stale_shapes_the_exporter_declared_are_dropped(stale, tmp_path):
    """onnxruntime runs a model whose exporter declared shapes the nodes do not
    compute (a rank 2 Reshape output that is of rank 3 or 4); inference would
    refuse it, so loading forgets them and works them out again."""
    path = tmp_path / "stale.onnx"
    _model("reshape_computed", path)
    model = onnx.load(path)
    stale(model)
    onnx.save(model, path)
    tasks = invoke("tasks", path, "--input-shape", _SHAPE)
    assert tasks.exit_code == 0, tasks.output
    assert "2 convolutions -> 2 tasks" in tasks.output
    report = run_check(default_plan(path, tmp_path, "--input-shape", _SHAPE))
    assert report["max_rel_diff"] <= CHECK_TOLERANCE

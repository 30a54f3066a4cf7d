"""MatMul of two computed tensors and Gather with constant indices, natively,
through the command line: a small self-attention block (as PyTorch exports
one: the heads split by Reshape and Transpose, q, k and v taken by Gather) and
Gathers on a feature map, tuned with the rule-based plan and checked against
onnxruntime; and how the attention's layouts are kept without copies."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from acltuner.app.run import CHECK_TOLERANCE
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import default_plan, run_check
from tests.runtime.test_runtime import _compile

HEADS, TOKENS, DIM = 2, 40, 4


def _attention() -> onnx.ModelProto:
    b = GraphBuilder(seed=7, input_shape=(1, 3, 4, 10))
    x = b.conv(b.input, "embed", 3 * HEADS * DIM, 3, pads=1, bias=True)
    x = b.node("Reshape", [x, b.constant("tokens_shape", np.array([1, 3 * HEADS * DIM, TOKENS]))],
               "tokens")
    x = b.node("Transpose", [x], "to_tokens", perm=[0, 2, 1])  # [1, T, 3*H*D]
    qkv = b.node("Reshape", [x, b.constant("heads_shape", np.array([1, TOKENS, 3, HEADS, DIM]))],
                 "split_heads")
    qkv = b.node("Transpose", [qkv], "qkv", perm=[2, 0, 3, 1, 4])  # [3, 1, H, T, D]
    q, k, v = (b.node("Gather", [qkv, b.constant(f"i{j}", np.array(j))], name, axis=0)
               for j, name in enumerate("qkv"))
    kt = b.node("Transpose", [k], "k_t", perm=[0, 1, 3, 2])
    scores = b.node("MatMul", [q, kt], "scores")
    scores = b.node("Mul", [scores, b.constant("scale", np.array(DIM ** -0.5, np.float32))],
                    "scaled")
    attn = b.node("Softmax", [scores], "attn", axis=-1)
    # The heads' contexts, then the first head's values again, broadcast over
    # both heads: each merged back into tokens and projected.
    v0 = b.node("Gather", [v, b.constant("head0", np.array([0]))], "v0", axis=1)
    outs = []
    for name, values in (("context", v), ("context0", v0)):
        out = b.node("MatMul", [attn, values], name)  # [1, H, T, D]
        out = b.node("Transpose", [out], f"{name}_merge", perm=[0, 2, 1, 3])  # [1, T, H, D]
        out = b.node("Reshape", [out, b.constant(f"{name}_shape",
                                                 np.array([1, TOKENS, HEADS * DIM]))],
                     f"{name}_tokens")
        outs.append(b.node("MatMul", [out, b.constant(f"{name}_w",
                                                      b.rng.normal(0, 0.3, (8, 6)))],
                           f"{name}_proj"))
    return b.model(b.node("Add", outs, "sum"), "attention")


def _feature_gathers() -> onnx.ModelProto:
    b = GraphBuilder(seed=8, input_shape=(1, 3, 9, 11))
    x = b.conv(b.input, "features", 8, 3, pads=1, relu="relu")
    x = b.node("Gather", [x, b.constant("channel_indices", np.array([5, -1, 0, 2]))], "channels",
               axis=1, channels=4)
    x = b.conv(x, "after", 6, 3, pads=1)
    rows = b.node("Gather", [x, b.constant("row_indices", np.array([[0, 8], [-3, 4]]))], "rows",
                  axis=2)  # [1, 6, 2, 2, 11]
    col = b.node("Gather", [x, b.constant("col_index", np.array(-2))], "col", axis=-1)  # [1, 6, 9]
    # A 1-D B: the product drops its axis; the feature map is NHWC, its W not innermost.
    y = b.node("MatMul", [x, b.constant("weights", b.rng.normal(0, 1, (11,)))], "by_width")
    y = b.node("Add", [y, col], "plus_col")
    return b.model(b.node("Concat", [b.node("Reshape", [rows, b.constant(
        "flat_shape", np.array([1, 6, -1]))], "flat"), y], "out", axis=2), "gathers")


@pytest.mark.parametrize("make", [_attention, _feature_gathers], ids=["attention", "gathers"])
def test_runs_natively_and_matches_onnxruntime(make, tmp_path):
    path = tmp_path / f"{make.__name__[1:]}.onnx"
    onnx.save(make(), path)
    report = run_check(default_plan(path, tmp_path))
    print(f"{path.stem}: max_rel_diff {report['max_rel_diff']:.3g}")
    assert report["delegated"] == [] and report["max_rel_diff"] <= CHECK_TOLERANCE


def test_attention_moves_no_data_between_its_operations(tmp_path):
    """The tokens are the NHWC feature map's own memory, q, k and v are read
    where Gather left them (k^T packed from k's layout), and each context is
    written in the order that merging the heads back into tokens reads: no
    transpose anywhere."""
    program, _ = _compile(_attention(), tmp_path)
    program.run(np.zeros((1, 3, 4, 10), np.float32))
    kinds = [entry.kind.split(" ")[0] for entry in program.last_profile]
    assert kinds.count("batch") == 3 and kinds.count("gather") == 4
    assert "transpose" not in kinds, kinds


def test_attention_scale_is_taken_into_its_product(tmp_path):
    """The Mul of the scores by 1 / sqrt(d) runs inside their product (B
    packed times it), not as a pass over all the scores: the checks against
    onnxruntime above hold it to the same numbers."""
    program, _ = _compile(_attention(), tmp_path)
    program.run(np.zeros((1, 3, 4, 10), np.float32))
    kinds = [entry.kind for entry in program.last_profile]
    assert [k for k in kinds if k.endswith(" scaled")] == [
        k for k in kinds if k.startswith("batch matmul 2x40x4x40")], kinds
    assert not any(k.split(" ")[0] in ("mul", "binary") for k in kinds), kinds


def test_inputs_of_products_come_in_onnx_order(tmp_path):
    """4-D tensors the stage imports and a MatMul or Softmax reads first (a
    model's inputs, or a delegated segment's outputs) are copied in in ONNX
    order: the products and the Softmax run on them with no transpose, where
    NHWC took one per operand."""
    from onnx import TensorProto, helper
    q, k, v = ([1, 4, 64, 16], [1, 4, 16, 64], [1, 4, 64, 16])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["q", "k"], ["scores"]),
         helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
         helper.make_node("MatMul", ["attn", "v"], ["y"])], "products",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in
         (("q", q), ("k", k), ("v", v))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 64, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    program, path = _compile(model, tmp_path)
    rng = np.random.default_rng(3)
    inputs = {n: rng.standard_normal(d).astype(np.float32) for n, d in (("q", q), ("k", k),
                                                                       ("v", v))}
    ours = program.run(inputs)["y"]
    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, inputs)[0]
    assert np.abs(ours - theirs).max() <= CHECK_TOLERANCE * np.abs(theirs).max()
    kinds = [entry.kind.split(" ")[0] for entry in program.last_profile]
    assert kinds.count("batch") == 2 and "transpose" not in kinds, kinds


@pytest.mark.parametrize("m, k, n", [(256, 256, 16), (1024, 64, 192), (3136, 160, 40),
                                     (256, 16, 256), (256, 8, 64)])
def test_products_of_activations_take_a_hybrid_kernel(m, k, n):
    """A graph product's A is an activation: an interleaved kernel would pack
    it at every run, and a small-K kernel (MobileViT's attention scores, K =
    16) does too little per call, so a hybrid kernel is picked wherever one
    runs the product."""
    from acltuner.engine.config import ConvShape
    from acltuner.runtime.product_kernels import matmul_ukernel
    from acltuner.runtime.target import local_target
    target = local_target()
    styles = {uk["name"]: uk["style"] for uk in target.ukernels}
    hybrid = [name for name, style in styles.items() if style == "hybrid"]
    shape = ConvShape(n=1, h=m, w=1, c=k, oc=n, kh=1, kw=1)
    assert any(target.check(shape, "gemm1x1", name) is None for name in hybrid)
    assert styles[matmul_ukernel(m, k, n, target)] == "hybrid"

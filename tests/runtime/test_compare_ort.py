"""compare_ort.compare: onnxruntime's node names matched to our operations."""
from acltuner.runtime.compare_ort import OrtProfile, compare
from acltuner.runtime.profile import NodeTime


def test_a_chain_named_after_its_first_node_meets_onnxruntimes_fusion():
    """A MatMul that took its bias Add and the GELU after it is one operation
    named after the MatMul, while the chain's aliases lead to its last node:
    onnxruntime's "<MatMul>/MatMulAddFusion" still counts for the MatMul."""
    ours = [NodeTime("fc/MatMul", "matmul gelu", 2.0, 1.0, "matmul")]
    ort = OrtProfile(1.0, 1, {"fc/MatMul/MatMulAddFusion": ("Gemm", 0.5)})
    aliases = {"fc/MatMul": "act/Mul_1", "fc/Add": "act/Mul_1", "act/Erf": "act/Mul_1"}
    rows = {r.node: r for r in compare(ours, ort, aliases)}
    assert list(rows) == ["fc/MatMul"]
    assert rows["fc/MatMul"].ort_ms == 0.5


def test_quantized_nodes_renamed_by_onnxruntime_meet_ours():
    """onnxruntime fuses a QDQ convolution into a QLinearConv named
    "<conv>_token_<n>" and moves a max pool to NHWC the same way; its own
    layout nodes ("ReorderInput_token_45") stay rows of their own."""
    ours = [NodeTime("conv1", "conv int8 im2col", 2.0, 0.8, "conv"),
            NodeTime("maxpool", "max pool 3x3 (uint8)", 0.5, 0.2, "pool")]
    ort = OrtProfile(3.0, 1, {"conv1_token_1": ("QLinearConv", 1.5),
                              "maxpool_token_68": ("NhwcMaxPool", 0.25),
                              "ReorderInput_token_45": ("ReorderInput", 0.125)})
    rows = {r.node: r for r in compare(ours, ort, {})}
    assert (rows["conv1"].ort_ms, rows["maxpool"].ort_ms) == (1.5, 0.25)
    assert rows["ReorderInput_token_45"].kind == "onnxruntime only: ReorderInput"

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

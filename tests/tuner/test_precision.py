"""`tune --precision`: the fp16 micro-kernels are offered only with
--precision fp16 and only on boards whose every cluster lists asimdhp (the
recorded board fixtures), a plan records its precision, and, under qemu as a
Cortex-A76, a convolution pinned to an fp16 kernel passes the launcher's fp16
output check and lands in an fp16 plan."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner

from acltuner.app.run import check_tolerance
from acltuner.board.detect import detect
from acltuner.board.registry import load_board
from acltuner.cli import main
from acltuner.engine.config import ConvShape
from acltuner.engine.launcher import LauncherClient
from acltuner.plan import load_plan
from acltuner.runtime.inputs import random_inputs
from acltuner.runtime.measure import check
from acltuner.runtime.remote import RemoteProgram
from acltuner.taskgen.tasks import generate_tasks
from acltuner.tuner.pins import EngineRules, parse_pin
from acltuner.tuner.space import SearchSpace
from acltuner.tuner.tune import pin_nodes, tune_model
from acltuner.tuner.tuner_config import load_tuner_config
from acltuner.zoo.builder import GraphBuilder
from tests.support.engine_backends import QEMU, aarch64_launcher_or_skip

FIXTURES = Path(__file__).parents[1] / "fixtures" / "boards"
FP16 = "8x24-interleaved-neonfp16"
POINTWISE = ConvShape(n=1, h=8, w=8, c=16, oc=24, kh=1, kw=1)


def _ukernel(name: str, isa: str, style: str, **extra) -> dict:
    mr, nr = (int(x) for x in name.split("-")[0].split("x"))
    return {"name": name, "isa": isa, "style": style, "mr": mr, "nr": nr, "kmin": 0, "kmax": 0,
            "n_multiple": 1, **extra}


class Engine:
    """An AArch64 engine's hello as an asimdhp core's launcher gives it (the
    hybrid kernel's entry without `precision`, as launchers before it wrote
    them), and its rule that only im2col and gemm1x1 take an fp16 kernel."""
    hello_info = {"isa": "neon",
                  "algorithms": [{"name": a, "uses_ukernel": a != "direct_nhwc"}
                                 for a in ("im2col", "gemm1x1", "indirect", "direct_nhwc")],
                  "ukernels": [_ukernel("8x12-interleaved-neon", "neon", "interleaved",
                                        precision="fp32"),
                               _ukernel("6x16-hybrid-neon", "neon", "hybrid"),
                               _ukernel(FP16, "neonfp16", "interleaved", precision="fp16")]}

    @staticmethod
    def check(shape: ConvShape, algorithm: str, ukernel: str | None) -> str | None:
        if ukernel == FP16 and algorithm not in ("im2col", "gemm1x1"):
            return f"{algorithm} computes in fp32 only"
        if algorithm == "indirect" and ukernel and "interleaved" in ukernel:
            return "needs a hybrid kernel"
        return None


def _space(precision: str, board):
    rules = EngineRules.of(Engine(), precision, board)
    space = SearchSpace(POINTWISE, [list(c.cpus) for c in board.clusters], board.ncores,
                        list(rules.algorithms.items()), list(rules.ukernels), rules.check)
    return rules, {uk for _, uk in space.pairs}, {a for a, uk in space.pairs if uk == FP16}


def test_fp32_never_offers_an_fp16_kernel():
    board = detect(FIXTURES / "rk3588")
    assert EngineRules.of(Engine()).ukernels.keys() == {"8x12-interleaved-neon",
                                                        "6x16-hybrid-neon"}
    rules, kernels, _ = _space("fp32", board)
    assert FP16 not in rules.ukernels and FP16 not in kernels


def test_fp16_is_offered_on_a_board_whose_clusters_list_asimdhp():
    board = detect(FIXTURES / "rk3588")  # Cortex-A55 and A76: asimddp, asimdhp
    assert all("asimdhp" in c.features for c in board.clusters)
    rules, kernels, fp16_algorithms = _space("fp16", board)
    assert FP16 in kernels and fp16_algorithms == {"im2col", "gemm1x1"}
    assert {"8x12-interleaved-neon", "6x16-hybrid-neon"} <= kernels  # fp32 stays offered


@pytest.mark.parametrize("fixture", ["odroid-n2plus", "tinker-edge-r", "rpi4", "x86-host"])
def test_fp16_is_refused_where_a_cluster_lacks_asimdhp(fixture):
    with pytest.raises(ValueError, match="lists no asimdhp") as e:
        EngineRules.of(Engine(), "fp16", detect(FIXTURES / fixture))
    assert "\n" not in str(e.value)


def test_fp16_is_refused_when_the_engine_has_no_fp16_kernel():
    class Armv80Engine(Engine):  # the same board's features, a launcher without the family
        hello_info = {**Engine.hello_info,
                      "ukernels": [u for u in Engine.hello_info["ukernels"] if u["name"] != FP16]}
    with pytest.raises(ValueError, match="offers no fp16 micro-kernel"):
        EngineRules.of(Armv80Engine(), "fp16", detect(FIXTURES / "rk3588"))


def _model(path: Path) -> Path:
    b = GraphBuilder(seed=5, input_shape=(1, 16, 8, 8))
    y = b.conv("input", "pw", 24, 1, relu="pw.relu")
    onnx.save(b.model(y, "pointwise"), path)
    return path


def test_tune_precision_fp16_on_this_x86_host_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["tune", str(_model(tmp_path / "m.onnx")), "-o",
                                       str(tmp_path / "p.json"), "--precision", "fp16"])
    assert result.exit_code != 0 and not (tmp_path / "p.json").exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--precision fp16" in lines[0] and "asimdhp" in lines[0], lines


@pytest.mark.aarch64
def test_an_fp16_pin_under_qemu_cortex_a76_passes_the_fp16_check(tmp_path):
    launcher = aarch64_launcher_or_skip()
    split = load_board("split-host")  # cpu0 and cpu1, which qemu-user also has
    board = dataclasses.replace(split, clusters=tuple(
        dataclasses.replace(c, features=("asimdhp",)) for c in split.clusters))
    model = _model(tmp_path / "pointwise.onnx")
    taskset = generate_tasks(model)
    a76 = [QEMU[0], "-cpu", "cortex-a76", *QEMU[QEMU.index("-cpu") + 2:], launcher]
    config = load_tuner_config(None, {"measure": {"ci_target_pct": 0}})
    with LauncherClient(a76, timeout_s=300) as client:
        with pytest.raises(ValueError, match=f"unknown micro-kernel '{FP16}'"):
            pin_nodes(taskset, [parse_pin(f"pw=gemm1x1/{FP16}")], board,
                      EngineRules.of(client))  # fp32: not offered
        pinned = pin_nodes(taskset, [parse_pin(f"pw=gemm1x1/{FP16}")], board,
                           EngineRules.of(client, "fp16", board))
        # tune_pinned raises when the pinned config's output fails the check.
        plan, (report,) = tune_model(taskset, str(tmp_path / "plan.json"), board=board,
                                     client=client, records_path=str(tmp_path / "r.jsonl"),
                                     config=config, strategy="random", pinned=pinned,
                                     precision="fp16")
        remote = RemoteProgram(tmp_path / "plan.json", client)
        inputs = random_inputs(remote.program)
        outputs = remote.run(inputs, repeat=1, warmup=0).outputs
    assert report.best.ukernel == FP16 and report.tuned_ms and report.default.ukernel != FP16
    saved = load_plan(tmp_path / "plan.json")
    assert saved.precision == "fp16" and saved.nodes[0].config.ukernel == FP16
    # The plan runs its convolution in fp16: further from onnxruntime's fp32
    # than fp32's rounding goes (about 1e-7), within fp16's bound
    # (acl_fp16_error_bound(16) = 0.013 of each output's sum of magnitudes,
    # a small multiple of max|y| here).
    diff = check(str(model), inputs, outputs, 1.0, reference_timeout_s=60)
    assert 1e-5 < diff.max_rel <= 0.05, diff
    # run --check judges an fp16 plan by its own, wider tolerance.
    assert check(str(model), inputs, outputs, check_tolerance(saved.precision),
                 reference_timeout_s=60).passed

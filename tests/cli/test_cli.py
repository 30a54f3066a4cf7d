"""The command line: help, version, engine list, and the benchmarks' last lines."""
from __future__ import annotations

import json
import re

from click.testing import CliRunner

from acltuner import __version__
from acltuner.cli import main
from acltuner.engine import native
from acltuner.engine.launcher import LauncherClient


def _invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_help_and_version():
    result = _invoke("--help")
    assert result.exit_code == 0 and "engine" in result.output and "bench" in result.output
    assert _invoke("--version").output.strip().endswith(__version__)


def test_engine_list_names_every_algorithm_and_kernel():
    lines = _invoke("engine", "list").output.splitlines()
    algos = [ln.split()[1] for ln in lines if ln.startswith("algorithm")]
    kernels = [ln.split()[1] for ln in lines if ln.startswith("ukernel")]
    assert algos == native.algorithms()
    assert {"reference", "im2col", "gemm1x1", "indirect", "winograd_2x2_3x3", "winograd_4x4_3x3",
            "depthwise_pixel", "depthwise_channel_block"} <= set(algos)
    assert kernels == [uk.name for uk in native.ukernels()]
    isa = native.isa()
    assert all(k.endswith(isa) or k.endswith("avx2") for k in kernels)
    for style in ("interleaved", "hybrid", "smallk"):
        assert any(f"-{style}-" in k for k in kernels), style
    int8 = [ln.split()[1] for ln in lines if ln.startswith("int8")]
    with LauncherClient() as client:  # the launcher's build of the engine names the same
        assert int8 == native.hello_int8_ukernels(client.hello_info)
    assert int8 and all(re.fullmatch(r"\d+x\d+c[124]-(interleaved|rows)-\w+", k) for k in int8)


def test_engine_list_json():
    data = json.loads(_invoke("engine", "list", "--json").output)
    assert data["isa"] == native.isa() and data["cpus"] == native.cpu_count()
    assert all(re.fullmatch(r"\d+x\d+-(interleaved|hybrid|smallk)-\w+", uk["name"])
               for uk in data["ukernels"])
    assert data["int8_ukernels"] == native.int8_ukernels()


def test_bench_gemm_prints_ratio_line():
    kernel = native.ukernels()[0].name
    out = _invoke("bench", "gemm", "--size", "128", "--kernels", kernel).output
    assert re.fullmatch(r"gemm_vs_blas: \d+\.\d+", out.strip().splitlines()[-1])


def test_bench_gemv_checks_results_and_prints_ratio_line(monkeypatch):
    from acltuner.bench import gemv
    monkeypatch.setattr(gemv, "SHAPES", [("small", 64, 96)])
    monkeypatch.setattr(gemv, "_STREAM_MB", 8)
    monkeypatch.setattr(gemv, "_RUNS", 2)
    lines = _invoke("bench", "gemv").output.strip().splitlines()
    assert lines[-2].startswith("small") and re.search(r"/w\d+$", lines[-2])
    assert re.fullmatch(r"gemv_fraction_of_stream: \d+\.\d+", lines[-1])


def test_bench_conv_prints_ratio_line():
    out = _invoke("bench", "conv", "--quick", "--layers", "resnet18.layer4").output
    assert re.fullmatch(r"winograd4x4_vs_im2col: \d+\.\d+", out.strip().splitlines()[-1])


def test_bench_deconv_prints_ratio_line():
    lines = _invoke("bench", "deconv", "--quick").output.strip().splitlines()
    assert [line.split()[0] for line in lines[2:4]] == ["k2s2", "k4s2p1"]
    assert re.fullmatch(r"deconv_vs_onnxruntime: \d+\.\d+", lines[-1])


def test_bad_input_is_one_line():
    result = CliRunner().invoke(main, ["bench", "conv", "--layers", "nope"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        result.output.strip().splitlines()[0]] and "unknown layer(s) nope" in result.output

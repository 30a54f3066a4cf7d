"""`acltuner bench compare --engines`: the engines users pick instead of ours
(OpenVINO, ncnn, MNN), each converted from ONNX by its own tools and run in a
process of its own, its outputs checked against onnxruntime's.  No time is
asserted, only that there is one."""
from __future__ import annotations

import importlib.util
import json
import re
import struct
import tomllib
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml

from acltuner.bench import compare
from acltuner.bench.peers import PEERS, PNNX_VERSION, UNSUPPORTED, missing
from acltuner.bench.peers import cell as peer_cell
from acltuner.bench.peers.worker import load_io, save_arrays
from acltuner.cli.run import CHECK_TOLERANCE
from acltuner.report import figures
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, invoke

ROOT = Path(__file__).resolve().parents[2]
HERE = peer_cell.Here(realtime=False)


def _conv_relu(folder: Path, input_shape=(1, 3, 12, 10)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    b = GraphBuilder(input_shape=input_shape)
    path = folder / "tiny.onnx"
    onnx.save(b.model(b.conv(b.input, "c", 8, 3, pads=1, relu="r"), "tiny"), path)
    return path


def _needs(engine: str) -> None:
    """Skips unless the engine is installed (pnnx is only looked up: importing
    it imports PyTorch, which it does not get)."""
    if missing(engine):
        pytest.skip(missing(engine))


@pytest.mark.parametrize("engine", list(PEERS))
def test_a_peer_converts_and_runs_a_model_as_onnxruntime_does(engine, tmp_path):
    _needs(engine)
    model = _conv_relu(tmp_path / "models")
    io_path = peer_cell.reference(model, {}, tmp_path / "out" / "io.npz")
    workdir = tmp_path / "out" / engine
    cell = peer_cell.prepare(engine, model, io_path, workdir, HERE)
    assert cell.problem is None and cell.wrong is None
    assert cell.max_rel_diff is not None and cell.max_rel_diff <= CHECK_TOLERANCE
    timers = peer_cell.timers(cell, io_path, workdir, 2, HERE)
    assert sorted(timers) == [f"{engine}_{t}t" for t in HERE.threads()]
    for timer in timers.values():
        assert timer()["median_ms"] > 0
    assert cell.problem is None


@pytest.mark.parametrize("engine", ["ncnn", "mnn"])
def test_a_conversion_is_made_once_and_kept_in_the_output_folder(engine, tmp_path):
    _needs(engine)
    model = _conv_relu(tmp_path / "models")
    io_path = peer_cell.reference(model, {}, tmp_path / "out" / "io.npz")
    workdir = tmp_path / "out" / engine
    first = peer_cell.prepare(engine, model, io_path, workdir, HERE).artifact
    stamp = json.loads((workdir / "convert.json").read_text())
    assert stamp["schema"] == peer_cell.CONVERT_SCHEMA and first.parent == workdir
    made = first.stat().st_mtime_ns
    assert peer_cell.prepare(engine, model, io_path, workdir, HERE).artifact == first
    assert first.stat().st_mtime_ns == made
    # Another model in the same place is converted again.
    _conv_relu(tmp_path / "models", input_shape=(1, 3, 8, 8))
    io_path = peer_cell.reference(model, {}, io_path)
    peer_cell.prepare(engine, model, io_path, workdir, HERE)
    assert first.stat().st_mtime_ns != made


def test_where_onnxruntime_is_off_the_float64_reference_judges(tmp_path, monkeypatch):
    _needs("mnn")
    model = _conv_relu(tmp_path / "models")
    io_path = peer_cell.reference(model, {}, tmp_path / "out" / "io.npz")
    workdir = tmp_path / "out" / "mnn"
    inputs, outputs = load_io(io_path)
    # onnxruntime's outputs 2% off: MNN's are still right, by the float64 reference.
    save_arrays(io_path, {"inputs": list(inputs), "outputs": list(outputs)},
                {"in0": inputs["input"], "out0": next(iter(outputs.values())) * 1.02})
    cell = peer_cell.prepare("mnn", model, io_path, workdir, HERE)
    assert cell.wrong is None and cell.max_rel_diff > CHECK_TOLERANCE
    assert cell.float64_rel_diff <= CHECK_TOLERANCE
    assert peer_cell._float64_path(io_path).is_file()
    # New reference inputs drop the float64 outputs of the old ones.
    peer_cell.reference(model, {}, io_path)
    assert not peer_cell._float64_path(io_path).exists()
    # MNN's outputs 2% off: wrong against both.
    real_load = peer_cell.load_outputs
    monkeypatch.setattr(peer_cell, "load_outputs",
                        lambda path: [a * 1.02 for a in real_load(path)]
                        if path.parent == workdir else real_load(path))
    cell = peer_cell.prepare("mnn", model, io_path, workdir, HERE)
    assert re.fullmatch(r"max rel diff 0\.02 > 0\.001; against float64 0\.02", cell.wrong), \
        cell.wrong


def test_outputs_are_judged_as_run_check_judges_ours():
    ref = [np.linspace(-1, 1, 24, dtype=np.float32).reshape(1, 2, 3, 4)]
    # ncnn drops a batch axis of 1: the same values in another shape are right.
    assert peer_cell.judge([ref[0][0] + 1e-6], ref, 1e-3) == (pytest.approx(1e-6, abs=3e-7), None)
    rel, wrong = peer_cell.judge([ref[0] + 0.5], ref, 1e-3)
    assert rel == pytest.approx(0.5) and wrong == "max rel diff 0.5 > 0.001"
    assert peer_cell.judge([ref[0][..., :2]], ref, 1e-3) == (
        None, "output 0 has shape [1, 2, 3, 2], onnxruntime [1, 2, 3, 4]")
    assert peer_cell.judge([np.full_like(ref[0], np.nan)], ref, 1e-3) == (
        None, "outputs not finite where onnxruntime's are")


def test_missing_failed_and_wrong_engines_are_lines_and_not_counted(tmp_path, monkeypatch):
    """One run: openvino not installed (one line, no column), ncnn's conversion
    failing (one line in its cells), MNN's outputs wrong (its time shown,
    marked, never the fastest), tflite unsupported (one line)."""
    _needs("ncnn")
    _needs("mnn")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr("importlib.util.find_spec",
                        lambda name, *a: None if name == "openvino" else real_find_spec(name, *a))
    real_convert = peer_cell._convert

    def convert(engine, model, io_path, workdir):
        if engine == "ncnn":
            raise ValueError("'acltuner.bench.peers.worker convert ncnn ...' failed: "
                             "pnnx failed: unsupported op | Foo")
        return real_convert(engine, model, io_path, workdir)
    monkeypatch.setattr(peer_cell, "_convert", convert)
    real_load = peer_cell.load_outputs
    monkeypatch.setattr(peer_cell, "load_outputs",
                        lambda path: [a + 1 for a in real_load(path)] if "mnn" in str(path)
                        else real_load(path))
    models = tmp_path / "models"
    _conv_relu(models, input_shape=(1, 3, "H", "W"))
    (models / "shapes.yaml").write_text(yaml.safe_dump(
        {"schema": 1, "models": {"tiny": {"input": [1, 3, 12, 10]}}}))
    out = tmp_path / "out"
    result = invoke("bench", "compare", "--model-dir", models, "--trials", "1", "--repeat", "2",
                    "--rounds", "2", "--round-ms", "0", "--out", out, "--no-realtime",
                    "--engines", "ort,openvino,ncnn,mnn,tflite")
    assert result.exit_code == 0, result.output
    assert "openvino: not installed (no openvino): pip install 'acltuner[peers]'" in result.stderr
    assert f"tflite: {UNSUPPORTED['tflite']}" in result.stderr
    assert "tiny: ncnn: conversion failed: pnnx failed: unsupported op | Foo" in result.stderr
    lines = result.stdout.splitlines()
    head = next(line for line in lines if line.startswith("| model |"))
    assert head.endswith("| ncnn ms | mnn ms | fastest | tuned vs fastest |")
    assert "openvino" not in head and "tflite" not in head
    row = next(line for line in lines if line.startswith("| tiny |"))
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert len(cells) == len(head.strip("|").split(" | "))
    assert cells[-4] == "conversion failed: pnnx failed: unsupported op / Foo"
    assert re.fullmatch(r"[0-9.e-]+ \([12]t\) WRONG", cells[-3]), cells[-3]
    assert cells[-2] == "ort"
    assert lines[-3].startswith("wrong outputs, not counted: mnn on tiny (max rel diff ")
    assert lines[-2].startswith("geomean_vs_fastest: ")
    assert lines[-1].startswith("geomean_vs_onnxruntime: ")
    # Not counted: onnxruntime is the only engine left, so the two geomeans agree.
    assert lines[-2].split()[-1] == lines[-1].split()[-1]
    data = json.loads((out / "compare.json").read_text())
    assert data["schema"] == compare.COMPARE_SCHEMA
    assert data["engines"] == ["ort", "openvino", "ncnn", "mnn", "tflite"]
    assert set(data["missing"]) == {"openvino", "tflite"}
    (row,) = data["rows"]
    assert row["fastest"] == "ort" and set(row["peers"]) == {"ncnn", "mnn"}
    mnn = row["peers"]["mnn"]
    assert mnn["wrong"].startswith("max rel diff") and mnn["problem"] is None
    assert set(mnn["threads"]) == {str(t) for t in HERE.threads()}
    assert mnn["median_ms"] == min(t["median_ms"] for t in mnn["threads"].values())
    assert row["peers"]["ncnn"]["median_ms"] is None
    # The chart of the engines, at the size its figure says.
    png = (out / "engines.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == figures.engines_size(1)


def test_without_engines_the_table_is_as_before(tmp_path):
    models = tmp_path / "models"
    _conv_relu(models)
    result = invoke("bench", "compare", "--model-dir", models, "--trials", "1", "--repeat", "2",
                    "--rounds", "1", "--round-ms", "0", "--out", tmp_path / "out",
                    "--no-realtime")
    assert result.exit_code == 0, result.output
    assert "fastest" not in result.stdout and "peers" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("geomean_vs_onnxruntime: ")
    assert not (tmp_path / "out" / "peers").exists()


def test_an_unknown_engine_is_one_line(tmp_path):
    result = invoke("bench", "compare", "--model-dir", tmp_path, "--engines", "ort,tvm")
    assert_one_line_error(result, "--engines", "unknown engine(s) tvm", "openvino, ncnn, mnn")


def test_the_peers_are_an_extra_and_never_installed_with_acltuner():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    peers = project["optional-dependencies"]["peers"]
    names = {re.split(r"[=<>!~ \[]", d)[0].lower() for d in peers}
    assert names == {"openvino", "ncnn", "mnn"}
    assert all("==" in d for d in peers)  # pinned: versions with x86-64 and aarch64 wheels
    base = {re.split(r"[=<>!~ \[]", d)[0].lower() for d in project["dependencies"]}
    assert not base & (names | {"pnnx", "torch", "tflite-runtime", "ai-edge-litert"})
    # pnnx comes apart, without the PyTorch its wheel asks for.
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "'.[test,report,peers]'" in setup and "--no-deps \"pnnx==" in setup
    assert PNNX_VERSION.isdigit()

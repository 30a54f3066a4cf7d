"""`acltuner bench compare --host`: every engine on the board, with this
machine standing in for one (test_remote's sshd, the AArch64 launcher under
qemu for ours; onnxruntime and the peers from this virtualenv's Python, as a
board's would run them from its own).  No time is asserted."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import onnx
import pytest

from acltuner.bench.peers import missing
from acltuner.bench.peers.board import setup_line
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error
from tests.board.test_remote import HOST, QEMU_BOARD, _cli, _tools, deployed, sshd  # noqa: F401 (fixtures)

pytestmark = pytest.mark.aarch64


def _folder(tmp_path: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    b = GraphBuilder(input_shape=(1, 3, 12, 10))
    onnx.save(b.model(b.conv(b.input, "c", 8, 3, pads=1, relu="r"), "tiny"), models / "tiny.onnx")
    return models


def test_every_engine_runs_on_the_board(sshd, deployed, tmp_path):
    engines = [e for e in ("mnn", "ncnn") if not missing(e)]
    out = tmp_path / "out"
    result = _cli("bench", "compare", "--model-dir", _folder(tmp_path), "--trials", "1",
                  "--repeat", "2", "--rounds", "1", "--round-ms", "0", "--out", out,
                  "--board", QEMU_BOARD, "--host", HOST, "--board-python", sys.executable,
                  "--engines", ",".join(["ort", *engines]))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("geomean_vs_onnxruntime: ")
    data = json.loads((out / "compare.json").read_text())
    assert data["host"] == HOST
    cpus = len(os.sched_getaffinity(0))  # the stand-in board's
    assert data["threads"] == data["ort_threads"] == sorted({1, cpus})
    (row,) = data["rows"]
    assert row["onnxruntime_ms"] > 0 and row["tuned_ms"] > 0
    remote = Path(os.environ["ACLTUNER_REMOTE_DIR"]) / "peers"
    assert (remote / "models" / "tiny.onnx").is_file()  # onnxruntime's copy
    for engine in engines:
        cell = row["peers"][engine]
        assert cell["problem"] is None and cell["wrong"] is None, cell
        assert set(cell["threads"]) == {str(t) for t in data["threads"]}
        # Run there: its outputs came back from there.
        there = remote / "tiny" / engine / "outputs.npz"
        assert there.read_bytes() == (out / "peers" / "tiny" / engine / "outputs.npz").read_bytes()
    assert (remote / "py" / "acltuner" / "bench" / "peers" / "worker.py").is_file()


def test_a_board_without_the_virtualenv_is_one_line(sshd, tmp_path):
    result = _cli("bench", "compare", "--model-dir", _folder(tmp_path), "--out",
                  tmp_path / "out", "--board", QEMU_BOARD, "--host", HOST, "--engines", "ort,mnn")
    assert_one_line_error(result, f"{HOST}: no acltuner-peers/bin/python with onnxruntime",
                          setup_line("acltuner-peers/bin/python"))
    assert "MNN==3.6.1" in setup_line("acltuner-peers/bin/python")


def test_board_python_needs_a_host(tmp_path):
    result = _cli("bench", "compare", "--model-dir", _folder(tmp_path), "--board-python", "py")
    assert_one_line_error(result, "--board-python", "give --host")

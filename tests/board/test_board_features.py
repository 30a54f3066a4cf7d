"""Arm CPU features per cluster (asimddp, asimdhp, i8mm): read by `board
detect` from the recorded kernels' /proc/cpuinfo, listed in the board files
(optional, so older files still load), and checked by `board doctor`."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from acltuner.board import Board, BoardError, detect, load_board, load_file
from acltuner.app.doctor import diagnose, problems
from acltuner.cli import main
from tests.support.file_errors import load_error

FIXTURES = Path(__file__).parents[1] / "fixtures" / "boards"


@pytest.mark.parametrize("name, features", [
    ("rk3588", [("asimddp", "asimdhp"), ("asimddp", "asimdhp")]),  # A55 + A76
    ("odroid-n2plus", [(), ()]),                                     # A53 + A73
    ("tinker-edge-r", [(), ()]),                                     # A53 + A72
    ("rpi4", [()]),                                                  # A72
])
def test_detect_reads_each_clusters_features(name, features):
    assert [c.features for c in detect(FIXTURES / name).clusters] == features
    assert [c.features for c in load_board(name).clusters] == features


def _with_features(tmp_path, name, per_cpu):
    """A copy of a recorded kernel whose cpus' Features lines gain the given words."""
    root = Path(shutil.copytree(FIXTURES / name, tmp_path / name))
    cpuinfo = root / "proc" / "cpuinfo"
    blocks = cpuinfo.read_text().split("\n\n")
    for i, block in enumerate(blocks):
        cpu = next((int(line.split(":")[1]) for line in block.splitlines()
                    if line.startswith("processor")), None)
        if cpu in per_cpu:
            blocks[i] = block.replace("Features\t: ", f"Features\t: {per_cpu[cpu]} ", 1)
    cpuinfo.write_text("\n\n".join(blocks))
    return root


def test_i8mm_only_where_the_kernel_prints_it(tmp_path):
    # The features are read per cluster, from one of its own cpus.
    root = _with_features(tmp_path, "rk3588", {cpu: "i8mm bf16" for cpu in range(4, 8)})
    little, big = detect(root).clusters
    assert little.features == ("asimddp", "asimdhp")
    assert big.features == ("asimddp", "asimdhp", "i8mm")


def test_x86_has_no_arm_features():
    assert [c.features for c in detect(FIXTURES / "x86-host").clusters] == [None]


def test_an_older_board_file_without_features_still_loads(tmp_path):
    d = load_board("rk3588").to_dict()
    for c in d["clusters"]:
        del c["features"]
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    old = load_file(path)
    assert [c.features for c in old.clusters] == [None, None]
    assert all("features" not in c for c in old.to_dict()["clusters"])
    assert old.fingerprint == load_board("rk3588").fingerprint


def test_features_compare_in_one_order(tmp_path):
    d = load_board("rk3588").to_dict()
    d["clusters"][0]["features"] = ["asimdhp", "asimddp"]
    assert Board.from_dict(d) == load_board("rk3588")


@pytest.mark.parametrize("features, message", [
    ("asimddp", "clusters[1].features: expected a list of feature names, got string"),
    (["asimddp", "sve"], "clusters[1].features[1]: expected one of asimddp, asimdhp, i8mm, "
                         "got string 'sve'"),
    (["asimddp", "asimddp"], "clusters[1].features[1]: 'asimddp' is listed twice"),
])
def test_bad_features_fail_in_one_line(features, message, tmp_path):
    d = load_board("rk3588").to_dict()
    d["clusters"][1]["features"] = features
    path = tmp_path / "x.yaml"
    error = load_error(load_file, path, yaml.safe_dump(d, sort_keys=False), BoardError)
    assert error.startswith(f"{path}: {message}")


def _features(findings):
    return [(f.ok, f.message) for f in findings if f.check == "features"]


def test_doctor_a_board_file_that_claims_dotprod_on_a53s():
    """RK3588's file (A55 + A76: asimddp asimdhp) on an Odroid N2+ kernel."""
    failing = [f for f in problems(diagnose(load_board("rk3588"), FIXTURES / "odroid-n2plus",
                                            sample_s=0)) if f.check == "features"]
    assert failing and failing[0].message == (
        "cpu0 has none of asimddp, asimdhp, i8mm but board rk3588 says asimddp asimdhp "
        "(cluster little): lacks asimddp asimdhp, so its kernels would die of SIGILL")
    assert "board detect" in failing[0].fix


def test_doctor_a_board_file_that_leaves_features_out(tmp_path):
    root = _with_features(tmp_path, "rk3588", {cpu: "i8mm" for cpu in range(4, 8)})
    found = _features(diagnose(load_board("rk3588"), root, sample_s=0))
    assert found[0] == (True, "cluster little (cpu0-3): asimddp asimdhp")
    assert found[1:] == [(False, f"cpu{cpu} has asimddp asimdhp i8mm but board rk3588 says "
                                 f"asimddp asimdhp (cluster big): also has i8mm, whose "
                                 f"kernels go untried") for cpu in range(4, 8)]


def test_doctor_an_older_file_is_told_what_the_machine_has(tmp_path):
    d = load_board("rk3588").to_dict()
    for c in d["clusters"]:
        del c["features"]
    found = _features(diagnose(Board.from_dict(d), FIXTURES / "rk3588", sample_s=0))
    assert found == [(True, f"cluster {name}: board rk3588 lists no features (a file older "
                            f"than the field); this machine has: asimddp asimdhp")
                     for name in ("little (cpu0-3)", "big (cpu4-7)")]


def test_cli_shows_and_detects_features(tmp_path):
    runner = CliRunner()
    shown = runner.invoke(main, ["board", "show", "rk3588"])
    assert shown.exit_code == 0 and shown.output.count("features asimddp asimdhp") == 2
    assert "features -" in runner.invoke(main, ["board", "show", "odroid-n2plus"]).output
    out = tmp_path / "rk.yaml"
    detected = runner.invoke(main, ["board", "detect", "--sysfs", str(FIXTURES / "rk3588"),
                                    "-o", str(out)])
    assert detected.exit_code == 0, detected.output
    assert [c["features"] for c in yaml.safe_load(out.read_text())["clusters"]] == [
        ["asimddp", "asimdhp"], ["asimddp", "asimdhp"]]

"""Boards as data: the shipped files, detection from recorded kernels, the YAML
schema's one-line errors, the registry and the `acltuner board` commands."""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from acltuner.board import (Board, BoardError, detect, dump_yaml, list_boards, load_board,
                            load_file, save_file)
from acltuner.board.cores import compiler_flags
from acltuner.board.cpulist import format_cpulist, parse_cpulist
from acltuner.cli import main
from acltuner.engine import native
from tests.support.file_errors import load_error

FIXTURES = Path(__file__).parents[1] / "fixtures" / "boards"
CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "boards"
ARM_BOARDS = ["odroid-n2plus", "tinker-edge-r", "rpi4", "rk3588"]
SHIPPED = ARM_BOARDS + ["split-host"]


def _performance(b: Board) -> dict:
    """Everything but the labels (board name, description)."""
    d = b.to_dict()
    return {k: d[k] for k in ("isa", "clusters", "compiler_flags", "launcher_wrapper")}


def _copy_fixture(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


# --- shipped boards and detection -------------------------------------------------------------

@pytest.mark.parametrize("name", ARM_BOARDS)
def test_detecting_the_recorded_kernel_gives_the_shipped_board(name):
    shipped, detected = load_board(name), detect(FIXTURES / name)
    assert _performance(detected) == _performance(shipped)
    assert detected.fingerprint == shipped.fingerprint
    assert detected.isa == "aarch64" and detected.name == name


@pytest.mark.parametrize("name, threads", [("odroid-n2plus", 2), ("tinker-edge-r", 2),
                                           ("rpi4", 4), ("rk3588", 4), ("split-host", 1)])
def test_armnn_threads_is_the_smallest_cluster(name, threads):
    assert load_board(name).armnn_threads == threads


def test_paper_table4_boards():
    n2, edge = load_board("odroid-n2plus"), load_board("tinker-edge-r")
    assert [(c.core_type, len(c.cpus)) for c in n2.clusters] == [("cortex-a53", 2),
                                                                  ("cortex-a73", 4)]
    assert [(c.core_type, len(c.cpus)) for c in edge.clusters] == [("cortex-a53", 4),
                                                                    ("cortex-a72", 2)]
    assert n2.cluster_of == [0, 0, 1, 1, 1, 1] and edge.cluster_of == [0, 0, 0, 0, 1, 1]
    assert (n2.ncores, edge.ncores) == (6, 6)


def test_rk3588_topology_does_not_split_identical_cores():
    # The recorded kernel puts cpu4-5 and cpu6-7 in packages 1 and 2.
    topo = FIXTURES / "rk3588/sys/devices/system/cpu"
    assert {(topo / f"cpu{c}/topology/physical_package_id").read_text().strip()
            for c in range(4, 8)} == {"1", "2"}
    assert [c.cpus for c in detect(FIXTURES / "rk3588").clusters] == [(0, 1, 2, 3), (4, 5, 6, 7)]


def test_x86_host_recording_and_split_host():
    # Recorded on this workstation: two identical vCPUs with cluster_id 0 and 1.
    host = detect(FIXTURES / "x86-host")
    assert host.isa == "x86_64" and host.compiler_flags == []
    assert [(c.name, c.cpus, c.max_freq_mhz) for c in host.clusters] == [("cpus", (0, 1), 2600)]
    split = load_board("split-host")
    assert [(c.name, c.cpus) for c in split.clusters] == [("little", (0,)), ("big", (1,))]
    assert {c.core_type for c in split.clusters} == {host.clusters[0].core_type}
    assert split.isa == "x86_64"


def test_detect_this_host():
    b = detect("/")
    assert b.name == "host" and load_board("host") == b
    machine = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
    assert b.isa == machine[platform.machine().lower()]
    assert all(0 <= cpu < native.cpu_count() for c in b.clusters for cpu in c.cpus)
    assert Board.from_dict(b.to_dict()) == b


def test_detect_skips_offline_cores(tmp_path):
    root = _copy_fixture("odroid-n2plus", tmp_path)
    (root / "sys/devices/system/cpu/online").write_text("0-3\n")
    b = detect(root)
    assert [c.cpus for c in b.clusters] == [(0, 1), (2, 3)]


def test_detect_without_sysfs_degrades(tmp_path):
    root = _copy_fixture("tinker-edge-r", tmp_path)
    shutil.rmtree(root / "sys")
    b = detect(root)  # no clocks nor capacities: cores grouped by type only
    assert [(c.core_type, c.cpus, c.max_freq_mhz, c.capacity) for c in b.clusters] == [
        ("cortex-a53", (0, 1, 2, 3), 0, None), ("cortex-a72", (4, 5), 0, None)]
    assert Board.from_dict(b.to_dict()) == b


def test_detect_x86_without_cpufreq_uses_cpuinfo_mhz(tmp_path):
    root = tmp_path / "vm"
    (root / "proc").mkdir(parents=True)
    (root / "proc/cpuinfo").write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core "
        "Processor\ncpu MHz\t\t: 2449.998\n\n")
    b = detect(root)
    assert [(c.core_type, c.cpus, c.max_freq_mhz) for c in b.clusters] == [
        ("amd-epyc-7b13-64-core-processor", (0,), 2450)]


def test_detect_three_clusters_and_unknown_parts(tmp_path):
    def core(cpu, part):
        return (f"processor\t: {cpu}\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
                f"CPU part\t: {part}\n\n")
    root = tmp_path / "soc"
    (root / "proc").mkdir(parents=True)
    (root / "proc/cpuinfo").write_text(
        "".join(core(i, "0xd05") for i in range(4)) + core(4, "0xd41") + core(5, "0xd41")
        + core(6, "0xd44") + core(7, "0xd44"))
    for cpu, cap in enumerate([300] * 4 + [800, 800, 1024, 1024]):
        (root / f"sys/devices/system/cpu/cpu{cpu}").mkdir(parents=True)
        (root / f"sys/devices/system/cpu/cpu{cpu}/cpu_capacity").write_text(f"{cap}\n")
    b = detect(root)
    assert [(c.name, c.core_type) for c in b.clusters] == [
        ("little", "cortex-a55"), ("mid", "cortex-a78"), ("big", "cortex-x1")]
    assert b.compiler_flags == ["-mcpu=cortex-a55", "-mtune=cortex-x1"]
    (root / "proc/cpuinfo").write_text(core(0, "0xd80"))
    assert detect(root).clusters[0].core_type == "cpu-0x41-0xd80"
    assert detect(root).compiler_flags == ["-march=armv8-a"]


@pytest.mark.parametrize("cpuinfo, message", [
    (None, "cannot read"),
    ("Hardware\t: nothing\n", "no 'processor' entries"),
    ("processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 7\nCPU part\t: 0xd08\n",
     "a 32-bit Arm kernel"),
])
def test_detect_errors_are_one_line(tmp_path, cpuinfo, message):
    (tmp_path / "proc").mkdir()
    if cpuinfo is not None:
        (tmp_path / "proc/cpuinfo").write_text(cpuinfo)
    with pytest.raises(BoardError, match=message) as e:
        detect(tmp_path)
    assert "\n" not in str(e.value) and str(tmp_path / "proc/cpuinfo") in str(e.value)


def test_compiler_flags_table():
    assert compiler_flags("aarch64", ["cortex-a53", "cortex-a73"]) == [
        "-mcpu=cortex-a73.cortex-a53"]
    assert compiler_flags("aarch64", ["cortex-a55", "cortex-a76", "cortex-a76"]) == [
        "-mcpu=cortex-a76.cortex-a55"]
    assert compiler_flags("aarch64", ["cortex-a510", "cortex-a710"]) == [
        "-mcpu=cortex-a510", "-mtune=cortex-a710"]
    assert compiler_flags("x86_64", ["intel-xeon-processor"]) == []


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None,
                    reason="no AArch64 cross compiler")
@pytest.mark.parametrize("name", ARM_BOARDS)
def test_the_cross_compiler_accepts_the_flags(name, tmp_path):
    src = tmp_path / "x.c"
    src.write_text("int x;\n")
    cmd = ["aarch64-linux-gnu-gcc", *load_board(name).compiler_flags, "-c", str(src),
           "-o", str(tmp_path / "x.o")]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0


def test_cpulists():
    assert parse_cpulist("0-3,6\n") == [0, 1, 2, 3, 6] and parse_cpulist("5") == [5]
    assert format_cpulist([6, 0, 1, 2, 3]) == "0-3,6" and format_cpulist([4]) == "4"


# --- the file format -----------------------------------------------------------------------

@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_round_trip(name, tmp_path):
    b = load_board(name)
    assert b.name == name and b.description
    assert Board.from_dict(b.to_dict()) == b
    save_file(b, tmp_path / "b.yaml")
    assert load_file(tmp_path / "b.yaml") == b
    assert yaml.safe_load(dump_yaml(b)) == b.to_dict()


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "b.yaml"
    save_file(load_board("rpi4"), path)
    before = path.read_text()

    def crash(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        save_file(load_board("rk3588"), path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["b.yaml"]


def test_fingerprint_ignores_labels_and_tells_boards_apart():
    b = load_board("odroid-n2plus")
    relabelled = dataclasses.replace(
        b, name="n2", description="mine",
        clusters=tuple(dataclasses.replace(c, name=f"c{i}") for i, c in enumerate(b.clusters)))
    assert relabelled.fingerprint == b.fingerprint
    faster = dataclasses.replace(b, clusters=(b.clusters[0], dataclasses.replace(
        b.clusters[1], max_freq_mhz=2208)))
    assert faster.fingerprint != b.fingerprint
    prints = [load_board(n).fingerprint for n in SHIPPED + ["host"]]
    assert len(set(prints)) == len(prints)


def _bad(mutate):
    d = load_board("odroid-n2plus").to_dict()
    mutate(d)
    return d


def _set(d, path, value):
    *parents, last = path
    for key in parents:
        d = d[key]
    d[last] = value


def _drop(d, path):
    *parents, last = path
    for key in parents:
        d = d[key]
    del d[last]


BAD_FILES = [
    (lambda d: _set(d, ["clusters", 1, "cpus"], [2, 3, 3, 5]),
     "clusters[1].cpus: cpu 3 is listed twice"),
    (lambda d: _set(d, ["clusters", 1, "cpus"], [1, 2, 3]),
     "clusters[1].cpus: cpu 1 is listed twice (also in clusters[0])"),
    (lambda d: d.update(clusterz=d.pop("clusters")),
     "unknown field 'clusterz' (did you mean 'clusters'?)"),
    (lambda d: d["clusters"][0].update(cpu=d["clusters"][0].pop("cpus")),
     "clusters[0]: unknown field 'cpu' (did you mean 'cpus'?)"),
    (lambda d: _drop(d, ["isa"]), "missing field 'isa'"),
    (lambda d: _drop(d, ["clusters", 1, "max_freq_mhz"]), "clusters[1]: missing field "
                                                          "'max_freq_mhz'"),
    (lambda d: _set(d, ["clusters", 0, "max_freq_mhz"], "2.0 GHz"),
     "clusters[0].max_freq_mhz: expected an integer >= 0, got string '2.0 GHz'"),
    (lambda d: _set(d, ["clusters", 0, "max_freq_mhz"], True),
     "clusters[0].max_freq_mhz: expected an integer >= 0, got boolean True"),
    (lambda d: _set(d, ["clusters", 0, "capacity"], 2048),
     "clusters[0].capacity: expected an integer from 1 to 1024, got integer 2048"),
    (lambda d: _set(d, ["clusters", 0, "cpus"], [0, "one"]),
     "clusters[0].cpus[1]: expected an integer >= 0, got string 'one'"),
    (lambda d: _set(d, ["clusters", 0, "cpus"], []),
     "clusters[0].cpus: expected a non-empty list of cpu ids, got list []"),
    (lambda d: _set(d, ["clusters"], []), "clusters: expected a non-empty list of clusters"),
    (lambda d: _set(d, ["clusters", 0, "core_type"], ""), "clusters[0].core_type: expected a "
                                                          "non-empty string"),
    (lambda d: _set(d, ["clusters", 1, "name"], "little"),
     "clusters[1].name: 'little' is also the name of clusters[0]"),
    (lambda d: d["clusters"].reverse(),
     "clusters: not ordered LITTLE to big (by capacity, then max_freq_mhz): expected little, "
     "big"),
    (lambda d: _set(d, ["isa"], "arm64"), "isa: expected one of aarch64, x86_64, got string "
                                          "'arm64'"),
    (lambda d: _set(d, ["schema_version"], 2), "schema_version: unsupported version 2"),
    (lambda d: _set(d, ["compiler_flags"], "-mcpu=cortex-a73"),
     "compiler_flags: expected a list of strings, got string '-mcpu=cortex-a73'"),
    (lambda d: _set(d, ["launcher_wrapper"], ["qemu-aarch64", 3]),
     "launcher_wrapper[1]: expected a non-empty string, got integer 3"),
]


@pytest.mark.parametrize("mutate, message", BAD_FILES)
def test_bad_files_fail_in_one_line_naming_file_and_field(mutate, message, tmp_path):
    path = tmp_path / "x.yaml"
    text = yaml.safe_dump(_bad(mutate), sort_keys=False)
    assert load_error(load_file, path, text, BoardError).startswith(f"{path}: {message}")


@pytest.mark.parametrize("text, message", [
    ("clusters: [\n", "not valid YAML"),
    ("- 1\n- 2\n", "expected a mapping of fields, got list"),
    ("", "expected a mapping of fields, got nothing (null)"),
])
def test_unreadable_files(text, message, tmp_path):
    path = tmp_path / "x.yaml"
    error = load_error(load_file, path, text, BoardError)
    assert error.startswith(f"{path}: ") and message in error


# --- registry ------------------------------------------------------------------------------

def test_list_boards():
    assert list_boards() == sorted(SHIPPED) + ["host"]
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == sorted(SHIPPED)


def test_load_board_by_path_and_configs_override(tmp_path, monkeypatch):
    assert load_board(CONFIGS / "rpi4.yaml") == load_board(str(CONFIGS / "rpi4.yaml"))
    (tmp_path / "boards").mkdir()
    save_file(dataclasses.replace(load_board("rpi4"), name="mine"), tmp_path / "boards/mine.yaml")
    monkeypatch.setenv("ACLTUNER_CONFIGS", str(tmp_path))
    assert list_boards() == ["mine", "host"] and load_board("mine").name == "mine"


def test_unknown_board_names_the_known_ones():
    with pytest.raises(BoardError) as e:
        load_board("odroid-n2")
    assert str(e.value) == ("unknown board 'odroid-n2' (did you mean 'odroid-n2plus'?); known "
                            "boards: " + ", ".join(sorted(SHIPPED) + ["host"]))


# --- the command line ----------------------------------------------------------------------

def _cli(*args):
    return CliRunner().invoke(main, list(args))


def test_cli_board_list():
    result = _cli("board", "list")
    assert result.exit_code == 0
    assert [ln.split()[0] for ln in result.output.splitlines()] == sorted(SHIPPED) + ["host"]
    assert "2x cortex-a53 2016 MHz + 4x cortex-a73 2400 MHz" in result.output
    listed = json.loads(_cli("board", "list", "--json").output)["boards"]
    assert [b["name"] for b in listed] == [load_board(n).name for n in sorted(SHIPPED) + ["host"]]
    # Each board as `board show --json` gives it.
    assert listed[0] == json.loads(_cli("board", "show", sorted(SHIPPED)[0], "--json").output)


def test_cli_board_show():
    result = _cli("board", "show", "tinker-edge-r")
    assert result.exit_code == 0
    b = load_board("tinker-edge-r")
    for text in ("cortex-a53", "cpus 0-3", "1416 MHz", "cortex-a72", "cpus 4-5", "1800 MHz",
                 "aarch64", "-mcpu=cortex-a72.cortex-a53", b.fingerprint):
        assert text in result.output
    assert result.output.splitlines()[-1] == "ArmNN default threads: 2"
    data = json.loads(_cli("board", "show", str(CONFIGS / "rk3588.yaml"), "--json").output)
    assert data["armnn_threads"] == 4 and data["ncores"] == 8
    assert data["fingerprint"] == load_board("rk3588").fingerprint


def test_cli_board_detect(tmp_path):
    out = tmp_path / "n2.yaml"
    result = _cli("board", "detect", "--sysfs", str(FIXTURES / "odroid-n2plus"), "-o", str(out))
    assert result.exit_code == 0
    b = load_file(out)
    assert b.name == "n2" and _performance(b) == _performance(load_board("odroid-n2plus"))
    assert yaml.safe_load(result.stdout) == b.to_dict()
    data = json.loads(_cli("board", "detect", "--json").output)
    assert data["isa"] == detect("/").isa


@pytest.mark.parametrize("args, message", [
    (["board", "show", "odroid-n2"], "did you mean 'odroid-n2plus'?"),
    (["board", "show", "BAD"], "clusters[1].cpus: cpu 1 is listed twice (also in clusters[0])"),
    (["board", "show", "missing.yaml"], "No such file or directory"),
])
def test_cli_errors_are_one_line(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(_bad(
        lambda d: _set(d, ["clusters", 1, "cpus"], [1, 2, 3]))))
    args = ["bad.yaml" if a == "BAD" else a for a in args]
    result = _cli(*args)
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert message in result.output
    if args[-1] == "bad.yaml":
        assert result.output.startswith("Error: bad.yaml: ")

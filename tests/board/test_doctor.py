"""`acltuner board doctor`: every check on the recorded kernels of the shipped
boards (tests/fixtures/boards), on throttled, capped and wrong-core-type
variants of them, on recorded process samples, and on this machine."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from acltuner.board import load_board
from acltuner.app.doctor import check_busy, diagnose, problems
from acltuner.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "boards"
ARM_BOARDS = ["odroid-n2plus", "tinker-edge-r", "rpi4", "rk3588"]
LINE = re.compile(r"(ok  |FIX ) (cores|features|governor|clock|thermal|busy) +\S.*")


def _doctor(*args):
    return CliRunner().invoke(main, ["board", "doctor", *map(str, args)])


def _failing(findings, check):
    return [f.message for f in problems(findings) if f.check == check]


@pytest.mark.parametrize("name", ARM_BOARDS)
def test_each_shipped_board_on_its_recorded_kernel(name):
    result = _doctor("--board", name, "--sysfs", FIXTURES / name)
    lines = result.output.splitlines()
    assert lines and all(LINE.fullmatch(line) for line in lines), result.output
    findings = diagnose(load_board(name), FIXTURES / name, sample_s=0)
    assert [f.line() for f in findings] == lines
    # The recordings are of the boards themselves, cool and unloaded: only
    # the governor can be wrong, where the image's default scales the clock.
    governor = (FIXTURES / name / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
                ).read_text().strip()
    assert {f.check for f in problems(findings)} == (set() if governor == "performance"
                                                    else {"governor"})
    assert result.exit_code == (0 if governor == "performance" else 1)
    if governor != "performance":
        assert f"{governor} scales the clock" in result.output
        assert "fix: echo performance | sudo tee" in result.output


def _variant(tmp_path, name="odroid-n2plus"):
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def test_a_throttled_board(tmp_path):
    root = _variant(tmp_path)
    for cpu in range(2, 6):  # the A73s at half clock
        (root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq").write_text("1200000\n")
    (root / "sys/class/thermal/thermal_zone0/temp").write_text("87500\n")
    (root / "sys/class/thermal/thermal_zone1/temp").write_text("81000\n")
    findings = diagnose(load_board("odroid-n2plus"), root, sample_s=0)
    assert _failing(findings, "clock") == [
        "cluster big (cpu2-5): runs at 1200 MHz of 2400 MHz now (throttled, or a governor "
        "that scales)"]
    hot, warm = _failing(findings, "thermal")
    assert "cpu_thermal) 87.5 C, past its trip point 85.0 C" in hot
    assert "ddr_thermal) 81.0 C, within 5 C of its trip point 85.0 C" in warm
    result = _doctor("--board", "odroid-n2plus", "--sysfs", root)
    assert result.exit_code == 1 and result.output.count("FIX ") == 3


def test_a_capped_clock(tmp_path):
    root = _variant(tmp_path)
    for cpu in (0, 1):
        (root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_max_freq").write_text("1000000\n")
    (message,) = _failing(diagnose(load_board("odroid-n2plus"), root, sample_s=0), "clock")
    assert message == "cluster little (cpu0-1): capped at 1000 MHz of 2016 MHz (scaling_max_freq)"


def test_a_board_file_of_other_cores(tmp_path):
    """The Odroid N2+'s file (2x A53 + 4x A73) on a Tinker Edge R (4x A53 + 2x A72)."""
    findings = diagnose(load_board("odroid-n2plus"), FIXTURES / "tinker-edge-r", sample_s=0)
    cores = _failing(findings, "cores")
    assert cores == [
        "cpu2 is cortex-a53 (MIDR part 0xd03) but board odroid-n2plus says cortex-a73 "
        "(cluster big)",
        "cpu3 is cortex-a53 (MIDR part 0xd03) but board odroid-n2plus says cortex-a73 "
        "(cluster big)",
        "cpu4 is cortex-a72 (MIDR part 0xd08) but board odroid-n2plus says cortex-a73 "
        "(cluster big)",
        "cpu5 is cortex-a72 (MIDR part 0xd08) but board odroid-n2plus says cortex-a73 "
        "(cluster big)"]
    assert len(_failing(findings, "clock")) == 2  # 1416 / 1800 MHz, not 2016 / 2400
    # A board file with more cores than the host has names the missing one.
    missing = diagnose(load_board("rk3588"), FIXTURES / "rpi4", sample_s=0)
    assert any(m.startswith("cpu4 (cluster big, cortex-a76) is not online")
               for m in _failing(missing, "cores"))


def _stat_line(pid, name, cpu, ticks):
    # pid (comm) state, then fields 4..52: utime is field 14, stime 15, processor 39.
    fields = ["S"] + ["0"] * 49
    fields[11], fields[12], fields[36] = str(ticks), "0", str(cpu)
    return f"{pid} ({name}) {' '.join(fields)}"


def test_busy_processes_from_recorded_samples(tmp_path):
    """Two samples 0.5 s apart: a process that ran 0.4 s of it on a measured
    core is named, one that barely ran or ran elsewhere is not."""
    root = _variant(tmp_path, "rpi4")
    procs = [(300, "stress ng", 2, 1000, 1040), (301, "sshd", 1, 50, 51),
             (302, "(sd-pam)", 3, 9, 9)]
    (root / "proc/stat-before").write_text(
        "\n".join(_stat_line(p, n, c, a) for p, n, c, a, _ in procs) + "\n")
    (root / "proc/stat-after").write_text(
        "\n".join(_stat_line(p, n, c, b) for p, n, c, _, b in procs) + "\n")
    board = load_board("rpi4")
    (busy,) = problems(check_busy(board, root, sample_s=0))
    assert busy.message == "stress ng (pid 300) used 0.80 cores, last on cpu2"
    assert "sudo taskset" in busy.fix


def test_this_machine(tmp_path):
    result = _doctor()
    lines = result.output.splitlines()
    assert lines and all(LINE.fullmatch(line) for line in lines), result.output
    assert result.exit_code == (1 if any(line.startswith("FIX") for line in lines) else 0)
    assert f"(pid {os.getpid()})" not in result.output


def test_bad_arguments_are_one_line(tmp_path):
    result = _doctor("--board", "odroid-n3")
    assert result.exit_code != 0 and "odroid-n3" in result.output
    both = _doctor("--host", "h", "--sysfs", tmp_path)
    assert both.exit_code == 2 and "--host or --sysfs" in both.output

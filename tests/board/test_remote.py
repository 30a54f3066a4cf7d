"""Boards over SSH, with this machine standing in for a board: an sshd of the
test's own on 127.0.0.1 (own config, host key, user key; the client verifies
the host key against a real known_hosts entry), and board files whose launcher
wrapper runs the AArch64 launcher under qemu-aarch64 there.  Build, deploy,
tune through it, a connection killed mid-tune, and the one-line errors."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import onnx
import pytest
import yaml
from click.testing import CliRunner

from acltuner.board.registry import load_board
from acltuner.cli import main
from acltuner.engine.build import board_build_dir, board_engine_fingerprint, missing_tools
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.plan import load_plan
from acltuner.remote import ssh
from acltuner.remote.launcher import RemoteLauncherClient, remote_launcher_command
from acltuner.remote.layout import engine_version
from acltuner.tuner.tuner_config import DEFAULT_PATH as DEFAULT_TUNER_CONFIG
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error
from tests.support.engine_backends import QEMU_BOARD_FILE
from tests.support.records_checks import latest, read_records

FIXTURES = Path(__file__).parents[1] / "fixtures" / "remote"
QEMU_BOARD = QEMU_BOARD_FILE  # the board whose build the AArch64 tests share
SSHD = "/usr/sbin/sshd"
HOST = "127.0.0.1"

pytestmark = pytest.mark.aarch64


def _missing() -> list[str]:
    missing = missing_tools(("cmake", "aarch64-linux-gnu-gcc", "qemu-aarch64", "ssh",
                             "ssh-keygen"))
    return missing + ([SSHD] if not os.access(SSHD, os.X_OK) else [])


@pytest.fixture(scope="module", autouse=True)
def _tools():
    missing = _missing()
    if missing:
        message = f"the SSH board tests need {', '.join(missing)}"
        if os.environ.get("ACLTUNER_REQUIRE_AARCH64"):
            pytest.fail(message + " (ACLTUNER_REQUIRE_AARCH64 is set)")
        pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def process_parents() -> dict[int, int]:
    """Every process's parent, by pid."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The parent pid is the 2nd field after the parenthesised command name.
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _children(pid: int) -> list[int]:
    return [child for child, parent in process_parents().items() if parent == pid]


class Sshd:
    """sshd on a free port of 127.0.0.1, and an ssh client config that reaches it
    as HOST with a key of its own and a known_hosts entry for its host key."""

    def __init__(self, root: Path):
        self.root = root
        self.port = _free_port()
        for key in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(root / key)], check=True)
        shutil.copy(root / "user_key.pub", root / "authorized_keys")
        (root / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress {HOST}\nHostKey {root}/host_key\n"
            f"AuthorizedKeysFile {root}/authorized_keys\nPidFile none\nStrictModes no\n"
            f"UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"PermitRootLogin prohibit-password\n")
        host_key = " ".join((root / "host_key.pub").read_text().split()[:2])
        (root / "known_hosts").write_text(f"[{HOST}]:{self.port} {host_key}\n")
        self.closed_port = _free_port()
        user = os.environ.get("USER") or subprocess.run(
            ["id", "-un"], capture_output=True, text=True).stdout.strip()
        # ssh takes the first value it finds for each option: "closed" gets its port first.
        (root / "ssh_config").write_text(
            f"Host closed\n  HostName {HOST}\n  Port {self.closed_port}\n"
            f"Host {HOST} closed\n  Port {self.port}\n  User {user}\n"
            f"  IdentityFile {root}/user_key\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {root}/known_hosts\n  GlobalKnownHostsFile /dev/null\n"
            f"  StrictHostKeyChecking yes\n")
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(root / "sshd_config")],
                                     stdout=subprocess.DEVNULL,
                                     stderr=(root / "sshd.log").open("w"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex((HOST, self.port)) == 0:
                    return
            assert self.proc.poll() is None, (root / "sshd.log").read_text()
            time.sleep(0.05)
        raise AssertionError("sshd did not start listening")

    def drop_connections(self) -> int:
        """Kills every session process of sshd, as a lost network would end them."""
        killed = 0
        for pid in _children(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:  # that session was ending anyway
                pass
        return killed

    def stop(self) -> None:
        try:
            ssh.close_connection(HOST)
            self.drop_connections()
        finally:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    root = tmp_path_factory.mktemp("sshd")
    remote = tmp_path_factory.mktemp("remote-home")
    with pytest.MonkeyPatch.context() as mp:
        server = Sshd(root)
        mp.setenv(ssh.SSH_CONFIG_ENV, str(root / "ssh_config"))
        mp.setenv("ACLTUNER_REMOTE_DIR", str(remote))
        yield server
        server.stop()


@pytest.fixture(scope="module")
def deployed(sshd):
    result = _cli("deploy", "--board", QEMU_BOARD, "--host", HOST)
    assert result.exit_code == 0, result.output
    return result


def _cli(*args):
    """The command, its boards' wrappers allowed (qemu-aarch64 is this suite's)."""
    return CliRunner().invoke(main, ["--allow-wrapper", *map(str, args)])


def _qemu_board():
    return dataclasses.replace(load_board(QEMU_BOARD), wrapper_allowed=True)


def _model(path: Path) -> Path:
    b = GraphBuilder(seed=3, input_shape=(1, 3, 16, 16))
    x = b.conv("input", "c1", 8, 3, pads=1, relu="c1.relu")
    y = b.conv(x, "c2", 8, 3, pads=1, relu="c2.relu")
    y = b.conv(y, "c3", 16, 1, stride=2)
    onnx.save(b.model(y, "small"), path)
    return path


def emulated_tuner_config(folder: Path) -> Path:
    """The tuner config without the noise control and with one timed run per
    config.  Emulated times spread beyond any target: with the control on,
    most configs would be measured twice and a tune would outlast its test;
    and qemu's times mean nothing, so more runs only cost time (at 30 ms and
    3 runs, 2-3 s a measurement over ssh; at one run, 0.2-0.3 s)."""
    settings = yaml.safe_load(DEFAULT_TUNER_CONFIG.read_text())
    settings["measure"]["ci_target_pct"] = 0
    settings["measure"].update(min_repeat_ms=0, min_repeats=1, warmup=0)
    config = folder / "tuner.yaml"
    config.write_text(yaml.safe_dump(settings))
    return config


def test_ssh_command_quotes_and_never_disables_host_keys(sshd, tmp_path):
    board = _qemu_board()
    cmd = remote_launcher_command(board, HOST)
    assert cmd[0] == "ssh" and "BatchMode=yes" in cmd and "ControlMaster=auto" in cmd
    assert not any("StrictHostKeyChecking" in word for word in cmd)
    weird = tmp_path / "it's a $(file)"
    weird.write_text("x")
    answer = ssh.run(HOST, f"cat {ssh.remote_shell_line([str(weird)])}")
    assert answer.returncode == 0 and answer.stdout == "x"


def test_build_prints_a_static_launcher_last(sshd):
    result = _cli("build", "--board", QEMU_BOARD)
    assert result.exit_code == 0, result.output
    launcher = Path(result.output.strip().splitlines()[-1])
    assert launcher.name == "acl-launcher" and launcher.is_file()
    described = subprocess.run(["file", "-b", str(launcher)], capture_output=True,
                               text=True).stdout
    assert "aarch64" in described and "statically linked" in described, described


def test_deploy_copies_once_and_checks_the_launcher(sshd, deployed):
    first = deployed.output
    remote = Path(os.environ["ACLTUNER_REMOTE_DIR"]) / engine_version() / "acl-launcher"
    assert f"copied to {HOST}:{remote}" in first and remote.is_file()
    assert f"{HOST}: acl-launcher {engine_version()}, neon kernels" in first
    again = _cli("deploy", "--board", QEMU_BOARD, "--host", HOST)
    assert again.exit_code == 0 and f"already on {HOST}:{remote}" in again.output


def test_tune_on_the_board_and_survive_a_dropped_connection(sshd, deployed, tmp_path):
    model = _model(tmp_path / "small.onnx")
    plan_path, records = tmp_path / "small.plan.json", tmp_path / "records.jsonl"
    # Enough trials that the tune is still measuring when the test drops the
    # connection (0.2-0.3 s a measurement), few enough that it ends well
    # within the wait.
    trials = 6
    config = emulated_tuner_config(tmp_path)
    cmd = [sys.executable, "-m", "acltuner.cli", "--allow-wrapper", "tune", str(model),
           "-o", str(plan_path),
           "--board", str(QEMU_BOARD), "--host", HOST, "--trials", str(trials),
           "--records", str(records), "--config", str(config),
           "--no-in-context"]  # the plan below holds each task's best (test_in_context: the check)
    log = tmp_path / "tune.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and len(records.read_bytes().splitlines()) >= trials // 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "tune finished before the connection could be dropped"
    before = records.read_text().splitlines()
    assert sshd.drop_connections() >= 1
    assert proc.wait(300) == 0, log.read_text()
    output = log.read_text()
    assert "dropped 1 time(s): reconnected" in output, output

    after = latest(read_records(records))  # fails if a configuration was recorded twice
    lines = records.read_text().splitlines()
    assert all(line in lines for line in before if line.endswith("}")), "records lost"
    per_task = Counter(r["task"] for r in after)
    assert len(per_task) == 3 and set(per_task.values()) == {trials}
    lost = [r for r in after if not r["ok"] and "exit code 255" in (r.get("error") or "")]
    assert not lost, f"a config measured during the drop was recorded as failed: {lost[0]}"

    plan = load_plan(plan_path)
    assert plan.board_name == "qemu-a53" and [n.node for n in plan.nodes] == ["c1", "c2", "c3"]
    # The engine that measured: the board's own build, with its flags.
    board_fp, _ = board_engine_fingerprint(load_board(str(QEMU_BOARD)))
    assert plan.engine_version == f"{engine_version()}+{board_fp}"
    for node in plan.nodes:
        usable = [r for r in after if r["task"] == node.task and r["ok"] and r["correct"]]
        best = min(usable, key=lambda r: r["median_ms"])
        assert node.tuned_ms == best["median_ms"] and node.config.to_dict() == best["config"]
        assert len(node.config.core_weights) == 2  # the board's cpu0 and cpu1


def test_run_the_plan_on_the_board_and_check_it_here(sshd, deployed, tmp_path):
    model = _model(tmp_path / "small.onnx")
    plan_path = tmp_path / "small.plan.json"
    tuned = _cli("tune", model, "-o", plan_path, "--board", QEMU_BOARD, "--host", HOST,
                 "--strategy", "default")
    assert tuned.exit_code == 0, tuned.output
    args = ("run", plan_path, "--host", HOST, "--check", "--json", "--profile",
            "--repeat", "2", "--warmup", "0")
    # The plan's own copy of the board's wrapper never runs: the board file here does.
    assert_one_line_error(_cli(*args), "board qemu-a53", "a plan's is never run")
    result = _cli(*args, "--board", QEMU_BOARD)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["max_rel_diff"] <= 1e-4 and report["delegated"] == []
    assert 0 < report["p10_ms"] <= report["median_ms"] <= report["p90_ms"]
    # The convolutions ran on the board's engine, with the plan's NEON micro-kernels.
    kinds = {n["node"]: n["kind"] for n in report["nodes"]}
    for node in load_plan(plan_path).nodes:
        assert node.config.ukernel.endswith("-neon")
        assert f"{node.config.algorithm}/{node.config.ukernel}/" in kinds[node.node]


def test_run_on_a_host_without_the_launcher_says_to_deploy(sshd, tmp_path, monkeypatch):
    model = _model(tmp_path / "small.onnx")
    plan_path = tmp_path / "small.plan.json"
    assert _cli("tune", model, "-o", plan_path, "--strategy", "default").exit_code == 0
    monkeypatch.setenv("ACLTUNER_REMOTE_DIR", str(tmp_path / "empty"))
    result = _cli("run", plan_path, "--host", HOST, "--board", QEMU_BOARD, "--force")
    assert_one_line_error(result, "run acltuner deploy")


def test_board_doctor_over_ssh(sshd):
    """The host's recording travels over ssh: this x86 host is no Cortex-A53."""
    result = _cli("board", "doctor", "--board", QEMU_BOARD, "--host", HOST)
    lines = result.output.splitlines()
    assert result.exit_code == 1, result.output
    assert all(re.fullmatch(r"(ok  |FIX ) (cores|governor|clock|thermal|busy) +\S.*", line)
               for line in lines), result.output
    assert any(line.startswith("FIX  cores    cpu0 is ") and "says cortex-a53" in line
               for line in lines), result.output
    assert any(line.startswith(("ok   busy", "FIX  busy")) for line in lines)


def test_unreachable_host_is_one_line(sshd):
    result = _cli("deploy", "--board", QEMU_BOARD, "--host", "closed")
    assert_one_line_error(result, "cannot reach closed over ssh",
                          f"port {sshd.closed_port}: Connection refused")


def test_tune_before_deploy_says_to_deploy(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("ACLTUNER_REMOTE_DIR", str(tmp_path / "empty"))
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json", "--board",
                  QEMU_BOARD, "--host", HOST, "--records", tmp_path / "r.jsonl")
    assert_one_line_error(result, f"{HOST} has no ", "run acltuner deploy --board qemu-a53 "
                                                     f"--host {HOST}")


def test_other_engine_version_on_the_host_is_one_line(sshd, deployed, tmp_path):
    """The deployed launcher really runs, behind a wrapper that makes its hello
    answer claim another engine version."""
    script = tmp_path / "other-version.sh"
    script.write_text('qemu-aarch64 -cpu cortex-a53 -L /usr/aarch64-linux-gnu "$@" | '
                      "sed -u 's/\"version\":\"[^\"]*\"/\"version\":\"0.0.1-other\"/'\n")
    board = tmp_path / "other.yaml"
    text = QEMU_BOARD.read_text().replace("name: qemu-a53", "name: other")
    board.write_text(text.replace("launcher_wrapper: [qemu-aarch64, -cpu, cortex-a53, -L, "
                                  "/usr/aarch64-linux-gnu]", f"launcher_wrapper: [sh, {script}]"))
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json", "--board",
                  board, "--host", HOST, "--records", tmp_path / "r.jsonl")
    assert_one_line_error(result, f"{HOST} runs acl-launcher 0.0.1-other",
                          f"this acltuner is {engine_version()}",
                          f"run acltuner deploy --board other --host {HOST}")


def test_board_core_missing_on_the_host_is_named(sshd, deployed):
    # The odroid fixture's compiler flags are qemu-a53's: its build is reused
    # (a cold one costs minutes on a small CI machine).
    result = _cli("deploy", "--board", FIXTURES / "odroid-qemu.yaml", "--host", HOST,
                  "--build-dir", board_build_dir("qemu-a53"))
    assert_one_line_error(result, "board odroid-n2plus-qemu uses cpu2 (cluster big, "
                                  f"cortex-a73) but {HOST} has only cpu0-cpu1")
    # Leave the qemu-a53 launcher deployed for the other tests.
    assert _cli("deploy", "--board", QEMU_BOARD, "--host", HOST).exit_code == 0


def test_board_core_missing_here_is_named_for_a_local_tune(tmp_path):
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json", "--board",
                  FIXTURES / "odroid-qemu.yaml", "--records", tmp_path / "r.jsonl")
    assert_one_line_error(result, "board odroid-n2plus-qemu uses cpu2 (cluster big, "
                                  "cortex-a73) but this machine has only cpu0-cpu1")


def test_board_file_with_a_typo_is_one_line(sshd):
    result = _cli("deploy", "--board", FIXTURES / "typo.yaml", "--host", HOST)
    assert_one_line_error(result, "typo.yaml", "unknown field 'compiler_flag'",
                          "did you mean 'compiler_flags'")


def test_remote_client_repeats_a_request_the_drop_interrupted(sshd, deployed):
    """The connection drops while a measurement is in flight: the same request is
    answered by a fresh connection with the task loaded again, not reported as
    a failed config."""
    board = _qemu_board()
    shape = ConvShape(n=1, h=8, w=8, c=4, oc=8, kh=3, kw=3)
    config = ExecConfig("reference", None, (1, 1), 2)
    with RemoteLauncherClient(board, HOST, timeout_s=120, backoff_s=(0.2, 0.5)) as client:
        client.load(shape, seed=1)
        drop = threading.Timer(0.5, sshd.drop_connections)
        drop.start()
        # Repeats for at least 2 s, so the drop lands in the middle of it.
        m = client.measure(config, min_repeats=1, max_repeats=100000, min_repeat_ms=2000)
        drop.join()
        assert m.ok and m.correct, m.error
        assert client.reconnects == 1 and client.restarts == 0

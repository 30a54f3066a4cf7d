"""Board farms on Dask: a launcher pinned to some of this machine's cores
(ACL_CPUS), farm files, a farm that refuses an odd member, and a three-member
farm (two qemu boards on cpu0 and cpu1 of this machine, one over the test's
loopback sshd) that loses a member mid-tune and still tunes every task."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherClient, default_launcher_path
from acltuner.farm.members import MEMBER_ENV
from acltuner.plan import load_plan
from acltuner.remote.layout import engine_version
from tests.support.cli_checks import assert_one_line_error
from tests.support.records_checks import latest, read_records
from tests.board.test_remote import (HOST, QEMU_BOARD, _cli, _missing, _model,  # noqa: F401
                                     deployed, emulated_tuner_config, process_parents, sshd)

TWO_CPUS = pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0),
                              reason="needs cpu0 and cpu1")


def _one_core(path: Path, base: Path, **changes) -> Path:
    """`base` cut down to its first cluster, cpu 0 only."""
    board = yaml.safe_load(base.read_text())
    board["clusters"] = [{**board["clusters"][0], "cpus": [0], **changes}]
    path.write_text(yaml.safe_dump(board))
    return path


def wrapped_one_core(tmp_path: Path, cpus: str, sed: str) -> Path:
    """split-host's cpu 0 as a board file whose launcher_wrapper passes the
    answers of a member on `cpus` (ACL_CPUS) through `sed`, the others' as they are."""
    script = tmp_path / "wrapper.sh"
    script.write_text(f'case "$ACL_CPUS" in {cpus}) "$@" | sed -u \'{sed}\';; '
                      f'*) exec "$@";; esac\n')
    board = _one_core(tmp_path / "one.yaml", Path(__file__).parents[2] / "configs" / "boards" /
                      "split-host.yaml")
    wrapped = yaml.safe_load(board.read_text())
    wrapped["launcher_wrapper"] = ["sh", str(script)]
    board.write_text(yaml.safe_dump(wrapped))
    return board


def _farm(path: Path, board: Path, members: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"schema_version": 1, "board": str(board),
                                    "members": members}))
    return path


def _thread_cpus(pid: int) -> dict[int, str]:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = (task / "status").read_text()
        out[int(task.name)] = next(line.split()[1] for line in status.splitlines()
                                   if line.startswith("Cpus_allowed_list"))
    return out


@TWO_CPUS
def test_acl_cpus_puts_the_engine_cpus_on_the_listed_ones():
    """ACL_CPUS=1,0: the engine's cpu1 is the machine's cpu0, so the worker that
    runs cpu1's share is pinned to cpu0 (and the launcher reports 2 cpus)."""
    command = ["env", "ACL_CPUS=1,0", default_launcher_path()]
    with LauncherClient(command) as client:
        assert client.hello_info["cpus"] == 2
        client.load(ConvShape(n=1, h=16, w=16, c=8, oc=16, kh=3, kw=3), seed=1)
        ukernel = next(uk["name"] for uk in client.ukernels
                       if uk["isa"] == client.hello_info["isa"])
        m = client.measure(ExecConfig("im2col", ukernel, (1, 1), 2), min_repeats=1,
                           max_repeats=1, min_repeat_ms=0)
        assert m.ok and m.correct, m.error
        # The launcher's process is env's: exec keeps the pid.
        pinned = _thread_cpus(client.pid)
    assert "0" in pinned.values(), pinned  # the worker of the engine's cpu1
    with LauncherClient(["env", "ACL_CPUS=1", default_launcher_path()]) as client:
        assert client.hello_info["cpus"] == 1


def _recorded_machine(root: Path, khz: dict[int, int], temp_c: float, trip_c: float) -> Path:
    for cpu, value in khz.items():
        freq = root / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq"
        freq.mkdir(parents=True)
        (freq / "scaling_cur_freq").write_text(f"{value}\n")
    zone = root / "sys" / "class" / "thermal" / "thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "temp").write_text(f"{int(temp_c * 1000)}\n")
    (zone / "trip_point_0_type").write_text("passive\n")
    (zone / "trip_point_0_temp").write_text(f"{int(trip_c * 1000)}\n")
    return root


@TWO_CPUS
@pytest.mark.parametrize("temp_c, throttled", [(50.0, False), (91.0, True)])
def test_clock_check_reads_the_machine_cpu_acl_cpus_names(tmp_path, temp_c, throttled):
    """ACL_CPUS=1: the engine's cpu0 is the machine's cpu1, so the clock read
    around a measurement is cpu1's (a recorded machine, ACL_MACHINE_ROOT), and
    a zone at its trip point marks the time throttled."""
    root = _recorded_machine(tmp_path, {0: 1_200_000, 1: 2_400_000}, temp_c, trip_c=90.0)
    command = ["env", "ACL_CPUS=1", f"ACL_MACHINE_ROOT={root}", default_launcher_path()]
    with LauncherClient(command) as client:
        client.load(ConvShape(n=1, h=8, w=8, c=4, oc=8, kh=3, kw=3), seed=1)
        config = ExecConfig("reference", None, (1,), 1).to_dict()
        answer = client.request({"cmd": "measure", "config": config, "min_repeats": 1,
                                 "max_repeats": 1, "min_repeat_ms": 0})
    assert (answer["before_mhz"], answer["after_mhz"]) == ([2400], [2400])
    assert answer["after_temp_c"] == temp_c and answer["throttled"] is throttled


def test_acl_cpus_that_does_not_parse_fails_every_config():
    with LauncherClient(["env", "ACL_CPUS=zero", default_launcher_path()]) as client:
        assert client.hello_info["cpus"] == 0  # no cpu is known to be the engine's
        client.load(ConvShape(n=1, h=8, w=8, c=4, oc=8, kh=3, kw=3), seed=1)
        m = client.measure(ExecConfig("reference", None, (1,), 1), min_repeats=1,
                           max_repeats=1, min_repeat_ms=0)
    assert not m.ok and "ACL_CPUS must be a comma-separated list" in m.error


@pytest.mark.parametrize("members, expected", [
    ([{"name": "a"}, {"name": "a", "cpus": [1]}], "members[1].name: 'a' names another member"),
    ([{"name": "a", "cpu": [0]}], "members[0]: unknown field 'cpu' (did you mean 'cpus'?)"),
    ([{"name": "a", "host": "-oProxyCommand=x"}], "must not start with '-'"),
    ([{"name": "a", "cpus": [4096]}], "members[0].cpus[0]: must be from 0 to 1023, got 4096"),
    ([], "members: must be a non-empty list"),
])
def test_bad_farm_file_is_one_line(tmp_path, members, expected):
    farm = _farm(tmp_path / "farm.yaml", QEMU_BOARD, members)
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json",
                  "--farm", farm, "--records", tmp_path / "r.jsonl")
    assert_one_line_error(result, "farm.yaml", expected)


@TWO_CPUS
def test_a_member_of_another_board_class_is_refused_by_name(tmp_path):
    host_board = Path(__file__).parents[2] / "configs" / "boards" / "split-host.yaml"
    board = _one_core(tmp_path / "one.yaml", host_board)
    odd = _one_core(tmp_path / "odd.yaml", host_board, max_freq_mhz=1234)
    farm = _farm(tmp_path / "farm.yaml", board, [{"name": "cpu0", "cpus": [0]},
                                                {"name": "cpu1", "cpus": [1], "board": str(odd)}])
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json",
                  "--farm", farm, "--records", tmp_path / "r.jsonl", "--trials", "2")
    assert_one_line_error(result, "farm member cpu1 (this machine cpus 1)",
                          "not of this tune's board class", "refusing to tune")
    assert not (tmp_path / "r.jsonl").exists()


@TWO_CPUS
def test_a_member_of_another_engine_build_is_refused_by_name(tmp_path):
    """The odd member's launcher really runs, behind a wrapper that makes its
    hello claim another build's fingerprint.  Every member has the wrapper
    (it is part of the board class), which only the odd one's cores trigger."""
    board = wrapped_one_core(tmp_path, "0,1",
                             's/"fingerprint":"[^"]*"/"fingerprint":"0123456789abcdef"/')
    farm = _farm(tmp_path / "farm.yaml", board, [
        {"name": "cpu0", "cpus": [0]}, {"name": "cpu1", "cpus": [1]},
        {"name": "other", "cpus": [0, 1]}])
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json",
                  "--farm", farm, "--records", tmp_path / "r.jsonl", "--trials", "2")
    version = engine_version()
    assert_one_line_error(result, "farm member other (this machine cpus 0,1) runs engine "
                                  f"{version}+0123456789abcdef, the others {version}+",
                          "deploy one build to every board")


def test_a_member_pinned_to_cores_it_lacks_is_named(tmp_path):
    host_board = Path(__file__).parents[2] / "configs" / "boards" / "split-host.yaml"
    board = _one_core(tmp_path / "one.yaml", host_board)
    farm = _farm(tmp_path / "farm.yaml", board, [{"name": "cpu0", "cpus": [0]},
                                                {"name": "nowhere", "cpus": [1000]}])
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json",
                  "--farm", farm, "--records", tmp_path / "r.jsonl", "--trials", "2")
    assert_one_line_error(result, "farm member nowhere: board split-host uses cpu0",
                          "this machine has none")


def _member_worker(tune_pid: int, name: str) -> int | None:
    """The Dask worker process serving member `name`: the parent of the
    launcher that has the member in its environment (the worker sets it in
    its own after it starts, where /proc does not show it)."""
    parents = process_parents()
    for pid, parent in parents.items():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        member = next((v for v in environ if v.startswith(MEMBER_ENV.encode() + b"=")), None)
        if member and json.loads(member.split(b"=", 1)[1])["name"] == name and \
                parents.get(parent) == tune_pid:
            return parent
    return None


@TWO_CPUS
@pytest.mark.aarch64
@pytest.mark.skipif(bool(_missing()) and not os.environ.get("ACLTUNER_REQUIRE_AARCH64"),
                    reason=f"the qemu and ssh board needs {', '.join(_missing())}")
def test_three_member_farm_loses_a_member_and_tunes_every_task(sshd, deployed, tmp_path):
    board = _one_core(tmp_path / "qemu-a53.yaml", QEMU_BOARD)
    farm = _farm(tmp_path / "farm.yaml", board, [
        {"name": "local-0", "cpus": [0]}, {"name": "local-1", "cpus": [1]},
        {"name": "loopback", "host": HOST}])
    model = _model(tmp_path / "small.onnx")
    plan_path, records = tmp_path / "small.plan.json", tmp_path / "records.jsonl"
    trials = 6
    config = emulated_tuner_config(tmp_path)
    cmd = [sys.executable, "-m", "acltuner.cli", "--allow-wrapper", "tune", str(model), "-o",
           str(plan_path), "--board", str(board), "--farm", str(farm), "--trials", str(trials),
           "--records", str(records), "--config", str(config)]
    log = tmp_path / "tune.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    killed = None
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and len(records.read_bytes().splitlines()) >= 5:
            killed = _member_worker(proc.pid, "local-1")
            break
        time.sleep(0.02)
    assert proc.poll() is None and killed, "the tune ended before a member could be killed"
    os.kill(killed, signal.SIGKILL)
    assert proc.wait(240) == 0, log.read_text()
    output = log.read_text()
    # On a loaded host the scheduler may also drop a member that missed its
    # heartbeats; the killed one must be counted, whatever else happened.
    lost = re.search(r"farm member local-1: lost (\d+) time\(s\)", output)
    assert lost and int(lost.group(1)) >= 1, output

    after = latest(read_records(records))  # fails if a configuration was recorded twice
    per_task = Counter(r["task"] for r in after)
    assert len(per_task) == 3 and set(per_task.values()) == {trials}, per_task
    plan = load_plan(plan_path)
    assert [n.node for n in plan.nodes] == ["c1", "c2", "c3"]
    for node in plan.nodes:
        usable = [r for r in after if r["task"] == node.task and r["ok"] and r["correct"]]
        best = min(usable, key=lambda r: r["median_ms"])
        assert node.tuned_ms == best["median_ms"] and node.config.to_dict() == best["config"]


@TWO_CPUS
def test_workstation_killed_resumes_from_the_records(tmp_path):
    """kill -9 of the tune: its workers and launchers go with it, and the same
    command finishes the tune from the records, measuring nothing twice."""
    host_board = Path(__file__).parents[2] / "configs" / "boards" / "split-host.yaml"
    board = _one_core(tmp_path / "one.yaml", host_board)
    farm = _farm(tmp_path / "farm.yaml", board, [{"name": "cpu0", "cpus": [0]},
                                                {"name": "cpu1", "cpus": [1]}])
    records, trials = tmp_path / "records.jsonl", 40
    cmd = [sys.executable, "-m", "acltuner.cli", "tune", str(_model(tmp_path / "m.onnx")),
           "-o", str(tmp_path / "p.json"), "--farm", str(farm), "--trials", str(trials),
           "--records", str(records)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and len(records.read_bytes().splitlines()) >= 10:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the tune ended before it could be killed"
    helpers = [pid for pid, parent in process_parents().items() if parent == proc.pid]
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in helpers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{p}").exists() for p in helpers), "workers outlived the tune"
    before = len(latest(read_records(records)))
    assert 0 < before < 3 * trials

    resumed = subprocess.run(cmd, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({before} reused from records)" in resumed.stdout
    per_task = Counter(r["task"] for r in latest(read_records(records)))
    assert len(per_task) == 3 and set(per_task.values()) == {trials}, per_task


def test_a_member_that_rebooted_is_checked_again(monkeypatch):
    """The launcher dies and comes back on a board whose boot_id changed: the
    session is opened afresh (hello and cores checked) and the reboot is
    reported with the batch, whose measurements still arrive."""
    from acltuner.farm import worker
    from acltuner.farm.members import Member
    from acltuner.board.registry import load_board
    board = load_board(Path(__file__).parents[2] / "configs" / "boards" / "split-host.yaml")
    monkeypatch.setenv(MEMBER_ENV, Member("here", board).to_env())
    boots = iter(["boot-1", "boot-2", "boot-2"])
    monkeypatch.setattr(worker, "read_boot_id", lambda host: next(boots))
    shape = ConvShape(n=1, h=8, w=8, c=4, oc=8, kh=3, kw=3).to_dict()
    config = ExecConfig("reference", None, (1, 0), 1).to_dict()
    options = {"warmup": 0, "min_repeat_ms": 0.0, "min_repeats": 1, "max_repeats": 1}
    try:
        first = worker.measure(shape, 1, [config], options, None)
        assert first["measurements"][0]["ok"] and not first["rebooted"], first
        old = worker._session.client
        os.kill(old.pid, signal.SIGKILL)  # the board goes down under the launcher
        again = worker.measure(shape, 1, [config, config], options, None)
        assert again["rebooted"] and worker._session.rebooted == 1, again
        assert worker._session.client is not old and worker._session.boot_id == "boot-2"
        # The config measured while the launcher died failed; the next one ran.
        assert [m["ok"] for m in again["measurements"]] == [False, True], again
    finally:
        if worker._session is not None:
            worker._session.close()
            worker._session = None


def _farm_of_two_tune(tmp_path: Path, model) -> tuple[Path, str]:
    """`model` tuned (2 trials) on a farm of two one-core boards of this
    machine into tmp_path/farm.json: (the one-core board file, the tune's stderr)."""
    board = _one_core(tmp_path / "one.yaml", Path(__file__).parents[2] / "configs" / "boards" /
                      "split-host.yaml")
    farm = _farm(tmp_path / "farm.yaml", board, [{"name": "cpu0", "cpus": [0]},
                                                {"name": "cpu1", "cpus": [1]}])
    tuned = subprocess.run([sys.executable, "-m", "acltuner.cli", "tune", model, "-o",
                            str(tmp_path / "farm.json"), "--farm", str(farm), "--trials", "2",
                            "--records", str(tmp_path / "r.jsonl")], capture_output=True, text=True)
    assert tuned.returncode == 0, tuned.stderr
    return board, tuned.stderr


@TWO_CPUS
def test_a_farm_tune_says_its_int8_tasks_keep_their_defaults(tmp_path):
    """int8 tasks are tuned in the whole model, in one launcher, which a farm
    has no call for: their configs stay the default plan's, and the tune says so."""
    from tests.tuner.test_int8_tune import _quantized
    model, _ = _quantized(tmp_path)
    board, stderr = _farm_of_two_tune(tmp_path, model)
    assert "3 int8 task(s) keep their default config: a farm does not run the whole model" \
        in stderr
    default = subprocess.run([sys.executable, "-m", "acltuner.cli", "tune", model, "-o",
                              str(tmp_path / "default.json"), "--board", str(board), "--strategy",
                              "default", "--records", str(tmp_path / "d.jsonl")],
                             capture_output=True, text=True)
    assert default.returncode == 0, default.stderr
    configs = [{n.node: n.config for n in load_plan(tmp_path / name).nodes}
               for name in ("farm.json", "default.json")]
    assert configs[0] == configs[1] and len(configs[0]) == 3


@TWO_CPUS
def test_a_farm_tune_says_its_products_keep_the_rules_kernels(tmp_path):
    """The graph's products are tuned in the whole model too: on a farm their
    nodes keep the rule's kernel, and the tune says so."""
    import onnx

    from acltuner.zoo.builder import GraphBuilder
    b = GraphBuilder(seed=2, input_shape=(1, 3, 12, 12))
    x = b.conv("input", "stem", 8, 3, pads=1, relu="stem.relu")
    y = b.gemm(b.flatten(b.global_avg_pool(x, "pool"), "flat"), "fc", 10)
    model = tmp_path / "convfc.onnx"
    onnx.save(b.model(y, "convfc"), model)
    _, stderr = _farm_of_two_tune(tmp_path, model)
    assert "1 MatMul and Gemm node(s) keep their default config: a farm does not run the " \
        "whole model" in stderr
    # the convolution only: no product node, so fc runs the rule's kernel
    assert [n.node for n in load_plan(tmp_path / "farm.json").nodes] == ["stem"]

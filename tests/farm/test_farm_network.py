"""A standing farm's network: `farm worker` listens only on the interface
that reaches its scheduler (127.0.0.1 here), and Dask's TLS runs end to end
(scheduler, worker, the tune's client) with a CA and certificate made for
the test."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from acltuner.farm.cluster import farm_security
from tests.support.cli_checks import assert_one_line_error, invoke
from tests.farm.test_farm import TWO_CPUS, _farm, _one_core
from tests.board.test_remote import _model

HOST_BOARD = Path(__file__).parents[2] / "configs" / "boards" / "split-host.yaml"


def _certificates(folder: Path) -> dict[str, str]:
    """A throwaway CA and one certificate it signed, for every end of the farm."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
            "-subj", "/CN=acltuner test farm CA")
    openssl("req", *ec, "-keyout", "farm.key", "-out", "farm.csr", "-subj", "/CN=farm")
    openssl("x509", "-req", "-in", "farm.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "farm.pem", "-days", "1")
    return {"--tls-ca-file": str(folder / "ca.pem"), "--tls-cert": str(folder / "farm.pem"),
            "--tls-key": str(folder / "farm.key")}


def _wait_for(check, what: str, timeout_s: float = 120):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout_s:g}s")


def _listening(pid: int) -> list[str]:
    """The addresses a process and its children listen on (TCP)."""
    proc = psutil.Process(pid)
    return sorted({f"{c.laddr.ip}:{c.laddr.port}" for p in [proc, *proc.children(recursive=True)]
                   for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN})


@TWO_CPUS
@pytest.mark.parametrize("protocol", ["tcp", "tls"])
def test_a_worker_of_a_loopback_scheduler_listens_on_127_0_0_1_only(tmp_path, protocol):
    tls = _certificates(tmp_path) if protocol == "tls" else {}
    tls_args = [word for pair in tls.items() for word in pair]
    info = tmp_path / "scheduler.json"
    started = []
    try:
        started.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--protocol", protocol, "--no-dashboard", "--scheduler-file",
             str(info), *tls_args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = _wait_for(lambda: info.exists() and json.loads(info.read_text())["address"],
                            "the scheduler did not start")
        board = _one_core(tmp_path / "one.yaml", HOST_BOARD)
        worker = subprocess.Popen(
            [sys.executable, "-m", "acltuner.cli", "farm", "worker", address, "--board",
             str(board), "--cpus", "0", "--name", "cpu0", *tls_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(worker)
        from distributed import Client
        with Client(address, security=farm_security(*tls.values()) if tls else None,
                    set_as_default=False, timeout=60) as client:
            client.wait_for_workers(1, timeout=120)
        # Its nanny, its worker and the worker's HTTP server, each on 127.0.0.1.
        addresses = _wait_for(lambda: len(_listening(worker.pid)) >= 3 and
                              _listening(worker.pid), "the worker's ports did not open")
        assert all(a.startswith("127.0.0.1:") for a in addresses), addresses
        if tls:
            model, records = _model(tmp_path / "m.onnx"), tmp_path / "r.jsonl"
            result = invoke("tune", model, "-o", tmp_path / "p.json", "--board", board,
                            "--scheduler", address, "--records", records, "--trials", "2",
                            *tls_args)
            assert result.exit_code == 0, result.output
            assert records.read_text().count("\n") >= 3 * 2
    finally:
        for proc in reversed(started):
            proc.terminate()
            proc.wait(timeout=60)


def test_a_worker_of_a_remote_scheduler_needs_listen_address():
    result = invoke("farm", "worker", "tcp://192.0.2.7:8786", "--board", "split-host")
    assert_one_line_error(result, "scheduler tcp://192.0.2.7:8786 is not on this machine's "
                                  "loopback", "--listen-address")


def test_tls_needs_all_three_files(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    result = invoke("tune", tmp_path / "m.onnx", "-o", tmp_path / "p.json", "--scheduler",
                    "tls://127.0.0.1:1", "--tls-ca-file", ca)
    assert_one_line_error(result, "TLS needs --tls-ca-file, --tls-cert and --tls-key",
                          "--tls-cert, --tls-key missing")


def test_an_embedded_farm_listens_on_127_0_0_1_only():
    from distributed import Client

    from acltuner.board.registry import load_board
    from acltuner.farm.cluster import embedded_cluster
    from acltuner.farm.members import Member
    member = Member("cpu0", load_board("split-host"), None, (0,))
    with embedded_cluster([member]) as cluster, Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(1, timeout=120)
        addresses = _listening(psutil.Process().pid)
    # The scheduler, the nanny, the worker and its HTTP server.
    assert len(addresses) >= 4 and all(a.startswith("127.0.0.1:") for a in addresses), addresses


@TWO_CPUS
def test_an_embedded_farm_over_tls(tmp_path):
    tls_args = [word for pair in _certificates(tmp_path).items() for word in pair]
    board = _one_core(tmp_path / "one.yaml", HOST_BOARD)
    farm = _farm(tmp_path / "farm.yaml", board, [{"name": "cpu0", "cpus": [0]},
                                                {"name": "cpu1", "cpus": [1]}])
    records = tmp_path / "r.jsonl"
    result = invoke("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json", "--farm",
                    farm, "--records", records, "--trials", "2", *tls_args)
    assert result.exit_code == 0, result.output
    assert records.read_text().count("\n") >= 3 * 2

"""Farm members are the workers the scheduler has at the addresses this farm
started, whatever their answers say; times no board could measure are
refused and their member quarantined, never written to the records."""
from __future__ import annotations

import pytest

from acltuner.board.registry import load_board
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.measure_options import MeasureOptions
from acltuner.farm.dispatch import Farm, FarmLauncher, FarmRunner, fastest_ms
from acltuner.farm.members import FarmError
from tests.support.records_checks import read_records
from tests.farm.test_farm import TWO_CPUS, _farm, wrapped_one_core
from tests.board.test_remote import _cli, _model

BOARD = load_board("split-host")


class _Future:
    def __init__(self, key, answer):
        self.key, self._answer = key, answer

    def result(self):
        return self._answer

    def release(self):
        pass


class _Client:
    """A Dask client's part that Farm uses: `workers` (address -> name) are
    the scheduler's, and every task runs on `runs_on`, answering `answer`."""

    def __init__(self, workers: dict[str, str], runs_on: str, answer: dict):
        self.workers, self.runs_on, self.answer = workers, runs_on, answer
        self.sent_to: list[list[str]] = []

    def scheduler_info(self, n_workers):
        return {"workers": {a: {"name": n} for a, n in self.workers.items()}}

    def submit(self, fn, *args, workers, **kwargs):
        self.sent_to.append(list(workers))
        return _Future(f"task-{len(self.sent_to)}", self.answer)

    def who_has(self, futures):
        return {f.key: (self.runs_on,) for f in futures}


def _farm_of(client, admitted=None) -> Farm:
    return Farm(client, BOARD, backoff_s=(0.0,), admitted=admitted)


def test_only_the_workers_started_for_the_farm_are_members():
    client = _Client({"tcp://127.0.0.1:1": "cpu0", "tcp://127.0.0.1:2": "rogue"},
                     "tcp://127.0.0.1:1", {"member": "cpu0"})
    farm = _farm_of(client, admitted=lambda: {"tcp://127.0.0.1:1"})
    assert farm.members(fresh=True) == {"cpu0": "tcp://127.0.0.1:1"}
    assert farm.call(lambda: None) == {"member": "cpu0"}
    assert client.sent_to == [["tcp://127.0.0.1:1"]]


def test_an_answer_naming_an_unknown_member_is_that_workers_failure_in_one_line():
    client = _Client({"tcp://127.0.0.1:1": "cpu0"}, "tcp://127.0.0.1:1",
                     {"member": "nobody", "measurements": []})
    farm = _farm_of(client)
    with pytest.raises(FarmError) as e:
        farm.call(lambda: None)
    assert str(e.value).endswith("the last, cpu0: its worker answered as member 'nobody'")
    (line,) = farm.summary()
    assert line.startswith("farm member cpu0: failed 12 batch(es), quarantined 12 time(s)")


def test_an_answer_from_a_worker_not_of_the_farm_is_refused():
    client = _Client({"tcp://127.0.0.1:1": "cpu0", "tcp://127.0.0.1:2": "rogue"},
                     "tcp://127.0.0.1:2", {"member": "cpu0", "measurements": []})
    farm = _farm_of(client, admitted=lambda: {"tcp://127.0.0.1:1"})
    with pytest.raises(FarmError, match="the worker at tcp://127.0.0.1:2 is not a member"):
        farm.call(lambda: None)


def test_times_faster_than_the_boards_peak_quarantine_the_member():
    shape = ConvShape(n=1, h=56, w=56, c=64, oc=64, kh=3, kw=3, pad_top=1, pad_left=1,
                      pad_bottom=1, pad_right=1)
    floor = fastest_ms(BOARD, shape.flops)
    # 2 cores at 2.6 GHz, 64 flops a clock, 8x for the fastest algorithm.
    assert floor == pytest.approx(1e3 * shape.flops / (2 * 2.6e9 * 64 * 8))
    invented = {"member": "cpu0", "default_ms": 1e-6, "measurements": [
        {"ok": True, "median_ms": 1e-6, "min_ms": 1e-6, "times_ms": [1e-6]}]}
    farm = _farm_of(_Client({"tcp://127.0.0.1:1": "cpu0"}, "tcp://127.0.0.1:1", invented))
    runner = FarmRunner(farm, MeasureOptions())
    runner.load(shape)
    with pytest.raises(FarmError, match="faster than board split-host can run them"):
        runner.measure([ExecConfig("reference", None, (1, 1), 1)])
    assert farm.health["cpu0"].quarantines == 12  # at once, each time


def test_a_malformed_supported_answer_is_the_members_failure():
    farm = _farm_of(_Client({"tcp://127.0.0.1:1": "cpu0"}, "tcp://127.0.0.1:1",
                            {"member": "cpu0", "reasons": [3]}))
    farm.hellos = {"cpu0": {"scheduling": "fifo"}}
    launcher = FarmLauncher(farm, {"ukernels": [], "algorithms": [
        {"name": "reference", "uses_ukernel": False}]})
    with pytest.raises(FarmError, match="cpu0: its answer is not 1 reasons"):
        launcher.check(ConvShape(n=1, h=8, w=8, c=4, oc=8, kh=3, kw=3), "reference", None)


@pytest.mark.parametrize("answer, needle", [
    ({"member": "cpu0", "default_ms": 1.0}, "not 1 measurements (KeyError"),
    ({"member": "cpu0", "default_ms": 1.0, "measurements": [{"ok": True, "bogus": 1}]},
     "not 1 measurements (TypeError"),
    ({"member": "cpu0", "default_ms": 1.0, "measurements": [{"ok": True, "median_ms": "x"}]},
     "not 1 measurements (ValueError"),
    ({"member": "cpu0", "default_ms": 1.0, "measurements": []}, "answered 0 measurements"),
    ("nonsense", "its worker answered as member None"),
])
def test_a_malformed_measure_answer_is_the_members_failure_in_one_line(answer, needle):
    farm = _farm_of(_Client({"tcp://127.0.0.1:1": "cpu0"}, "tcp://127.0.0.1:1", answer))
    runner = FarmRunner(farm, MeasureOptions())
    runner.load(ConvShape(n=1, h=8, w=8, c=4, oc=8, kh=3, kw=3))
    with pytest.raises(FarmError) as e:
        runner.measure([ExecConfig("reference", None, (1, 1), 1)])
    assert needle in str(e.value) and "\n" not in str(e.value)


@TWO_CPUS
def test_a_member_whose_times_are_invented_never_reaches_the_records(tmp_path):
    """Member cpu1's launcher answers every time as 1e-6 ms: each of its
    batches is refused, it is quarantined and the tune ends on cpu0 alone,
    with none of cpu1's times in the records."""
    board = wrapped_one_core(tmp_path, "1", 's/"median_ms":[^,}]*/"median_ms":1e-06/g')
    farm = _farm(tmp_path / "farm.yaml", board, [{"name": "cpu0", "cpus": [0]},
                                                {"name": "cpu1", "cpus": [1]}])
    records = tmp_path / "r.jsonl"
    result = _cli("tune", _model(tmp_path / "m.onnx"), "-o", tmp_path / "p.json",
                  "--farm", farm, "--records", records, "--trials", "4", "--no-in-context")
    assert result.exit_code == 0, result.output
    measured = [r for r in read_records(records) if r.get("median_ms") is not None]
    assert measured and min(r["median_ms"] for r in measured) > 1e-6
    assert "farm member cpu1: failed" in result.output
    assert "faster than board" in result.output

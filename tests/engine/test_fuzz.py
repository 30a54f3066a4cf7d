"""`acltuner bench fuzz` and the bugs it found: every door answers a damaged
input with one line (one JSON error line for the launcher) and keeps going."""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from acltuner.bench.fuzz import run as fuzz_run
from acltuner.engine.launcher import default_launcher_path
from acltuner.onnx.errors import ModelError
from acltuner.plan import PlanError, load_plan
from acltuner.tuner.tuner_config import load_tuner_config
from acltuner.validate import JSON, FieldError

LAST_LINE = re.compile(r"^fuzz: cases=(\d+) tracebacks=(\d+) crashes=(\d+) hangs=(\d+) "
                       r"partial_writes=(\d+)$")


def fuzz(*args: str) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-m", "acltuner.cli", "bench", "fuzz", *args],
                          capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout.strip().splitlines()


def test_two_thousand_seeded_cases_find_nothing():
    code, lines = fuzz("--cases", "2000", "--seed", "0")
    counts = LAST_LINE.match(lines[-1])
    assert counts, lines[-10:]
    assert counts.groups() == ("2000", "0", "0", "0", "0"), lines[-10:]
    assert code == 0
    # Each door got cases, and some of its inputs made it through the checks:
    # mutations that were all refused at the first byte would test little.
    doors = dict(re.findall(r"(\w+)=(\d+,\d+)", lines[-2]))
    assert set(doors) == set(fuzz_run.WEIGHTS)
    for name, pair in doors.items():
        cases, accepted = map(int, pair.split(","))
        assert cases > 0 and 0 < accepted < cases, (name, pair)


def test_a_loader_that_raises_a_bug_counts_as_a_traceback(monkeypatch, tmp_path, capsys):
    def broken(path):
        raise KeyError("a bug")
    make, _ = fuzz_run.FILE_DOORS["plan"]
    monkeypatch.setitem(fuzz_run.FILE_DOORS, "plan", (make, broken))
    problems = fuzz_run.run(30, 0, 20.0, [default_launcher_path()], ["plan"])
    assert problems == 30
    assert capsys.readouterr().out.splitlines()[-1] == (
        "fuzz: cases=30 tracebacks=30 crashes=0 hangs=0 partial_writes=0")


def test_a_launcher_that_dies_counts_crashes_and_is_restarted(tmp_path, capsys):
    # Answers like a launcher, but dies on any line holding "measure".
    fake = tmp_path / "fake_launcher.py"
    fake.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    if 'measure' in line: sys.exit(7)\n"
        "    print('{\"ok\": false, \"error\": \"no\"}', flush=True)\n")
    door = fuzz_run.LauncherDoor([sys.executable, str(fake)],
                                 [b'{"cmd": "hello"}', b'{"cmd": "measure"}'], 10.0)
    assert door._send(b'{"cmd": "hello"}\n') is None
    assert door._send(b'{"cmd": "measure"}\n') == "crashes"
    assert "exit code 7" in door.failures[-1]
    assert door._send(b'{"cmd": "hello"}\n') is None  # a new launcher serves
    door.close()


def launcher_answers(lines: list[bytes]) -> list[dict]:
    done = subprocess.run([default_launcher_path()], input=b"".join(line + b"\n" for line in lines),
                          capture_output=True, timeout=60)
    assert done.returncode == 0
    return [json.loads(a) for a in done.stdout.decode("utf-8").splitlines()]


def test_the_launcher_refuses_invalid_utf8_and_nul_and_answers_valid_json():
    answers = launcher_answers([b'{"cmd": "hel\xc3lo"}', b'{"cmd": "\xed\xa0\x80"}',
                                b'{"cmd": "hello\\u0000x"}', b'{"\xc0\xaf": 1}',
                                b'{"cmd": "\xf0\x9f\x98\x80"}'])
    assert [a["ok"] for a in answers] == [False] * 5
    assert all("invalid UTF-8" in a["error"] for a in answers[:2] + answers[3:4])
    assert "\\u0000 in a string" in answers[2]["error"]
    assert 'unknown command "\U0001F600"' in answers[4]["error"]


def test_launcher_errors_are_one_line_whatever_they_quote():
    (answer,) = launcher_answers([b'{"cmd": "a\\nb\\rc\\u0007"}'])
    assert answer["error"].startswith('unknown command "a?b?c?"')


def test_json_nested_too_deep_is_a_one_line_plan_error(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(PlanError, match=r"plan.json: not valid JSON: nested too deeply$"):
        load_plan(path)


def test_yaml_nested_too_deep_and_huge_integers_are_one_line_errors(tmp_path):
    path = tmp_path / "tuner.yaml"
    path.write_text("a: " + "[" * 50000 + "]" * 50000 + "\n")
    with pytest.raises(ValueError, match="tuner.yaml: not valid YAML: nested too deeply"):
        load_tuner_config(path)


def test_an_integer_too_large_for_a_float_is_a_field_error():
    with pytest.raises(FieldError, match="median_ms must be a number"):
        JSON.get({"median_ms": 10 ** 400}, "median_ms", "", float, minimum=0)


def test_model_errors_escape_control_characters():
    assert str(ModelError("input 'x\n\ty' has unknown shape")) == \
        "input 'x\\n\\ty' has unknown shape"


def test_plan_errors_quoting_the_file_stay_one_line(tmp_path):
    """Found by the fuzz: a board fingerprint holding a newline, quoted back."""
    seeds = fuzz_run.make_seeds(tmp_path)
    plan = json.loads(seeds.plan)
    plan["board"]["fingerprint"] = "abc\n"
    path = tmp_path / "bad.plan.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(PlanError) as e:
        load_plan(path)
    assert "\n" not in str(e.value) and "abc\\n" in str(e.value)


def test_each_case_starts_the_same_whatever_the_cases_before_it_drew(monkeypatch):
    """The seed plan and records are measured, so they differ from build to
    build; what one case draws from them must not move the next cases' doors
    and draws, or a failure found in CI does not come back on another
    machine (as happened).  Each case starts from its own generator state."""
    real_make_seeds, drawn = fuzz_run.make_seeds, []

    def padded_seeds(folder):
        seeds = real_make_seeds(folder)
        seeds.plan += b" " * pad  # still the same JSON, longer bytes to mutate
        return seeds

    def recorded(door):
        make, load = fuzz_run.FILE_DOORS[door]

        def make_and_record(rng, seeds):
            drawn.append((door, hash(rng.getstate())))
            return make(rng, seeds)
        return make_and_record, load

    monkeypatch.setattr(fuzz_run, "make_seeds", padded_seeds)
    for door in ("plan", "board"):
        monkeypatch.setitem(fuzz_run.FILE_DOORS, door, recorded(door))
    runs = []
    for pad in (0, 4096):
        drawn.clear()
        fuzz_run.run(40, 7, 20.0, [default_launcher_path()], ["plan", "board"])
        runs.append(list(drawn))
    assert len(runs[0]) == 40 and {d for d, _ in runs[0]} == {"plan", "board"}
    assert runs[0] == runs[1]
    drawn.clear()
    fuzz_run.run(40, 7, 20.0, [default_launcher_path()], ["plan", "board"], only=23)
    assert drawn == [runs[0][23]]


def test_mutations_leave_the_extremes_alone_and_make_no_cycles():
    """An extreme value added to a document as it was (not a copy) was
    edited by later mutations, shared with every later case, and once it
    held itself the next launcher line could not be written (seed 1 in CI)."""
    from acltuner.bench.fuzz.mutate import EXTREMES, mutate_value
    before = json.dumps(EXTREMES, allow_nan=True)
    rng = random.Random(1)
    doc = {"cmd": "graph_create", "shape": {"n": 1, "c": [1, 2]}, "data": "AAAA"}
    for _ in range(20000):
        doc = mutate_value(rng, doc) if rng.random() < 0.9 else {"cmd": "hello"}
        json.dumps(doc, allow_nan=True)  # raises on a cycle
    assert json.dumps(EXTREMES, allow_nan=True) == before

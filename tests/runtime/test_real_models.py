"""Real models (configs/real_models.yaml, fetched into models/ by
scripts/fetch_models.py): for each one present, `acltuner tasks`, a rule-based
plan from `acltuner tune --strategy default`, and `acltuner run --check`
against onnxruntime (and a float64 reference where the two differ), through
the command line.

A model that fails today is listed in EXPECTED_FAILURES with its one-line
error: its test is a strict xfail that passes only while the model fails with
that very error, so a fix (or a new error) shows up as a failure to update the
list.  An absent model is skipped, naming the fetch command."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.support.cli_checks import invoke

ROOT = Path(__file__).resolve().parents[2]
# The fetch script's manifest reader and models folder, imported from scripts/.
_spec = importlib.util.spec_from_file_location("fetch_models", ROOT / "scripts" / "fetch_models.py")
fetch_models = sys.modules["fetch_models"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch_models)

MODELS = fetch_models.load_manifest()
FETCH = ".venv/bin/python scripts/fetch_models.py"

# The models that fail today: the failing step and its one-line error (or the
# start of it), where MODEL stands for the model's path and PLAN for the plan's.
# Each fix removes one.
EXPECTED_FAILURES: dict[str, str] = {}

# Recurrent layers and control flow may run through onnxruntime; any other
# operator delegated today is listed for its model, and leaves the list when
# the engine gets it.
MAY_DELEGATE = {"LSTM", "GRU", "RNN", "If", "Loop", "Scan"}
DELEGATED_TODAY: dict[str, set[str]] = {}


class ExpectedFailure(Exception):
    """The model failed with the error EXPECTED_FAILURES names for it."""


def _params():
    for m in MODELS:
        marks = ()
        if m.name in EXPECTED_FAILURES:
            marks = pytest.mark.xfail(strict=True, raises=ExpectedFailure,
                                      reason=EXPECTED_FAILURES[m.name])
        yield pytest.param(m, id=m.name, marks=marks)


def _step(name: str, model, *args, subst: dict[str, str]):
    """Runs one command; on failure its one-line error, checked against the
    expected one (ExpectedFailure) or reported (AssertionError).  (Not
    cli_checks' default_plan and run_check, which only assert success.)"""
    result = invoke(*args)
    if result.exit_code == 0:
        return result
    lines = result.output.strip().splitlines()
    if isinstance(result.exception, SystemExit) and lines:
        error = lines[-1]
    else:  # not turned into one line by the command: a traceback for a user
        error = f"uncaught {type(result.exception).__name__}: {result.exception}"
    for text, placeholder in subst.items():
        error = error.replace(text, placeholder)
    got = f"{name}: {error}"
    expected = EXPECTED_FAILURES.get(model.name)
    if expected is not None and got.startswith(expected):
        raise ExpectedFailure(got)
    raise AssertionError(f"{model.name} {name} failed (exit {result.exit_code}):\n{got}"
                         + (f"\nexpected: {expected}" if expected else ""))


@pytest.mark.parametrize("model", list(_params()))
def test_real_model_runs_and_matches_onnxruntime(model, tmp_path):
    path = fetch_models.default_dest() / f"{model.name}.onnx"
    if not path.is_file():
        pytest.skip(f"{model.name} is not in {path.parent}: run {FETCH} {model.name}")
    plan = tmp_path / "plan.json"
    subst = {str(path): "MODEL", str(plan): "PLAN"}
    shapes = model.shape_args()
    _step("tasks", model, "tasks", path, *shapes, subst=subst)
    _step("tune", model, "tune", path, "-o", plan, "--strategy", "default",
          "--board", "split-host", "--records", tmp_path / "records.jsonl", *shapes, subst=subst)
    result = _step("run", model, "run", plan, "--check", "--repeat", "1", "--warmup", "0",
                   "--json", subst=subst)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    delegated = sorted({op for d in report["delegated"] for op in d["op_types"]})
    # Within the tolerance of onnxruntime, or else of a float64 reference: a
    # DB text detector's outputs all lie below 2e-5 after its Sigmoid, where
    # onnxruntime's float32 Sigmoid is 7e-3 from exact relative to the largest.
    judged = report["float64_reference"]
    print(f"{model.name}: max_rel_diff {report['max_rel_diff']:.3g}"
          + (f" (from float64: ours {judged['ours_max_rel_err']:.3g}, onnxruntime "
             f"{judged['onnxruntime_max_rel_err']:.3g})" if judged else "")
          + f", delegated: {', '.join(delegated) or 'none'}")
    assert report["check_passed"]
    assert set(delegated) - MAY_DELEGATE == DELEGATED_TODAY.get(model.name, set())


def test_the_manifest_pins_every_model():
    assert len(MODELS) >= 10
    for m in MODELS:
        assert len(m.sha256) == 64 and m.version[0].isdigit(), m.name
    assert set(EXPECTED_FAILURES) | set(DELEGATED_TODAY) <= {m.name for m in MODELS}

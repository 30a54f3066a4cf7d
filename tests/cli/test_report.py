"""`acltuner report` of a small model tuned here (split-host: two one-core
clusters, so the placement figure is drawn): the figures decode at their
sizes, the page shows each one and nothing from the network, summary.json
says what the plan and records say; bad input is one line."""
from __future__ import annotations

import dataclasses
import errno
import html
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import onnx
import pytest
import yaml

from acltuner import atomic
from acltuner.engine import native
from acltuner.plan import InContext, load_plan, save_plan
from acltuner.report import figures
from acltuner.report.cost_fit import ukernel_attributes
from acltuner.tuner.records import RecordStore
from acltuner.tuner.tuner_config import DEFAULT_PATH, load_tuner_config
from acltuner.zoo.builder import GraphBuilder
from tests.support.cli_checks import assert_one_line_error, invoke

PIL = pytest.importorskip("PIL.Image", reason="matplotlib (acltuner[report]) brings Pillow")
pytest.importorskip("matplotlib", reason="acltuner report needs acltuner[report]")

DOCS = Path(__file__).resolve().parents[2] / "docs"
# The default and 10 random configs, then two rounds of 5 (configs/tuner.yaml's
# top_k 3 + random_per_round 2), the last one chosen by a model fitted on 16.
INITIAL_RANDOM, ROUND, TRIALS = 10, 5, 21


def _model(path: Path, seed: int = 3) -> Path:
    b = GraphBuilder(seed=seed, input_shape=(1, 3, 20, 20))
    x = b.conv("input", "stem", 8, 3, pads=1, bn="stem.bn", relu="stem.relu")
    y = b.conv(x, "body", 8, 3, pads=1, relu="body.relu")
    y = b.conv(y, "down", 16, 1, stride=2)
    onnx.save(b.model(y, "small"), path)
    return path


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs))


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """(folder, model, plan, records, tuner config, plan to compare) of a small tune."""
    tmp = tmp_path_factory.mktemp("report")
    model = _model(tmp / "small.onnx")
    config = yaml.safe_load(DEFAULT_PATH.read_text())
    config["search"]["initial_random"] = INITIAL_RANDOM
    config_path = tmp / "tuner.yaml"
    config_path.write_text(yaml.safe_dump(config))
    plan, records = tmp / "tuned.plan.json", tmp / "records.jsonl"
    result = invoke("tune", model, "-o", plan, "--board", "split-host", "--trials", TRIALS,
                    "--records", records, "--config", config_path)
    assert result.exit_code == 0, result.output
    # The same model tuned again, less and with other random draws: the plan to compare.
    other = tmp / "again.plan.json"
    result = invoke("tune", model, "-o", other, "--board", "split-host", "--trials", 12,
                    "--seed", 1, "--records", tmp / "again.jsonl")
    assert result.exit_code == 0, result.output
    return tmp, model, plan, records, config_path, other


@pytest.fixture(scope="module")
def report(tuned):
    tmp, _, plan, records, config, other = tuned
    out = tmp / "out"
    result = invoke("report", plan, "--records", records, "--config", config, "--ort",
                    "--compare", other, "--repeat", 3, "-o", out)
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "summary.json").read_text())


def test_every_figure_decodes_at_its_size(tuned, report):
    out, summary = report
    plan = load_plan(tuned[2])
    nodes, tasks = len(plan.nodes), len({n.task for n in plan.nodes})
    expected = {"tuning_curves": figures.curves_size(tasks),
                "layer_speedups": figures.layers_size(nodes),
                "model_time": figures.model_time_size(),
                "placement": figures.placement_size(nodes, plan.board.ncores),
                "cost_model": figures.cost_model_size(),
                "compare": figures.compare_size(nodes)}
    drawn = {Path(f["file"]).stem: f for f in summary["figures"]}
    assert set(drawn) == set(expected)
    for name, size in expected.items():
        with PIL.open(out / f"{name}.png") as image:
            image.load()  # decodes the whole file, not just its header
            assert image.format == "PNG" and image.size == size, name
        assert (drawn[name]["width"], drawn[name]["height"]) == size


def test_the_page_shows_every_figure_and_needs_no_network(report):
    out, summary = report
    page = (out / "index.html").read_text()
    parser = _Images()
    parser.feed(page)
    shown = {img["src"]: (int(img["width"]), int(img["height"])) for img in parser.images}
    assert shown == {f["file"]: (f["width"], f["height"]) for f in summary["figures"]}
    assert "script" not in parser.tags
    assert "http://" not in page and "https://" not in page
    assert {p.name for p in out.glob("*.png")} == set(shown)


def test_summary_matches_the_plan_and_records(tuned, report):
    _, model, plan_path, records_path, config_path, other_path = tuned
    _, summary = report
    plan = load_plan(plan_path)
    assert summary["model"]["sha256"] == plan.model_sha256
    assert summary["board"]["fingerprint"] == plan.board_fingerprint
    assert [{k: v for k, v in n.items() if k != "speedup"} for n in summary["nodes"]] \
        == [n.to_dict() for n in plan.nodes]
    for row, node in zip(summary["nodes"], plan.nodes):
        assert row["speedup"] == pytest.approx(node.default_ms / node.tuned_ms)
    assert summary["totals"]["tuned_ms"] == pytest.approx(sum(n.tuned_ms for n in plan.nodes))

    # A config measured again by the noise control counts once, with its later time.
    records = list({(r.task, r.config): r for r in RecordStore(records_path).records}.values())
    # The search's best, which a node the in-context check sent back does not run.
    tuned_ms = {n.task: n.reverted.tuned_ms if n.reverted else n.tuned_ms for n in plan.nodes}
    for task in summary["tasks"]:
        mine = [r for r in records if r.task == task["task"]]
        assert task["measurements"] == len(mine) == TRIALS
        assert task["best_ms"] == tuned_ms[task["task"]]

    # Every task's last round: the records after the initial phase and whole rounds.
    assert load_tuner_config(config_path).search.batch == ROUND
    start = TRIALS - ROUND
    fits = summary["cost_model"]["tasks"]
    assert len(fits) == len(summary["tasks"])
    for fit in fits:
        assert fit["trained_on"] == start
        last = [r for r in records if r.task == fit["task"]][start:]
        assert [row["measured_ms"] for row in fit["last_round"]] \
            == [r.median_ms for r in last if r.usable]
        assert all(row["predicted_ms"] > 0 for row in fit["last_round"])
        assert fit["spearman"] is None or -1 <= fit["spearman"] <= 1

    timing = summary["model_time"]
    kinds = {row["kind"]: row["ms"] for row in timing["by_kind"]}
    assert "conv" in kinds
    # Like with like: whole runs with whole runs, sums of nodes with sums of nodes.
    whole, per_node = timing["whole_model"], timing["per_node"]
    assert whole["what"].startswith("whole model") and per_node["what"].startswith("per node")
    assert per_node["ours_ms"] == pytest.approx(sum(kinds.values()))
    for c in (whole, per_node):
        assert c["ours_ms"] > 0 and c["onnxruntime_ms"] > 0
        assert c["onnxruntime_over_ours"] == pytest.approx(c["onnxruntime_ms"] / c["ours_ms"])
    compared = {row["node"]: row for row in summary["compare"]["nodes"]}
    assert list(compared) == [n.node for n in plan.nodes]
    for a, b in zip(plan.nodes, load_plan(other_path).nodes):
        row = compared[a.node]
        assert (row["tuned_ms_a"], row["tuned_ms_b"]) == (a.tuned_ms, b.tuned_ms)
        assert row["speedup_b"] == pytest.approx(b.default_ms / b.tuned_ms)
        assert row["chosen_b"].startswith(b.config.algorithm)


def test_the_caption_compares_whole_runs_and_node_sums_apart(report):
    out, summary = report
    timing = summary["model_time"]
    page = (out / "index.html").read_text()
    for c in (timing["whole_model"], timing["per_node"]):
        assert html.escape(f"{c['what']}: ours {c['ours_ms']:.3f} ms, onnxruntime "
                           f"{c['onnxruntime_ms']:.3f} ms: ours is "
                           f"{c['onnxruntime_over_ours']:.2f}x onnxruntime's speed") in page


def _sent_back(plan_path: Path, to: Path) -> Path:
    """The plan with its first node, and only it, sent back to its default by the
    in-context check (the tune's own check may have sent back others, as the
    host's noise had it)."""
    plan = load_plan(plan_path)
    first = plan.nodes[0]
    tuned = dataclasses.replace(first, config=dataclasses.replace(
        first.config, workloads=first.config.workloads + 1), tuned_ms=first.default_ms / 2)
    rest = (dataclasses.replace(n, reverted=None) for n in plan.nodes[1:])
    save_plan(dataclasses.replace(
        plan, nodes=(tuned.revert("node", 1.5, 1.25), *rest),
        in_context=InContext("mixed", {"tuned": 3.5, "default": 3.25, "mixed": 3.0})), to)
    return to


def test_a_node_sent_back_to_its_default_is_marked_with_the_time_it_runs(tuned, tmp_path):
    _, _, plan, records, config, _ = tuned
    reverted = load_plan(_sent_back(plan, tmp_path / "reverted.plan.json"))
    out = tmp_path / "o"
    result = invoke("report", tmp_path / "reverted.plan.json", "--records", records,
                    "--config", config, "--repeat", 1, "-o", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    node = reverted.nodes[0]
    first = summary["nodes"][0]
    assert first["config"] == node.default_config.to_dict()
    assert first["tuned_ms"] == first["default_ms"] == node.default_ms
    assert first["speedup"] == 1.0  # not the dropped config's 2x
    assert first["reverted"] == node.reverted.to_dict()
    assert all("reverted" not in n for n in summary["nodes"][1:])
    assert summary["totals"]["reverted"] == 1
    assert summary["totals"]["tuned_ms"] == pytest.approx(sum(n.tuned_ms for n in reverted.nodes))
    tasks = {t["task"]: t["reverted_nodes"] for t in summary["tasks"]}
    assert tasks[node.task] == 1 and sum(tasks.values()) == 1
    assert summary["in_context"] == {"kept": "mixed",
                                     "ms": {"tuned": 3.5, "default": 3.25, "mixed": 3.0}}
    page = (out / "index.html").read_text()
    assert html.escape(node.reverted.describe()) in page
    assert "1 sent back to their default in the model" in page
    assert html.escape(reverted.in_context.describe()) in page


def test_a_report_written_again_keeps_only_its_own_figures(tuned, tmp_path):
    _, _, plan, records, config, other = tuned
    out = tmp_path / "again"
    for extra in (("--compare", other), ()):
        result = invoke("report", plan, "--records", records, "--config", config,
                        "--repeat", 1, *extra, "-o", out)
        assert result.exit_code == 0, result.output
    drawn = {f["file"] for f in json.loads((out / "summary.json").read_text())["figures"]}
    assert "compare.png" not in drawn
    assert {p.name for p in out.glob("*.png")} == drawn


def test_micro_kernel_names_carry_their_tile_and_style():
    """The refit reads a micro-kernel's attributes from its name, as the engine names them."""
    for uk in native.ukernels():
        assert ukernel_attributes(uk.name) == {"mr": uk.mr, "nr": uk.nr, "style": uk.style}


@pytest.mark.parametrize("where, needles", [
    ("missing/o", ["missing/o: cannot write: no folder", "missing"]),
    ("a-file", ["a-file: cannot write the report there: it is a file"]),
])
def test_the_report_folder_is_checked_before_anything_is_read(tuned, tmp_path, where, needles):
    """Checked first: the records file given here does not exist either."""
    (tmp_path / "a-file").write_text("not a folder")
    result = invoke("report", tuned[2], "--records", tmp_path / "none.jsonl",
                    "-o", tmp_path / where)
    assert_one_line_error(result, *needles)
    assert not (tmp_path / "missing").exists()
    assert (tmp_path / "a-file").read_text() == "not a folder"


def _full_disk_at(monkeypatch, name: str) -> None:
    """fsync fails with ENOSPC on the temporary file of `name`, as on a full disk
    where the data written is not all on it."""
    fsync = os.fsync

    def full(fd):
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(f".{name}."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(fd)
    monkeypatch.setattr(atomic.os, "fsync", full)


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_part_of_it(tuned, tmp_path,
                                                                          monkeypatch):
    _, _, plan, records, config, _ = tuned
    out = tmp_path / "o"
    args = ("report", plan, "--records", records, "--config", config, "--repeat", 1, "-o", out)
    with monkeypatch.context() as m:
        _full_disk_at(m, "model_time.png")
        assert_one_line_error(invoke(*args), f"{out / 'model_time.png'}: cannot write: "
                                             f"No space left on device")
    assert {p.name for p in out.iterdir()} == {"tuning_curves.png", "layer_speedups.png"}

    assert invoke(*args).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with monkeypatch.context() as m:
        _full_disk_at(m, "index.html")
        assert_one_line_error(invoke(*args), f"{out / 'index.html'}: cannot write: No space")
    assert (out / "index.html").read_bytes() == before["index.html"]
    assert {p.name for p in out.iterdir()} == set(before)  # no temporary file left


def test_missing_records_file_is_one_line(tuned, tmp_path):
    plan = tuned[2]
    result = invoke("report", plan, "--records", tmp_path / "none.jsonl", "-o", tmp_path / "o")
    assert_one_line_error(result, "none.jsonl", "no such records file")
    assert not (tmp_path / "o").exists()


def test_a_plan_of_products_only_is_reported_without_tuning_curves(tmp_path):
    """A model with no convolution has no task measured alone, so no records:
    its products were tuned in the whole model.  The report draws its layers
    and times and says why there are no tuning curves."""
    b = GraphBuilder(seed=5, input_shape=(4, 32))
    model = tmp_path / "mlp.onnx"
    onnx.save(b.model(b.gemm(b.gemm("input", "fc1", 64), "fc2", 16), "mlp"), model)
    plan, records = tmp_path / "mlp.plan.json", tmp_path / "records.jsonl"
    result = invoke("tune", model, "-o", plan, "--board", "split-host", "--trials", 2,
                    "--records", records)
    assert result.exit_code == 0, result.output
    assert {n.config.algorithm for n in load_plan(plan).nodes} == {"matmul"}
    out = tmp_path / "report"
    result = invoke("report", plan, "--records", records, "-o", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    # split-host's two clusters: the placement figure too
    assert sorted(f["file"] for f in summary["figures"]) == [
        "layer_speedups.png", "model_time.png", "placement.png"]
    assert [n["node"] for n in summary["nodes"]] == [n.node for n in load_plan(plan).nodes]
    assert "no task of this plan was measured alone" in (out / "index.html").read_text()


def test_plan_of_another_model_is_one_line(tuned, tmp_path):
    _, _, plan, records, _, _ = tuned
    data = json.loads(plan.read_text())
    data["model"]["path"] = str(_model(tmp_path / "other.onnx", seed=4))
    other = tmp_path / "other.plan.json"
    other.write_text(json.dumps(data))
    result = invoke("report", other, "--records", records, "-o", tmp_path / "o")
    assert_one_line_error(result, str(other), "another model")
    assert not (tmp_path / "o").exists()


def test_records_of_another_model_are_one_line(tuned, tmp_path):
    _, _, plan, records, _, _ = tuned
    foreign = tmp_path / "foreign.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    foreign.write_text("".join(json.dumps({**d, "task": "another-task"}) + "\n" for d in lines))
    result = invoke("report", plan, "--records", foreign, "-o", tmp_path / "o")
    assert_one_line_error(result, str(foreign), "no record of")


def test_a_saved_profile_stands_in_for_the_run(tuned, tmp_path):
    """--profile reads `run --profile --json` (as saved from a board); --ort then
    takes onnxruntime's time from its --compare-ort part."""
    _, _, plan, records, config, _ = tuned
    ran = invoke("run", plan, "--profile", "--compare-ort", "--json", "--repeat", 2)
    assert ran.exit_code == 0, ran.output
    saved = json.loads(ran.stdout)
    profile = tmp_path / "profile.json"
    profile.write_text(ran.stdout)
    out = tmp_path / "o"
    result = invoke("report", plan, "--records", records, "--config", config, "--profile",
                    profile, "--ort", "-o", out)
    assert result.exit_code == 0, result.output
    timing = json.loads((out / "summary.json").read_text())["model_time"]
    whole, per_node = timing["whole_model"], timing["per_node"]
    assert whole["ours_ms"] == saved["median_ms"]
    assert whole["onnxruntime_ms"] == saved["compare_ort"]["ort_median_ms"]
    assert sum(row["ms"] for row in timing["by_kind"]) == pytest.approx(per_node["ours_ms"]) \
        == pytest.approx(sum(n["ms"] for n in saved["nodes"]))
    assert per_node["onnxruntime_ms"] \
        == pytest.approx(sum(n["ort_ms"] for n in saved["compare_ort"]["nodes"]))

    del saved["compare_ort"]
    profile.write_text(json.dumps(saved))
    result = invoke("report", plan, "--records", records, "--profile", profile, "--ort",
                    "-o", tmp_path / "o2")
    assert_one_line_error(result, str(profile), "--compare-ort")
    del saved["nodes"]
    profile.write_text(json.dumps(saved))
    result = invoke("report", plan, "--records", records, "--profile", profile,
                    "-o", tmp_path / "o2")
    assert_one_line_error(result, str(profile), "--profile --json")
    assert not (tmp_path / "o2").exists()


def test_a_plan_that_cannot_run_here_asks_for_a_saved_profile(tuned, tmp_path):
    """A plan of another engine version (so of another board's build) with its
    records: the report cannot run it here and says what to give instead."""
    _, model, plan, records, _, _ = tuned
    data = json.loads(plan.read_text())
    data["engine_version"] = "0.0.0-elsewhere"
    data["model"]["path"] = str(model)  # the plan is written to another folder
    other = tmp_path / "elsewhere.plan.json"
    other.write_text(json.dumps(data))
    theirs = tmp_path / "elsewhere.jsonl"
    theirs.write_text("".join(json.dumps({**json.loads(line), "engine": "0.0.0-elsewhere"})
                              + "\n" for line in records.read_text().splitlines()))
    result = invoke("report", other, "--records", theirs, "-o", tmp_path / "o")
    assert_one_line_error(result, "0.0.0-elsewhere", "--profile F.json")
    assert not (tmp_path / "o").exists()


def _chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium-headless-shell", "chromium",
                                                "chromium-browser"))), None)


@pytest.mark.optional
@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium (apt-get install "
                                                 "chromium-headless-shell)")
def test_chromium_renders_the_page(report, tmp_path):
    """The page as a browser shows it; ACLTUNER_UPDATE_DOCS=1 keeps the shot in docs/."""
    out, _ = report
    shot = tmp_path / "report.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--window-size=1200,4000", f"--screenshot={shot}",
                    (out / "index.html").as_uri()],
                   check=True, capture_output=True, timeout=120)
    with PIL.open(shot) as image:
        assert image.size == (1200, 4000)
        # Not a blank page: the figures' colours are there.
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 16) or range(1 << 16)) > 50
    if os.environ.get("ACLTUNER_UPDATE_DOCS"):
        DOCS.mkdir(exist_ok=True)
        shutil.copy(shot, DOCS / "report.png")

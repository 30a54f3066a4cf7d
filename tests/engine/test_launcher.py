"""acl-launcher and its client, against a locally built launcher.

The launcher is found through ACLTUNER_LAUNCHER or the package's _native
directory; without one these tests skip, unless ACLTUNER_REQUIRE_NATIVE is set.
The AArch64 test runs the AArch64 launcher under qemu-aarch64: the one
ACLTUNER_AARCH64_LAUNCHER names, or one engine_backends cross-builds.
Outputs are checked against onnx.reference's Conv.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests.support.conv_oracle import random_tensors, reference_conv, rel_err
from tests.support.engine_backends import QEMU, aarch64_launcher_or_skip

from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import PROTOCOL_VERSION, LauncherClient, LauncherError, \
    default_launcher_path

REL_TOL = 1e-4
# Enough repeats to exercise the statistics, few enough to keep tests quick.
QUICK = dict(warmup=1, min_repeat_ms=1.0, min_repeats=3, max_repeats=20)
ONCE = dict(warmup=0, min_repeat_ms=0.0, min_repeats=1, max_repeats=1)

SAME_3X3 = ConvShape(n=1, h=14, w=14, c=16, oc=24, kh=3, kw=3,
                     pad_top=1, pad_left=1, pad_bottom=1, pad_right=1)
# A ConvTranspose: its flops count every input pixel through every tap.
UPSAMPLE = ConvShape(n=1, h=7, w=6, c=16, oc=8, kh=3, kw=3, stride_h=2, stride_w=2, pad_top=1,
                     pad_left=1, pad_bottom=1, pad_right=1, transposed=True, out_pad_h=1)


@pytest.fixture(scope="module")
def launcher_path() -> str:
    try:
        return default_launcher_path()
    except LauncherError as e:
        if os.environ.get("ACLTUNER_REQUIRE_NATIVE"):
            pytest.fail(f"ACLTUNER_REQUIRE_NATIVE is set but: {e}")
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def client(launcher_path):
    with LauncherClient([launcher_path], timeout_s=120) as c:
        yield c


def all_cores(client: LauncherClient) -> tuple[int, ...]:
    return (1,) * client.hello_info["cpus"]


def general_ukernel(client: LauncherClient) -> str:
    """A micro-kernel that takes any K and N."""
    return next(u["name"] for u in client.ukernels if u["kmax"] == 0 and u["n_multiple"] == 1)


def supported_configs(client: LauncherClient, shape: ConvShape, ukernel: str,
                      core_weights: tuple[int, ...], workloads: int) -> list[ExecConfig]:
    """Every algorithm the launcher says can run `shape`, GEMM-based ones with
    `ukernel`; each of them must then measure without error."""
    configs = [ExecConfig(a["name"], ukernel if a["uses_ukernel"] else None, core_weights,
                          workloads) for a in client.hello_info["algorithms"]]
    return [c for c in configs if client.check(shape, c.algorithm, c.ukernel) is None]


def conv_inputs(shape: ConvShape, seed: int) -> dict[str, np.ndarray]:
    """Random tensors as load() keywords."""
    x, w, b, r = random_tensors(shape, np.random.default_rng(seed))
    return {"input": x, "weight": w, "bias": b, "residual": r}


def expected_output(shape: ConvShape, t: dict[str, np.ndarray]) -> np.ndarray:
    return reference_conv(shape, t["input"], t["weight"], t["bias"], t["residual"])


def seeded_uniform(seed: int, stream: int, n: int) -> np.ndarray:
    """PROTOCOL.md's seeded tensors: splitmix64 from state seed*4 + stream."""
    z = np.uint64(seed * 4 + stream) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(
        0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1)


# ---- hello, load, measure against the real launcher ----

def test_hello_lists_algorithms_and_ukernels(client):
    info = client.hello_info
    assert info["ok"] and info["protocol"] == PROTOCOL_VERSION
    assert info["version"] and info["isa"] in {"avx512", "avx2", "neon", "generic"}
    assert info["cpus"] >= 1
    assert isinstance(info["largest_cache_bytes"], int) and info["largest_cache_bytes"] >= 0
    assert client.largest_cache_bytes == info["largest_cache_bytes"]
    assert "reference" in client.algorithms
    assert all(isinstance(a["uses_ukernel"], bool) for a in info["algorithms"])
    assert client.ukernels
    for uk in client.ukernels:
        assert {"name", "isa", "style", "mr", "nr", "kmin", "kmax", "n_multiple"} <= set(uk)
        assert uk["style"] in {"interleaved", "hybrid", "smallk"}
        assert uk["mr"] > 0 and uk["nr"] > 0 and uk["n_multiple"] >= 1


@pytest.mark.parametrize("shape", [SAME_3X3, UPSAMPLE], ids=["conv", "transposed"])
def test_load_reports_output_shape_and_flops(client, shape):
    answer = client.load(shape, seed=1)
    assert answer["output_shape"] == list(shape.output_shape)
    assert answer["flops"] == shape.flops


def test_measures_are_plausible_and_correct(client):
    client.load(SAME_3X3, seed=2)
    configs = supported_configs(client, SAME_3X3, general_ukernel(client), all_cores(client), 8)
    assert len(configs) >= 3
    for config, m in zip(configs, client.measure_batch(configs, **QUICK)):
        assert m.ok and m.correct and m.max_rel_err <= REL_TOL, (config, m.error)
        if config.algorithm == "reference":
            assert m.max_abs_err == 0
        times = np.array(m.times_ms)
        assert QUICK["min_repeats"] <= len(times) <= QUICK["max_repeats"]
        assert times.sum() >= QUICK["min_repeat_ms"] or len(times) == QUICK["max_repeats"]
        assert np.all(times > 0)
        assert m.min_ms == times.min() and m.median_ms == pytest.approx(np.median(times))
        assert set(m.stages) == {"pre_ms", "gemm_ms", "post_ms"}
        assert all(0 <= v <= times.max() for v in m.stages.values())
        assert m.output is None


def _median_ci_pct(times: list[float]) -> float | None:
    """PROTOCOL.md's spread: the order statistics n/2 -+ 0.98 sqrt(n) (1-based,
    rounded half away from zero) around the median, half their distance in %."""
    n = len(times)
    half = 0.98 * np.sqrt(n)
    lo, hi = int(np.floor(n / 2 - half + 0.5)), int(np.floor(1 + n / 2 + half + 0.5))
    if lo < 1 or hi > n:
        return None
    x = np.sort(times)
    return 100 * (x[hi - 1] - x[lo - 1]) / 2 / np.median(x)


@pytest.mark.parametrize("options, runs", [
    (dict(ci_target_pct=0), 2),                               # off: the minimums decide
    (dict(ci_target_pct=1e9), 6),                             # any interval, once there is one
    (dict(ci_target_pct=1e-9, max_repeat_ms=1e-6), 2),        # the time cap ends it at once
    (dict(ci_target_pct=1e-9, max_repeats=12), 12),           # never met: max_repeats
])
def test_repeats_until_the_median_is_known(client, options, runs):
    client.load(SAME_3X3, seed=5)
    config = ExecConfig("reference", None, (1,), 1)
    m = client.measure(config, **{**dict(warmup=0, min_repeat_ms=0.0, min_repeats=2,
                                         max_repeats=50), **options})
    assert m.ok and len(m.times_ms) == runs
    want = _median_ci_pct(m.times_ms)
    assert (m.ci_pct is None) == (want is None) and (want is None or
                                                      m.ci_pct == pytest.approx(want))
    if not os.path.exists("/sys/devices/system/cpu/cpu0/cpufreq"):
        assert m.throttled is False  # no clock to drop


def test_bad_noise_options_get_an_error_answer(client):
    client.load(SAME_3X3, seed=5)
    config = ExecConfig("reference", None, (1,), 1)
    for field in ("ci_target_pct", "max_repeat_ms", "cooldown_ms"):
        m = client.measure(config, **{**ONCE, field: -1})
        assert not m.ok and m.error == f'field "{field}" must be >= 0, got -1'


EPILOGUE_SHAPES = [
    SAME_3X3,
    ConvShape(n=2, h=11, w=9, c=6, oc=10, kh=3, kw=2, stride_h=2, stride_w=1, dil_h=1, dil_w=2,
              pad_top=2, pad_left=0, pad_bottom=1, pad_right=1, act="relu"),
    ConvShape(n=1, h=10, w=10, c=8, oc=12, kh=3, kw=3, group=4, pad_top=1, pad_left=1,
              pad_bottom=1, pad_right=1, act="clip", act_min=-0.5, act_max=0.75),
    ConvShape(n=1, h=7, w=7, c=24, oc=20, kh=1, kw=1, has_residual=True, act="relu"),
    ConvShape(n=1, h=8, w=8, c=16, oc=24, kh=1, kw=1, act="hard_swish", act_alpha=1 / 6,
              act_beta=0.5),
    ConvShape(n=1, h=9, w=9, c=12, oc=12, kh=3, kw=3, group=12, pad_top=1, pad_left=1,
              pad_bottom=1, pad_right=1),
]


@pytest.mark.parametrize("shape", EPILOGUE_SHAPES, ids=lambda s: f"{s.kh}x{s.kw}g{s.group}{s.act}")
def test_returned_output_matches_onnx(client, shape):
    tensors = conv_inputs(shape, shape.c)
    client.load(shape, **tensors)
    expected = expected_output(shape, tensors)
    configs = supported_configs(client, shape, general_ukernel(client), all_cores(client), 5)
    assert len(configs) >= 2
    for config, m in zip(configs, client.measure_batch(configs, return_output=True, **ONCE)):
        assert m.ok and m.correct, (config, m.error)
        assert m.output.shape == shape.output_shape and m.output.dtype == np.float32
        assert rel_err(m.output, expected) <= REL_TOL, config


@pytest.mark.parametrize("shape", [SAME_3X3, EPILOGUE_SHAPES[3]], ids=["3x3", "1x1residual"])
def test_cold_cache_runs_give_the_warm_outputs(client, shape):
    """Eviction touches only its own buffers and reads the activations: every
    cold run gives exactly the warm output, which matches onnx."""
    tensors = conv_inputs(shape, 7)
    client.load(shape, **tensors)
    expected = expected_output(shape, tensors)
    configs = supported_configs(client, shape, general_ukernel(client), all_cores(client), 3)
    assert len(configs) >= 2
    for config in configs:
        warm = client.measure(config, return_output=True, **ONCE)
        # Four timed runs, each after an eviction; the first is the one checked.
        cold = client.measure(config, return_output=True, evict_bytes=1 << 20,
                              **dict(ONCE, min_repeats=4, max_repeats=4))
        assert cold.ok and cold.correct and len(cold.times_ms) == 4, (config, cold.error)
        np.testing.assert_array_equal(cold.output, warm.output)
        assert rel_err(cold.output, expected) <= REL_TOL, config


@pytest.mark.parametrize("value, message", [
    (-1, 'field "evict_bytes" must be an integer in [0, 17179869184], got -1'),
    (1.5, 'field "evict_bytes" must be an integer in [0, 17179869184], got 1.5'),
    (1 << 35, 'field "evict_bytes" must be an integer in [0, 17179869184], got 34359738368'),
    ("1M", 'field "evict_bytes" must be a number, got a string'),
    (None, 'field "evict_bytes" must be a number, got null'),
])
def test_bad_evict_bytes_get_an_error_answer(client, value, message):
    client.load(SAME_3X3, seed=4)
    config = ExecConfig("reference", None, (1,), 1)
    m = client.measure(config, evict_bytes=value, **ONCE)
    assert not m.ok and m.error == message
    assert client.measure(config, evict_bytes=0, **ONCE).correct  # still serving


def test_seeded_tensors_follow_the_documented_generator(client):
    shape = ConvShape(n=1, h=5, w=6, c=3, oc=4, kh=3, kw=3, has_residual=True)
    seed = 12345
    tensors = {name: seeded_uniform(seed, stream, int(np.prod(dims))).reshape(dims)
               for stream, (name, dims) in enumerate([
                   ("weight", shape.weight_shape), ("bias", (shape.oc,)),
                   ("input", shape.input_shape), ("residual", shape.output_shape)])}
    assert all(t.min() >= -1 and t.max() < 1 for t in tensors.values())
    client.load(shape, seed=seed)
    m = client.measure(ExecConfig("reference", None, (1,), 1), return_output=True, **ONCE)
    assert m.ok, m.error
    np.testing.assert_allclose(m.output, expected_output(shape, tensors), rtol=0, atol=1e-5)


def test_every_ukernel_is_correct(client):
    assert_every_ukernel_correct(client, client.hello_info["isa"], all_cores(client))


def test_invalid_configs_fail_and_the_launcher_keeps_serving(client):
    client.load(SAME_3X3, seed=3)
    uk = general_ukernel(client)
    gemm_algorithm = next(a["name"] for a in client.hello_info["algorithms"] if a["uses_ukernel"])
    unsupported = next(
        ExecConfig(a["name"], u["name"] if a["uses_ukernel"] else None, (1,), 4)
        for a in client.hello_info["algorithms"] for u in client.ukernels
        if client.check(SAME_3X3, a["name"], u["name"] if a["uses_ukernel"] else None))
    bad = [ExecConfig("no-such-algorithm", None, (1,), 1),
           ExecConfig(gemm_algorithm, "no-such-ukernel", (1,), 1),
           ExecConfig(gemm_algorithm, uk, (0,) * 63 + (1,), 4),
           unsupported]
    good = ExecConfig(gemm_algorithm, uk, (1,), 4)
    results = list(client.measure_batch(bad + [good], **QUICK))
    for config, m in zip(bad, results):
        assert not m.ok, config
        assert m.error and "\n" not in m.error
        assert m.median_ms is None and m.correct is None
    assert "no-such-algorithm" in results[0].error
    assert "63" in results[2].error
    assert results[-1].ok and results[-1].correct, results[-1].error
    assert client.restarts == 0


def test_check_tells_whether_a_combination_runs(client):
    client.load(SAME_3X3, seed=5)
    uk = general_ukernel(client)
    gemm_algorithm = next(a["name"] for a in client.hello_info["algorithms"] if a["uses_ukernel"])
    assert client.check(SAME_3X3, gemm_algorithm, uk) is None
    assert client.check(SAME_3X3, "reference", None) is None
    reason = client.check(SAME_3X3, "no-such-algorithm", None)
    assert "no-such-algorithm" in reason and "\n" not in reason
    # The task is untouched.
    assert client.measure(ExecConfig("reference", None, (1,), 1), **ONCE).correct


def test_measure_without_a_task_is_an_error(launcher_path):
    with LauncherClient([launcher_path]) as c:
        m = c.measure(ExecConfig("reference", None, (1,), 1), **ONCE)
    assert not m.ok and "no task loaded" in m.error


def test_bad_loads_raise(client):
    with pytest.raises(ValueError, match="weight must have shape"):
        client.load(SAME_3X3, weight=np.zeros((1, 2, 3, 4), np.float32))
    with pytest.raises(LauncherError, match="load failed"):
        client.load(ConvShape(n=1, h=2, w=2, c=1, oc=1, kh=5, kw=5))
    m = client.measure(ExecConfig("reference", None, (1,), 1), **ONCE)
    assert not m.ok and "no task loaded" in m.error
    client.load(SAME_3X3)
    assert client.measure(ExecConfig("reference", None, (1,), 1), **ONCE).ok


def test_tensors_of_tens_of_megabytes_travel_both_ways(client):
    shape = ConvShape(n=1, h=512, w=512, c=32, oc=16, kh=1, kw=1)  # 32 MiB in, 16 MiB out
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=shape.input_shape).astype(np.float32)
    w = rng.uniform(-1, 1, size=shape.weight_shape).astype(np.float32)
    b = rng.uniform(-1, 1, size=(shape.oc,)).astype(np.float32)
    client.load(shape, weight=w, bias=b, input=x)
    m = client.measure(ExecConfig("reference", None, all_cores(client), 16),
                       return_output=True, **ONCE)
    assert m.ok and m.correct, m.error
    expected = x.reshape(-1, shape.c).astype(np.float64) @ w.reshape(shape.oc, shape.c).T + b
    assert rel_err(m.output.reshape(-1, shape.oc), expected) <= REL_TOL


def test_a_killed_launcher_is_restarted_with_its_task(launcher_path):
    with LauncherClient([launcher_path]) as c:
        c.load(SAME_3X3, seed=4)
        config = ExecConfig("reference", None, (1,), 1)
        before = c.measure(config, return_output=True, **ONCE)
        os.kill(c.pid, signal.SIGKILL)
        died, after = c.measure_batch([config, config], return_output=True, **ONCE)
        assert not died.ok and died.error.startswith("launcher died (exit code -9")
        assert c.restarts == 1
        assert after.ok and np.array_equal(after.output, before.output)


def _policies(pid: int) -> set[int]:
    """The scheduling policy of every thread of process pid."""
    return {os.sched_getscheduler(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


@pytest.mark.parametrize("realtime", [True, False])
def test_a_realtime_launcher_measures_at_fifo_priority_on_every_thread(launcher_path, realtime):
    with LauncherClient([launcher_path], realtime=realtime) as c:
        c.load(SAME_3X3, seed=4)
        c.measure(ExecConfig("im2col", c.ukernels[0]["name"], (1, 1), 4), **ONCE)  # both cores
        if not realtime:
            assert c.scheduling is None and _policies(c.pid) == {os.SCHED_OTHER}
            return
        assert c.scheduling in ("fifo", "normal")
        if c.scheduling == "normal":  # a machine that refuses it says why
            assert c.scheduling_reason
            pytest.skip(f"real-time priority refused here: {c.scheduling_reason}")
        assert _policies(c.pid) == {os.SCHED_FIFO}
        os.kill(c.pid, signal.SIGKILL)  # a restarted launcher asks again
        died, = c.measure_batch([ExecConfig("reference", None, (1,), 1)], **ONCE)
        assert not died.ok and c.restarts == 1 and _policies(c.pid) == {os.SCHED_FIFO}


# ---- the raw protocol ----

def raw_session(launcher_path: str, lines: list[str]) -> tuple[list[dict], int]:
    """Sends lines to a fresh launcher, closes its input, and returns every
    answer and the exit code."""
    done = subprocess.run([launcher_path], input="".join(line + "\n" for line in lines),
                          capture_output=True, text=True, timeout=60)
    return [json.loads(line) for line in done.stdout.splitlines()], done.returncode


def test_malformed_requests_get_error_answers(launcher_path):
    lines = ['{"cmd": "hello"', "not json", "", "[1, 2]", '{"cmd": 3}', '{"command": "hello"}',
             '{"cmd": "h\\u00e9\\"\\n\\ud83d\\ude00"}', '{"cmd": "hello", "extra": 1}',
             '{"cmd": "hello", "cmd": "hello"}',
             '{"cmd": "load", "shape": {"n": 1, "h": 4, "w": 4, "c": 1, "oc": 1, "kh": 1, "kw": 1,'
             ' "colour": 1}}',
             '{"cmd": "load", "shape": {"n": 1.5, "h": 4, "w": 4, "c": 1, "oc": 1, "kh": 1,'
             ' "kw": 1}}',
             '{"cmd": "load", "shape": {"n": 1, "h": 4, "w": 4, "c": 1, "oc": 1, "kh": 1, "kw": 1},'
             ' "input": "AAAA"}',
             '{"cmd": "load", "shape": {"n": 1, "h": 1, "w": 1, "c": 1, "oc": 1, "kh": 1, "kw": 1},'
             ' "input": "AA*AAA=="}',
             '{"cmd": "measure", "config": {"algorithm": "reference", "core_weights": [1]}}',
             '{"cmd": "check", "shape": {"n": 1, "h": 4, "w": 4, "c": 4, "oc": 4, "kh": 1,'
             ' "kw": 1, "group": 3}, "algorithm": "reference"}',
             '{"cmd": "hello"}']
    answers, code = raw_session(launcher_path, lines)
    assert code == 0
    assert len(answers) == len(lines)
    *errors, hello = answers
    assert hello["ok"]
    assert all(not a["ok"] and a["error"] for a in errors)
    messages = [a["error"] for a in errors]
    assert messages[0] == ("malformed JSON at byte 15: expected ',' or '}' in an object, "
                           "found end of input")
    assert messages[1].startswith("malformed JSON at byte 0")
    expected = {3: "must be an object", 4: 'field "cmd" must be a string',
                5: 'missing field "cmd"', 6: 'unknown command "hé"?😀"',
                7: 'unknown field "extra"', 8: "given twice", 9: 'unknown field "colour" in shape',
                10: 'field "n" must be an integer', 11: "input: expected 16 float32",
                12: "invalid base64", 13: 'missing field "workloads"', 14: "group 3 must divide"}
    for i, part in expected.items():
        assert part in messages[i], (i, messages[i])


BIG = 2**31 - 1


@pytest.mark.parametrize("shape, needle", [
    ({"h": 4, "pad_top": BIG, "pad_bottom": BIG}, "padded input height (2147483647 + 4 + "
                                                  "2147483647 = 4294967298) is over 2147483647"),
    ({"w": 4, "pad_left": BIG, "pad_right": 8}, "padded input width"),
    ({"dil_h": BIG}, "dilated kernel height (2147483647 x (3 - 1) + 1 = 4294967295) is over"),
    ({"dil_w": 2**30, "pad_left": BIG - 8}, "dilated kernel width"),
    ({"transposed": True, "stride_h": BIG}, "transposed: the full output height (15032385532)"),
    ({"transposed": True, "w": BIG, "kw": BIG}, "is over 2147483647"),
    ({"h": BIG, "w": BIG, "pad_top": 1}, "is over 2147483647"),
])
def test_shapes_past_32_bits_are_refused_with_their_reason(launcher_path, shape, needle):
    """Sizes are computed in 64 bits: no pad or dilation wraps around into a
    small output that the launcher would then measure."""
    full = {"n": 1, "h": 8, "w": 8, "c": 1, "oc": 1, "kh": 3, "kw": 3, **shape}
    answers, code = raw_session(launcher_path, [
        json.dumps({"cmd": "load", "shape": full}),
        json.dumps({"cmd": "check", "shape": full, "algorithm": "reference"})])
    assert code == 0
    (load, check) = answers
    assert not load["ok"] and needle in load["error"], load
    assert check["ok"] and not check["supported"] and needle in check["reason"], check


def test_an_oversized_json_array_costs_less_than_twice_its_size(launcher_path):
    """A 100 MB line of one array is refused at its 2^20th value: the
    launcher's peak RSS stays under twice the line's size, and it serves on."""
    line = b'{"cmd": "hello", "x": [' + b"1," * (50 * 2**20) + b"1]}\n"
    proc = subprocess.Popen([launcher_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        proc.stdin.write(line)
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        status = Path(f"/proc/{proc.pid}/status").read_text()
        peak_kib = int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1))
        proc.stdin.write(b'{"cmd": "quit"}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline()) == {"ok": True}
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert not answer["ok"] and "more than 1048576 values" in answer["error"], answer
    assert peak_kib * 1024 < 2 * len(line), (peak_kib, len(line))


def test_quit_and_end_of_input_exit_cleanly(launcher_path):
    answers, code = raw_session(launcher_path, ['{"cmd": "quit"}', '{"cmd": "hello"}'])
    assert answers == [{"ok": True}] and code == 0
    answers, code = raw_session(launcher_path, [])
    assert answers == [] and code == 0


# ---- launchers that hang or die ----

FAKE_LAUNCHER = r'''
"""Speaks just enough of the protocol; measuring "die" exits, "hang" sleeps,
"garbage" answers something that is not JSON.  Each start is counted in
argv[1]; with argv[2], starts after that many exit at once."""
import json, sys, time

with open(sys.argv[1], "a") as f:
    f.write("start\n")
with open(sys.argv[1]) as f:
    starts = len(f.readlines())
if len(sys.argv) > 2 and starts > int(sys.argv[2]):
    sys.exit("fake launcher will not start again")
loaded = False
for line in sys.stdin:
    request = json.loads(line)
    if request["cmd"] == "hello":
        answer = {"ok": True, "protocol": PROTOCOL_VERSION, "algorithms": [], "ukernels": []}
    elif request["cmd"] == "load":
        loaded, answer = True, {"ok": True}
    elif request["cmd"] == "quit":
        print(json.dumps({"ok": True}), flush=True)
        break
    else:
        algorithm = request["config"]["algorithm"]
        if algorithm == "die":
            print("fake launcher exiting", file=sys.stderr, flush=True)
            sys.exit(3)
        if algorithm == "hang":
            time.sleep(100)
        if algorithm == "garbage":
            print("garbage", flush=True)
            continue
        answer = ({"ok": True, "median_ms": 1.0, "min_ms": 1.0, "times_ms": [1.0],
                   "ci_pct": None, "throttled": False, "stages": {}, "correct": True,
                   "max_abs_err": 0.0, "max_rel_err": 0.0}
                  if loaded else {"ok": False, "error": "no task loaded"})
    print(json.dumps(answer), flush=True)
'''


@pytest.fixture
def fake_launcher(tmp_path):
    script = tmp_path / "fake_launcher.py"
    script.write_text(FAKE_LAUNCHER.replace("PROTOCOL_VERSION", str(PROTOCOL_VERSION)))
    starts = tmp_path / "starts"

    def command(*extra: str) -> list[str]:
        return [sys.executable, str(script), str(starts), *extra]

    command.starts = lambda: len(starts.read_text().splitlines())
    return command


def fake_config(algorithm: str) -> ExecConfig:
    return ExecConfig(algorithm, None, (1,), 1)


@pytest.mark.parametrize("failure, error", [
    ("die", "launcher died (exit code 3); stderr: fake launcher exiting"),
    ("hang", "launcher timed out after 2s"),
    ("garbage", "launcher broke the protocol, answering b'garbage'"),
])
def test_a_failing_launcher_is_replaced_and_reloaded(fake_launcher, failure, error):
    with LauncherClient(fake_launcher(), timeout_s=2) as c:
        c.load(SAME_3X3)
        start = time.monotonic()
        configs = [fake_config("ok"), fake_config(failure), fake_config("ok")]
        results = list(c.measure_batch(configs))
        assert time.monotonic() - start < 15
    assert [m.ok for m in results] == [True, False, True]
    assert results[1].error == error
    assert c.restarts == 1 and fake_launcher.starts() == 2


def test_a_launcher_that_cannot_restart_raises(fake_launcher):
    with LauncherClient(fake_launcher("1"), timeout_s=5) as c:
        with pytest.raises(LauncherError, match="restarting the launcher failed.*will not start"):
            c.measure(fake_config("die"))


def test_a_launcher_that_never_answers_is_killed(tmp_path):
    start = time.monotonic()
    with pytest.raises(LauncherError, match=r"launcher timed out after 1s \(while saying hello\)"):
        LauncherClient(["sleep", "100"], timeout_s=1)
    assert time.monotonic() - start < 10


def test_a_launcher_that_exits_at_once_is_reported():
    with pytest.raises(LauncherError, match="exit code 5.*stderr: broken"):
        LauncherClient(["sh", "-c", "echo broken >&2; exit 5"], timeout_s=5)
    with pytest.raises(LauncherError, match="cannot start"):
        LauncherClient(["/nonexistent/acl-launcher"])


def test_default_launcher_path_explains_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("ACLTUNER_LAUNCHER", str(tmp_path / "missing"))
    with pytest.raises(LauncherError, match="ACLTUNER_LAUNCHER=.*missing is not an executable"):
        default_launcher_path()
    monkeypatch.delenv("ACLTUNER_LAUNCHER")
    monkeypatch.setenv("ACLTUNER_NATIVE_DIR", str(tmp_path))
    with pytest.raises(LauncherError, match="not found in .* and ACLTUNER_LAUNCHER is not set"):
        default_launcher_path()


# ---- every micro-kernel, here and on AArch64 under qemu ----

def shape_for_ukernel(uk: dict) -> ConvShape:
    """A small convolution this micro-kernel can run: with a small-K kernel a
    1x1 convolution whose K (= c) is its kmax, else a 3x3 one; N (= oc) a
    multiple of n_multiple, and M and N off the MR x NR tile grid."""
    oc = uk["n_multiple"] * -(-20 // uk["n_multiple"])
    if uk["kmax"]:
        return ConvShape(n=2, h=5, w=7, c=uk["kmax"], oc=oc, kh=1, kw=1)
    return ConvShape(n=2, h=9, w=9, c=8, oc=oc, kh=3, kw=3,
                     pad_top=1, pad_left=1, pad_bottom=1, pad_right=1, act="relu")


def assert_every_ukernel_correct(client: LauncherClient, isa: str,
                                 core_weights: tuple[int, ...]) -> None:
    ukernels = [u for u in client.ukernels if u["isa"] == isa]
    assert ukernels, f"no {isa} micro-kernels"
    for uk in ukernels:
        shape = shape_for_ukernel(uk)
        tensors = conv_inputs(shape, uk["mr"] * uk["nr"])
        client.load(shape, **tensors)
        expected = expected_output(shape, tensors)
        configs = [c for c in supported_configs(client, shape, uk["name"], core_weights, 7)
                   if c.ukernel]
        assert configs, f"no algorithm runs {uk['name']}"
        for config, m in zip(configs, client.measure_batch(configs, return_output=True, **ONCE)):
            assert m.ok and m.correct, (config, m.error)
            assert rel_err(m.output, expected) <= REL_TOL, config


@pytest.mark.aarch64
def test_aarch64_launcher_under_qemu():
    with LauncherClient(QEMU + [aarch64_launcher_or_skip()], timeout_s=120) as c:
        assert c.hello_info["isa"] == "neon"
        assert_every_ukernel_correct(c, "neon", (1, 1))
        # The eviction GEMM runs on a NEON micro-kernel too.
        c.load(SAME_3X3, seed=5)
        config = ExecConfig("im2col", general_ukernel(c), (1, 1), 4)
        warm = c.measure(config, return_output=True, **ONCE)
        cold = c.measure(config, return_output=True, evict_bytes=256 << 10,
                         **dict(ONCE, min_repeats=2, max_repeats=2))
        assert cold.ok and cold.correct, cold.error
        np.testing.assert_array_equal(cold.output, warm.output)

"""The launcher's JSON-lines protocol door: one long-lived launcher fed
mutated, random, truncated and over-long request lines.  Every line must get
one JSON answer line (an error answer naming what is wrong, for a bad line)
and the launcher must keep serving; a launcher that dies or stops answering is
counted and replaced."""
from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from acltuner.bench.fuzz.mutate import mutate_bytes, mutate_value, random_bytes
from acltuner.engine.launcher import LauncherClient, LineProcess, Unresponsive
from acltuner.engine.measure_options import MeasureOptions

# Cheap measurements: the fuzz is about parsing and state, not timing.
FAST = MeasureOptions(warmup=0, min_repeat_ms=0, min_repeats=1, max_repeats=1)
BASE64_FIELDS = ("weight", "bias", "input", "residual", "data")


class _Recorder(LauncherClient):
    """A launcher client that keeps every request line it sends."""

    def __init__(self, command: list[str]):
        self.lines: list[bytes] = []
        super().__init__(command)

    def _call(self, line: bytes, timeout_s: float | None = None) -> dict:
        self.lines.append(line)
        return super()._call(line, timeout_s)


def record_seed_lines(command: list[str], plan_path: Path) -> list[bytes]:
    """Real request lines: a conv task loaded, checked and measured with
    tensors sent, and the plan's whole model built and run as a graph."""
    from acltuner.engine.config import ConvShape, ExecConfig
    from acltuner.runtime.inputs import random_inputs
    from acltuner.runtime.remote import RemoteProgram
    with _Recorder(command) as client:
        shape = ConvShape(n=1, h=6, w=5, c=3, oc=4, kh=3, kw=3, pad_top=1, pad_left=1,
                          pad_bottom=1, pad_right=1, has_residual=True)
        rng = np.random.default_rng(0)
        tensors = {name: rng.standard_normal(dims).astype(np.float32) for name, dims in
                   (("weight", shape.weight_shape), ("bias", (shape.oc,)),
                    ("input", shape.input_shape), ("residual", shape.output_shape))}
        client.load(shape, seed=3, **tensors)
        algorithm = client.algorithms[0]
        ukernel = client.ukernels[0]["name"]
        client.check(shape, algorithm, ukernel)
        client.measure(ExecConfig(algorithm, ukernel, (1,), 1), FAST)
        # The launcher fuzzed may be another build (a sanitiser's) than the
        # plan's: only its request lines matter here.
        program = RemoteProgram(plan_path, client, force=True)
        program.run(random_inputs(program.program), repeat=1, warmup=0)
        return list(client.lines)


@dataclass
class LauncherDoor:
    command: list[str]
    seeds: list[bytes]
    timeout_s: float
    failures: list[str] = field(default_factory=list)
    process: LineProcess | None = None
    accepted: int = 0  # cases answered ok: how deep the mutated requests get
    last_ok: bool = False

    def __post_init__(self):
        self.docs = [json.loads(line) for line in self.seeds]

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    def _line(self, rng: random.Random) -> bytes:
        roll = rng.random()
        if roll < 0.25:
            return rng.choice(self.seeds)
        if roll < 0.65:
            doc = mutate_value(rng, rng.choice(self.docs))
            return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")
        if roll < 0.85:
            return mutate_bytes(rng, rng.choice(self.seeds))
        if roll < 0.92:
            return self._bad_tensor(rng)
        if roll < 0.97:
            return random_bytes(rng, rng.choice([0, 1, 5, 100, 2000]))
        if roll < 0.985:
            return self._over_long(rng)
        return rng.choice(self.seeds[:1] or [b"{}"])

    def _bad_tensor(self, rng: random.Random) -> bytes:
        """A tensor whose bytes disagree with its shape, or that is not base64."""
        with_tensor = [d for d in self.docs if any(k in d for k in BASE64_FIELDS)]
        doc = json.loads(json.dumps(rng.choice(with_tensor or self.docs)))
        key = next((k for k in BASE64_FIELDS if k in doc), "data")
        raw = base64.b64decode(doc.get(key, "")) if isinstance(doc.get(key), str) else b""
        doc[key] = rng.choice([
            base64.b64encode(raw[:-4]).decode(), base64.b64encode(raw + b"\0" * 4).decode(),
            base64.b64encode(raw[:-1]).decode(), base64.b64encode(raw)[:-2].decode(),
            "!!!!", "====", "QQ=", "Q", "A" * 7, "\u00e9" * 8, ""])
        return json.dumps(doc).encode()

    def _over_long(self, rng: random.Random) -> bytes:
        size = rng.choice([1 << 20, 3 << 20])
        kind = rng.random()
        if kind < 0.4:
            return b'{"cmd": "graph_write", "offset": 0, "data": "' + b"A" * size + b'"}'
        if kind < 0.7:
            return b"[" * size
        return b'{"cmd": "hello", "x": "' + b"x" * size + b'"}'

    def case(self, rng: random.Random) -> str | None:
        """Sends one generated line; returns None, or the count it adds to
        (tracebacks, crashes or hangs), with the detail in failures."""
        burst = rng.random() < 0.003
        lines = [self._line(rng)] if not burst else self._many_objects(rng)
        for line in lines:
            problem = self._send(line.replace(b"\n", b" ") + b"\n")
            if problem:
                return problem
        self.accepted += not burst and self.last_ok
        return None

    def _many_objects(self, rng: random.Random) -> list[bytes]:
        """Many graphs and tasks opened one after another: each replaces the last."""
        creates = [s for s, d in zip(self.seeds, self.docs)
                   if d.get("cmd") in ("graph_create", "load")]
        return [rng.choice(creates) for _ in range(200)] if creates else []

    def _send(self, line: bytes) -> str | None:
        if self.process is None:
            self.process = LineProcess(self.command)
        try:
            answer = self.process.exchange(line, self.timeout_s)
        except Unresponsive as e:
            self.process = None
            kind = "hangs" if "timed out" in str(e) else "crashes"
            self.failures.append(f"{e} after {line[:200]!r}")
            return kind
        try:
            decoded = json.loads(answer)
            ok = decoded["ok"]
            error = decoded.get("error")
            assert isinstance(ok, bool)
            assert ok or (isinstance(error, str) and error and "\n" not in error)
        except (ValueError, KeyError, TypeError, AssertionError):
            self.failures.append(f"bad answer {answer[:200]!r} to {line[:200]!r}")
            return "tracebacks"
        self.last_ok = ok
        if ok and _is_quit(line):
            self.close()  # obeyed: the next case starts a fresh launcher
        return None


def _is_quit(line: bytes) -> bool:
    try:
        doc = json.loads(line)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("cmd") == "quit"

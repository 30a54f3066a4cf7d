"""Talking to acl-launcher, the process that measures convolutions.

The launcher speaks JSON lines (native/launcher/PROTOCOL.md) on its stdin and
stdout, so the same client drives a local build, the AArch64 build under
qemu-user and a launcher on a board over ssh: only the command differs.

A launcher that dies or stops answering must not stop a tuning run: the config
it was measuring is recorded as failed, a fresh launcher is started, the
current task is loaded into it again, and the next config proceeds.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Iterable, Iterator, Sequence

import numpy as np

from .config import ConvShape, ExecConfig
from .measure_options import MeasureOptions
from .native import native_dir

if TYPE_CHECKING:
    from typing_extensions import Self  # typing's from Python 3.11

PROTOCOL_VERSION = 5
LAUNCHER_NAME = "acl-launcher"
LAUNCHER_ENV = "ACLTUNER_LAUNCHER"

# Pipes move at most this much per system call; answers of tens of MB arrive
# in many reads.
_CHUNK = 1 << 20
_STDERR_TAIL_BYTES = 4096


class LauncherError(RuntimeError):
    """The launcher cannot be found or started, or refused a load."""


class Unresponsive(Exception):
    """The launcher died, timed out or broke the protocol; it has been killed."""


def default_launcher_path() -> str:
    """The local launcher: $ACLTUNER_LAUNCHER if set, else the one installed
    next to the engine library in the package's _native directory."""
    env = os.environ.get(LAUNCHER_ENV)
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise LauncherError(f"{LAUNCHER_ENV}={env} is not an executable file")
        return env
    installed = native_dir() / LAUNCHER_NAME
    if installed.is_file() and os.access(installed, os.X_OK):
        return str(installed)
    raise LauncherError(f"{LAUNCHER_NAME} not found in {installed.parent} and {LAUNCHER_ENV} is "
                        f"not set; build and install native/ or point {LAUNCHER_ENV} at the binary")


@dataclass
class Measurement:
    """One measure answer.  ok=False: the config could not be run (error says
    why); ok=True with correct=False: it ran but its output is wrong."""
    ok: bool
    error: str | None = None
    median_ms: float | None = None
    min_ms: float | None = None
    times_ms: list[float] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)
    correct: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    output: np.ndarray | None = None
    # The median's 95% confidence half-width in % of it (None: too few runs),
    # and whether a core's clock dropped or the board reached its trip point
    # during the runs (PROTOCOL.md): either makes the time one to take again.
    ci_pct: float | None = None
    throttled: bool = False

    @classmethod
    def failed(cls, error: str) -> "Measurement":
        return cls(ok=False, error=error)


class LineProcess:
    """A subprocess spoken to in lines, where every exchange has a deadline.

    Both pipe ends are non-blocking and waited on with select, so neither a
    launcher that stops reading a long request nor one that never answers can
    block the caller.  Stderr goes to a temporary file, which cannot fill up
    and stall the launcher, and whose last line explains a death.
    """

    def __init__(self, command: Sequence[str]):
        self._stderr = tempfile.TemporaryFile()
        try:
            # A session of its own, so that killing it also kills whatever it
            # started (a wrapper script's child, qemu's guest).
            self._proc = subprocess.Popen(list(command), stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._stderr,
                                          bufsize=0, start_new_session=True)
        except OSError:
            self._stderr.close()
            raise
        assert self._proc.stdin is not None and self._proc.stdout is not None  # both PIPE
        self._stdin: IO[bytes] = self._proc.stdin
        self._stdout: IO[bytes] = self._proc.stdout
        self.pid = self._proc.pid
        self._in = self._stdin.fileno()
        self._out = self._stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._received = bytearray()

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has been reaped, else None."""
        return self._proc.returncode

    def exchange(self, line: bytes, timeout_s: float) -> bytes:
        """Sends one line and returns the one line that answers it."""
        if self._stdin.closed:
            raise Unresponsive("launcher is not running (it was killed earlier)")
        deadline = time.monotonic() + timeout_s
        self._send(line, deadline, timeout_s)
        return self._receive(deadline, timeout_s)

    def _wait_ready(self, fd: int, for_write: bool, deadline: float, timeout_s: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self.kill_for(f"launcher timed out after {timeout_s:g}s")
        watched = ([], [fd]) if for_write else ([fd], [])
        select.select(*watched, [], remaining)

    def _send(self, line: bytes, deadline: float, timeout_s: float) -> None:
        pending = memoryview(line)
        while pending:
            self._wait_ready(self._in, True, deadline, timeout_s)
            try:
                pending = pending[os.write(self._in, pending[:_CHUNK]):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._died() from None

    def _receive(self, deadline: float, timeout_s: float) -> bytes:
        searched = 0
        while (end := self._received.find(b"\n", searched)) < 0:
            # Only new bytes are searched: a long answer arrives in many reads.
            searched = len(self._received)
            self._wait_ready(self._out, False, deadline, timeout_s)
            try:
                chunk = os.read(self._out, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                raise self._died()
            self._received += chunk
        line = bytes(self._received[:end])
        del self._received[:end + 1]
        return line

    def _died(self) -> Unresponsive:
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:  # closed its stdout but lives on
            code = None
        return self.kill_for(f"launcher died (exit code {_exit_code(code)})")

    def kill_for(self, reason: str) -> Unresponsive:
        """Kills the launcher and returns the exception that reports why,
        with the launcher's last line on stderr if it wrote one."""
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - _STDERR_TAIL_BYTES))
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        self.kill()
        return Unresponsive(f"{reason}; stderr: {lines[-1].strip()}" if lines else reason)

    def wait(self, timeout_s: float) -> None:
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        """Kills the launcher's whole process group, which may outlive the
        launcher itself, and releases the pipes; safe to repeat."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._proc.wait()
        for stream in (self._stdin, self._stdout, self._stderr):
            if not stream.closed:
                stream.close()


def _exit_code(code: int | None) -> str:
    if code is None:
        return "unknown, it closed its output and was killed"
    if code < 0:
        try:
            return f"{code}, {signal.Signals(-code).name}"
        except ValueError:
            return str(code)
    return str(code)


def _encode_tensor(name: str, array: np.ndarray, shape: tuple[int, ...]) -> str:
    a = np.asarray(array)
    if a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").data).decode("ascii")


def request_line(request: dict) -> bytes:
    return json.dumps(request, separators=(",", ":")).encode() + b"\n"


def _error_value(x: float | None) -> float:
    """Errors the launcher could not write as JSON numbers (NaN or inf in the
    output) arrive as null."""
    return math.inf if x is None else float(x)


class LauncherClient:
    """One launcher process: hello on start, then load and measure.

    command: how to start it, e.g. [path], ["qemu-aarch64", "-cpu",
    "cortex-a53", "-L", "/usr/aarch64-linux-gnu", path] or ["ssh", host, path];
    by default the local launcher.  timeout_s bounds every request, from
    sending it to its answer.
    """

    def __init__(self, command: Sequence[str] | None = None, *, timeout_s: float = 60.0,
                 realtime: bool = False):
        self.command = list(command) if command is not None else [default_launcher_path()]
        self.timeout_s = timeout_s
        self.realtime = realtime
        # What the launcher got from its realtime request ("fifo" or "normal"
        # and why), asked for when `realtime`, again after every restart.
        self.scheduling: str | None = None
        self.scheduling_reason: str | None = None
        self.restarts = 0
        self._process: LineProcess | None = None
        self._load_line: bytes | None = None
        self._shape: ConvShape | None = None
        self.hello_info = self._start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The launcher's process id (of the command's first program)."""
        return self._process.pid if self._process else None

    @property
    def algorithms(self) -> list[str]:
        return [a["name"] for a in self.hello_info["algorithms"]]

    @property
    def ukernels(self) -> list[dict]:
        return list(self.hello_info["ukernels"])

    def _start(self) -> dict:
        """Starts a launcher and returns its hello answer."""
        try:
            self._process = LineProcess(self.command)
        except OSError as e:
            raise LauncherError(f"cannot start {self.command[0]}: {e.strerror or e}") from None
        try:
            hello = self._call(request_line({"cmd": "hello"}))
        except Unresponsive as e:
            raise LauncherError(f"{e} (while saying hello)") from None
        if not hello.get("ok") or hello.get("protocol") != PROTOCOL_VERSION:
            self._process.kill()
            raise LauncherError(f"{self.command[0]} does not speak protocol {PROTOCOL_VERSION}: "
                                f"{hello.get('error') or hello}")
        if self.realtime:  # before any measurement starts the pool's workers
            answer = self._call(request_line({"cmd": "realtime"}))
            self.scheduling, self.scheduling_reason = answer.get("scheduling"), answer.get("reason")
        return hello

    def _call(self, line: bytes, timeout_s: float | None = None) -> dict:
        """One exchange (within timeout_s, default the client's); raises
        Unresponsive (with the launcher killed) if the launcher dies, times
        out or answers something that is not JSON."""
        process = self._process
        if process is None:
            raise LauncherError("the launcher client has been closed")
        answer = process.exchange(line, timeout_s or self.timeout_s)
        try:
            decoded = json.loads(answer)
            if isinstance(decoded, dict):
                return decoded
        except ValueError:
            pass
        raise process.kill_for(f"launcher broke the protocol, answering {answer[:200]!r}")

    def _restart(self, failure: Unresponsive) -> None:
        """Replaces a killed launcher and loads the current task into the new one."""
        self.restarts += 1
        try:
            self.hello_info = self._start()
            if self._load_line is not None:
                answer = self._call(self._load_line)
                if not answer.get("ok"):
                    raise LauncherError(f"reloading the task failed: {answer.get('error')}")
        except (LauncherError, Unresponsive) as e:
            raise LauncherError(f"{failure}; restarting the launcher failed: {e}") from None

    def load(self, shape: ConvShape, seed: int = 0, weight: np.ndarray | None = None,
             bias: np.ndarray | None = None, input: np.ndarray | None = None,
             residual: np.ndarray | None = None) -> dict:
        """Makes `shape` the current task.  Tensors not given are drawn from
        `seed` by the launcher.  Returns the answer (output_shape, flops)."""
        request = {"cmd": "load", "shape": shape.to_dict(), "seed": seed}
        given = (("weight", weight, shape.weight_shape), ("bias", bias, (shape.oc,)),
                 ("input", input, shape.input_shape), ("residual", residual, shape.output_shape))
        for name, array, expected in given:
            if array is not None:
                request[name] = _encode_tensor(name, array, expected)
        line = request_line(request)
        # A failed load leaves the launcher without a task (PROTOCOL.md).
        self._load_line = self._shape = None
        try:
            answer = self._call(line)
        except Unresponsive as e:
            self._restart(e)
            raise LauncherError(f"load failed: {e}") from None
        if not answer.get("ok"):
            raise LauncherError(f"load failed: {answer.get('error')}")
        self._load_line, self._shape = line, shape
        return answer

    def check(self, shape: ConvShape, algorithm: str, ukernel: str | None) -> str | None:
        """None if the launcher's engine can run this combination, else its
        one-line reason.  Leaves the current task alone."""
        request = {"cmd": "check", "shape": shape.to_dict(), "algorithm": algorithm,
                   "ukernel": ukernel}
        try:
            answer = self._call(request_line(request))
        except Unresponsive as e:
            self._restart(e)
            raise LauncherError(f"check failed: {e}") from None
        if not answer.get("ok"):
            raise LauncherError(f"check failed: {answer.get('error')}")
        return None if answer["supported"] else answer["reason"]

    def request(self, request: dict) -> dict:
        """Sends any request (PROTOCOL.md) and returns its answer; a refusal
        raises LauncherError with the launcher's line.  A launcher that dies
        or stops answering is killed, not restarted: what it held is lost."""
        try:
            answer = self._call(request_line(request))
        except Unresponsive as e:
            raise LauncherError(f"{request.get('cmd')} failed: {e}") from None
        if not answer.get("ok"):
            raise LauncherError(answer.get("error") or "the launcher gave no reason")
        return answer

    @property
    def largest_cache_bytes(self) -> int:
        """The largest CPU cache of the launcher's machine, 0 if unknown."""
        return int(self.hello_info.get("largest_cache_bytes", 0))

    def measure(self, config: ExecConfig, options: MeasureOptions = MeasureOptions(), *,
                return_output: bool = False, timeout_s: float | None = None,
                **changes) -> Measurement:
        """Times `config` on the current task with `options`, any of whose
        fields `changes` replaces.  evict_bytes > 0 measures with cold caches:
        the config's cores read that much memory before every timed run
        (PROTOCOL.md).  A config that kills the launcher or runs past
        timeout_s (default the client's) fails with the reason, and a new
        launcher with the task loaded takes over.  Never raises for a config
        that fails, only if the launcher cannot be brought back."""
        options = dataclasses.replace(options, **changes)
        request = {"cmd": "measure", "config": config.to_dict(), **options.to_dict(),
                   "return_output": return_output}
        try:
            answer = self._call(request_line(request), timeout_s)
        except Unresponsive as e:
            self._restart(e)
            return Measurement.failed(str(e))
        if not answer.get("ok"):
            return Measurement.failed(answer.get("error") or "the launcher gave no reason")
        return self._measurement(answer)

    def measure_batch(self, configs: Iterable[ExecConfig], **kwargs) -> Iterator[Measurement]:
        """measure() for each config in turn, with the same options."""
        for config in configs:
            yield self.measure(config, **kwargs)

    def _measurement(self, answer: dict) -> Measurement:
        output = None
        if "output" in answer:
            if self._shape is None:
                raise LauncherError("the launcher returned an output with no task loaded")
            # A bytearray, so the array is writable like any other result.
            raw = bytearray(base64.b64decode(answer["output"]))
            output = np.frombuffer(raw, dtype="<f4").reshape(self._shape.output_shape)
        return Measurement(ok=True, median_ms=answer["median_ms"], min_ms=answer["min_ms"],
                           times_ms=list(answer["times_ms"]), stages=dict(answer["stages"]),
                           correct=answer["correct"],
                           max_abs_err=_error_value(answer["max_abs_err"]),
                           max_rel_err=_error_value(answer["max_rel_err"]), output=output,
                           ci_pct=answer["ci_pct"], throttled=answer["throttled"])

    def close(self) -> None:
        """Asks the launcher to quit, killing it if it does not; idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.exchange(request_line({"cmd": "quit"}), min(self.timeout_s, 10.0))
            process.wait(min(self.timeout_s, 10.0))
        except Unresponsive:
            pass
        process.kill()

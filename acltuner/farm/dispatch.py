"""The workstation's side of a farm: sends batches of measurements to the
members through a Dask client and takes the faults.

Every member is a single-threaded Dask worker holding the resource `board`
once, so it measures one batch at a time; a batch may go to any member of
the farm (they are all of one board class, checked by `agree`).  A member is
the worker at the address the scheduler assigned it: an answer is that
worker's whatever member it names, and only the workers started for this farm
(`admitted`) are members.  An answer that is not what was asked for, or a
measured time faster than the board could possibly run the task, is that
member's failure and quarantines it at once.  A worker
that dies with a batch in flight has it re-sent by Dask's scheduler; a
member whose launcher cannot be brought back answers with an error, and the
batch goes to the others.  After QUARANTINE_AFTER failures in a row a member
is left out for a backoff that grows each time (BACKOFF_S), then tried again.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from acltuner.board.model import Board
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import Measurement
from acltuner.engine.measure_options import MeasureOptions
from acltuner.farm import worker
from acltuner.farm.members import FarmError
from acltuner.measure.runner import Result, result_of

RESOURCE = "board"
QUARANTINE_AFTER = 2
BACKOFF_S = (5.0, 15.0, 60.0, 300.0)
# The members up are asked of the scheduler at most this often (a round trip
# each); a death is still noticed, as the worker's new address.
MEMBERS_EVERY_S = 1.0
# A farm with no member up for this long (every worker gone) cannot go on.
NONE_UP_S = 120.0
# Sending a batch that every member fails, again and again, is a farm that
# cannot measure: give up after this many attempts in a row.
MAX_ATTEMPTS = 12
# A physical bound on a board's speed, never reached: the most float32 flops
# any core does per clock (two 512-bit FMA units, AVX-512 or SVE), at a clock
# above any core's for a board file that gives none, with an algorithm that
# does this many times fewer flops than the direct convolution (Winograd's
# F(6x6, 3x3) about 5x).
PEAK_FLOPS_PER_CLOCK = 64
UNKNOWN_CLOCK_MHZ = 6000
FAST_ALGORITHM_GAIN = 8


def fastest_ms(board: Board, flops: int) -> float:
    """The least time `flops` of a convolution can take on `board`: a measured
    time below it is invented."""
    peak = sum(len(c.cpus) * (c.max_freq_mhz or UNKNOWN_CLOCK_MHZ) * 1e6 * PEAK_FLOPS_PER_CLOCK
               for c in board.clusters)
    return 1e3 * flops / (peak * FAST_ALGORITHM_GAIN)


@dataclass
class MemberHealth:
    failures: int = 0            # in a row
    quarantines: int = 0
    until: float = 0.0           # left out until this time.monotonic()
    last_error: str = ""


@dataclass
class FarmStats:
    """What the progress shows and the summary reports."""
    measured: Counter = field(default_factory=Counter)  # per member
    busy_s: Counter = field(default_factory=Counter)    # measuring, per member
    failures: Counter = field(default_factory=Counter)  # error answers per member
    rebooted: Counter = field(default_factory=Counter)
    lost: Counter = field(default_factory=Counter)      # worker processes gone
    resent: int = 0                                     # batches sent again
    start: float = field(default_factory=time.monotonic)

    def per_minute(self) -> float:
        return 60.0 * sum(self.measured.values()) / max(time.monotonic() - self.start, 1e-9)


class Farm:
    """The members of one Dask cluster: their agreed hello, and measuring on them.
    admitted: the addresses of the workers started for this farm, asked
    afresh each time (an embedded cluster's); None: every worker of the
    cluster (a standing farm, whose scheduler admits workers: TLS)."""

    def __init__(self, client, board: Board, on_progress=None, backoff_s=BACKOFF_S,
                 admitted=None):
        self.client = client
        self.board = board
        self.admitted = admitted
        self.on_progress = on_progress or (lambda farm: None)
        self.backoff_s = tuple(backoff_s)
        self.health: dict[str, MemberHealth] = {}
        self.stats = FarmStats()
        self._lock = threading.Lock()
        self._addresses: dict[str, str] = {}  # member name -> its worker's address
        self._homed: Counter = Counter()      # tasks kept on each member
        self._members_at = -MEMBERS_EVERY_S
        self._stopped = threading.Event()
        self.hellos: dict[str, dict] = {}

    # -- membership -------------------------------------------------------
    def members(self, fresh: bool = False) -> dict[str, str]:
        """The members up (as of MEMBERS_EVERY_S ago at most, now if fresh), by
        name; a member whose worker went away or came back at a new address
        counts as lost once."""
        with self._lock:
            if not fresh and time.monotonic() - self._members_at < MEMBERS_EVERY_S:
                return dict(self._addresses)
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        ours = self.admitted() if self.admitted else set(workers)
        now = {str(w["name"]): address for address, w in workers.items() if address in ours}
        with self._lock:
            self._members_at = time.monotonic()
            for name, address in self._addresses.items():
                if now.get(name) != address:
                    self.stats.lost[name] += 1
            self._addresses = dict(now)
            for name in now:
                self.health.setdefault(name, MemberHealth())
        return now

    def wait_for(self, count: int, timeout_s: float) -> None:
        try:
            self.client.wait_for_workers(count, timeout=timeout_s)
        except TimeoutError:
            up = sorted(self.members(fresh=True))
            raise FarmError(f"only {len(up)} of {count} farm members started within "
                            f"{timeout_s:g}s: {', '.join(up) or 'none'}") from None

    def say_hello(self, realtime: bool) -> dict[str, dict]:
        """Every member's hello, each from its own worker, its launcher asking
        for real-time priority if `realtime`."""
        futures = {name: self.client.submit(worker.hello, realtime, workers=[address],
                                            pure=False, resources={RESOURCE: 1})
                   for name, address in self.members(fresh=True).items()}
        hellos = {name: f.result() for name, f in futures.items()}
        broken = [f"{name}: {h['error']}" for name, h in hellos.items() if "error" in h]
        broken += [f"{name}: its worker answered as member {h.get('member')!r}"
                   for name, h in hellos.items() if "error" not in h and h.get("member") != name]
        if broken:
            raise FarmError("farm member " + "; ".join(broken))
        self.hellos = hellos
        return hellos

    # -- measuring --------------------------------------------------------
    def _allowed(self) -> dict[str, str]:
        """The members not left out, by name, waiting while all are (and
        NONE_UP_S at most while none is up)."""
        up = self.members()
        gone_since = None
        while True:
            now = time.monotonic()
            with self._lock:
                ok = {n: a for n, a in up.items() if self.health[n].until <= now}
                wait = min((self.health[n].until for n in up), default=now + 1.0) - now
            if ok:
                return ok
            gone_since = None if up else gone_since or now
            if gone_since is not None and now - gone_since > NONE_UP_S:
                raise FarmError(f"no farm member has been up for {NONE_UP_S:g}s")
            time.sleep(max(wait, 0.1))
            up = self.members(fresh=True)

    def call(self, fn, *args, prefer: str | None = None, check=None) -> dict:
        """fn(*args) on some member (not one left out), on `prefer` while it
        is up and in (the member that holds the task: a launcher loading
        another task computes its reference output again); an error answer, a
        lost worker, or an answer that check(answer) finds wrong (a line, None
        if right; the member is quarantined at once) sends it again, to
        whoever is free."""
        last = ""
        for _ in range(MAX_ATTEMPTS):
            if self._stopped.is_set():
                raise FarmError("the farm tune was stopped")
            allowed = self._allowed()
            # Loosely: should the preferred worker go away, Dask sends it elsewhere.
            chosen = [allowed[prefer]] if prefer in allowed else list(allowed.values())
            future = self.client.submit(fn, *args, workers=chosen, pure=False,
                                        allow_other_workers=prefer in allowed,
                                        resources={RESOURCE: 1})
            member, wrong = None, None
            try:
                answer = future.result()
                member, wrong = self._answered_by(future, answer)
            except Exception as e:  # the worker died too often (KilledWorker) or the like
                answer = {"error": " ".join(f"{type(e).__name__}: {e}".split())}
            finally:
                future.release()
            if wrong is None and "error" not in answer and check is not None:
                wrong = check(answer)
            if wrong is None and "error" not in answer:
                assert member is not None  # _answered_by trusts only a member's answer
                self._succeeded(member, answer)
                return answer
            error = wrong or answer["error"]
            last = f"{member or 'a member'}: {error}"
            self._failed(member, error, quarantine=wrong is not None)
        raise FarmError(f"{MAX_ATTEMPTS} attempts in a row failed; the last, {last}")

    def _answered_by(self, future, answer) -> tuple[str | None, str | None]:
        """The member whose worker ran `future` (by the address the scheduler
        has it at, not by what the answer says) and why its answer is not to
        be trusted (None: it is)."""
        addresses = set(self.client.who_has([future]).get(future.key, ()))
        names = [name for name, address in self.members().items() if address in addresses] or \
            [name for name, address in self.members(fresh=True).items() if address in addresses]
        if not names:
            where = ", ".join(sorted(addresses)) or "an unknown address"
            return None, f"the worker at {where} is not a member of this farm"
        named = answer.get("member") if isinstance(answer, dict) else None
        if named != names[0]:
            return names[0], f"its worker answered as member {named!r}"
        return names[0], None

    def stop(self) -> None:
        """No batch is sent from now on (Ctrl-C, or another task failed):
        the tasks in flight end with their batch that is out."""
        self._stopped.set()

    def home(self, current: str | None = None) -> str:
        """A member for a task to stay on: `current` while it is up and in,
        else the one that fewest tasks stay on."""
        allowed = self._allowed()
        with self._lock:
            if current in allowed:
                return current
            if current is not None:
                self._homed[current] -= 1
            chosen = min(allowed, key=lambda n: (self._homed[n], n))
            self._homed[chosen] += 1
            return chosen

    def leave_home(self, member: str | None) -> None:
        if member is not None:
            with self._lock:
                self._homed[member] -= 1

    def _succeeded(self, member: str, answer: dict) -> None:
        with self._lock:
            self.health[member].failures = 0
            if answer.get("rebooted"):
                self.stats.rebooted[member] += 1
            self.stats.measured[member] += len(answer.get("measurements", ()))
            self.stats.busy_s[member] += answer.get("busy_s", 0.0)
        self.on_progress(self)

    def _failed(self, member: str | None, error: str, quarantine: bool = False) -> None:
        with self._lock:
            self.stats.resent += 1
            if member is None:
                return
            h = self.health.setdefault(member, MemberHealth())
            self.stats.failures[member] += 1
            h.failures += 1
            h.last_error = error
            if quarantine or h.failures >= QUARANTINE_AFTER:
                h.until = time.monotonic() + self.backoff_s[min(h.quarantines,
                                                                len(self.backoff_s) - 1)]
                h.quarantines += 1
                h.failures = 0

    def summary(self) -> list[str]:
        """One line per member that had trouble."""
        self.members(fresh=True)
        lines = []
        for name in sorted(set(self.stats.lost) | set(self.stats.failures)
                           | set(self.stats.rebooted)):
            parts = []
            if self.stats.lost[name]:
                parts.append(f"lost {self.stats.lost[name]} time(s) (its worker went away; "
                             f"Dask sent the batch it held again)")
            if self.stats.failures[name]:
                h = self.health[name]
                parts.append(f"failed {self.stats.failures[name]} batch(es), quarantined "
                             f"{h.quarantines} time(s); last: {h.last_error}")
            if self.stats.rebooted[name]:
                parts.append(f"rebooted {self.stats.rebooted[name]} time(s), checked again")
            lines.append(f"farm member {name}: " + "; ".join(parts))
        return lines


class FarmLauncher:
    """What the tuner asks of a launcher, answered by the farm: the members'
    agreed hello, and check() with one round trip per convolution shape."""

    def __init__(self, farm: Farm, hello: dict):
        self.farm = farm
        self.hello_info = hello
        # The priority the members measure at: "fifo" if all got real-time,
        # else the first refusal (Launcher.scheduling and its reason).
        refused = [(n, h) for n, h in sorted(farm.hellos.items()) if h["scheduling"] != "fifo"]
        self.scheduling = refused[0][1]["scheduling"] if refused else "fifo"
        self.scheduling_reason = (f"member {refused[0][0]}: {refused[0][1]['scheduling_reason']}"
                                  if refused else None)
        self._supported: dict[ConvShape, dict] = {}
        self._lock = threading.Lock()

    @property
    def largest_cache_bytes(self) -> int:
        return int(self.hello_info.get("largest_cache_bytes", 0))

    def check(self, shape: ConvShape, algorithm: str, ukernel: str | None) -> str | None:
        with self._lock:
            if shape not in self._supported:
                ukernels = [uk["name"] for uk in self.hello_info["ukernels"]]
                pairs = [(a["name"], uk) for a in self.hello_info["algorithms"]
                         for uk in (ukernels if a["uses_ukernel"] else [None])]
                answer = self.farm.call(worker.supported, shape.to_dict(), pairs,
                                        check=lambda answer: _untrue_reasons(len(pairs), answer))
                self._supported[shape] = dict(zip(pairs, answer["reasons"]))
        return self._supported[shape].get((algorithm, ukernel), "not offered by this engine")


def _untrue_reasons(count: int, answer: dict) -> str | None:
    """Why a member's supported answer cannot be taken (not `count` reasons,
    each a line or None), or None if it can."""
    reasons = answer.get("reasons")
    if not isinstance(reasons, list) or len(reasons) != count or \
            not all(r is None or isinstance(r, str) for r in reasons):
        return f"its answer is not {count} reasons"
    return None


class FarmRunner:
    """A Runner whose batches go to the farm: each task of a farm tune has its own."""

    def __init__(self, farm: Farm, options: MeasureOptions):
        self.farm = farm
        self.options = options
        self.default_ms: float | None = None
        self._task: tuple[ConvShape, int] | None = None
        self.home: str | None = None  # the member this task stays on (Farm.home)

    def load(self, shape: ConvShape, seed: int = 0) -> None:
        self._task = (shape, seed)
        self.default_ms = None

    def release(self) -> None:
        """The task is done: its member may take another."""
        self.farm.leave_home(self.home)
        self.home = None

    def measure(self, configs: list[ExecConfig]) -> list[tuple[Result, Measurement]]:
        if not configs:  # e.g. nothing of a batch to take again: no round trip
            return []
        if self._task is None:
            raise FarmError("FarmRunner.measure before load: no task to measure")
        shape, seed = self._task
        self.home = self.farm.home(self.home)
        answer = self.farm.call(worker.measure, shape.to_dict(), seed,
                                [c.to_dict() for c in configs], self.options.to_dict(),
                                self.default_ms, prefer=self.home,
                                check=lambda answer: self._untrue(shape, len(configs), answer))
        if self.default_ms is None:
            self.default_ms = answer["default_ms"]
        measurements = [Measurement(**m) for m in answer["measurements"]]
        return [(result_of(c, m), m) for c, m in zip(configs, measurements)]

    def _untrue(self, shape: ConvShape, count: int, answer: dict) -> str | None:
        """Why a member's measure answer cannot be taken: not `count`
        measurements, or times faster than the board can run the task; None
        if it can."""
        try:
            measurements = [Measurement(**m) for m in answer["measurements"]]
            times = [float(t) for m in measurements if m.ok
                     for t in (m.median_ms, m.min_ms, *m.times_ms) if t is not None]
            float(answer["default_ms"] or 0.0)
        except (KeyError, TypeError, ValueError) as e:
            return f"its answer is not {count} measurements ({type(e).__name__}: {e})"
        if len(measurements) != count:
            return f"it answered {len(measurements)} measurements for {count} configs"
        floor = fastest_ms(self.farm.board, shape.flops)
        if times and min(times) < floor:
            return (f"measured {min(times):.3g} ms for {shape.flops:,} flops, faster than "
                    f"board {self.farm.board.name} can run them ({floor:.3g} ms at its peak): "
                    f"its measurements are dropped")
        return None

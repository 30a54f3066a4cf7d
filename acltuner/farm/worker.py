"""What runs inside a farm worker's process: the one board it serves
(Member.from_env) and that board's launcher session, opened on first use and
kept between measurements.  The worker runs one task at a time, so the
session is never shared.  Answers are plain dicts of JSON values.

A launcher that cannot be brought back is an error answer: the workstation sends the
batch to another member and counts the failure against this one; the next
call opens a fresh session.  After a launcher restart or an ssh reconnection
the board's boot_id is read again: a board that rebooted is checked again
(hello, engine, cores) before it measures on."""
from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherError
from acltuner.engine.measure_options import MeasureOptions
from acltuner.farm.members import MEMBER_ENV, Member
from acltuner.measure.launcher_runner import LauncherRunner
from acltuner.measure.launchers import open_launcher

BOOT_ID = "/proc/sys/kernel/random/boot_id"


def read_boot_id(host: str | None) -> str:
    """The board's boot id: a new one after every reboot."""
    if host is None:
        return Path(BOOT_ID).read_text().strip()
    from acltuner.remote import ssh
    return ssh.run(host, f"cat {BOOT_ID}").stdout.strip()


class MemberSession:
    """The launcher of this worker's board, and the task it holds."""

    def __init__(self, member: Member, realtime: bool):
        self.member, self.realtime = member, realtime
        self.client = open_launcher(member.launcher_board(), member.host, realtime)
        self.boot_id = read_boot_id(member.host)
        self.runner = LauncherRunner(self.client)
        self.loaded: tuple[ConvShape, int] | None = None
        self.rebooted = 0
        self._restarts = self._restart_count()

    def _restart_count(self) -> int:
        return self.client.restarts + getattr(self.client, "reconnects", 0)

    def recheck(self) -> None:
        """After a restart or reconnection: the same boot, or a fresh, checked session."""
        if self._restart_count() == self._restarts:
            return
        self._restarts = self._restart_count()
        if read_boot_id(self.member.host) != self.boot_id:
            self.close()
            fresh = MemberSession(self.member, self.realtime)
            self.__dict__.update(fresh.__dict__, rebooted=self.rebooted + 1)

    def close(self) -> None:
        self.client.close()


_session: MemberSession | None = None
# Whether the launcher asks for real-time priority (tuner.yaml's
# measure.realtime), as the tune's hello said.
_realtime = False


def _current() -> MemberSession:
    global _session
    if _session is None:
        _session = MemberSession(Member.from_env(), _realtime)
    return _session


def _dropping(fn):
    """A failure comes back as {"member", "error"} (one line) rather than
    raised, so the workstation knows whose it was; the session is closed, so
    that the next call opens a new one."""
    def call(*args):
        global _session
        try:
            return fn(*args)
        except Exception as e:  # the workstation decides: retry elsewhere, quarantine
            if _session is not None:
                _session.close()
                _session = None
            # A user's error (a board, a launcher, ssh) is its one line; anything else a bug.
            text = str(e) if isinstance(e, (ValueError, OSError, LauncherError)) else \
                f"{type(e).__name__}: {e}"
            return {"member": json.loads(os.environ.get(MEMBER_ENV, "{}")).get("name"),
                    "error": " ".join(text.split())}
    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


def ping() -> dict:
    """Nothing but the round trip (bench farm's overhead)."""
    return {"member": json.loads(os.environ[MEMBER_ENV])["name"]}


@_dropping
def hello(realtime: bool) -> dict:
    """Who this member is: its board's class, its engine, its boot and the
    priority it measures at (real-time if `realtime` and allowed)."""
    global _realtime, _session
    if _session is not None and _session.realtime != realtime:
        _session.close()
        _session = None
    _realtime = realtime
    s = _current()
    return {"member": s.member.name, "where": s.member.where, "board": s.member.board.name,
            "board_fingerprint": s.member.board.fingerprint,
            "engine": native.hello_engine_id(s.client.hello_info),
            "hello": s.client.hello_info, "boot_id": s.boot_id,
            "scheduling": s.client.scheduling, "scheduling_reason": s.client.scheduling_reason}


@_dropping
def supported(shape: dict, pairs: list) -> dict:
    """check() of each (algorithm, micro-kernel) pair on `shape`: None where it runs."""
    s = _current()
    conv = ConvShape.from_dict(shape)
    return {"member": s.member.name, "reasons": [s.client.check(conv, a, uk) for a, uk in pairs]}


@_dropping
def measure(shape: dict, seed: int, configs: list, options: dict,
            default_ms: float | None) -> dict:
    """Measures configs of the task (shape, seed), loading it if this
    launcher holds another; default_ms scales the hang timeout (LauncherRunner)."""
    start = time.perf_counter()
    s = _current()
    task = (ConvShape.from_dict(shape), seed)
    if s.loaded != task:
        s.loaded = None
        s.runner.load(*task)
        s.loaded = task
    s.runner.options = MeasureOptions(**options)
    s.runner.default_ms = default_ms
    pairs = s.runner.measure([ExecConfig.from_dict(c) for c in configs])
    rebooted = s.rebooted
    s.recheck()
    return {"member": s.member.name, "default_ms": s.runner.default_ms,
            "rebooted": s.rebooted > rebooted, "busy_s": time.perf_counter() - start,
            "measurements": [dataclasses.asdict(m) for _, m in pairs]}

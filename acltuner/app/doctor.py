"""Whether a machine is fit to measure a board: the checks of `acltuner board
doctor`, which `tune` runs first.

A board that throttles, scales its clock on demand, or shares the measured
cores with another busy process records wrong winners without any error, and
a board file of another SoC pins shares to the wrong core types.  Each check
reads what the kernel exposes under ROOT (proc/cpuinfo, proc/PID/stat,
sys/devices/system/cpu, sys/class/thermal): "/" on the machine itself, a copy
fetched from a board over ssh (snapshot_over_ssh), or a recorded fixture.
Each finding is one line with its fix.
"""
from __future__ import annotations

import os
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from acltuner.board.cpulist import format_cpulist
from acltuner.board.detect import core_type_of, parse_cpuinfo, read_int, read_text
from acltuner.board.features import FEATURES, features_of
from acltuner.board.model import Board, Cluster

GOOD_GOVERNORS = ("performance", "userspace")
# Within this much of a trip point a board is about to throttle.
THERMAL_MARGIN_C = 5.0
# A clock this far under the board file's is a clock the measurement did not run at.
CLOCK_TOLERANCE = 0.03
# Another process using this share of a measured core competes with the measurement.
BUSY_SHARE = 0.2
SAMPLE_S = 0.5


@dataclass(frozen=True)
class Finding:
    check: str      # governor, clock, thermal, busy, cores, features
    ok: bool
    message: str
    fix: str = ""

    def line(self) -> str:
        text = f"{'ok  ' if self.ok else 'FIX '} {self.check:8s} {self.message}"
        return f"{text}; fix: {self.fix}" if self.fix else text


def diagnose(board: Board, root: str | Path = "/", sample_s: float = SAMPLE_S,
             ignore_pids: frozenset[int] = frozenset()) -> list[Finding]:
    """Every check of `board` against the machine seen under `root`.  Busy
    processes are sampled over sample_s seconds (0: from the recorded samples
    proc/stat-before and proc/stat-after, as snapshot_over_ssh writes them)."""
    root = Path(root)
    return [*check_cores(board, root), *check_features(board, root),
            *check_governor(board, root), *check_clock(board, root),
            *check_thermal(root), *check_busy(board, root, sample_s, ignore_pids)]


def problems(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if not f.ok]


def doctor(board: Board, host: str | None, root: str | None = None) -> list[Finding]:
    """What `board doctor` finds on `host` over ssh, in the recorded machine
    under `root`, or on this machine (busy CPUs sampled, this process left out)."""
    if host:
        with snapshot_over_ssh(host) as folder:
            return diagnose(board, folder, sample_s=0)
    return diagnose(board, root or "/", sample_s=0 if root else SAMPLE_S,
                    ignore_pids=frozenset({os.getpid()}))


def doctor_for_tune(board: Board, host: str | None) -> list[Finding]:
    """The problems a tune of `board` should warn about: the board's over ssh,
    or this machine's (a board emulated through its launcher_wrapper, e.g.
    qemu, has none of its own core types or clocks to check)."""
    findings = doctor(board, host)
    if board.launcher_wrapper:
        findings = [f for f in findings if f.check not in ("cores", "features", "clock")]
    return problems(findings)


def _cpufreq(root: Path, cpu: int, name: str) -> str | None:
    return read_text(root / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq" / name)


def _measured(board: Board) -> list[int]:
    return sorted(cpu for c in board.clusters for cpu in c.cpus)


def check_cores(board: Board, root: Path) -> list[Finding]:
    """The host's core type (MIDR implementer and part, or x86 model name) on
    every core of the board file."""
    try:
        processors, _ = parse_cpuinfo((root / "proc" / "cpuinfo").read_text())
    except OSError as e:
        return [Finding("cores", False, f"cannot read {root / 'proc' / 'cpuinfo'}: {e.strerror}",
                        "run on the board itself, or give --host")]
    findings = []
    for cluster in board.clusters:
        for cpu in cluster.cpus:
            info = processors.get(cpu)
            if info is None:
                findings.append(Finding(
                    "cores", False, f"cpu{cpu} (cluster {cluster.name}, {cluster.core_type}) is "
                    f"not online here",
                    f"echo 1 | sudo tee /sys/devices/system/cpu/cpu{cpu}/online, "
                    f"or use this machine's own board file (acltuner board detect)"))
                continue
            found = core_type_of(info)
            if found != cluster.core_type:
                part = f" (MIDR part {info['CPU part']})" if "CPU part" in info else ""
                findings.append(Finding(
                    "cores", False, f"cpu{cpu} is {found}{part} but board {board.name} says "
                    f"{cluster.core_type} (cluster {cluster.name})",
                    "use the board file of this machine: acltuner board detect -o BOARD.yaml"))
    if not findings:
        findings.append(Finding("cores", True, f"cpu{format_cpulist(_measured(board))}: the core "
                                f"types of board {board.name}"))
    return findings


def check_features(board: Board, root: Path) -> list[Finding]:
    """Per cluster, the board file's Arm features against each core's Features
    line: one the file lists and a core lacks makes its kernels die of SIGILL;
    one a core has and the file leaves out keeps its faster kernels untried."""
    processors, _ = parse_cpuinfo(read_text(root / "proc" / "cpuinfo") or "")
    findings = []
    for cluster in board.clusters:
        found = {cpu: features_of(processors[cpu]) for cpu in cluster.cpus if cpu in processors}
        findings += _cluster_features(board, cluster, found)
    return findings


def _cluster_features(board: Board, cluster: Cluster,
                      found: dict[int, tuple[str, ...] | None]) -> list[Finding]:
    name = f"cluster {cluster.name} (cpu{format_cpulist(cluster.cpus)})"
    known = [f for f in found.values() if f is not None]
    if cluster.features is None:
        return [Finding("features", True, f"{name}: board {board.name} lists no features (a "
                        f"file older than the field); this machine has: {_listed(known[0])}")
                ] if known else []
    fix = "use the board file of this machine: acltuner board detect -o BOARD.yaml"
    findings = []
    for cpu, have in found.items():
        if have is None:
            findings.append(Finding("features", False, f"cpu{cpu} prints no Arm Features line "
                                    f"but board {board.name} lists features", fix))
        elif have != cluster.features:
            lacks = [f for f in cluster.features if f not in have]
            extra = [f for f in have if f not in cluster.features]
            why = [f"lacks {' '.join(lacks)}, so its kernels would die of SIGILL"] if lacks else []
            why += [f"also has {' '.join(extra)}, whose kernels go untried"] if extra else []
            findings.append(Finding("features", False, f"cpu{cpu} has {_listed(have)} but board "
                                    f"{board.name} says {_listed(cluster.features)} (cluster "
                                    f"{cluster.name}): {'; '.join(why)}", fix))
    return findings or ([Finding("features", True, f"{name}: {_listed(cluster.features)}")]
                        if found else [])


def _listed(features: tuple[str, ...]) -> str:
    return " ".join(features) if features else "none of " + ", ".join(FEATURES)


def check_governor(board: Board, root: Path) -> list[Finding]:
    by_governor: dict[str, list[int]] = {}
    for cpu in _measured(board):
        by_governor.setdefault(_cpufreq(root, cpu, "scaling_governor") or "", []).append(cpu)
    findings = []
    for governor, cpus in sorted(by_governor.items()):
        where = f"cpu{format_cpulist(cpus)}"
        if not governor:
            findings.append(Finding("governor", True, f"{where}: no cpufreq (the clock is not "
                                    f"scaled by this kernel)"))
        elif governor in GOOD_GOVERNORS:
            findings.append(Finding("governor", True, f"{where}: {governor}"))
        else:
            findings.append(Finding(
                "governor", False, f"{where}: {governor} scales the clock with the load, so "
                f"short measurements run at a lower clock than long ones",
                "echo performance | sudo tee /sys/devices/system/cpu/cpufreq/policy*/"
                "scaling_governor"))
    return findings


def check_clock(board: Board, root: Path) -> list[Finding]:
    """Per cluster: the kernel's top clock against the board file's, a cap
    below it, and the clock the cores run at now."""
    findings = []
    for cluster in board.clusters:
        cpu = cluster.cpus[0]
        top = read_int_khz(_cpufreq(root, cpu, "cpuinfo_max_freq"))
        if top is not None:
            findings.append(_clock_finding(board, cluster, root, top))
    return findings


def _clock_finding(board: Board, cluster: Cluster, root: Path, top: int) -> Finding:
    cpu = cluster.cpus[0]
    name = f"cluster {cluster.name} (cpu{format_cpulist(cluster.cpus)})"
    want = cluster.max_freq_mhz
    cap = read_int_khz(_cpufreq(root, cpu, "scaling_max_freq")) or top
    now = read_int_khz(_cpufreq(root, cpu, "scaling_cur_freq"))
    if want and abs(top - want) > CLOCK_TOLERANCE * want:
        return Finding("clock", False, f"{name}: the kernel's top clock is {top} MHz, board "
                       f"{board.name} says {want} MHz", "use the board file of this machine: "
                       "acltuner board detect -o BOARD.yaml")
    if cap < top * (1 - CLOCK_TOLERANCE):
        return Finding("clock", False, f"{name}: capped at {cap} MHz of {top} MHz "
                       f"(scaling_max_freq)", f"echo {top * 1000} | sudo tee "
                       f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_max_freq")
    if now is not None and now < cap * (1 - CLOCK_TOLERANCE):
        return Finding("clock", False, f"{name}: runs at {now} MHz of {cap} MHz now "
                       f"(throttled, or a governor that scales)", "set the performance governor "
                       "and let the board cool; check the thermal line")
    return Finding("clock", True, f"{name}: {now or cap} MHz of {top} MHz")


def read_int_khz(text: str | None) -> int | None:
    """A cpufreq file's kHz as MHz."""
    try:
        return round(int(text) / 1000) if text else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Zone:
    name: str
    kind: str
    temp_c: float
    trip_c: float | None  # the lowest passive or hot trip (else critical)


def thermal_zones(root: Path) -> list[Zone]:
    zones = []
    base = root / "sys" / "class" / "thermal"
    for folder in sorted(base.glob("thermal_zone*")):
        temp = read_int(folder / "temp")
        if temp is None:
            continue
        trips: dict[str, list[float]] = {}
        for point in folder.glob("trip_point_*_temp"):
            kind = read_text(folder / point.name.replace("_temp", "_type")) or ""
            value = read_int(point)
            if value is not None and value > 0:
                trips.setdefault(kind, []).append(value / 1000)
        soft = trips.get("passive", []) + trips.get("hot", [])
        trip = min(soft or trips.get("critical", []), default=None)
        zones.append(Zone(folder.name, read_text(folder / "type") or "?", temp / 1000, trip))
    return zones


def check_thermal(root: Path) -> list[Finding]:
    zones = thermal_zones(root)
    if not zones:
        return [Finding("thermal", True, "no thermal zones (none exposed by this kernel)")]
    return [_zone_finding(z) for z in zones]


def _zone_finding(z: Zone) -> Finding:
    name = f"{z.name} ({z.kind}) {z.temp_c:.1f} C"
    if z.trip_c is None:
        return Finding("thermal", True, f"{name}, no trip point")
    if z.temp_c >= z.trip_c:
        return Finding("thermal", False, f"{name}, past its trip point {z.trip_c:.1f} C: the "
                       f"cores are throttled", "cool the board (heatsink, fan) and wait before "
                       "tuning")
    if z.temp_c >= z.trip_c - THERMAL_MARGIN_C:
        return Finding("thermal", False, f"{name}, within {THERMAL_MARGIN_C:g} C of its trip "
                       f"point {z.trip_c:.1f} C: a long tune will throttle", "cool the board "
                       "(heatsink, fan) before tuning")
    return Finding("thermal", True, f"{name}, trip point {z.trip_c:.1f} C")


def _cpu_times(text: str) -> dict[int, tuple[str, int, int]]:
    """pid -> (name, CPU it last ran on, utime + stime in ticks), from
    /proc/PID/stat lines (the name may hold spaces and parentheses)."""
    out = {}
    for line in text.splitlines():
        head, sep, rest = line.rpartition(")")
        pid, _, name = head.partition(" (")
        fields = rest.split()
        if not sep or not pid.strip().isdigit() or len(fields) < 37:
            continue
        # After the name: state is field 3, utime 14, stime 15, processor 39.
        out[int(pid)] = (name, int(fields[36]), int(fields[11]) + int(fields[12]))
    return out


def _stat_lines(root: Path) -> str:
    lines = []
    for stat in (root / "proc").glob("[0-9]*/stat"):
        text = read_text(stat)
        if text:
            lines.append(text)
    return "\n".join(lines)


def check_busy(board: Board, root: Path, sample_s: float,
               ignore_pids: frozenset[int] = frozenset()) -> list[Finding]:
    """Other processes that used at least BUSY_SHARE of a core over the
    sample and last ran on a measured core."""
    before: str | None
    after: str | None
    if sample_s > 0:
        before = _stat_lines(root)
        time.sleep(sample_s)
        after = _stat_lines(root)
        seconds = sample_s
    else:
        before = read_text(root / "proc" / "stat-before")
        after = read_text(root / "proc" / "stat-after")
        seconds = SAMPLE_S
        if before is None or after is None:
            return [Finding("busy", True, "not checked: the recording has no process samples")]
    ticks = 100  # USER_HZ, 100 on every Linux architecture acltuner runs on
    old, new = _cpu_times(before), _cpu_times(after)
    measured = set(_measured(board))
    elsewhere = "a core the board does not use" if not _others(root, measured) else \
        f"cpu{format_cpulist(_others(root, measured))}"
    busy = []
    for pid, (name, cpu, total) in new.items():
        share = (total - old.get(pid, (name, cpu, total))[2]) / ticks / seconds
        if pid not in ignore_pids and cpu in measured and share >= BUSY_SHARE:
            busy.append(Finding(
                "busy", False, f"{name} (pid {pid}) used {share:.2f} cores, last on "
                f"cpu{cpu}", f"stop it, or move it to {elsewhere}: sudo taskset -a -p -c "
                f"CPUS {pid}"))
    return busy or [Finding("busy", True, f"no other process busy on cpu"
                                          f"{format_cpulist(sorted(measured))}")]


def _others(root: Path, measured: set[int]) -> list[int]:
    """The online cores the board file leaves out."""
    processors, _ = parse_cpuinfo(read_text(root / "proc" / "cpuinfo") or "")
    return sorted(set(processors) - measured)


# What snapshot_over_ssh fetches: every file diagnose reads, as "==> PATH"
# followed by its text, then two samples of the processes SAMPLE_S apart.
_REMOTE_SCRIPT = f"""
for f in /proc/cpuinfo /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor \\
  /sys/devices/system/cpu/cpu[0-9]*/cpufreq/cpuinfo_max_freq \\
  /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_max_freq \\
  /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq \\
  /sys/class/thermal/thermal_zone*/type /sys/class/thermal/thermal_zone*/temp \\
  /sys/class/thermal/thermal_zone*/trip_point_*; do
  [ -r "$f" ] && printf '==> %s\\n' "$f" && cat "$f"
done
printf '==> /proc/stat-before\\n'; cat /proc/[0-9]*/stat 2>/dev/null
sleep {SAMPLE_S}
printf '==> /proc/stat-after\\n'; cat /proc/[0-9]*/stat 2>/dev/null
"""


def snapshot_over_ssh(host: str) -> tempfile.TemporaryDirectory:
    """The files diagnose reads, fetched from `host` into a temporary ROOT
    (diagnose it with sample_s=0)."""
    from acltuner.remote import ssh
    result = ssh.run(host, "sh -c " + shlex.quote(_REMOTE_SCRIPT))
    folder = tempfile.TemporaryDirectory(prefix="acltuner-doctor-")
    path: str | None = None
    lines: list[str] = []

    def flush():
        if path:
            target = Path(folder.name) / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(lines) + "\n")

    for line in result.stdout.splitlines():
        if line.startswith("==> /"):
            flush()
            path, lines = line[4:], []
        else:
            lines.append(line)
    flush()
    return folder

"""Describes the board a Linux kernel exposes under ROOT: ROOT/proc/cpuinfo and
ROOT/sys/devices/system/cpu.  ROOT is "/" on the machine itself, or a copy of
those files recorded on a board (tests/fixtures/boards/*).

Cores are grouped by what makes them run alike: core type, max frequency and
the kernel's cpu_capacity.  Topology files are deliberately not used to split
groups: on x86 `cluster_id` is the L2 domain (two identical vCPUs get ids 0 and
1), and on RK3588 the kernel's package ids split the four identical Cortex-A76
into 4-5 and 6-7, while ArmNN's rule counts cores per core type (4 threads)."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from acltuner.board.cores import arm_core_type, compiler_flags
from acltuner.board.cpulist import parse_cpulist
from acltuner.board.features import features_of
from acltuner.board.model import Board, BoardError, Cluster, speed_order


def detect(root: str | Path = "/") -> Board:
    root = Path(root)
    cpuinfo = root / "proc" / "cpuinfo"
    try:
        processors, machine = parse_cpuinfo(cpuinfo.read_text())
    except OSError as e:
        raise BoardError(f"{cpuinfo}: cannot read: {e.strerror}") from None
    if not processors:
        raise BoardError(f"{cpuinfo}: no 'processor' entries")
    isa = _isa(processors[min(processors)], cpuinfo)
    sysfs = root / "sys" / "devices" / "system" / "cpu"
    online = read_text(sysfs / "online")
    # `online` leaves out hot-unplugged cores; cpuinfo lists only online ones as well.
    cpus = parse_cpulist(online) if online else sorted(processors)

    groups: dict[tuple, list[int]] = {}
    for cpu in cpus:
        info = processors.get(cpu, {})
        key = (core_type_of(info), _max_freq_mhz(sysfs, cpu, info),
               read_int(sysfs / f"cpu{cpu}" / "cpu_capacity"))
        groups.setdefault(key, []).append(cpu)
    # A cluster's cores are one core type, so its first core's Features line is theirs.
    clusters = speed_order([Cluster("", core_type, tuple(group), freq, capacity,
                                    features_of(processors.get(group[0], {})))
                            for (core_type, freq, capacity), group in groups.items()])
    clusters = [replace(c, name=n) for c, n in zip(clusters, _cluster_names(len(clusters)))]

    where = "this machine" if root == Path("/") else str(root)
    return Board(name="host" if root == Path("/") else root.resolve().name, isa=isa,
                 clusters=tuple(clusters),
                 compiler_flags=compiler_flags(isa, [c.core_type for c in clusters]),
                 description=f"detected on {where}" + (f": {machine}" if machine else ""))


def parse_cpuinfo(text: str) -> tuple[dict[int, dict[str, str]], str]:
    """Per-processor fields by cpu id, and the machine's name when the kernel
    prints one (Raspberry Pi's "Model", older Arm kernels' "Hardware")."""
    processors: dict[int, dict[str, str]] = {}
    extra: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", text):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if fields.get("processor", "").isdigit():
            processors[int(fields["processor"])] = fields
        else:
            extra.update(fields)
    return processors, extra.get("Model") or extra.get("Hardware", "")


def _isa(info: dict[str, str], cpuinfo: Path) -> str:
    if "CPU implementer" in info:
        # An arm64 kernel always prints "CPU architecture: 8", even on Armv9 cores.
        if info.get("CPU architecture") == "8":
            return "aarch64"
        raise BoardError(f"{cpuinfo}: a 32-bit Arm kernel (CPU architecture: "
                         f"{info.get('CPU architecture')}): boards need a 64-bit OS")
    if "vendor_id" in info:
        return "x86_64"
    raise BoardError(f"{cpuinfo}: neither an Arm ('CPU implementer') nor an x86 "
                     f"('vendor_id') processor")


def core_type_of(info: dict[str, str]) -> str:
    try:
        return arm_core_type(int(info["CPU implementer"], 16), int(info["CPU part"], 16))
    except (KeyError, ValueError):
        pass
    if info.get("model name"):
        return _slug(info["model name"])
    return "unknown"


def _slug(model_name: str) -> str:
    """"Intel(R) Xeon(R) Processor" -> "intel-xeon-processor"; the clock, when
    the name carries one ("@ 2.60GHz"), is max_freq_mhz's business."""
    name = re.sub(r"\((r|tm)\)", "", model_name.lower()).split("@")[0]
    return "-".join(re.findall(r"[a-z0-9.]+", name))


def _max_freq_mhz(sysfs: Path, cpu: int, info: dict[str, str]) -> int:
    khz = read_int(sysfs / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq")
    if khz:
        return round(khz / 1000)
    # No cpufreq (a VM): x86's cpuinfo still gives the nominal clock; Arm's gives nothing.
    try:
        return round(float(info["cpu MHz"]))
    except (KeyError, ValueError):
        return 0


def _cluster_names(n: int) -> list[str]:
    if n == 1:
        return ["cpus"]
    mids = ["mid"] if n == 3 else [f"mid{i}" for i in range(1, n - 1)]
    return ["little", *mids, "big"]


def read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text else None
    except ValueError:
        return None

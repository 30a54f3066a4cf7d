"""Linux cpu lists such as "0-3,6": the format of sysfs's `online` file, and the
way cpus are printed back to people."""
from __future__ import annotations

from collections.abc import Iterable


def parse_cpulist(text: str) -> list[int]:
    """The cpu ids in a list like "0-3,6" (sorted, without repeats)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def format_cpulist(cpus: Iterable[int]) -> str:
    """The shortest list like "0-3,6" for these cpu ids."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in runs)

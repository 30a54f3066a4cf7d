"""Arm core types: the names /proc/cpuinfo's MIDR fields map to, and the GCC
flags for a board's mix of cores.

Core types are spelled as GCC's -mcpu values, so a core type is its own -mcpu
flag; only combinations need a table."""
from __future__ import annotations

from collections.abc import Sequence

ARM_IMPLEMENTER = 0x41

# "CPU part" for implementer 0x41 (Arm Ltd).  Limited to the cores that the
# cross compiler the project uses (GCC 12) accepts as -mcpu values; any other
# part gets a neutral name and portable flags (see compiler_flags).
ARM_PARTS = {
    0xD04: "cortex-a35",
    0xD03: "cortex-a53",
    0xD05: "cortex-a55",
    0xD07: "cortex-a57",
    0xD08: "cortex-a72",
    0xD09: "cortex-a73",
    0xD0A: "cortex-a75",
    0xD0B: "cortex-a76",
    0xD0C: "neoverse-n1",
    0xD0D: "cortex-a77",
    0xD40: "neoverse-v1",
    0xD41: "cortex-a78",
    0xD44: "cortex-x1",
    0xD46: "cortex-a510",
    0xD47: "cortex-a710",
    0xD48: "cortex-x2",
    0xD49: "neoverse-n2",
    0xD4B: "cortex-a78c",
}

# The big.LITTLE pairs GCC can tune for at once: -mcpu=BIG.LITTLE.
GCC_BIG_LITTLE = {
    ("cortex-a57", "cortex-a53"),
    ("cortex-a72", "cortex-a53"),
    ("cortex-a73", "cortex-a35"),
    ("cortex-a73", "cortex-a53"),
    ("cortex-a75", "cortex-a55"),
    ("cortex-a76", "cortex-a55"),
}

# What every AArch64 core runs, for cores GCC has no name for.
PORTABLE_AARCH64 = ["-march=armv8-a"]


def arm_core_type(implementer: int, part: int) -> str:
    """The core type of a MIDR implementer/part pair, e.g. 0x41/0xd03 -> cortex-a53."""
    if implementer == ARM_IMPLEMENTER and part in ARM_PARTS:
        return ARM_PARTS[part]
    return f"cpu-0x{implementer:02x}-0x{part:03x}"


def compiler_flags(isa: str, core_types: Sequence[str]) -> list[str]:
    """Cross-compiler flags for a board whose clusters, LITTLE to big, have these core types.

    x86_64 boards are this workstation: its own build already uses -march=native.
    A mix GCC has no combined tuning for gets the LITTLE core's -mcpu (in the
    SoCs we know, the ISA every core runs) tuned for the big core."""
    if isa != "aarch64":
        return []
    types = list(dict.fromkeys(core_types))
    known = set(ARM_PARTS.values())
    if not all(t in known for t in types):
        return list(PORTABLE_AARCH64)
    little, big = types[0], types[-1]
    if little == big:
        return [f"-mcpu={big}"]
    if len(types) == 2 and (big, little) in GCC_BIG_LITTLE:
        return [f"-mcpu={big}.{little}"]
    return [f"-mcpu={little}", f"-mtune={big}"]

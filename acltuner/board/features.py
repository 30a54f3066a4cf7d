"""The Arm CPU features that decide which int8 and fp16 kernels a core runs:
asimddp (SDOT/UDOT, Armv8.2 dotprod), asimdhp (fp16 arithmetic) and i8mm
(SMMLA/UMMLA).  A kernel built for a feature the core lacks dies of SIGILL, so
a board file lists them per cluster and `board doctor` checks them.

Names are the kernel's, as the Features line of /proc/cpuinfo spells them."""
from __future__ import annotations

from collections.abc import Iterable

FEATURES = ("asimddp", "asimdhp", "i8mm")


def canonical(names: Iterable[str]) -> tuple[str, ...]:
    """The tracked features among `names`, in FEATURES order, so that two
    listings of the same features compare equal."""
    present = set(names)
    return tuple(f for f in FEATURES if f in present)


def features_of(info: dict[str, str]) -> tuple[str, ...] | None:
    """The tracked features of one /proc/cpuinfo processor entry; None for a
    processor that prints no Arm Features line (x86 prints `flags`)."""
    if "Features" not in info:
        return None
    return canonical(info["Features"].split())

"""The engine a program is compiled for: this process's library, or the one
behind a launcher (a board's).  Lowering asks it whether a convolution config
runs and which GEMM micro-kernels it has, so a program built here for a board
uses the board's kernels."""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from acltuner.engine import native
from acltuner.engine.config import ConvShape
from acltuner.engine.launcher import LauncherClient


@dataclass(frozen=True)
class Target:
    engine: str  # native.engine_id(): version and fingerprint
    isa: str
    ukernels: tuple[dict, ...]  # as in the launcher's hello: name, isa, style, mr, nr, ...
    check: Callable[[ConvShape, str, str | None], str | None]  # None, or why it cannot run


def local_target() -> Target:
    return Target(native.local_engine_id(), native.isa(),
                  tuple(dict(uk.__dict__) for uk in native.ukernels()), native.check)


def launcher_target(client: LauncherClient) -> Target:
    """The launcher's engine; each distinct check crosses to it once."""
    hello = client.hello_info
    return Target(native.hello_engine_id(hello), hello["isa"], tuple(hello["ukernels"]),
                  functools.lru_cache(maxsize=None)(client.check))

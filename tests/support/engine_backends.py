"""The engines the numerics tests run against: the host library in-process, and
the AArch64 build's launcher under qemu (correctness only) when
ACLTUNER_AARCH64_LAUNCHER names one."""
from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from acltuner.engine import native
from acltuner.board.registry import load_board
from acltuner.engine.build import AARCH64_TOOLCHAIN, board_build_dir, cmake_build, missing_tools
from acltuner.engine.config import ConvShape, ExecConfig

REPO = Path(__file__).resolve().parents[2]
QEMU = ["qemu-aarch64", "-cpu", "cortex-a53", "-L", "/usr/aarch64-linux-gnu"]


class HostEngine:
    name = "host"

    def algorithms(self) -> list[tuple[str, bool]]:
        return [(a, native.uses_ukernel(a)) for a in native.algorithms()]

    def ukernels(self) -> list[str]:
        return [uk.name for uk in native.ukernels()]

    def check(self, shape: ConvShape, algorithm: str, ukernel: str | None) -> str | None:
        return native.check(shape, algorithm, ukernel)

    def run(self, shape, algorithm, ukernel, x, w, b, residual, splits):
        """Outputs of one convolution for each (core_weights, workloads) split."""
        with native.Conv(shape, algorithm, ukernel, w, b) as conv:
            return [conv.run(x, weights, workloads, residual)[0].copy()
                    for weights, workloads in splits]

    def close(self) -> None:
        pass


class QemuLauncherEngine:
    name = "aarch64-qemu"

    def __init__(self, launcher: str):
        from acltuner.engine.launcher import LauncherClient
        self.client = LauncherClient(QEMU + [launcher], timeout_s=300)
        self.hello = self.client.hello_info

    def algorithms(self):
        return [(a["name"], a["uses_ukernel"]) for a in self.hello["algorithms"]]

    def ukernels(self):
        return [uk["name"] for uk in self.hello["ukernels"]]

    def check(self, shape, algorithm, ukernel):
        return self.client.check(shape, algorithm, ukernel)

    def run(self, shape, algorithm, ukernel, x, w, b, residual, splits):
        # The protocol fills a tensor it is not given from the seed: send zeros for "no bias".
        bias = b if b is not None else np.zeros(shape.oc, np.float32)
        self.client.load(shape, weight=w, bias=bias, input=x, residual=residual)
        outs = []
        for weights, workloads in splits:
            m = self.client.measure(ExecConfig(algorithm, ukernel, weights, workloads),
                                    warmup=0, min_repeat_ms=0, min_repeats=1, max_repeats=1,
                                    return_output=True)
            assert m.ok, m.error
            outs.append(m.output)
        return outs

    def close(self) -> None:
        self.client.close()


# The AArch64 build the tests share: the qemu-a53 test board's own (its build
# folder, its compiler flags), which the ssh and farm tests build anyway; one
# cross build instead of two costs CI minutes less.
QEMU_BOARD_FILE = REPO / "tests" / "fixtures" / "remote" / "qemu-a53.yaml"


def aarch64_build(targets: list[str]) -> list[Path]:
    board = load_board(str(QEMU_BOARD_FILE))
    return cmake_build(board_build_dir(board.name), targets, AARCH64_TOOLCHAIN,
                       " ".join(board.compiler_flags))


@functools.cache
def aarch64_launcher() -> str | None:
    """The AArch64 launcher to test under qemu: ACLTUNER_AARCH64_LAUNCHER, or
    aarch64_build's when the cross compiler and qemu are installed (rebuilt
    incrementally, so it is never stale)."""
    path = os.environ.get("ACLTUNER_AARCH64_LAUNCHER")
    if path:
        return path
    if missing_tools() or shutil.which(QEMU[0]) is None:
        return None
    return str(aarch64_build(["acl-launcher"])[0])


def aarch64_launcher_or_skip() -> str:
    """aarch64_launcher(), or the test skipped saying how to get one."""
    launcher = aarch64_launcher()
    if not launcher:
        pytest.skip("no AArch64 launcher: set ACLTUNER_AARCH64_LAUNCHER or install "
                    "gcc-aarch64-linux-gnu and qemu-user")
    return launcher


def splits_for(ncpu: int) -> list[tuple[tuple[int, ...], int]]:
    """Core-weight vectors and workload counts that must all give identical output:
    every core, single cores, an uneven split, and zero weights."""
    one = lambda i: tuple(1 if j == i else 0 for j in range(ncpu))  # noqa: E731
    splits = [((1,) * ncpu, 3), (one(0), 1), (one(ncpu - 1), 7)]
    if ncpu > 1:
        splits.append((tuple([3] + [1] * (ncpu - 1)), 16))
    return splits


def as_array(y) -> np.ndarray:
    return np.asarray(y, dtype=np.float32)

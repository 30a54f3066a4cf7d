"""`tune --precision`: which micro-kernels a tune may choose.

fp32, the default, offers the engine's fp32 kernels only.  fp16 adds its fp16
ones (Armv8.2-A FP16 arithmetic: operands rounded to half precision, each
GEMM K block summed in it; aclengine.h's acl_fp16_error_bound), which only
im2col and gemm1x1 take, and the launcher checks their outputs against that
bound.  They are offered where every cluster of the board lists asimdhp: the
engine's HWCAP check holds for all cores or none, and a config's placement
may use any cluster."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from acltuner.board.model import Board
from acltuner.engine.config import PRECISIONS
Entry = TypeVar("Entry", bound=Mapping)


def ukernel_precision(info: Mapping) -> str:
    """A hello's micro-kernel entry's precision; engines before the field ran fp32 only."""
    return str(info.get("precision", "fp32"))


def check_precision(precision: str, board: Board | None) -> None:
    """ValueError (one line) unless a tune at `precision` may run on `board`
    (which fp32 does not need): fp16 needs asimdhp on every cluster."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; one of {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return
    if board is None:
        raise ValueError("--precision fp16 needs the board, whose clusters list asimdhp")
    lacking = [c.name for c in board.clusters if "asimdhp" not in (c.features or ())]
    if lacking:
        raise ValueError(f"--precision fp16: board {board.name} lists no asimdhp (Armv8.2-A "
                         f"fp16 arithmetic) for cluster {', '.join(lacking)}, so no fp16 "
                         f"micro-kernel runs there; tune without --precision fp16")


def allowed_ukernels(ukernels: Mapping[str, Entry], precision: str = "fp32",
                     board: Board | None = None) -> dict[str, Entry]:
    """The kernels (name -> hello entry) a tune at `precision` may choose on
    `board` (which fp32 does not need); ValueError (one line) when fp16
    cannot be offered there."""
    check_precision(precision, board)
    fp32 = {n: u for n, u in ukernels.items() if ukernel_precision(u) == "fp32"}
    if precision == "fp32":
        return fp32
    fp16 = {n: u for n, u in ukernels.items() if ukernel_precision(u) == "fp16"}
    if not fp16:
        raise ValueError("--precision fp16: the board's engine offers no fp16 micro-kernel "
                         "(its cores' HWCAP lacks asimdhp)")
    return {**fp32, **fp16}

"""The micro-kernel of a product the native graph computes (a MatMul or Gemm
by constant weights, a batched MatMul of two activations): ArmNN's rule, or
the plan's choice among the kernels that read A in place, which the tuner
makes in the whole model (tuner/product_search.py).  A product's kernel
changes only which tiles sum each output, not the order of its K sums, so
every choice gives the same outputs."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from acltuner.armnn_default import armnn_ukernel
from acltuner.engine.config import ConvShape
from acltuner.runtime.target import Target

# A product node's config names this algorithm, with its micro-kernel.
PRODUCT_ALGORITHM = "matmul"
# The engine checks a product's kernel as that of the 1x1 convolution it is.
_AS_CONV = "gemm1x1"


def _as_conv(m: int, k: int, n: int) -> ConvShape:
    return ConvShape(n=1, h=m, w=1, c=k, oc=n, kh=1, kw=1)


def _in_place(target: Target) -> list[dict]:
    return [uk for uk in target.ukernels if uk["style"] == "hybrid"]


def matmul_ukernel(m: int, k: int, n: int, target: Target) -> str:
    """The rule's micro-kernel of an M x K x N product whose A is an
    activation: ArmNN's GEMM kernel rule (acltuner.armnn_default, as for a
    1x1 convolution) over the hybrid kernels, unless only others run it.
    Over the hybrid nets' MatMul shapes (`acltuner bench ops`, x86 AVX-512,
    2026-11-26) an interleaved pick, which packs A at every run, took 1.0-2.0x
    the hybrid pick's time (MobileViT's attention context 16x256x256x16: 0.31
    -> 0.15 ms); and the rule's small-K kernels, whose few accumulators do
    little work per call at such a K, 1.3-1.5x (MobileViT's attention scores
    16x256x16x256: 0.137 ms with 6x16-smallk, 0.092 with 8x32-hybrid; K = 4
    to 16, N = 32 to 256 alike)."""
    shape = _as_conv(m, k, n)
    ukernel = (armnn_ukernel(shape, _AS_CONV, _in_place(target), target.isa, target.check)
               or armnn_ukernel(shape, _AS_CONV, list(target.ukernels), target.isa,
                                target.check))
    if ukernel is None:
        raise ValueError(f"no GEMM micro-kernel of this engine runs a {m}x{k}x{n} product")
    return ukernel


def product_check(ukernels: Iterable[str], check: Callable[[ConvShape, str, str | None],
                                                           str | None],
                  m: int, k: int, n: int, ukernel: str | None) -> str | None:
    """None if an engine with `ukernels` (names) and `check` (Target's) runs
    the M x K x N product with `ukernel`, else why not."""
    if ukernel not in set(ukernels):
        return f"this engine has no micro-kernel {ukernel!r}"
    return check(_as_conv(m, k, n), _AS_CONV, ukernel)


def target_check(target: Target, m: int, k: int, n: int, ukernel: str | None) -> str | None:
    """product_check on `target`'s engine."""
    return product_check((uk["name"] for uk in target.ukernels), target.check, m, k, n, ukernel)


def product_candidates(m: int, k: int, n: int, target: Target) -> list[str]:
    """The kernels the tuner tries on an M x K x N product: the rule's first,
    then every other kernel of the engine's ISA that reads A in place and
    runs it (one that packs A at every run loses, matmul_ukernel)."""
    rule = matmul_ukernel(m, k, n, target)
    others = [uk["name"] for uk in _in_place(target)
              if uk["isa"] == target.isa and uk["name"] != rule
              and target_check(target, m, k, n, uk["name"]) is None]
    return [rule, *others]

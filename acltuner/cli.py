"""The `acltuner` command line."""
from __future__ import annotations

import json

import click

from acltuner import __version__
from acltuner.engine import native


class _Group(click.Group):
    """Turns the engine's and the input checks' errors into one line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (native.EngineError, ValueError, OSError) as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="acltuner")
def main() -> None:
    """Tune and run CNN convolutions for ARM big.LITTLE boards.

    acltuner measures every convolution algorithm x GEMM micro-kernel x per-core
    work split of a model's convolutions on the target and keeps the fastest.

    \b
    Examples:
      acltuner engine list        what this build of the engine can run
      acltuner bench gemm         micro-kernels against numpy's BLAS
      acltuner bench conv         algorithms on ResNet-18 / VGG-16 layers
    """


@main.group(cls=_Group)
def engine() -> None:
    """Inspect the native engine built for this machine."""


def _k_range(uk: native.UkernelInfo) -> str:
    return "any" if not uk.kmax else f"{uk.kmin}<K<={uk.kmax}"


@engine.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of lines.")
def engine_list(as_json: bool) -> None:
    """One line per convolution algorithm and GEMM micro-kernel of this build.

    Algorithms marked `gemm` run through any micro-kernel that suits the shape;
    `direct` ones have their own loop nest.  Micro-kernels are named
    MRxNR-style-isa: the tile, the packing (interleaved: A and B packed;
    hybrid: only the weights packed; smallk: hybrid for a small K) and the ISA.
    """
    algos = [(a, native.uses_ukernel(a)) for a in native.algorithms()]
    kernels = native.ukernels()
    if as_json:
        click.echo(json.dumps({
            "version": native.version(), "isa": native.isa(), "cpus": native.cpu_count(),
            "algorithms": [{"name": a, "uses_ukernel": u} for a, u in algos],
            "ukernels": [uk.__dict__ for uk in kernels]}, indent=2))
        return
    for a, u in algos:
        click.echo(f"algorithm {a:28s} {'gemm' if u else 'direct'}")
    for uk in kernels:
        click.echo(f"ukernel   {uk.name:28s} isa={uk.isa} style={uk.style} tile={uk.mr}x{uk.nr} "
                   f"K={_k_range(uk)} N%{uk.n_multiple}==0")


@main.group(cls=_Group)
def bench() -> None:
    """Benchmarks printing ratios measured side by side in one run.

    Timings on a shared machine are noisy: compare ratios, not absolute numbers.
    """


@bench.command("gemm")
@click.option("--cpu", default=0, show_default=True, help="CPU to pin the single thread to.")
@click.option("--size", default=1024, show_default=True, help="Side of the square GEMM.")
@click.option("--kernels", default="", help="Comma-separated micro-kernels (default: all).")
def bench_gemm(cpu: int, size: int, kernels: str) -> None:
    """SGEMM GFLOP/s of every micro-kernel on one core.

    The last line, `gemm_vs_blas: R`, is the best micro-kernel's GFLOP/s at
    SIZE^3 divided by numpy's single-thread GFLOP/s, both measured now.
    """
    from acltuner.bench import gemm
    gemm.run(cpu, size, [k for k in kernels.split(",") if k])


@bench.command("conv")
@click.option("--quick", is_flag=True, help="Try one micro-kernel per packing style only.")
@click.option("--layers", default="", help="Comma-separated layer names (default: all).")
def bench_conv(quick: bool, layers: str) -> None:
    """Every algorithm on the distinct ResNet-18 and VGG-16 convolution layers.

    Each cell is the median time of the algorithm with its fastest micro-kernel,
    all cores at equal weight.  The last line, `winograd4x4_vs_im2col: R`, is
    the geometric-mean speedup of Winograd F(4x4,3x3) over im2col on the layers
    where both apply.
    """
    from acltuner.bench import conv
    conv.run(quick, [n for n in layers.split(",") if n])


if __name__ == "__main__":
    main()

"""`acltuner engine`: what this build of the native engine can run."""
from __future__ import annotations

import json

import click

from acltuner.cli.group import Group
from acltuner.engine import native


@click.group(cls=Group)
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
    `int8` lines are the micro-kernels of conv_int8, the int8 convolution of a
    quantized model's layers (fastest first; MRxNRcKR: KR bytes a lane sums).
    """
    algos = [(a, native.uses_ukernel(a)) for a in native.algorithms()]
    kernels = native.ukernels()
    int8 = native.int8_ukernels()
    if as_json:
        click.echo(json.dumps({
            "version": native.version(), "fingerprint": native.fingerprint(),
            "isa": native.isa(), "cpus": native.cpu_count(),
            "algorithms": [{"name": a, "uses_ukernel": u} for a, u in algos],
            "ukernels": [uk.__dict__ for uk in kernels], "int8_ukernels": int8}, indent=2))
        return
    for a, u in algos:
        click.echo(f"algorithm {a:28s} {'gemm' if u else 'direct'}")
    for uk in kernels:
        click.echo(f"ukernel   {uk.name:28s} isa={uk.isa} style={uk.style} tile={uk.mr}x{uk.nr} "
                   f"K={_k_range(uk)} N%{uk.n_multiple}==0")
    for name in int8:
        click.echo(f"int8      {name}")

"""The engine's own C test programs (test_gemm: every micro-kernel through the
macro-kernel; test_conv: every algorithm x micro-kernel against the reference;
test_graph: every whole-model operation against naive loops; test_pool: every
share of a job on its own CPU; test_gemm_int8: every int8 micro-kernel against
int32 loops), built and run natively and, for the NEON family, under qemu;
and the micro-kernel listings of the ukernels_asm target."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from acltuner.engine.build import AARCH64_TOOLCHAIN, cmake_build, host_isa, missing_tools
from tests.support.c_suites import checks_build, run_suite
from tests.support.engine_backends import QEMU, REPO, aarch64_build, aarch64_launcher

SUITES = [("test_gemm", []), ("test_conv", ["--cases", "150"]), ("test_graph", []),
          ("test_pool", [])]
# qemu runs the NEON code some 20x slower than the host runs its own: fewer
# random cases (each still through every algorithm x micro-kernel, every op;
# test_conv's 21, three of each shape family, after its fixed cases' 45 s).
QEMU_CASES = {"test_conv": ["--cases", "21"], "test_graph": ["--cases", "60"]}
QEMU_SUITES = [(suite, QEMU_CASES.get(suite, args)) for suite, args in SUITES]


@pytest.mark.parametrize("suite,args", SUITES, ids=[s for s, _ in SUITES])
def test_host_suite(suite, args):
    (exe,) = checks_build([suite])
    run_suite([str(exe), *args])


@pytest.mark.aarch64
@pytest.mark.parametrize("suite,args", QEMU_SUITES, ids=[s for s, _ in QEMU_SUITES])
def test_aarch64_suite_under_qemu(suite, args):
    if aarch64_launcher() is None:
        pytest.skip("no AArch64 cross compiler or qemu-aarch64")
    (exe,) = aarch64_build([suite])
    run_suite(QEMU + [str(exe), *args])


# The int8 suite prints "ran NAME" or "skipped NAME" per kernel: the dispatch
# must leave out a kernel whose instructions the CPU lacks rather than crash.
def test_host_int8_suite():
    (exe,) = checks_build(["test_gemm_int8"])
    out = run_suite([str(exe)]).stdout
    flags = Path("/proc/cpuinfo").read_text()
    if host_isa() == "x86_64":
        vnni = re.search(r"^flags\s*:.*\bavx512_vnni\b", flags, re.M) is not None
        assert f"{'ran' if vnni else 'skipped'} 8x16c4-interleaved-avx512vnni" in out, out
        assert "ran 4x16c2-interleaved-avx2" in out, out


# Cortex-A53 lacks dotprod (asimddp), Cortex-A76 has it.
@pytest.mark.aarch64
@pytest.mark.parametrize("cpu, dotprod", [("cortex-a53", "skipped"), ("cortex-a76", "ran")])
def test_aarch64_int8_suite_under_qemu(cpu, dotprod):
    if aarch64_launcher() is None:
        pytest.skip("no AArch64 cross compiler or qemu-aarch64")
    (exe,) = aarch64_build(["test_gemm_int8"])
    qemu = [QEMU[0], "-cpu", cpu, *QEMU[QEMU.index("-cpu") + 2:]]
    out = run_suite(qemu + [str(exe)]).stdout
    assert f"{dotprod} 4x16c4-interleaved-neondot" in out, out
    assert "ran 4x16c1-interleaved-neon" in out, out


# Cortex-A53 lacks fp16 arithmetic (asimdhp); Cortex-A76 has it (as qemu's max
# CPU does).  test_gemm checks the fp16 kernel against float64 with its bound and
# exactly on small integers; test_conv --fp16 runs im2col and gemm1x1 on it
# (the rest of test_conv runs under the default CPU, which lacks it).
FP16_KERNEL = "8x24-interleaved-neonfp16"


@pytest.mark.aarch64
@pytest.mark.parametrize("cpu, fp16", [("cortex-a53", False), ("cortex-a76", True)])
def test_aarch64_fp16_suites_under_qemu(cpu, fp16):
    if aarch64_launcher() is None:
        pytest.skip("no AArch64 cross compiler or qemu-aarch64")
    gemm, conv = aarch64_build(["test_gemm", "test_conv"])
    qemu = [QEMU[0], "-cpu", cpu, *QEMU[QEMU.index("-cpu") + 2:]]
    out = run_suite(qemu + [str(gemm)]).stdout
    assert (f"{FP16_KERNEL} ok" in out) == fp16, out
    if fp16:
        out = run_suite(qemu + [str(conv), "--fp16", "--cases", "100"]).stdout
        assert re.search(r"^fp16 cases checked: [1-9]\d*$", out, re.M), out


# Each family's FMA on its widest vectors: proof that the listing was compiled
# with that family's flags, as the engine's objects are.
FAMILY_FMA = {"avx2": r"vfmadd\w+\s.*%ymm", "avx512": r"vfmadd\w+\s.*%zmm",
              "neon": r"fmla\s+v\d+\.4s", "neonfp16": r"fmla\s+v\d+\.8h, v\d+\.8h, v\d+\.h\["}


def _check_listings(build_dir, toolchain, arch_dir: str) -> None:
    cmake_build(build_dir, ["ukernels_asm"], toolchain)
    sources = sorted((REPO / "native" / "src" / "gemm" / arch_dir).glob("*.c"))
    assert sources
    for src in sources:
        family = src.stem.rsplit("-", 1)[1]
        listing = build_dir / "ukernels" / family
        symbol = "acl_ukr_" + src.stem.replace("-", "_")
        preprocessed = (listing / f"{src.stem}.i").read_text()
        assert f"void {symbol}(" in preprocessed and "TILE_STEP" not in preprocessed, src.name
        asm = (listing / f"{src.stem}.s").read_text()
        assert re.search(rf"^{symbol}:", asm, re.M), f"{src.name}: no {symbol} defined"
        assert re.search(FAMILY_FMA[family], asm), f"{src.name}: no {family} FMA"
        if family == "avx2":
            assert "%zmm" not in asm, f"{src.name} uses AVX-512 registers"


# Build folders of their own: a folder configured before the target existed
# would not know it.
def test_host_ukernel_listings():
    _check_listings(REPO / "build" / "listings-host", None,
                    {"x86_64": "x86", "aarch64": "aarch64"}[host_isa()])


@pytest.mark.aarch64
def test_aarch64_ukernel_listings():
    if missing_tools():
        pytest.skip("no AArch64 cross compiler")
    _check_listings(REPO / "build" / "listings-aarch64", AARCH64_TOOLCHAIN, "aarch64")

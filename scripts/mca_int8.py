"""The AArch64 int8 micro-kernels' inner loops through llvm-mca's core models:
int8 multiply-accumulates per cycle against the same model's peak.

There is no Arm board here and qemu's timings mean nothing, so this is the
figure for the cores the kernels are for.  Each kernel is cross-compiled as
the engine builds it for a board (the RK3588's -mcpu=cortex-a76.cortex-a55,
the Odroid N2+'s -mcpu=cortex-a73.cortex-a53), its K loop (the loop holding
its multiply-accumulates) is cut out of the assembly and run through the
newest llvm-mca found.  The peak is the model's own: the same
multiply-accumulate instructions, independent of each other and of any load,
through the same model.  A model is LLVM's approximation of a core, not the
core: LLVM (up to 19 at least) models the Cortex-A72 to A76 with its
Cortex-A57 model, so the A76 is modelled here by the Neoverse N1 (the same
core design) and the A73 by the A57, as the table says.

    python3 scripts/mca_int8.py     # needs aarch64-linux-gnu-gcc and llvm-mca(-N)
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = Path("native/src/gemm_int8/aarch64")
# kernel file, its multiply-accumulate mnemonic, int8 MACs per instruction
# (SDOT by element: 4 lanes x 4 products; SMLAL: 4 lanes x 1, on widened
# int16), the -mcpu the board builds it with, and the cores to model as
# (core, the LLVM model that stands for it).
CASES = [
    ("4x16c4-interleaved-neondot.c", "sdot", 16, "cortex-a76.cortex-a55+dotprod",
     [("cortex-a55", "cortex-a55"), ("cortex-a76", "neoverse-n1")]),
    ("4x16c1-interleaved-neon.c", "smlal", 4, "cortex-a73.cortex-a53",
     [("cortex-a53", "cortex-a53"), ("cortex-a73", "cortex-a57")]),
]


def _llvm_mca() -> str | None:
    """The newest llvm-mca on PATH (Debian installs llvm-mca-N beside llvm-mca)."""
    found = [(int(m.group(1)) if m.group(1) else 0, name) for name in
             ["llvm-mca", *(f"llvm-mca-{v}" for v in range(14, 30))]
             if shutil.which(name) and (m := re.match(r"llvm-mca(?:-(\d+))?$", name))]
    return max(found)[1] if found else None


def _inner_loop(asm: str, mnemonic: str) -> list[str]:
    """The loop holding the most `mnemonic`s: from a label to the branch back to it."""
    loops, label, body = [], None, []
    for line in asm.splitlines():
        if m := re.match(r"^(\.L\w+):", line):
            label, body = m.group(1), []
        elif line.startswith("\t") and not line.startswith("\t.") and label:
            body.append(line)
            if line.split()[-1] == label:
                loops.append(body)
                label = None
    return max(loops, key=lambda body: len(_macs(body, mnemonic)))


def _macs(block: list[str], mnemonic: str) -> list[str]:
    return [line for line in block if line.split()[0] in (mnemonic, mnemonic + "2")]


def _cycles(mca: str, block: list[str], cpu: str, tmp: Path) -> float:
    src = tmp / "block.s"
    src.write_text("\n".join(block) + "\n")
    out = subprocess.run([mca, "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+dotprod",
                          "-iterations=1000", str(src)], capture_output=True, text=True, check=True)
    return int(re.search(r"Total Cycles:\s+(\d+)", out.stdout).group(1)) / 1000


def main() -> int:
    mca = _llvm_mca()
    if shutil.which("aarch64-linux-gnu-gcc") is None or mca is None:
        print("mca_int8: needs aarch64-linux-gnu-gcc and llvm-mca (apt: gcc-aarch64-linux-gnu, "
              "llvm-19)", file=sys.stderr)
        return 2
    version = re.search(r"version (\S+)", subprocess.run([mca, "--version"], capture_output=True,
                                                        text=True).stdout)
    print(f"{mca}: LLVM {version.group(1) if version else '?'}")
    print(f"{'kernel':30s} {'core (model)':26s} {'cycles/iter':>11s} {'MAC/cycle':>9s} "
          f"{'peak':>6s} {'of peak':>7s}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name, mnemonic, macs, mcpu, cores in CASES:
            asm = subprocess.run(
                ["aarch64-linux-gnu-gcc", "-O3", f"-mcpu={mcpu}", "-DACL_ARCH_AARCH64",
                 "-Inative/include", "-Inative/src", "-Inative/src/gemm_int8", "-S", "-o", "-",
                 str(KERNELS / name)], cwd=ROOT, capture_output=True, text=True, check=True).stdout
            loop = _inner_loop(asm, mnemonic)
            ops = _macs(loop, mnemonic)
            for core, model in cores:
                cycles, peak_cycles = _cycles(mca, loop, model, tmp), _cycles(mca, ops, model, tmp)
                rate, peak = len(ops) * macs / cycles, len(ops) * macs / peak_cycles
                print(f"{name[:-2]:30s} {f'{core} ({model})':26s} {cycles:11.2f} {rate:9.1f} "
                      f"{peak:6.1f} {rate / peak:7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

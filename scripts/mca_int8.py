"""The AArch64 int8 micro-kernels' inner loops through llvm-mca's core models:
int8 multiply-accumulates per cycle against the same model's peak.

There is no Arm board here and qemu's timings mean nothing, so this is the
figure for the cores the kernels are for.  Each kernel is cross-compiled as
the engine builds it for a board (the RK3588's -mcpu=cortex-a76.cortex-a55,
the Odroid N2+'s -mcpu=cortex-a73.cortex-a53), its K loop (the basic block
holding its multiply-accumulates) is cut out of the assembly and run through
llvm-mca.  The peak is the model's own: the same multiply-accumulate
instructions, independent of each other and of any load, through the same
model.  A model is LLVM's approximation of a core, not the core.

    python3 scripts/mca_int8.py            # needs aarch64-linux-gnu-gcc and llvm-mca
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
# int16), the -mcpu the board builds it with, the cores to model.
CASES = [
    ("4x16c4-interleaved-neondot.c", "sdot", 16, "cortex-a76.cortex-a55+dotprod",
     ["cortex-a55", "cortex-a76"]),
    ("4x16c1-interleaved-neon.c", "smlal", 4, "cortex-a73.cortex-a53",
     ["cortex-a53", "cortex-a73"]),
]


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


def _cycles(block: list[str], cpu: str, tmp: Path) -> float:
    src = tmp / "block.s"
    src.write_text("\n".join(block) + "\n")
    out = subprocess.run(["llvm-mca", "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+dotprod",
                          "-iterations=1000", str(src)], capture_output=True, text=True, check=True)
    return int(re.search(r"Total Cycles:\s+(\d+)", out.stdout).group(1)) / 1000


def main() -> int:
    missing = [t for t in ("aarch64-linux-gnu-gcc", "llvm-mca") if shutil.which(t) is None]
    if missing:
        print(f"mca_int8: needs {', '.join(missing)} (apt: gcc-aarch64-linux-gnu, llvm)",
              file=sys.stderr)
        return 2
    print(f"{'kernel':34s} {'core':11s} {'cycles/iter':>11s} {'MAC/cycle':>9s} "
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
            for core in cores:
                cycles, peak_cycles = _cycles(loop, core, tmp), _cycles(ops, core, tmp)
                rate, peak = len(ops) * macs / cycles, len(ops) * macs / peak_cycles
                print(f"{name[:-2]:34s} {core:11s} {cycles:11.2f} {rate:9.1f} {peak:6.1f} "
                      f"{rate / peak:7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Inputs for a run from the command line: .npy files, or seeded random data."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from acltuner.runtime.program import Program, expected


def _read(path: str, name: str, program: Program) -> np.ndarray:
    dims, dtype = program.inputs[name]
    if not Path(path).is_file():
        raise ValueError(f"{path}: no such input file (for input '{name}')")
    try:
        a = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise ValueError(f"{path}: not a .npy file ({e})") from None
    if not isinstance(a, np.ndarray) or a.shape != dims or a.dtype != dtype:
        got = expected(a.shape, a.dtype) if isinstance(a, np.ndarray) else "an .npz archive"
        raise ValueError(f"{path}: input '{name}' must be {expected(dims, dtype)}, got {got}")
    return a


def read_inputs(program: Program, named: list[str], files: list[str]) -> dict[str, np.ndarray]:
    """NAME=FILE specs, then FILEs for the remaining inputs in the model's order."""
    paths: dict[str, str] = {}
    for spec in named:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            raise ValueError(f"bad --input {spec!r}: expected NAME=FILE.npy")
        if name not in program.inputs:
            raise ValueError(f"--input {spec}: the model has no input '{name}' (its inputs: "
                             f"{', '.join(program.inputs)})")
        paths[name] = path
    rest = [name for name in program.inputs if name not in paths]
    if len(files) > len(rest):
        raise ValueError(f"{len(files)} input file(s) for {len(rest)} remaining input(s) "
                         f"({', '.join(rest) or 'none'})")
    paths.update(zip(rest, files))
    if paths and len(paths) < len(program.inputs):
        missing = [n for n in program.inputs if n not in paths]
        raise ValueError(f"no file for input(s) {', '.join(missing)}")
    return {name: _read(path, name, program) for name, path in paths.items()}


def random_inputs(program: Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard normal floats (integers: 0) of every input's shape, always the same."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(dims).astype(dtype) if np.dtype(dtype).kind == "f"
            else np.zeros(dims, dtype) for name, (dims, dtype) in program.inputs.items()}

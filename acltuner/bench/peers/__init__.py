"""The engines a user could pick instead of ours, for `acltuner bench compare
--engines`: OpenVINO, ncnn and MNN, each from its own Python package (the
`acltuner[peers]` extra), each in a module of its own with the same two
functions:

    convert(model, inputs, workdir) -> artifact   # the engine's own model file(s)
    files(artifact) -> its files, to copy to a board (the artifact first)
    run(artifact, inputs, output_names, threads, repeat, warmup)
        -> (seconds per timed run, outputs in output_names' order)

(inputs: name -> an example array, its shape and type what the artifact
takes) which only worker.py calls, in a process of its own, so that an engine's
threads live and die with that process and never run beside another's.
"""
from __future__ import annotations

import importlib.util

# onnxruntime is a dependency of acltuner itself; it is timed as compare.py
# always timed it, and its outputs are what every peer's are checked against.
ONNXRUNTIME = "ort"

# pnnx is not in the `peers` extra: its wheel requires PyTorch, which its
# ONNX route does not use, so it is installed with --no-deps (scripts/setup.sh).
PNNX_VERSION = "20261020"
_EXTRA = "pip install 'acltuner[peers]'"
# Engine -> the packages it needs (import names) and how to install them.
PEERS: dict[str, tuple[tuple[str, ...], str]] = {
    "openvino": (("openvino",), _EXTRA),
    "ncnn": (("ncnn", "pnnx"), f"{_EXTRA} && pip install --no-deps pnnx=={PNNX_VERSION}"),
    "mnn": (("MNN",), _EXTRA),
}
# Engines users ask for that have no route from ONNX here: the one line says why.
UNSUPPORTED = {
    "tflite": "no ONNX-to-TFLite converter without TensorFlow (onnx2tf needs it, several "
              "hundred MB); not supported",
}
ENGINES = (ONNXRUNTIME, *PEERS, *UNSUPPORTED)


def missing(engine: str) -> str | None:
    """Why `engine` cannot run here, in one line, or None.  Only looks the
    packages up: importing them costs seconds and some start threads."""
    if engine in UNSUPPORTED:
        return f"{engine}: {UNSUPPORTED[engine]}"
    packages, install = PEERS[engine]
    absent = [p for p in packages if importlib.util.find_spec(p) is None]
    if absent:
        return f"{engine}: not installed (no {', '.join(absent)}): {install}"
    return None


def module(engine: str):
    return importlib.import_module(f"acltuner.bench.peers.{engine}")

"""What the runtime's uses of onnxruntime share: sessions (folding constants,
delegated segments, the --check reference) and sub-model building blocks."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import onnx

from acltuner.onnx.graph import OnnxGraph

if TYPE_CHECKING:
    import onnxruntime as ort

_ERRORS_ONLY = 3  # onnxruntime's severity levels: 0 verbose ... 3 error


def session(model: onnx.ModelProto | str | os.PathLike,
            threads: int = 1) -> ort.InferenceSession:
    """A CPU session for a model or a model file, logging errors only (its
    optimizer warns about every node it cannot remove), on `threads` intra-op
    threads that sleep when idle.  onnxruntime's threads otherwise spin for a
    while after each run, on the very cores where the engine's pinned workers
    wait for their shares: every native operation after a delegated one then
    ran at a fraction of its speed (19x slower on a MobileViT)."""
    # Imported on first use: a model the engine runs entirely never loads
    # onnxruntime, which costs tens of MB of resident memory.
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = _ERRORS_ONLY
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else os.fspath(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def ir_version(model: onnx.ModelProto) -> int:
    """IR >= 4: initializers need not be listed as graph inputs (older IRs require it)."""
    return max(model.ir_version, 4)


def value_info(g: OnnxGraph, name: str) -> onnx.ValueInfoProto:
    """A value info for `name` with its inferred type (if inference found one)."""
    info = onnx.ValueInfoProto(name=name)
    if name in g.types:
        info.type.tensor_type.CopyFrom(g.types[name])
    return info

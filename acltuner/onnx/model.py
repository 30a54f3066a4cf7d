"""Loading an ONNX model for the task generator: validation, static input
shapes and shape inference, with one-line errors that name the file."""
from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper, shape_inference

from acltuner.onnx import wire
from acltuner.onnx.detached import STUB, is_weight, mark_detached
from acltuner.onnx.errors import ModelError
from acltuner.onnx.fold import fold

# Domains whose operators onnx can infer shapes for; others (e.g. com.microsoft)
# make strict inference fail although onnxruntime runs them.
_STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def parse_input_shapes(specs: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """NAME=D1,D2,... strings (the --input-shape option) -> {NAME: (D1, D2, ...)}."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, eq, dims = spec.partition("=")
        name = name.strip()
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not eq or not name or not shape or min(shape) < 1:
            raise ModelError(f"bad --input-shape {spec!r}: expected NAME=D1,D2,... with positive "
                             f"integers, e.g. input=1,3,224,224")
        if name in shapes:
            raise ModelError(f"--input-shape gives input '{name}' twice")
        shapes[name] = shape
    return shapes


def _dims(value_info: onnx.ValueInfoProto) -> list[int | str] | None:
    """The declared dims: an int if static, else its symbol or '?'; None if the rank is unknown."""
    tensor = value_info.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
            for d in tensor.shape.dim]


def _show(dims: list[int | str]) -> str:
    return f"[{', '.join(str(d) for d in dims)}]"


def _model_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    # Models for IR < 4 list every initializer as an input too; those are weights.
    weights = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in weights and i.type.HasField("tensor_type")]


def _fix_input_shapes(model: onnx.ModelProto, path: Path,
                      input_shapes: Mapping[str, tuple[int, ...]]) -> None:
    inputs = _model_inputs(model.graph)
    names = [i.name for i in inputs]
    unknown = sorted(set(input_shapes) - set(names))
    if unknown:
        raise ModelError(f"{path}: --input-shape names {', '.join(repr(n) for n in unknown)}, "
                         f"not an input of the model (inputs: {', '.join(names) or 'none'})")
    missing = []
    for value_info in inputs:
        dims = _dims(value_info)
        given = input_shapes.get(value_info.name)
        if given is None:
            if dims is None or not all(isinstance(d, int) for d in dims):
                shown = "unknown shape" if dims is None else f"dynamic dims {_show(dims)}"
                missing.append((value_info.name, shown, dims))
            continue
        if dims is not None:
            if len(dims) != len(given):
                raise ModelError(f"{path}: input '{value_info.name}' has rank {len(dims)} "
                                 f"{_show(dims)}, --input-shape gives {len(given)} dims")
            for axis, (d, g) in enumerate(zip(dims, given)):
                if isinstance(d, int) and d != g:
                    raise ModelError(f"{path}: input '{value_info.name}' has {d} at dim {axis}, "
                                     f"--input-shape gives {g}")
        shape = value_info.type.tensor_type.shape
        del shape.dim[:]
        for g in given:
            shape.dim.add().dim_value = g
    if missing:
        problems = "; ".join(f"input '{name}' has {shown}" for name, shown, _ in missing)
        hints = " ".join(f"--input-shape {name}="
                         f"{','.join(str(d) for d in dims) if dims else 'D1,D2,...'}"
                         for name, _, dims in missing)
        raise ModelError(f"{path}: {problems}: pass {hints} with numbers")


def _forget_hints(graph: onnx.GraphProto) -> None:
    """value_info and the outputs' shapes are hints from the exporter, possibly
    for other input sizes, -1 for "any", or stale (another rank than the node
    computes, which onnxruntime ignores and inference refuses); inference works
    them out again, in the subgraphs of If, Loop and Scan too.  The outputs'
    element types stay."""
    del graph.value_info[:]
    for output in graph.output:
        if output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
    for node in graph.node:
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else attr.graphs:
                _forget_hints(sub)


def _infer(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    _forget_hints(model.graph)
    strict = all(n.domain in _STANDARD_DOMAINS for n in model.graph.node)
    try:
        return shape_inference.infer_shapes(model, check_type=strict, strict_mode=strict,
                                            data_prop=True)
    except shape_inference.InferenceError as e:
        raise ModelError(f"{path}: shape inference failed: {_first_line(e)}") from None


def _static_shapes(model: onnx.ModelProto, path: Path,
                   weights: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """The one shape path of tasks, tune and run: onnx's shape inference, with
    data propagation, alternating with folding the nodes that became constant
    (a Shape of a now static tensor, the arithmetic on it) until nothing more
    folds, so that sizes computed from shapes (Resize, Reshape) are static."""
    model = _infer(model, path)
    while _fold(model, path, weights):
        model = _infer(model, path)
    return model


def _fold(model: onnx.ModelProto, path: Path, weights: dict[str, np.ndarray] | None) -> int:
    try:
        return fold(model, weights)
    except Exception as e:  # onnxruntime's errors share no base class below Exception
        raise ModelError(f"{path}: cannot fold the model's constant nodes: "
                         f"{_first_line(e)}") from None


def _read(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise ModelError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    try:
        # Always protobuf: onnx.load would read a .json or .txt file as text formats.
        model = onnx.load_model(str(path), format="protobuf")
    except DecodeError as e:
        if wire.truncated(path):
            raise ModelError(f"{path}: truncated ONNX model: the file ends inside a field "
                             f"({path.stat().st_size} bytes); copy or download it again") from None
        raise ModelError(f"{path}: not an ONNX model (cannot parse it as ONNX protobuf: "
                         f"{_first_line(e)})") from None
    except onnx.checker.ValidationError as e:  # external data outside the model's folder
        raise ModelError(f"{path}: bad external data: {_first_line(e)}") from None
    # e.g. missing external data files; RuntimeError: onnx's C++ file system
    # errors (an external data location too long for a file name)
    except (OSError, ValueError, RuntimeError) as e:
        raise ModelError(f"{path}: cannot load the model: {_first_line(e)}") from None
    if not model.ir_version or not model.HasField("graph"):
        raise ModelError(f"{path}: not an ONNX model (no IR version or graph)")
    return model


def read_model(path: str | Path) -> onnx.ModelProto:
    """The model as written: parsed, not inferred nor folded (int8 tasks read
    the quantization nodes that folding turns into float weights)."""
    return _read(Path(path))


def load_model(path: str | Path,
               input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> onnx.ModelProto:
    """The model at `path` with static input shapes and every tensor's shape inferred.

    input_shapes fixes dynamic input dims (and must agree with static ones);
    every input must end up fully static."""
    path = Path(path)
    model = _read(path)
    _fix_input_shapes(model, path, input_shapes or {})
    model = _static_shapes(model, path)
    # Checked after inference, which fills in graph outputs declared without a
    # shape: the checker requires one, onnxruntime does not.
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise ModelError(f"{path}: invalid ONNX model: {_first_line(e)}") from None
    return model


def _bad_data(path: Path, t: onnx.TensorProto) -> ModelError:
    return ModelError(f"{path}: invalid ONNX model: initializer '{t.name}' does not hold the "
                      f"data its type and dims need")


def _detach(model: onnx.ModelProto, path: Path) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A parsed model without its weights' data, and the weights as arrays.
    The model is rebuilt from its serialization: protobuf frees a message's
    memory only as a whole."""
    weights: dict[str, np.ndarray] = {}
    for t in model.graph.initializer:
        if is_weight(t) and t.HasField("raw_data"):
            try:
                weights[t.name] = numpy_helper.to_array(t)
            except ValueError:
                raise _bad_data(path, t) from None
            mark_detached(t)
    return onnx.ModelProto.FromString(model.SerializeToString()), weights


def _read_detached(path: Path) -> tuple[onnx.ModelProto, dict[str, np.ndarray]] | None:
    """The model parsed without its initializers' raw data, and the weights
    read from the file one by one; None when the file needs onnx.load (not
    parseable this way, or with external data)."""
    try:
        stub, spans = wire.split_raw_data(path)
        model = onnx.ModelProto.FromString(stub)
    except (OSError, ValueError, DecodeError):
        return None
    if not model.ir_version or not model.HasField("graph") or any(
            t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer):
        return None
    weights: dict[str, np.ndarray] = {}
    for index, offset, length in spans:
        t = model.graph.initializer[index]
        if is_weight(t):
            try:
                weights[t.name] = wire.read_array(
                    path, offset, length, onnx.helper.tensor_dtype_to_np_dtype(t.data_type),
                    tuple(t.dims))
            except ValueError:
                raise _bad_data(path, t) from None
            mark_detached(t)
        else:  # small integer tensors (shapes...) stay in the model
            with open(path, "rb") as f:
                f.seek(offset)
                t.raw_data = f.read(length)
    return model, weights


def _check_detached(model: onnx.ModelProto, path: Path) -> None:
    """The checker on a detached model: from a file next to an (empty) stub of
    the weights, as it checks that external data exists."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / STUB).touch()
        stub = Path(tmp) / "model.onnx"
        stub.write_bytes(model.SerializeToString())
        try:
            onnx.checker.check_model(str(stub))
        except onnx.checker.ValidationError as e:
            raise ModelError(f"{path}: invalid ONNX model: "
                             f"{_first_line(e).replace(str(stub), str(path))}") from None


def load_model_detached(path: str | Path, input_shapes: Mapping[str, tuple[int, ...]] | None = None
                        ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """load_model for running a model: the same checks, but the floating-point
    initializers come out of the model as arrays by name (their TensorProtos
    keep name, type and dims), so that each can be freed once packed and
    inference and the checker do not copy them."""
    path = Path(path)
    model, weights = _read_detached(path) or _detach(_read(path), path)
    _fix_input_shapes(model, path, input_shapes or {})
    model = _static_shapes(model, path, weights)
    _check_detached(model, path)
    return model, weights

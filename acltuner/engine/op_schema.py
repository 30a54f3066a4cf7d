"""The engine's schema as the engine reports it (acl_describe(), or a
launcher's hello "schema"): the conv shape's fields and every whole-model
operation with its attributes (native/include/aclgraph.h, ACL_GRAPH_OPS).

Nothing here lists an operation or a field by hand: the in-process bindings
build their ctypes structures from it (to_ctypes), and a launcher's graph
requests are encoded from it (to_json), so an operation added to the C list
is callable from Python without touching this file.
"""
from __future__ import annotations

import base64
import ctypes
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from acltuner.engine.config import ConvShape


class SchemaError(ValueError):
    """Attributes that do not fit an operation's schema entry."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # int, float, bool, enum, string, ints, floats, conv_shape
    offset: int
    required: bool
    min: int
    default: float
    names: tuple[str, ...] = ()  # an enum's values, by index

    @classmethod
    def from_json(cls, d: Mapping) -> "Field":
        return cls(d["name"], d["kind"], d["offset"], d["required"], d["min"], d["default"],
                   tuple(d.get("names", ())))


@dataclass(frozen=True)
class OpSchema:
    name: str
    code: int
    min_inputs: int
    max_inputs: int  # 0: any number
    size: int  # of its attribute struct
    fields: tuple[Field, ...]

    def check(self, ninputs: int, attrs: Mapping) -> None:
        """Raises SchemaError for an unknown attribute or a wrong number of inputs."""
        known = {f.name for f in self.fields}
        unknown = sorted(set(attrs) - known)
        if unknown:
            raise SchemaError(f"{self.name}: unknown attribute(s) {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(known)) or 'none'})")
        top = self.max_inputs or float("inf")
        if not self.min_inputs <= ninputs <= top:
            wanted = (str(self.min_inputs) if self.min_inputs == self.max_inputs else
                      f"{self.min_inputs} to {self.max_inputs}" if self.max_inputs else
                      f"{self.min_inputs} or more")
            raise SchemaError(f"{self.name}: takes {wanted} input(s), got {ninputs}")


@dataclass(frozen=True)
class Schema:
    version: str
    isa: str
    conv_shape: tuple[Field, ...]
    conv_shape_size: int
    ops: dict[str, OpSchema]

    @classmethod
    def from_json(cls, doc: str | Mapping) -> "Schema":
        d = json.loads(doc) if isinstance(doc, str) else doc
        ops = {o["name"]: OpSchema(o["name"], o["code"], o["inputs"][0], o["inputs"][1],
                                   o["size"], tuple(Field.from_json(f) for f in o["fields"]))
               for o in d["ops"]}
        shape = d["conv_shape"]
        return cls(d["version"], d["isa"], tuple(Field.from_json(f) for f in shape["fields"]),
                   shape["size"], ops)

    def op(self, kind: str) -> OpSchema:
        if kind not in self.ops:
            raise SchemaError(f"unknown operation {kind!r} (this engine has: "
                              f"{', '.join(self.ops)})")
        return self.ops[kind]


def _enum_index(f: Field, value: str) -> int:
    if value not in f.names:
        raise SchemaError(f"{f.name} must be one of {', '.join(f.names)}; got {value!r}")
    return f.names.index(value)


def _floats(value) -> np.ndarray:
    return np.ascontiguousarray(value, dtype=np.float32).reshape(-1)


def floats_base64(values) -> str:
    """Floats as the launcher's requests carry them: base64 of little-endian float32."""
    return base64.b64encode(_floats(values).astype("<f4").data).decode("ascii")


def _shape_dict(value: ConvShape | Mapping) -> dict:
    return value.to_dict() if isinstance(value, ConvShape) else dict(value)


# ---- JSON, for a launcher ------------------------------------------------------------

def to_json(fields: Sequence[Field], values: Mapping) -> dict:
    """The attributes as a graph_op request carries them: enums by name, floats
    as base64 little-endian float32, absent ones left out (the launcher zeroes them)."""
    by_name = {f.name: f for f in fields}
    out: dict[str, object] = {}
    for name, value in values.items():
        f = by_name[name]
        if value is None:
            out[name] = None
        elif f.kind == "enum":
            _enum_index(f, value)
            out[name] = value
        elif f.kind == "floats":
            out[name] = floats_base64(value)
        elif f.kind == "ints":
            out[name] = [int(v) for v in value]
        elif f.kind == "conv_shape":
            out[name] = _shape_dict(value)
        else:
            out[name] = {"int": int, "float": float, "bool": bool, "string": str}[f.kind](value)
    return out


# ---- ctypes, in process --------------------------------------------------------------

_SCALARS = {"int": ctypes.c_int, "float": ctypes.c_float, "bool": ctypes.c_int,
            "enum": ctypes.c_int, "string": ctypes.c_char_p}


def ctypes_struct(name: str, fields: Sequence[Field], size: int,
                  conv_shape: type[ctypes.Structure] | None = None) -> type[ctypes.Structure]:
    """A ctypes Structure of the fields' C layout, checked against the offsets
    and size the engine reports (a mismatch would corrupt every call)."""
    members: list[tuple] = []
    for f in fields:
        if f.kind in _SCALARS:
            members.append((f.name, _SCALARS[f.kind]))
        elif f.kind == "ints":
            members += [(f.name, ctypes.POINTER(ctypes.c_int)), (f"{f.name}_count", ctypes.c_int)]
        elif f.kind == "floats":
            members += [(f.name, ctypes.POINTER(ctypes.c_float)),
                        (f"{f.name}_count", ctypes.c_size_t)]
        elif f.kind == "conv_shape" and conv_shape is not None:
            members.append((f.name, conv_shape))
        else:
            raise SchemaError(f"{name}.{f.name}: field kind {f.kind!r} is not known to acltuner")
    struct = type(name, (ctypes.Structure,), {"_fields_": members})
    layout = [(f.name, getattr(struct, f.name).offset, f.offset) for f in fields]
    if ctypes.sizeof(struct) != size or any(ours != theirs for _, ours, theirs in layout):
        raise SchemaError(f"{name}: the engine's layout ({size} bytes, offsets "
                          f"{[t for *_, t in layout]}) differs from acltuner's "
                          f"({ctypes.sizeof(struct)} bytes, {[o for _, o, _ in layout]})")
    return struct


class CtypesLayout:
    """The schema's structs as ctypes types: acl_conv_shape and every
    operation's acl_<name>_attrs."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.conv_shape = ctypes_struct("acl_conv_shape", schema.conv_shape,
                                        schema.conv_shape_size)
        self._attrs = {name: ctypes_struct(f"acl_{name}_attrs", op.fields, op.size,
                                           self.conv_shape)
                       for name, op in schema.ops.items()}

    def shape(self, shape: ConvShape | Mapping) -> ctypes.Structure:
        return self._fill(self.conv_shape, self.schema.conv_shape, _shape_dict(shape), [])

    def attrs(self, op: OpSchema, values: Mapping, keep: list) -> ctypes.Structure:
        """op's attribute struct holding `values` (absent ones zero or NULL); the
        arrays it points into are appended to `keep`, which must outlive the call."""
        return self._fill(self._attrs[op.name], op.fields, values, keep)

    def _fill(self, struct: type[ctypes.Structure], fields: Sequence[Field], values: Mapping,
              keep: list) -> ctypes.Structure:
        out = struct()
        by_name = {f.name: f for f in fields}
        for name, value in values.items():
            f = by_name[name]
            if value is None:
                continue
            if f.kind == "enum":
                setattr(out, name, _enum_index(f, value))
            elif f.kind == "string":
                setattr(out, name, str(value).encode())
            elif f.kind == "ints":
                ints = (ctypes.c_int * max(len(value), 1))(*[int(v) for v in value])
                keep.append(ints)
                setattr(out, name, ints)
                setattr(out, f"{name}_count", len(value))
            elif f.kind == "floats":
                floats = _floats(value)
                keep.append(floats)
                setattr(out, name, floats.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
                setattr(out, f"{name}_count", floats.size)
            elif f.kind == "conv_shape":
                setattr(out, name, self.shape(value))
            else:
                setattr(out, name, value)
        return out

"""Reading an ONNX file's weights without parsing them into protobuf.

onnx.load holds the file's bytes and the parsed model at once, twice the
weights.  This walks the protobuf wire format instead (ModelProto.graph ->
GraphProto.initializer -> TensorProto.raw_data), builds the model's bytes
without those raw_data fields, and reads each one from the file into an
array of its own, so that each can be freed on its own later.
"""
from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np

# Field numbers (onnx.proto) and protobuf wire types.
_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9
_MODEL_FIELDS = {1, 2, 3, 4, 5, 6, _MODEL_GRAPH, 8, 14, 20, 25, 26}
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class _RunsPast(ValueError):
    def __init__(self, number: int):
        super().__init__("field runs past its message")
        self.number = number


def _varint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):  # an IndexError would pass the loaders' checks as a traceback
            raise ValueError("varint runs past the end of the data")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf, start: int, end: int):
    """(field number, wire type, field start, value start, value end) of each field."""
    pos = start
    while pos < end:
        key, value_start = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            _, value_end = _varint(buf, value_start)
        elif wire == _LEN:
            length, value_start = _varint(buf, value_start)
            value_end = value_start + length
        elif wire in (_I64, _I32):
            value_end = value_start + (8 if wire == _I64 else 4)
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if value_end > end:
            raise _RunsPast(number)
        yield number, wire, pos, value_start, value_end
        pos = value_end


def _without(buf, start: int, end: int, number: int, wire: int, rewrite) -> tuple[bytes, list]:
    """The message buf[start:end] with each field `number` of `wire` type
    replaced by rewrite(value start, value end) -> (new value bytes, found)."""
    parts, found = [], []
    for n, w, field_start, value_start, value_end in _fields(buf, start, end):
        if n == number and w == wire:
            value, more = rewrite(value_start, value_end)
            parts.append(_encode_varint(number << 3 | wire) + _encode_varint(len(value)) + value)
            found.extend(more)
        else:
            parts.append(bytes(buf[field_start:value_end]))
    return b"".join(parts), found


def split_raw_data(path: Path) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The model file's bytes without its initializers' raw_data, and for each
    initializer that had some, (its index among the initializers, data offset
    in the file, length).  ValueError if the file is not such a message."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        index = 0

        def tensor(start: int, end: int):
            nonlocal index
            kept, found = [], []
            for n, w, field_start, value_start, value_end in _fields(buf, start, end):
                if n == _TENSOR_RAW_DATA and w == _LEN:
                    found.append((index, value_start, value_end - value_start))
                else:
                    kept.append(bytes(buf[field_start:value_end]))
            index += 1
            return b"".join(kept), found

        def graph(start: int, end: int):
            return _without(buf, start, end, _GRAPH_INITIALIZER, _LEN, tensor)

        return _without(buf, 0, len(buf), _MODEL_GRAPH, _LEN, graph)


def truncated(path: Path) -> bool:
    """Whether the file reads as the start of an ONNX model whose last field
    runs past the end of the file: a download or copy cut short."""
    with open(path, "rb") as f:
        if not f.seek(0, 2):
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                for number, *_ in _fields(buf, 0, len(buf)):
                    if number not in _MODEL_FIELDS:
                        return False
            except _RunsPast as e:
                return e.number in _MODEL_FIELDS
            except (ValueError, IndexError):  # not protobuf at all
                pass
            return False


def read_array(path: Path, offset: int, length: int, dtype: np.dtype,
               dims: tuple[int, ...]) -> np.ndarray:
    """length bytes at offset in the file, as a little-endian array of dims."""
    stored = np.dtype(dtype).newbyteorder("<")
    if length != int(np.prod(dims, dtype=np.int64)) * stored.itemsize:
        raise ValueError(f"{length} bytes of data for dims {list(dims)} of {stored.name}")
    array = np.empty(length // stored.itemsize, dtype=stored)
    with open(path, "rb") as f:
        f.seek(offset)
        if f.readinto(array.data.cast("B")) != length:
            raise ValueError("the file ends inside the tensor's data")
    return array.astype(np.dtype(dtype), copy=False).reshape(dims)

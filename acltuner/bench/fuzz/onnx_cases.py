"""Damaged ONNX models: random bytes, truncated and bit-flipped real ones,
and well-formed protobufs that say hostile things (external data outside the
model's folder, huge or negative dims, zero-size tensors, attributes of the
wrong type, cycles, duplicate names, unknown opsets)."""
from __future__ import annotations

import random

import onnx
from onnx import AttributeProto, TensorProto

from acltuner.bench.fuzz.mutate import mutate_bytes, random_bytes

EXTENSIONS = [".onnx", ".json", ".txt", ".pb", ".onnx.gz", "", ".ONNX", ".textproto", ".yaml"]
OUTSIDE = ["../outside.bin", "/etc/passwd", "../../../../../../etc/shadow", "sub/../../x.bin",
           "/proc/self/mem", "nul\x00byte", ".", "", "a" * 5000]


def _external(rng: random.Random, m: onnx.ModelProto) -> None:
    t = rng.choice(m.graph.initializer)
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for key, value in (("location", rng.choice(OUTSIDE)),
                       ("offset", str(rng.choice([0, -1, 2 ** 62]))),
                       ("length", str(rng.choice([4, 2 ** 40, -5])))):
        if rng.random() < 0.85:
            entry = t.external_data.add()
            entry.key, entry.value = key, value


def _dims(rng: random.Random, m: onnx.ModelProto) -> None:
    if rng.random() < 0.5:
        dims = rng.choice(m.graph.input).type.tensor_type.shape.dim
    else:
        dims = None
    value = rng.choice([0, -1, -7, 2 ** 31, 2 ** 40, 2 ** 62, 1])
    if dims:
        rng.choice(dims).dim_value = value
    else:
        t = rng.choice(m.graph.initializer)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = value


def _attribute(rng: random.Random, m: onnx.ModelProto) -> None:
    node = rng.choice(m.graph.node)
    if not node.attribute:
        node.attribute.add().CopyFrom(onnx.helper.make_attribute("kernel_shape", [3, 3]))
    a = rng.choice(node.attribute)
    kind = rng.choice([AttributeProto.FLOAT, AttributeProto.STRING, AttributeProto.INTS,
                       AttributeProto.GRAPH, AttributeProto.TENSOR, AttributeProto.INT])
    name = a.name
    a.Clear()
    a.name = name
    a.type = kind
    if kind == AttributeProto.INTS:
        a.ints.extend(rng.choice([[], [0, 0], [-1, -1, -1, -1], [2 ** 62] * 4, [1] * 40]))
    elif kind == AttributeProto.INT:
        a.i = rng.choice([0, -1, 2 ** 62])
    elif kind == AttributeProto.FLOAT:
        a.f = float("nan")
    elif kind == AttributeProto.STRING:
        a.s = b"\xff\xfe"


def _cycle(rng: random.Random, m: onnx.ModelProto) -> None:
    nodes = m.graph.node
    i, j = sorted(rng.randrange(len(nodes)) for _ in range(2))
    nodes[i].input[0] = nodes[j].output[0]


def _duplicate(rng: random.Random, m: onnx.ModelProto) -> None:
    nodes = m.graph.node
    a, b = rng.sample(range(len(nodes)), 2)
    if rng.random() < 0.5:
        nodes[a].output[0] = nodes[b].output[0]
    else:
        nodes[a].name = nodes[b].name
        m.graph.initializer.add().CopyFrom(m.graph.initializer[0])


def _opset(rng: random.Random, m: onnx.ModelProto) -> None:
    m.opset_import[0].version = rng.choice([1, 6, 99, 0, -3])


def _zero_size(rng: random.Random, m: onnx.ModelProto) -> None:
    t = rng.choice(m.graph.initializer)
    t.ClearField("raw_data")
    del t.float_data[:]
    t.dims[0] = 0


def _op_type(rng: random.Random, m: onnx.ModelProto) -> None:
    rng.choice(m.graph.node).op_type = rng.choice(["ConvTranspose", "Conv", "Unknown", "",
                                                   "MaxPool", "Loop"])


def _io(rng: random.Random, m: onnx.ModelProto) -> None:
    node = rng.choice(m.graph.node)
    if rng.random() < 0.5 and node.input:
        del node.input[rng.randrange(len(node.input))]
    else:
        node.input.append(rng.choice(["", "x", "missing", node.output[0]]))


STRUCTURED = [_external, _dims, _attribute, _cycle, _duplicate, _opset, _zero_size, _op_type, _io]


def onnx_case(rng: random.Random, seed: bytes) -> tuple[bytes, str]:
    """The bytes of a damaged model and the file name extension to give it."""
    roll = rng.random()
    if roll < 0.1:
        data = random_bytes(rng, rng.choice([0, 1, 16, 300, 4000]))
    elif roll < 0.45:
        data = mutate_bytes(rng, seed)
    else:
        model = onnx.load_from_string(seed)
        for _ in range(rng.choice([1, 1, 2])):
            rng.choice(STRUCTURED)(rng, model)
        data = model.SerializeToString()
        if rng.random() < 0.15:
            data = mutate_bytes(rng, data)
    return data, rng.choice(EXTENSIONS)

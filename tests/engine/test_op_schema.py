"""The engine's schema (acl_describe(), the launcher's hello): the one source
of the conv shape's fields and of every graph operation's attributes."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from acltuner.engine import native
from acltuner.engine.config import ACTIVATIONS, ConvShape
from acltuner.engine.graph import Graph, Tensor
from acltuner.engine.launcher import LauncherClient, default_launcher_path
from acltuner.engine.op_schema import Field, Schema, SchemaError, ctypes_struct, to_json


def test_conv_shape_dataclass_mirrors_the_engine_fields():
    fields = native.schema().conv_shape
    ours = dataclasses.fields(ConvShape)
    assert [f.name for f in fields] == [f.name for f in ours]
    for engine, py in zip(fields, ours):
        required = py.default is dataclasses.MISSING
        assert engine.required == required, engine.name
        if not required and engine.kind != "enum":
            assert engine.default == py.default, engine.name
    act = next(f for f in fields if f.name == "act")
    assert act.names == ACTIVATIONS
    # The engine's minimums are ConvShape's: each is accepted, one below is refused.
    for f in fields:
        if f.kind == "int":
            with pytest.raises(ValueError, match=f.name):
                ConvShape(**{**ConvShape(1, 8, 8, 4, 4, 3, 3).to_dict(), f.name: f.min - 1})


def test_every_operation_is_described_with_a_consistent_ctypes_layout():
    schema = native.schema()
    assert {"conv", "unary", "binary", "concat", "matmul"} <= set(schema.ops)
    assert sorted(op.code for op in schema.ops.values()) == list(range(len(schema.ops)))
    unary = schema.op("unary")
    assert next(f for f in unary.fields if f.name == "op").names[:len(ACTIVATIONS)] == ACTIVATIONS
    native.layout()  # builds every struct, checking each offset against the engine's


def test_a_layout_that_differs_from_the_engine_is_refused():
    wrong = [Field("a", "int", 0, False, 0, 0), Field("b", "floats", 4, False, 0, 0)]
    with pytest.raises(SchemaError, match="layout"):
        ctypes_struct("acl_bad_attrs", wrong, 24)


def test_unknown_operations_attributes_and_input_counts_are_one_line_errors():
    x, out = Tensor(0, (2, 3)), Tensor(8, (2, 3))
    with Graph(16, (1,), 1) as g:
        for kind, inputs, attrs, message in [
                ("warp", [x], {}, "unknown operation 'warp'"),
                ("unary", [x], {"op": "relu", "alpha": 1}, "unknown attribute(s) alpha"),
                ("unary", [x, x], {"op": "relu"}, "unary: takes 1 input(s), got 2"),
                ("unary", [x], {"op": "sin"}, "op must be one of none, relu")]:
            with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
                g.add(kind, inputs, out, **attrs)
        assert g.node_count == 0


def test_the_launcher_reports_the_same_schema_as_the_library():
    with LauncherClient([default_launcher_path()]) as client:
        assert Schema.from_json(client.hello_info["schema"]) == native.schema()


def test_json_attributes_follow_the_field_kinds():
    op = native.schema().op("matmul")
    encoded = to_json(op.fields, {"ukernel": "k", "k": 2, "n": 1, "b": np.ones(2),
                                  "b_transposed": 0, "bias": None})
    assert encoded == {"ukernel": "k", "k": 2, "n": 1, "b": "AACAPwAAgD8=",
                       "b_transposed": False, "bias": None}

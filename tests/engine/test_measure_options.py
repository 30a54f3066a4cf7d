"""The measure options are one list, ACL_MEASURE_OPTIONS (aclengine.h): the
tuner's MeasureOptions, the launcher's describe and PROTOCOL.md's table all
name the same options with the same defaults."""
from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest

from acltuner.engine import native
from acltuner.engine.launcher import LauncherClient, default_launcher_path
from acltuner.engine.measure_options import MeasureOptions
from tests.support.engine_backends import REPO

PYTHON_KIND = {"int": int, "bytes": int, "double": float}


def described(schema: dict) -> list[tuple[str, type, float, float]]:
    return [(o["name"], PYTHON_KIND[o["kind"]], o["default"], o["min"])
            for o in schema["measure_options"]]


@pytest.fixture(scope="module")
def launcher_schema():
    with LauncherClient([default_launcher_path()]) as client:
        return client.hello_info["schema"]


def test_measure_options_are_the_launchers(launcher_schema):
    options = described(launcher_schema)
    assert [(f.name, type(f.default), f.default) for f in fields(MeasureOptions)] == \
        [(name, kind, default) for name, kind, default, _ in options]


def test_the_library_describes_the_launchers_options(launcher_schema):
    assert described(json.loads(native.library().acl_describe())) == described(launcher_schema)


def test_protocol_md_tables_the_options(launcher_schema):
    text = (REPO / "native" / "launcher" / "PROTOCOL.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([\d.]+) \| ([\d.]+) \|$", text, re.M)
    assert [(name, kind, float(default), float(minimum)) for name, kind, default, minimum in rows] \
        == [(o["name"], o["kind"], o["default"], o["min"])
            for o in launcher_schema["measure_options"]]

"""Shared fixtures: the engines under test (host in-process, AArch64 under qemu)."""
from __future__ import annotations

import os

import pytest

from tests.support.engine_backends import HostEngine, QemuLauncherEngine, aarch64_launcher

# The suite names this machine's CPUs; an ACL_CPUS left in the user's shell
# would renumber them for the in-process engine and every launcher.  Tests
# of the mapping set it on the commands they start.
os.environ.pop("ACL_CPUS", None)

_ENGINES: dict[str, object] = {}


def engine_names() -> list[str]:
    names = ["host"]
    if aarch64_launcher():
        names.append("aarch64-qemu")
    elif os.environ.get("ACLTUNER_REQUIRE_AARCH64"):
        raise RuntimeError("ACLTUNER_REQUIRE_AARCH64 is set but no AArch64 launcher: install "
                           "gcc-aarch64-linux-gnu and qemu-user, or set ACLTUNER_AARCH64_LAUNCHER")
    return names


def get_engine(name: str):
    if name not in _ENGINES:
        _ENGINES[name] = HostEngine() if name == "host" else QemuLauncherEngine(aarch64_launcher())
    return _ENGINES[name]


def pytest_sessionfinish(session, exitstatus):
    for engine in _ENGINES.values():
        engine.close()
    _ENGINES.clear()


def pytest_collection_modifyitems(items):
    for item in items:
        if "aarch64-qemu" in item.nodeid:
            item.add_marker(pytest.mark.aarch64)

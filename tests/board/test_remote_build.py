"""Where `acltuner build` finds the engine's sources and puts a board's build:
the source tree in a checkout, else the copy a wheel installs in the package
(checked by hand with a non-editable pip install; here by pointing the lookups
at a stand-in site-packages)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acltuner.engine import build

REPO_NATIVE = Path(__file__).resolve().parents[2] / "native"


def test_checkout_builds_from_its_source_tree():
    assert build.native_sources() == REPO_NATIVE
    assert build.board_build_dir("odroid-n2plus") == REPO_NATIVE.parent / "build" / \
        "board-odroid-n2plus"


def test_installed_package_builds_from_its_copy_into_the_cache(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "acltuner"
    shutil.copytree(REPO_NATIVE, package / "native",
                    ignore=shutil.ignore_patterns("tests"))
    monkeypatch.setattr(build, "REPO_NATIVE", tmp_path / "no-checkout" / "native")
    monkeypatch.setattr(build.importlib.resources, "files", lambda name: package)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert build.native_sources() == package / "native"
    assert build.board_build_dir("rpi4") == tmp_path / "cache" / "acltuner" / "build" / \
        "board-rpi4"
    shutil.rmtree(package / "native")
    with pytest.raises(build.BuildError, match="reinstall acltuner") as e:
        build.native_sources()
    assert "\n" not in str(e.value)

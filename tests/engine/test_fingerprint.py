"""The engine fingerprint: a hash of the native sources and compile flags,
built in by CMake, that changes with a kernel source or a flag and is the
same for the library and the launcher built together."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from acltuner.cli import main
from acltuner.engine import native
from acltuner.engine.build import REPO_NATIVE
from acltuner.engine.launcher import LauncherClient, default_launcher_path


def test_library_launcher_and_engine_list_agree():
    listed = json.loads(CliRunner().invoke(main, ["engine", "list", "--json"]).output)
    assert re.fullmatch(r"[0-9a-f]{16}", listed["fingerprint"])
    assert listed["fingerprint"] == native.fingerprint()
    with LauncherClient([default_launcher_path()]) as client:
        assert client.hello_info["fingerprint"] == native.fingerprint()
    assert native.local_engine_id() == f"{native.version()}+{native.fingerprint()}"


def _fingerprint(sources, build, *flags):
    """Configures and builds only the fingerprint of `sources`; returns it."""
    subprocess.run(["cmake", "-S", sources, "-B", build, "-DACL_BUILD_TESTS=OFF", *flags],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", build, "--target", "acl_fingerprint"], check=True,
                   capture_output=True)
    text = (build / "fingerprint" / "fingerprint.txt").read_text().strip()
    header = (build / "fingerprint" / "acl_fingerprint.h").read_text()
    assert f'"{text}"' in header  # what the library is compiled with
    return text


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_kernel_edit_or_a_flag_changes_the_fingerprint(tmp_path):
    sources = tmp_path / "native"
    shutil.copytree(REPO_NATIVE, sources)
    build = tmp_path / "build"
    first = _fingerprint(sources, build)
    assert _fingerprint(sources, build) == first  # deterministic, nothing changed

    kernel = sorted((sources / "src" / "gemm").rglob("*.c"))[0]
    original = kernel.read_text()
    kernel.write_text(original + "\n/* an edit */\n")
    edited = _fingerprint(sources, build)
    assert edited != first
    kernel.write_text(original)
    assert _fingerprint(sources, build) == first

    # A board's compiler_flags reach CMake as C flags: they are part of it too.
    assert _fingerprint(sources, tmp_path / "flagged", "-DCMAKE_C_FLAGS=-mtune=generic") != first

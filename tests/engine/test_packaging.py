"""What a wheel carries: the wheel holds the `acltuner` package folder (and
configs/ and native/, which CMake installs), so every file a command reads
by default must live inside the package and be found through
importlib.resources, not beside it in the repository."""
from __future__ import annotations

import importlib.resources
import subprocess
from pathlib import Path

import acltuner
from acltuner.paths import search_tables_dir

PACKAGE = Path(acltuner.__file__).resolve().parent


def test_the_search_tables_ship_inside_the_package():
    tables = search_tables_dir()
    assert tables.resolve().is_relative_to(PACKAGE), tables
    shipped = importlib.resources.files("acltuner.bench").joinpath("data", "search_tables")
    names = sorted(p.name for p in shipped.iterdir() if p.name.endswith(".json"))
    assert names and names == sorted(p.name for p in tables.glob("*.json"))
    # A file git does not hold never reaches a wheel built from a clone.
    tracked = subprocess.run(["git", "ls-files", "--", str(tables)], cwd=PACKAGE.parent,
                             capture_output=True, text=True, check=True).stdout.split()
    assert sorted(Path(t).name for t in tracked) == names

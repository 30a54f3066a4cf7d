"""Where acltuner's data lives: the configs/ folder (boards, tuner settings)."""
from __future__ import annotations

import importlib.resources
import os
from pathlib import Path


def configs_dir() -> Path:
    """ACLTUNER_CONFIGS when set; else the repository's configs/ beside the package
    (a source checkout or an editable install, where edits take effect at once);
    else the copy a wheel installs inside the package."""
    override = os.environ.get("ACLTUNER_CONFIGS")
    if override:
        return Path(override)
    repo = Path(__file__).resolve().parents[1] / "configs"
    if repo.is_dir():
        return repo
    return Path(str(importlib.resources.files("acltuner") / "configs"))


def search_tables_dir() -> Path:
    """The exhaustive measurement tables `acltuner bench search` replays by
    default, package data (acltuner/bench/data/search_tables) so a wheel ships
    them."""
    return Path(str(importlib.resources.files("acltuner.bench") / "data" / "search_tables"))

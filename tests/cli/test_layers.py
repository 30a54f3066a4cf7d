"""Dependencies point one way: every module of acltuner imports only from
layers below its own (or from its own package).  The imports are read from
the source, those inside functions and under TYPE_CHECKING included, so an
import made lazily to dodge a cycle is still a back edge."""
from __future__ import annotations

import ast
from pathlib import Path

import acltuner

PACKAGE = Path(acltuner.__file__).parent

# Top to bottom; the packages (or top-level modules) of one layer do not
# import each other.  "acltuner" is the package's own __init__: acltuner.load
# and the version.
LAYERS = (
    ("cli",),                         # the command line parses and prints
    ("bench",),                       # `acltuner bench`'s benchmarks and fuzzer
    ("app", "report", "acltuner"),    # the commands' work, the Python API
    ("tuner", "farm"),                # search and records; measuring on a farm
    ("measure",),                     # the Runner protocol, a launcher's runner
    ("runtime",),                     # whole-model runs
    ("taskgen",),                     # tuning tasks from a model's convolutions
    ("onnx",),                        # the ONNX front end
    ("remote",),                      # boards over ssh
    ("plan", "armnn_default", "zoo"),
    ("board",),
    ("validate",),                    # file checks
    ("engine",),                      # the native engine, its launcher client
    ("atomic", "one_line", "paths"),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    """The layer's member a module belongs to: acltuner.tuner.tune -> tuner."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of an acltuner module in the file."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, target))
    return sorted((line, t) for line, t in found if t == "acltuner" or t.startswith("acltuner."))


def back_edges(package: Path) -> list[str]:
    """One line for each import that does not point down."""
    root, lines = package.parent, []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, root)
        for line, target in imports(path, root):
            here, there = unit(module), unit(target)
            if here != there and RANK.get(there, -1) <= RANK.get(here, len(LAYERS)):
                lines.append(f"{module} (line {line}) imports {target}: "
                             f"{here} is not above {there}")
    return lines


def test_every_package_has_a_layer():
    units = {unit(module_name(p, PACKAGE.parent)) for p in PACKAGE.rglob("*.py")}
    assert units <= set(RANK), f"not in LAYERS: {sorted(units - set(RANK))}"


def test_imports_point_down():
    lines = back_edges(PACKAGE)
    assert not lines, "imports against the layers:\n" + "\n".join(lines)


def test_a_back_edge_is_named(tmp_path):
    """The check itself: lazy and relative imports up, or across a layer, are found."""
    tuner = tmp_path / "acltuner" / "tuner"
    tuner.mkdir(parents=True)
    (tuner / "__init__.py").write_text("")
    (tuner / "fine.py").write_text("from acltuner.measure.runner import Result\n"
                                   "from . import space\n")
    (tuner / "wrong.py").write_text("def f():\n    from acltuner.app.tune import run_tune\n"
                                    "from ..farm import dispatch\n")
    assert back_edges(tmp_path / "acltuner") == [
        "acltuner.tuner.wrong (line 2) imports acltuner.app.tune: tuner is not above app",
        "acltuner.tuner.wrong (line 3) imports acltuner.farm: tuner is not above farm"]

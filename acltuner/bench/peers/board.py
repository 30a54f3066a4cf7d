"""`bench compare --host`: onnxruntime and the peer engines on the board, from
their aarch64 wheels in a virtualenv there, each call a process of its own
started over ssh, as ours runs in the board's launcher.

The models are converted here (the converters' files are the same on every
machine) and copied to the board beside the inputs and the few modules the
worker needs (it imports nothing else of acltuner), under
$ACLTUNER_REMOTE_DIR/peers (~/.cache/acltuner/peers by default); a file
already there with the same content is not copied again.  The outputs come
back to be judged here.
"""
from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import posixpath
import shlex
from pathlib import Path

import acltuner
from acltuner.atomic import write_atomic
from acltuner.remote import ssh
from acltuner.remote.deploy import _remote_sha256, _sha256, copy_file
from acltuner.remote.layout import DEFAULT_REMOTE_DIR, REMOTE_DIR_ENV

# The virtualenv `--board-python` names by default, relative to the home folder.
DEFAULT_PYTHON = "acltuner-peers/bin/python"
_PACKAGE = Path(acltuner.__file__).parent
# What the worker imports of acltuner, by path in the package.
_WORKER_FILES = ("__init__.py", "atomic.py", "bench/__init__.py", "bench/peers/__init__.py",
                 "bench/peers/worker.py", "bench/peers/openvino.py", "bench/peers/ncnn.py",
                 "bench/peers/mnn.py")


def setup_line(python: str) -> str:
    """How to make the virtualenv, for the one line that says it is missing:
    onnxruntime and the `peers` extra's pins (ncnn's converter stays here)."""
    pins = [r.split(";")[0].replace(" ", "") for r in importlib.metadata.requires("acltuner") or []
            if 'extra == "peers"' in r]
    venv = posixpath.dirname(posixpath.dirname(python))
    return f"python3 -m venv {venv} && {venv}/bin/pip install onnxruntime {' '.join(pins)}"


class Board:
    """Where the workers run: `python` on `host`."""

    def __init__(self, host: str, python: str = DEFAULT_PYTHON):
        self.host, self.python = host, python
        self.root = posixpath.join(os.environ.get(REMOTE_DIR_ENV) or DEFAULT_REMOTE_DIR, "peers")
        answer = ssh.run(host, f"{shlex.quote(python)} -c 'import os, onnxruntime; "
                               f"print(len(os.sched_getaffinity(0)))'")
        if answer.returncode != 0:
            raise ValueError(f"{host}: no {python} with onnxruntime ({ssh.last_line(answer.stderr)}"
                             f"); make it there: {setup_line(python)}")
        self.cpus = int(answer.stdout.split()[-1])
        for name in _WORKER_FILES:
            self.copy(_PACKAGE / name, posixpath.join("py", "acltuner", name))

    def threads(self) -> tuple[int, ...]:
        return tuple(sorted({1, self.cpus}))

    def copy(self, local: Path, relative: str) -> str:
        """`local` at root/relative on the board (unless it is there already)."""
        remote = posixpath.join(self.root, relative)
        if _remote_sha256(self.host, remote) != _sha256(local):
            copy_file(self.host, local, remote)
        return relative

    def call(self, *argv: str) -> str:
        """A command run in root on the board: its stdout, or a ValueError
        with the last line it printed on stderr."""
        line = (f"cd {shlex.quote(self.root)} && PYTHONPATH=py "
                f"{ssh.remote_shell_line([self.python, *argv])}")
        answer = ssh.run(self.host, line, timeout_s=3600)
        if answer.returncode != 0:
            raise ValueError(f"'{' '.join(argv[:3])} ...' on {self.host} failed: "
                             f"{ssh.last_line(answer.stderr)}")
        return answer.stdout

    def onnxruntime_run(self, probe: str, model: Path, threads: int, repeat: int, warmup: int,
                        shapes: dict) -> dict:
        """compare.py's onnxruntime probe on the board."""
        remote = self.copy(model, posixpath.join("models", model.name))
        return json.loads(self.call("-c", probe, remote, str(threads), str(repeat), str(warmup),
                                    json.dumps(shapes)).strip().splitlines()[-1])

    def run(self, engine: str, files: list[Path], io_path: Path, workdir: Path, threads: int,
            repeat: int, warmup: int) -> dict:
        """The worker's `run` on the board, the artifact's files and the inputs
        copied there (model/engine/, as here); its outputs come back to
        workdir/outputs.npz."""
        folder = posixpath.join(workdir.parent.name, workdir.name)
        artifact = [self.copy(f, posixpath.join(folder, f.name)) for f in files][0]
        io_remote = self.copy(io_path, posixpath.join(workdir.parent.name, io_path.name))
        remote_out = posixpath.join(folder, "outputs.npz")
        answer = json.loads(self.call("-m", "acltuner.bench.peers.worker", "run", engine,
                                      artifact, io_remote, str(threads), str(repeat),
                                      str(warmup), remote_out).strip().splitlines()[-1])
        fetched = ssh.run(self.host,
                          f"base64 {shlex.quote(posixpath.join(self.root, remote_out))}")
        if fetched.returncode != 0:
            raise ValueError(f"{self.host}: cannot read {remote_out}: "
                             f"{ssh.last_line(fetched.stderr)}")
        write_atomic(workdir / "outputs.npz", base64.b64decode(fetched.stdout))
        return answer

"""`acltuner deploy` checks the copied launcher's sha256 on the board before
using it, and quotes every remote path.  The "board" is this machine: the
remote command line runs in a local shell where ssh would run it remotely."""
from __future__ import annotations

import hashlib
import subprocess

import pytest

from acltuner.remote import deploy, ssh

# Spaces, quotes and a $: a remote path that an unquoted command would split or expand.
AWKWARD = "boards dir/it's $HOME"


def local_shell(corrupt: bool):
    def run(host, remote_line, *, stdin=None, timeout_s=120.0):
        if corrupt and stdin is not None:
            stdin = stdin[:-1]  # a copy cut short on the way
        done = subprocess.run(["sh", "-c", remote_line], input=stdin, capture_output=True,
                              timeout=timeout_s)
        return subprocess.CompletedProcess(remote_line, done.returncode,
                                           done.stdout.decode(), done.stderr.decode())
    return run


class Started(Exception):
    pass


def refuse_to_start(*args, **kwargs):
    raise Started


@pytest.fixture
def board_side(tmp_path, monkeypatch):
    launcher = tmp_path / "acl-launcher"
    launcher.write_bytes(b"\x7fELF" + bytes(range(256)) * 64)
    monkeypatch.setattr(deploy, "build_for_board", lambda board, build_dir=None: launcher)
    monkeypatch.setattr(deploy, "RemoteLauncherClient", refuse_to_start)
    monkeypatch.setenv("ACLTUNER_REMOTE_DIR", str(tmp_path / AWKWARD))
    return launcher


def test_a_copy_that_arrives_whole_is_used(board_side, monkeypatch):
    monkeypatch.setattr(ssh, "run", local_shell(corrupt=False))
    with pytest.raises(Started):  # checked, then started
        deploy.deploy(None, "board")
    remote = deploy.remote_launcher_path()
    assert AWKWARD in remote
    with open(remote, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == hashlib.sha256(
            board_side.read_bytes()).hexdigest()


def test_a_copy_altered_on_the_way_is_refused_before_use(board_side, monkeypatch):
    monkeypatch.setattr(ssh, "run", local_shell(corrupt=True))
    with pytest.raises(ssh.SshError, match=r"has sha256 [0-9a-f]{64}, not [0-9a-f]{64}: "
                                           r"run acltuner deploy again"):
        deploy.deploy(None, "board")

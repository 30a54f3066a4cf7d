"""`acltuner deploy`: puts the board's launcher on a host and checks it there.

The launcher is one statically linked file, copied over the shared ssh
connection into a folder named by the engine version, and only when the
board's copy differs from the local build."""
from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass
from pathlib import Path

from acltuner.board.model import Board
from acltuner.engine.build import build_for_board
from acltuner.remote import ssh
from acltuner.remote.launcher import RemoteLauncherClient
from acltuner.remote.layout import engine_version, remote_launcher_path


@dataclass(frozen=True)
class Deployment:
    local: Path
    remote: str
    copied: bool
    hello: dict


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _remote_sha256(host: str, path: str) -> str | None:
    answer = ssh.run(host, f"sha256sum {ssh.remote_shell_line([path])} 2>/dev/null")
    words = answer.stdout.split()
    return words[0] if answer.returncode == 0 and words else None


def copy_file(host: str, local: Path, remote: str) -> None:
    """Copies an executable through ssh's stdin: written beside the target, then
    renamed over it, so a launcher running from the old copy is never corrupted."""
    q = ssh.remote_shell_line
    tmp = f"{remote}.tmp"
    line = (f"mkdir -p {q([posixpath.dirname(remote)])} && cat > {q([tmp])} && "
            f"chmod 755 {q([tmp])} && mv -f {q([tmp])} {q([remote])}")
    answer = ssh.run(host, line, stdin=local.read_bytes(), timeout_s=600)
    if answer.returncode != 0:
        raise ssh.SshError(f"copying {local.name} to {host}:{remote} failed: "
                           f"{ssh.last_line(answer.stderr)}")


def deploy(board: Board, host: str, build_dir: str | Path | None = None,
           timeout_s: float = 120.0) -> Deployment:
    local = build_for_board(board, build_dir)
    remote = remote_launcher_path(engine_version())
    expected = _sha256(local)
    copied = _remote_sha256(host, remote) != expected
    if copied:
        copy_file(host, local, remote)
        # Checked on the board before first use: a copy cut short or altered on
        # the way (a full disk, a flaky link) never starts.
        found = _remote_sha256(host, remote)
        if found != expected:
            raise ssh.SshError(f"the launcher copied to {host}:{remote} has sha256 "
                               f"{found or 'unknown (cannot read it)'}, not {expected}: "
                               f"run acltuner deploy again")
    with RemoteLauncherClient(board, host, timeout_s=timeout_s) as client:
        hello = client.hello_info
    return Deployment(local, remote, copied, hello)

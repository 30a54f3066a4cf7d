"""The user's OpenSSH client, so that host aliases, keys, the agent and jump
hosts from ~/.ssh/config work unchanged.

Every call shares one multiplexed connection per host (ControlMaster), never
asks for a password (BatchMode) and verifies host keys as the user's config
says.  ACLTUNER_SSH_CONFIG names a config file to use instead of ~/.ssh/config
(`ssh -F`), which is how the tests point ssh at their own sshd."""
from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

SSH_CONFIG_ENV = "ACLTUNER_SSH_CONFIG"
# ssh's own exit status when it fails (connection refused or lost, host key,
# authentication), as opposed to the remote command's status.
SSH_FAILED = 255
# How long the shared connection outlives the last command using it.
CONTROL_PERSIST_S = 300


class SshError(OSError):
    """ssh could not reach the host or run the command; one line."""


def control_dir() -> Path:
    """Where the multiplexing sockets live: private to the user, and short
    (a unix socket path must fit in about 100 bytes)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        base = Path(runtime) / "acltuner-ssh"
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        base = cache / "acltuner" / "ssh"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return base


def ssh_options() -> list[str]:
    config = os.environ.get(SSH_CONFIG_ENV)
    options = ["-F", config] if config else []
    return options + ["-o", "BatchMode=yes", "-o", "ControlMaster=auto",
                      "-o", f"ControlPath={control_dir()}/%C",
                      "-o", f"ControlPersist={CONTROL_PERSIST_S}",
                      # A dead link is noticed within a minute, not at TCP's pace.
                      "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]


def remote_shell_line(argv: Sequence[str]) -> str:
    """One command line for the remote shell, every word quoted."""
    return " ".join(shlex.quote(a) for a in argv)


def ssh_command(host: str, remote_line: str) -> list[str]:
    """The local argv that runs `remote_line` (already quoted) on `host`."""
    if host.startswith("-"):
        raise ValueError(f"host '{host}' must not start with '-'")
    return ["ssh", *ssh_options(), host, "--", remote_line]


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def run(host: str, remote_line: str, *, stdin: bytes | None = None,
        timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    """Runs a command on `host` and returns its exit status and output; raises
    SshError, naming the host and ssh's last word, when ssh itself failed.

    Output goes through temporary files, not pipes: a connection master that
    ssh leaves running in the background inherits them and would hold a pipe
    open long after the command ended."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            rc = subprocess.run(ssh_command(host, remote_line), input=stdin,
                                stdin=None if stdin is not None else subprocess.DEVNULL,
                                stdout=out, stderr=err, timeout=timeout_s).returncode
        except FileNotFoundError:
            raise SshError("ssh not found: install the OpenSSH client") from None
        except subprocess.TimeoutExpired:
            raise SshError(f"{host}: no answer within {timeout_s:g}s") from None
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if rc == SSH_FAILED:
        raise unreachable(host, stderr)
    return subprocess.CompletedProcess(remote_line, rc, stdout, stderr)


def unreachable(host: str, stderr: str) -> SshError:
    return SshError(f"cannot reach {host} over ssh: {last_line(stderr)}")


def close_connection(host: str) -> None:
    """Ends the shared connection to `host`, if one is open."""
    subprocess.run(["ssh", *ssh_options(), "-O", "exit", host], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)

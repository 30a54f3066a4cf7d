"""Measuring on a board over ssh: the launcher's JSON-lines protocol runs over
the ssh channel, so LauncherClient drives it unchanged, except that a lost
connection is reconnected and the interrupted request sent again, rather than
the config being recorded as failed."""
from __future__ import annotations

import time

from acltuner.board.model import Board
from acltuner.engine.launcher import (LauncherClient, LauncherError, LineProcess,
                                      request_line, Unresponsive)
from acltuner.remote import ssh
from acltuner.remote.hello import check_hello
from acltuner.remote.layout import engine_version, remote_launcher_path

# Seconds to wait before each reconnection attempt.
RECONNECT_BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 20.0)


def remote_launcher_command(board: Board, host: str, version: str | None = None) -> list[str]:
    """The local argv that starts the board's deployed launcher on `host`,
    through the board's launcher_wrapper.  The remote shell does not exec the
    launcher, so a launcher that crashes exits with its own status rather than
    ssh's 255, which then always means the connection."""
    line = ssh.remote_shell_line([*board.wrapper(), remote_launcher_path(version)])
    return ssh.ssh_command(host, f"{line}; exit $?")


def _check_deployed(board: Board, host: str, path: str) -> None:
    """One clear line for an unreachable host or a launcher never deployed."""
    if ssh.run(host, f"test -x {ssh.remote_shell_line([path])}").returncode != 0:
        raise LauncherError(f"{host} has no {path}: run acltuner deploy --board {board.name} "
                            f"--host {host}")


class RemoteLauncherClient(LauncherClient):
    """A launcher on `host` for `board`, checked by its hello answer."""

    def __init__(self, board: Board, host: str, *, timeout_s: float = 60.0,
                 backoff_s=RECONNECT_BACKOFF_S, realtime: bool = False):
        self.board, self.host = board, host
        self.version = engine_version()
        self.reconnects = 0
        self._backoff_s = tuple(backoff_s)
        self._connected = False
        path = remote_launcher_path(self.version)
        _check_deployed(board, host, path)
        try:
            super().__init__(remote_launcher_command(board, host, self.version),
                             timeout_s=timeout_s, realtime=realtime)
        except LauncherError as e:
            raise LauncherError(f"{host}: {e}") from None
        try:
            check_hello(board, host, self.hello_info, self.version)
        except Exception:
            self.close()
            raise
        self._connected = True

    def _connection_lost(self) -> bool:
        # The launcher process here is ssh; it has been reaped by now.
        return self._process is not None and self._process.returncode == ssh.SSH_FAILED

    def _call(self, line: bytes, timeout_s: float | None = None) -> dict:
        for _ in range(len(self._backoff_s) + 1):
            try:
                return super()._call(line, timeout_s)
            except Unresponsive as e:
                if not (self._connected and self._connection_lost()):
                    raise
                self._reconnect(e)
        raise LauncherError(f"the connection to {self.host} keeps dropping during one request")

    def _reconnect(self, failure: Unresponsive) -> None:
        """A fresh connection and launcher with the current task loaded, after a
        backoff; raises LauncherError when every attempt failed."""
        last = str(failure)
        for delay in self._backoff_s:
            time.sleep(delay)
            try:
                self._process = LineProcess(self.command)
                hello = super()._call(request_line({"cmd": "hello"}))
                check_hello(self.board, self.host, hello, self.version)
                if self._load_line is not None:
                    answer = super()._call(self._load_line)
                    if not answer.get("ok"):
                        raise LauncherError(f"reloading the task failed: {answer.get('error')}")
            except Unresponsive as e:
                last = str(e)
                if not self._connection_lost():
                    raise LauncherError(f"{self.host}: {e} (after reconnecting)") from None
                continue
            except OSError as e:
                last = str(e)
                continue
            self.hello_info = hello
            self.reconnects += 1
            return
        raise LauncherError(f"lost the connection to {self.host} and {len(self._backoff_s)} "
                            f"reconnection attempts failed: {last}")

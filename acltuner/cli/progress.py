"""Progress of long work on stderr: one line redrawn in place on a terminal,
plain lines (at most one per `every_s`) when stderr is a file or a pipe, so
logs stay readable."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, stream=None, every_s: float = 5.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every_s = every_s
        self._last = 0.0
        self._width = 0

    def update(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._width = len(text)
            self.stream.flush()
        elif force or now - self._last >= self.every_s:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last = now

    def clear(self) -> None:
        """Erases the redrawn line, so that other output can take its place."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

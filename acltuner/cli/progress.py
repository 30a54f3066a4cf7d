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
        self._lines = 0  # drawn by update_lines

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

    def force_next(self) -> None:
        """The next update is written even if one was written just now."""
        self._last = 0.0

    def update_lines(self, lines: list[str]) -> None:
        """Several lines redrawn in place on a terminal (the cursor goes back
        up over the last ones); elsewhere one line of them joined by ' | '."""
        if not self.tty:
            self.update(" | ".join(lines))
            return
        self.clear()
        self.stream.write("\n".join(f"{line}\x1b[K" for line in lines))
        self._lines = len(lines)
        self._width = len(lines[-1]) if lines else 0
        self.stream.flush()

    def clear(self) -> None:
        """Erases the redrawn line(s), so that other output can take their place."""
        if self.tty and (self._width or self._lines):
            up = f"\x1b[{self._lines - 1}A" if self._lines > 1 else ""
            self.stream.write("\r" + up + "\x1b[J")
            self.stream.flush()
            self._width = self._lines = 0


BAR_WIDTH = 20


def farm_bars(stats, members: dict) -> list[str]:
    """A farm's progress: a bar per member (its share of the measurements so
    far; "down" for one not up now), then the total with its rate."""
    names = sorted(set(stats.measured) | set(members))
    total = sum(stats.measured.values())
    width = max((len(n) for n in names), default=0)
    lines = []
    for name in names:
        n = stats.measured[name]
        fill = round(BAR_WIDTH * n / total) if total else 0
        state = "" if name in members else "  down"
        lines.append(f"{name:{width}s} [{'#' * fill}{'.' * (BAR_WIDTH - fill)}] {n:6d}{state}")
    lines.append(f"{'total':{width}s}  {total} measurements, {stats.per_minute():.0f}/min")
    return lines

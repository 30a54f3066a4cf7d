"""Progress of long work on stderr: one line redrawn in place on a terminal,
plain lines (at most one per `every_s`) when stderr is a file or a pipe, so
logs stay readable."""
from __future__ import annotations

import shutil
import sys
import threading
import time


class Progress:
    """plain: lines as in a log even on a terminal (every_s=0: each update)."""

    def __init__(self, stream=None, every_s: float = 5.0, plain: bool = False):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() and not plain
        self.every_s = every_s
        self._last = 0.0
        self._width = 0
        self._lines = 0  # drawn by update_lines

    def update(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            # A line longer than the terminal would wrap, and \r redraw only its end.
            text = text[:shutil.get_terminal_size().columns - 1]
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


def duration(seconds: float) -> str:
    """42s, 2m10s, 1h05m."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Overall:
    """A tune's measurements: those the records held and those taken so far,
    of all it will take: each unit's budget (or what the records already hold
    for it, if more) until it is done, then what it took; the time since the
    start, and the time left at this run's rate.  Thread-safe (a farm's
    tasks measure side by side)."""

    def __init__(self, units: list[tuple[int, int]], clock=time.monotonic):
        self.units = units        # (budget, found in the records), per unit in order
        self.found = sum(found for _, found in units)
        self.taken = 0            # measured by this run so far
        self.took: list[int] = []  # the measurements of each unit done, in order
        self.clock = clock
        self.start = clock()
        self._lock = threading.Lock()

    def measured(self, count: int) -> None:
        with self._lock:
            self.taken += count

    def unit_done(self, measurements: int) -> None:
        with self._lock:
            self.took.append(measurements)

    @property
    def done(self) -> bool:
        """Every unit is done (those reported after them, int8 tasks, too)."""
        return len(self.took) >= len(self.units)

    def text(self) -> str:
        with self._lock:
            total = sum(self.took) + sum(max(b, f) for b, f in self.units[len(self.took):])
            count = self.found + self.taken
            elapsed = self.clock() - self.start
            eta = duration(elapsed / self.taken * max(total - count, 0)) if self.taken else "?"
            return f"measurements {count}/{total}  elapsed {duration(elapsed)}  eta {eta}"


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

"""The fuzz driver: seeds, then `cases` cases spread over the doors by one
seeded random generator, then the tally.  Each case draws its input from a
generator of its own, seeded by the run's seed and the case's index: the
seed files (a plan and records that tuning measured) differ from build to
build, and with one shared generator their lengths shifted every later
case, so that a failure seen in CI did not come back here."""
from __future__ import annotations

import hashlib
import logging
import random
import shutil
import signal
import tempfile
import time
import warnings
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import click

from acltuner.app.errors import USER_ERRORS
from acltuner.bench.fuzz.file_doors import FILE_DOORS
from acltuner.bench.fuzz.launcher_door import LauncherDoor, record_seed_lines
from acltuner.bench.fuzz.seeds import make_seeds

# Share of cases per door: the launcher answers fastest, the ONNX loader is slowest.
WEIGHTS = {"launcher": 0.45, "onnx": 0.1, "plan": 0.1, "records": 0.1, "board": 0.1, "tuner": 0.1,
           "pins": 0.05}
COUNTS = ("tracebacks", "crashes", "hangs", "partial_writes")
SHOWN = 5  # failures printed per door


class Hang(Exception):
    pass


@contextmanager
def deadline(seconds: float):
    """Raises Hang in this thread if the block runs longer than `seconds`."""
    def expire(signum, frame):
        raise Hang(f"still running after {seconds:g}s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def file_case(door: str, rng: random.Random, seeds, folder: Path,
              timeout_s: float) -> tuple[str | None, str]:
    """One damaged file through its loader: None, or the count it adds to."""
    make, load = FILE_DOORS[door]
    case_dir = folder / "case"
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir()
    data, suffix = make(rng, seeds)
    path = case_dir / f"input{suffix}"
    path.write_bytes(data)
    before = _snapshot(case_dir)
    try:
        with deadline(timeout_s):
            load(path)
        return None, "loaded"
    except Hang as e:
        return "hangs", str(e)
    except USER_ERRORS as e:
        message = str(e)
        if not message.strip() or "\n" in message:
            return "tracebacks", f"{type(e).__name__} not one line: {message[:300]!r}"
    except Exception as e:  # anything else would reach the user as a traceback
        return "tracebacks", f"{type(e).__name__}: {str(e)[:300]}"
    if _snapshot(case_dir) != before:
        return "partial_writes", f"a refused {door} file changed the folder"
    return None, ""


def case_rng(seed: int, index: int) -> random.Random:
    """Case `index`'s own generator: the same for a seed on every build."""
    return random.Random(f"{seed}/{index}")


def run(cases: int, seed: int, timeout_s: float, launcher: list[str],
        doors: list[str] | None = None, only: int | None = None) -> int:
    """Returns how many problems were counted.  `only`: run that case alone
    (its index in the run of `cases`), to replay a failure."""
    rng = random.Random(seed)
    totals: Counter[str] = Counter()
    per_door: Counter[str] = Counter()
    # Inputs that loaded: the mutations must not all be refused early.
    accepted: Counter[str] = Counter()
    shown: dict[str, list[str]] = {}
    # Expected refusals are logged or warned about by some loaders (a cut
    # records line, onnx's unknown external data keys): the tally says it all.
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="acltuner-fuzz-") as tmp, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = Path(tmp)
        seeds = make_seeds(folder)
        door = LauncherDoor(launcher, record_seed_lines(launcher, folder / "seed.plan.json"),
                            timeout_s)
        names = [n for n in WEIGHTS if doors is None or n in doors]
        weights = [WEIGHTS[n] for n in names]
        started = time.monotonic()
        try:
            for index in range(cases):
                name = rng.choices(names, weights)[0]
                if only is not None and index != only:
                    continue
                per_door[name] += 1
                if name == "launcher":
                    failures = len(door.failures)
                    counted = door.case(case_rng(seed, index))
                    detail = door.failures[-1] if len(door.failures) > failures else ""
                else:
                    counted, detail = file_case(name, case_rng(seed, index), seeds, folder,
                                                timeout_s)
                    accepted[name] += detail == "loaded"
                if counted:
                    totals[counted] += 1
                    if len(shown.setdefault(name, [])) < SHOWN:
                        shown[name].append(f"{counted} (case {index}): {detail}")
        finally:
            accepted["launcher"] = door.accepted
            door.close()
            logging.disable(logging.NOTSET)
        elapsed = time.monotonic() - started
    ran = cases if only is None else 1
    for name, lines in shown.items():
        for line in lines:
            click.echo(f"{name}: {line}")
    click.echo("doors (cases, accepted): " +
               " ".join(f"{n}={per_door[n]},{accepted[n]}" for n in names) +
               f" ({ran / max(elapsed, 1e-9):.0f} cases/s)")
    click.echo(f"fuzz: cases={ran} " + " ".join(f"{c}={totals[c]}" for c in COUNTS))
    return sum(totals.values())

"""Progress of a long job: items done, rate and time left, logged at a steady interval.

A job's log (its ``log:`` file, through :mod:`logging`) gets a line every
:data:`LOG_INTERVAL_S` seconds; once the job has run for :data:`CONSOLE_AFTER_S`, the same line
also goes to standard error every :data:`CONSOLE_INTERVAL_S` seconds, which Snakemake shows on
its console, so a long job is seen to move. Short jobs print nothing. The last line, with the
job's total rate, is logged when the work ends.

The rate is items per second since the tracker started; the time left is the items left at that
rate (the first seconds include loading a model, so early estimates run long).
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Callable, TextIO

#: Seconds between lines in the job's log.
LOG_INTERVAL_S = 30.0
#: A job that has run this long also reports on the console.
CONSOLE_AFTER_S = 60.0
#: Seconds between console lines, once they start.
CONSOLE_INTERVAL_S = 60.0


def duration(seconds: float) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"2 h 07 min"`` (a non-negative number of seconds)."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Counts finished items of one job and reports at a steady interval.

    Args:
        total: items this job has to do (those resumed from an earlier run left out).
        what: what is done, named for the reader: ``"reconstruct my_vq on my_photos"``.
        unit: the items' name in the line (``"items"``, ``"steps"``, ``"questions"``).
        logger: where the log lines go (default: ``roundtrip.progress``).
        clock: seconds, monotonic (a test passes its own).
        console: the console stream (standard error).

    ``add`` is cheap (a lock, a clock read and a comparison): call it per item, from any thread.
    """

    def __init__(self, total: int, what: str, unit: str = "items",
                 logger: logging.Logger | None = None,
                 clock: Callable[[], float] = time.monotonic, console: TextIO | None = None):
        self.total, self.what, self.unit = int(total), what, unit
        self.log = logger or logging.getLogger("roundtrip.progress")
        self.clock, self.console = clock, console
        self.done = 0
        self.start = clock()
        self._lock = threading.Lock()
        self._next_log = self.start + LOG_INTERVAL_S
        self._next_console = self.start + CONSOLE_AFTER_S

    def line(self) -> str:
        """``"reconstruct m on d: 40 of 100 items (40 %), 2.10 items/s, about 29 s left"``."""
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.done / elapsed
        share = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        left = (f", about {duration((self.total - self.done) / rate)} left"
                if rate > 0 and self.done < self.total else "")
        return (f"{self.what}: {self.done} of {self.total} {self.unit}{share}, "
                f"{rate:.2f} {self.unit}/s{left}")

    def add(self, n: int = 1) -> None:
        """Count ``n`` finished items; report if an interval has passed."""
        with self._lock:
            self.done += n
            now = self.clock()
            if now >= self._next_log:
                self.log.info("%s", self.line())
                self._next_log = now + LOG_INTERVAL_S
            if now >= self._next_console:
                print(f"[roundtrip] {self.line()}", file=self.console or sys.stderr, flush=True)
                self._next_console = now + CONSOLE_INTERVAL_S

    def finish(self) -> None:
        """Log the final count and the job's rate and time."""
        elapsed = self.clock() - self.start
        self.log.info("%s: %d of %d %s done in %s", self.what, self.done, self.total, self.unit,
                      duration(elapsed))

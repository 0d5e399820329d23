"""Progress of a long job: items done, rate and time left, logged at a steady interval.

A job's log (its ``log:`` file, through :mod:`logging`) gets a line every
:data:`LOG_INTERVAL_S` seconds; once the job has run for :data:`CONSOLE_AFTER_S`, the same line
also goes to standard error every :data:`CONSOLE_INTERVAL_S` seconds, which Snakemake shows on
its console, so a long job is seen to move. Short jobs print nothing. The last line, with the
job's total rate, is logged when the work ends (and printed, where the console heard from the
job before).

Lines are due on a fixed grid (30, 60, 90 s, ... after the tracker started) and are written by
the first item counted once a line is due. A tracker opened as the job's whole
(``with Progress(...) as job:``) also writes a due line by itself when no item comes (a
thread that wakes at each due time), so a job whose items each take longer than the interval
still reports on time. Trackers created while a job tracker is open (the sets of a batched
job, the OCR of each set) are its parts: they log their own lines, and their console lines go
out as the job's, ``<job line>; now <part line>``, one line per interval for the whole job.

The rate is items per second since the tracker started; the time left is the items left at that
rate (the first seconds include loading a model, so early estimates run long).
"""
from __future__ import annotations

import logging
import math
import sys
import threading
import time
from typing import Callable, TextIO

#: Seconds between lines in the job's log.
LOG_INTERVAL_S = 30.0
#: A job that has run this long also reports on the console.
CONSOLE_AFTER_S = 30.0
#: Seconds between console lines, once they start.
CONSOLE_INTERVAL_S = 30.0

#: The trackers open as a job's whole (``with Progress(...)``), innermost last.
_OPEN: list["Progress"] = []


def duration(seconds: float) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"2 h 07 min"`` (a non-negative number of seconds)."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _next_due(due: float, now: float, interval: float) -> float:
    """The first time on the grid ``due + k * interval`` after ``now`` (``now`` itself for a
    non-positive interval: a line at every count)."""
    if interval <= 0:
        return now
    return due + (math.floor((now - due) / interval) + 1) * interval


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
    Used as a context manager, the tracker is the job's whole: trackers created inside the
    ``with`` block report to the console through it, a thread writes its due lines when no item
    comes (only with the default clock), and leaving the block without an exception finishes it.
    """

    def __init__(self, total: int, what: str, unit: str = "items",
                 logger: logging.Logger | None = None,
                 clock: Callable[[], float] = time.monotonic, console: TextIO | None = None):
        self.total, self.what, self.unit = int(total), what, unit
        self.log = logger or logging.getLogger("roundtrip.progress")
        self.clock, self.console = clock, console
        self.done = 0
        self.start = clock()
        #: the job tracker this one is a part of (the innermost one open), or None
        self.job: Progress | None = _OPEN[-1] if _OPEN else None
        self._lock = threading.Lock()
        self._next_log = self.start + LOG_INTERVAL_S
        self._next_console = self.start + CONSOLE_AFTER_S
        self._printed = False
        self._part: Progress | None = None  # the part that counted last (a job tracker's)
        self._stop: threading.Event | None = None

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
                self._next_log = _next_due(self._next_log, now, LOG_INTERVAL_S)
        if self.job is not None:
            self.job._heard_from(self)
        else:
            self.poll()

    def poll(self) -> bool:
        """Write the console line if one is due (the job's line and, for a job tracker, the
        line of the part that counted last); returns whether it wrote one."""
        with self._lock:
            now = self.clock()
            if now < self._next_console:
                return False
            part = self._part
            text = self.line() + (f"; now {part.line()}" if part is not None else "")
            print(f"[roundtrip] {text}", file=self.console or sys.stderr, flush=True)
            self._printed = True
            self._next_console = _next_due(self._next_console, now, CONSOLE_INTERVAL_S)
            return True

    def _heard_from(self, part: Progress) -> None:
        """A part counted an item: it is the one the console line names; report if due."""
        self._part = part
        if self.job is not None:
            self.job._heard_from(part)
        else:
            self.poll()

    def finish(self) -> None:
        """Log the final count and the job's rate and time; print it too where the console
        heard from this tracker before. A part stops being named in its job's lines."""
        elapsed = self.clock() - self.start
        text = (f"{self.what}: {self.done} of {self.total} {self.unit} done in "
                f"{duration(elapsed)}")
        self.log.info("%s", text)
        if self._printed:
            print(f"[roundtrip] {text}", file=self.console or sys.stderr, flush=True)
        job = self.job
        while job is not None:
            if job._part is self:
                job._part = None
            job = job.job

    # -- the job's whole -----------------------------------------------------------------------
    def __enter__(self) -> Progress:
        _OPEN.append(self)
        if self.clock is time.monotonic and self.job is None:
            self._stop = threading.Event()
            threading.Thread(target=self._beat, name=f"progress: {self.what}",
                             daemon=True).start()
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if self._stop is not None:
            self._stop.set()
        _OPEN.remove(self)
        if kind is None:
            self.finish()
        return False

    def _beat(self) -> None:
        """Write each due line at its time when no item came (the job tracker's thread)."""
        while not self._stop.wait(max(0.05, self._next_console - self.clock())):
            self.poll()

"""A wall-clock limit on a block of Python code: a model's forward pass that must not wait forever.

The limit is a ``SIGALRM`` timer (:func:`signal.setitimer`), so it stops the block between two
Python-level operations: a forward pass is many operator calls, each of which returns to Python,
and :func:`time.sleep` is interrupted too; a single native call that never returns is not. Signals
reach only the main thread: elsewhere (and on a platform without ``SIGALRM``) the block runs
without a limit, which :func:`time_limit` says in its log. A native call that does return late
(one long GPU kernel or synchronisation) is interrupted only once it returns. GPU kernels are
queued asynchronously: work still queued when the block ends is not counted.
"""
from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time

log = logging.getLogger(__name__)


class TimeLimitExceeded(TimeoutError):
    """A block ran past its :func:`time_limit`.

    Attributes:
        seconds: the limit that was exceeded.
    """

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        super().__init__(f"ran longer than {self.seconds:g} s")


def can_limit() -> bool:
    """Whether :func:`time_limit` can stop a block here (the main thread, ``SIGALRM`` exists)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise :class:`TimeLimitExceeded` in the block once it has run ``seconds`` (wall clock).

    Args:
        seconds: the limit, > 0; None or 0 means no limit.

    Raises:
        TimeLimitExceeded: from inside the block, at its first Python-level operation after the
            limit. An earlier timer of the process is suspended while the block runs and
            restored afterwards (nested limits: the inner one wins while it runs).
    """
    if not seconds or seconds <= 0:
        yield
        return
    if not can_limit():
        log.warning("no time limit outside the main thread: running without the %g s limit",
                    seconds)
        yield
        return

    def expire(signum, frame):
        raise TimeLimitExceeded(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    start = time.monotonic()
    outer = signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer[0] > 0:  # the outer timer goes on with what it had left
            left = max(outer[0] - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer[1])

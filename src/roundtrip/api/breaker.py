"""The circuit breaker of one endpoint: it opens after ``max_consecutive_failures`` attempts in a
row failed by the connection, so that a job whose endpoint went away stops in seconds instead of
retrying every item (the pattern of M. Nygard, *Release It!*, 2nd ed., ch. 5, "Circuit
Breaker", without a half-open state: a job's client stays open; the next run tries again).

Only failures of the connection count (:attr:`roundtrip.api.errors.Failure.connection`: refused,
reset, closed without an answer, timed out, HTTP 5xx or 408). Any other outcome, an answer, a
malformed answer, a 429 or another 4xx, comes from a server that is up and starts the count
again, so requests that fail on every attempt by their own content (a malformed answer, a bad
request) never open it, whether or not other requests are answered between them.
"""
from __future__ import annotations

import threading


class CircuitBreaker:
    """Counts attempts in a row that failed by the connection, in the order their outcomes come.

    Args:
        limit: attempts in a row that open the breaker (``max_consecutive_failures``); 0: never.

    Attributes:
        in_a_row: the current count.
        why: None while closed; once open, why (the first reason given to :meth:`record`).
    """

    def __init__(self, limit: int):
        self.limit = int(limit)
        self.in_a_row = 0
        self.why: str | None = None
        self._lock = threading.Lock()

    def record(self, connection_failure: bool, why: str = "") -> bool:
        """Count one attempt's outcome.

        Args:
            connection_failure: the attempt failed by the connection.
            why: the line that says why the breaker opened, kept when this outcome opens it.

        Returns:
            True when this outcome opened the breaker (only once).
        """
        with self._lock:
            if not connection_failure:
                self.in_a_row = 0
                return False
            self.in_a_row += 1
            if self.why is None and self.limit and self.in_a_row >= self.limit:
                self.why = why
                return True
            return False

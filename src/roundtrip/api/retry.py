"""When a failed attempt is tried again: the server's ``Retry-After`` where it sends one, else an
exponential backoff with jitter (the delays of :class:`roundtrip.api.endpoint.Endpoint`)."""
from __future__ import annotations

import email.utils
import random
import time


def retry_after_s(headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date, RFC
    9110 Sec. 10.2.3), or None where the headers carry neither (or ``headers`` is None)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


def backoff_s(attempt: int, first_s: float, cap_s: float, retry_after: float | None = None,
              rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt + 1``.

    Args:
        attempt: attempts made so far, minus one (0 after the first attempt).
        first_s: the first delay (``backoff_s``); retry ``k`` waits ``first_s * 2**k`` times a
            jitter drawn uniformly from [1, 1.25].
        cap_s: the largest delay (``max_backoff_s``), for the backoff and for a ``Retry-After``.
        retry_after: the server's delay (429), honored instead of the backoff (at least 0).
        rng: the random source of the jitter (default: the ``random`` module's).

    Returns:
        The delay in seconds, in [0, ``cap_s``].
    """
    if retry_after is not None:  # the server knows best; still capped
        return min(max(retry_after, 0.0), cap_s)
    jitter = (rng or random).uniform(1.0, 1.25)
    return min(first_s * (2 ** attempt) * jitter, cap_s)

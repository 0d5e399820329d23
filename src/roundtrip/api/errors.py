"""What can go wrong with a request to an endpoint, as exceptions whose ``kind`` names it in a few
words (for footnotes, logs and the reasons of error rows), and how a failed attempt is classified
(:class:`Failure`): retried or not, after a backoff or at once, whether it reached the server, and
whether it is a failure of the connection, the only kind the circuit breaker counts
(:mod:`roundtrip.api.breaker`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass


class ApiError(RuntimeError):
    """A request failed for good (non-retryable error, or retries exhausted).

    Attributes:
        kind: what went wrong, in a few words, for footnotes and logs: ``connection error``,
            ``timed out``, ``HTTP 500``, ``rate limited``, ``malformed response``,
            ``endpoint down``, ``missing key``, ... (``API error`` where nothing more is known).
    """

    kind = "API error"

    def __init__(self, message: str = "", kind: str | None = None):
        super().__init__(message)
        if kind:
            self.kind = kind


class MissingApiKey(ApiError):
    """The environment variable that should hold the endpoint's key is unset or empty."""

    kind = "missing key"


class MalformedResponse(ApiError):
    """The endpoint answered 200 with something that is not the expected response."""

    kind = "malformed response"


class EndpointDown(ApiError):
    """The request was not sent (or not sent again): the endpoint did not answer the client's
    first check (:func:`roundtrip.api.endpoint.probe_endpoint`), or its circuit breaker opened
    (``max_consecutive_failures``). The message is one line naming ``api.endpoints.<name>`` and
    its ``base_url``."""

    kind = "endpoint down"


class HttpStatus(Exception):
    """An HTTP answer that is not a success (status 400 or more), as the client read it.

    Attributes:
        status: the HTTP status code.
        headers: the answer's headers (a mapping; ``Retry-After`` is read from it).
        text: the start of the answer's body (its error message), one line.
    """

    def __init__(self, status: int, headers, text: str = ""):
        super().__init__(f"{status} {text}".strip())
        self.status, self.headers, self.text = int(status), headers, text


#: The ``kind`` of a request malformed on every attempt: the failure of the request itself, not
#: of the endpoint (an evaluation may stop asking it again after some runs).
MALFORMED = MalformedResponse.kind


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified.

    Attributes:
        kind: :attr:`ApiError.kind` of the error it becomes when it is the last attempt.
        message: one line, e.g. ``HTTP 500: internal error``.
        retry: another attempt may succeed (429, 5xx, 408, 409, timeouts, connection errors,
            malformed answers); other 4xx fail at once.
        connection: a failure of the connection (refused, reset, closed without an answer,
            timed out, 5xx): what the circuit breaker counts. A 429, another 4xx or a malformed
            answer is an answer of a server that is up.
        sent: the request reached the server (False: the connection could not be made, so
            nothing was sent; counted apart as ``refused``).
        at_once: retry without a backoff (a malformed answer: the server answered at once, there
            is nothing to wait out).
        retry_after_s: the server's ``Retry-After`` in seconds (429), else None.
    """
    kind: str
    message: str
    retry: bool
    connection: bool
    sent: bool = True
    at_once: bool = False
    retry_after_s: float | None = None


def short(exc: BaseException, limit: int = 200) -> str:
    """``str(exc)`` on one line, at most ``limit`` characters."""
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def why(exc: BaseException) -> str:
    """The SDK's message with its cause (``Connection error. ([Errno 111] Connection
    refused)``), shortened."""
    cause = exc.__cause__
    text = str(exc)
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text} ({cause})"
    return short(Exception(text))


def _caused_by(exc: BaseException, *names: str) -> bool:
    """Whether ``exc``'s cause is (a subclass of) an exception class called one of ``names``
    (the HTTP library's ``ConnectError``, ``ConnectTimeout``: named, not imported, so that the
    SDK's choice of HTTP library does not matter)."""
    cause = exc.__cause__
    return cause is not None and any(c.__name__ in names for c in type(cause).__mro__)


def _status(code: int, message: str, headers) -> Failure:
    """The :class:`Failure` of an HTTP answer of status ``code`` (400 or more)."""
    from roundtrip.api.retry import retry_after_s

    if code == 429:
        return Failure("rate limited", f"429 rate limited: {message}", retry=True,
                       connection=False, retry_after_s=retry_after_s(headers))
    return Failure(f"HTTP {code}", f"HTTP {code}: {message}",
                   retry=code >= 500 or code in (408, 409), connection=code >= 500 or code == 408)


def _named(exc: BaseException, *names: str) -> bool:
    """Whether ``exc`` is an instance of a class called one of ``names`` (the HTTP library's
    exceptions, named so that its module name does not matter)."""
    return any(c.__name__ in names for c in type(exc).__mro__)


def classify(exc: BaseException, timeout_s: float) -> Failure:
    """The :class:`Failure` of an attempt that raised ``exc``: an :class:`HttpStatus`, an
    exception of the HTTP library (``httpx``: connecting, timeouts, a connection closed), an
    ``openai`` SDK error, a :class:`MalformedResponse`, or a JSON error of the answer's body.

    Args:
        exc: what the attempt raised.
        timeout_s: the endpoint's ``timeout_s``, for the message of a timeout.

    Raises:
        TypeError: ``exc`` is none of those (a bug, not a failure of the endpoint).
    """
    import openai

    if isinstance(exc, HttpStatus):
        return _status(exc.status, short(Exception(exc.text)) or "no message", exc.headers)
    if isinstance(exc, openai.APIStatusError):
        return _status(exc.status_code, short(exc), exc.response.headers)
    if _named(exc, "TimeoutException"):  # httpx: connect, read, write or pool timeout
        sent = not _named(exc, "ConnectTimeout", "PoolTimeout")
        return Failure("timed out", f"timed out after {timeout_s:g} s"
                       + ("" if sent else " (no connection)"), retry=True, connection=True,
                       sent=sent)
    if _named(exc, "TransportError"):  # httpx: refused, reset, closed without an answer
        sent = not _named(exc, "ConnectError", "UnsupportedProtocol")
        return Failure("connection error", f"connection error: {short(exc) or type(exc).__name__}",
                       retry=True, connection=True, sent=sent)
    if isinstance(exc, openai.APITimeoutError):
        sent = not _caused_by(exc, "ConnectTimeout")
        return Failure("timed out", f"timed out after {timeout_s:g} s"
                       + ("" if sent else " (no connection)"), retry=True, connection=True,
                       sent=sent)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection error", f"connection error: {why(exc)}", retry=True,
                       connection=True, sent=not _caused_by(exc, "ConnectError"))
    if isinstance(exc, (MalformedResponse, json.JSONDecodeError, UnicodeDecodeError,
                        openai.APIResponseValidationError)):
        return Failure(MALFORMED, f"malformed response: {short(exc)}", retry=True,
                       connection=False, at_once=True)
    raise TypeError(f"not a failure of an endpoint: {type(exc).__name__}: {exc}")

"""One entry of ``api.endpoints``: where it is, its key's variable, and how answers are fetched
from it (the transport settings, which a workflow keeps out of what decides whether a job runs
again); and the first check that an endpoint is there at all (:func:`probe_endpoint`)."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass

from roundtrip.api.errors import MissingApiKey, short, why

#: Key used for endpoints that need none (local vLLM/Ollama); the SDK insists on a value.
NO_KEY = "not-needed"
#: The response cache's folder when the config names none (endpoints and in-process models).
DEFAULT_CACHE_DIR = "api_cache"
#: Seconds the first check of an endpoint waits for any answer (:func:`probe_endpoint`).
PROBE_TIMEOUT_S = 5.0
#: Settings of ``api.endpoints.<name>`` that change how answers are fetched, never which: a
#: workflow keeps them out of what decides whether a job must run again
#: (:func:`without_transport`, :func:`with_transport`, :func:`config_without_transport`).
TRANSPORT_KEYS = ("timeout_s", "max_retries", "backoff_s", "max_backoff_s", "concurrency",
                  "max_consecutive_failures")


@dataclass(frozen=True)
class Endpoint:
    """One entry of ``api.endpoints`` in the config (defaults: ``config.schema.yaml``).

    Attributes:
        name: the config key (used in messages and the usage ledger).
        base_url: e.g. ``https://api.openai.com/v1``, ``http://localhost:8000/v1`` (vLLM),
            ``http://localhost:11434/v1`` (Ollama).
        key_env: name of the environment variable holding the key; ``None`` for servers that need
            no key. Never the key itself.
        timeout_s: seconds per attempt (connecting, sending, waiting for the answer), > 0.
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts at most).
        backoff_s: first backoff delay in seconds; retry ``k`` (from 0) waits ``backoff_s * 2**k``
            (x1 to 1.25 jitter), at most ``max_backoff_s``. A malformed answer is retried at once.
        max_backoff_s: cap of the backoff and of an honored ``Retry-After``, seconds.
        concurrency: requests in flight at once, per process (one connection each).
        cache_dir: folder of the response cache (shared by all endpoints; keys include the model).
        max_consecutive_failures: the circuit breaker: after this many attempts in a row failed
            by the connection (refused, reset, closed without an answer, timed out, HTTP 5xx or
            408), the client sends nothing more (:class:`~roundtrip.api.errors.EndpointDown`). Any
            other outcome (an answer, a malformed answer, a 429 or another 4xx: a server that is
            up) starts the count again; 0 turns the breaker off.
    """
    name: str
    base_url: str
    key_env: str | None = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    concurrency: int = 4
    cache_dir: str = DEFAULT_CACHE_DIR
    max_consecutive_failures: int = 10

    @classmethod
    def from_config(cls, name: str, spec: dict) -> "Endpoint":
        """From ``api.endpoints.<name>`` (a resolved entry may carry ``name`` too).

        Raises:
            TypeError: an unknown key.
        """
        return cls(name=name, **{k: v for k, v in spec.items() if k != "name"})

    @classmethod
    def of(cls, endpoint: "Endpoint | dict") -> "Endpoint":
        """``endpoint`` itself, or the :class:`Endpoint` of a resolved ``api.endpoints`` entry (a
        dict with ``name``).

        Raises:
            TypeError: an entry with unknown keys.
        """
        if isinstance(endpoint, Endpoint):
            return endpoint
        return cls.from_config(endpoint["name"], endpoint)

    @property
    def label(self) -> str:
        """``api.endpoints.<name> (<base_url>)``: how messages name the endpoint."""
        return f"api.endpoints.{self.name} ({self.base_url})"

    def api_key(self) -> str:
        """The key from the environment.

        Raises:
            MissingApiKey: ``key_env`` is set but the variable is unset or empty; the message
                names the variable and the config key.
        """
        if not self.key_env:
            return NO_KEY
        key = os.environ.get(self.key_env, "")
        if not key:
            raise MissingApiKey(
                f"api.endpoints.{self.name}: the environment variable {self.key_env} is not set; "
                f"export {self.key_env}=<your key> before running (or set "
                f"api.endpoints.{self.name}.key_env: null for a server that needs no key)")
        return key


def without_transport(spec: dict | None) -> dict | None:
    """A copy of a use's spec (a reader, the judge: a dict whose ``endpoint`` is resolved) whose
    endpoint lacks the :data:`TRANSPORT_KEYS`: what a rule's tracked parameters may hold, so that
    changing ``concurrency`` or a timeout reruns no job. ``None`` and specs without a resolved
    endpoint come back as they are."""
    if not spec or not isinstance(spec.get("endpoint"), dict):
        return spec
    endpoint = {k: v for k, v in spec["endpoint"].items() if k not in TRANSPORT_KEYS}
    return {**spec, "endpoint": endpoint}


def with_transport(spec: dict | None, endpoints: dict) -> dict | None:
    """:func:`without_transport` undone: the spec with its endpoint's :data:`TRANSPORT_KEYS` from
    ``endpoints`` (``api.endpoints`` of the run's config: a job reads them from the config,
    which Snakemake does not track, instead of from its parameters).

    Raises:
        KeyError: the endpoint is not in ``endpoints``.
    """
    if not spec or not isinstance(spec.get("endpoint"), dict):
        return spec
    ep = spec["endpoint"]
    settings = endpoints[ep["name"]]
    return {**spec, "endpoint": {**ep, **{k: settings[k] for k in TRANSPORT_KEYS
                                          if k in settings}}}


def config_without_transport(config: dict) -> dict:
    """A deep copy of a resolved config without the :data:`TRANSPORT_KEYS`: in
    ``api.endpoints`` and in every resolved ``endpoint`` of a use (any mapping whose
    ``endpoint`` is a dict), so that a rule whose parameters hold the config (the report) does
    not run again when only how answers are fetched changed."""
    def strip(node):
        if isinstance(node, dict):
            out = {k: strip(v) for k, v in node.items()}
            if isinstance(out.get("endpoint"), dict):
                out["endpoint"] = {k: v for k, v in out["endpoint"].items()
                                   if k not in TRANSPORT_KEYS}
            return out
        if isinstance(node, list):
            return [strip(v) for v in node]
        return copy.deepcopy(node)

    out = strip(config)
    endpoints = (out.get("api") or {}).get("endpoints")
    if isinstance(endpoints, dict):
        out["api"]["endpoints"] = {name: {k: v for k, v in spec.items()
                                          if k not in TRANSPORT_KEYS}
                                   if isinstance(spec, dict) else spec
                                   for name, spec in endpoints.items()}
    return out


def probe_endpoint(endpoint: Endpoint | dict, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Whether an endpoint answers at all: one ``GET {base_url}/models`` (the OpenAI API's model
    list, which vLLM and Ollama serve too) with ``timeout_s``, no retry.

    Any HTTP answer counts, whatever its status (a server that wants another key or has no
    ``/models`` route still answers), and so does a connection accepted whose answer is slow (a
    server that hangs is the circuit breaker's to find); only a connection that cannot be made
    (refused, unknown host, no connection within ``timeout_s``) makes the endpoint unreachable.
    The endpoint's key is sent where its variable is set (as every request sends it), never
    written anywhere.

    Args:
        endpoint: an :class:`Endpoint` or a resolved ``api.endpoints`` entry (a dict with
            ``name``).
        timeout_s: seconds to wait for the connection and the answer (> 0).

    Returns:
        None when the endpoint answered; else one line naming the config key and the URL:
        ``"api.endpoints.local_vllm (http://localhost:8000/v1) is unreachable: connection
        refused (GET http://localhost:8000/v1/models, 5 s timeout)"``.

    Raises:
        TypeError: an ``api.endpoints`` entry with unknown keys.
    """
    import openai

    ep = Endpoint.of(endpoint)
    url = f"{ep.base_url.rstrip('/')}/models"
    try:
        key = ep.api_key()
    except MissingApiKey:
        key = NO_KEY  # reachability needs no key: a 401 is an answer
    try:
        sdk = openai.OpenAI(api_key=key, base_url=ep.base_url, timeout=timeout_s, max_retries=0)
        try:
            sdk.models.with_raw_response.list()
        finally:
            sdk.close()
    except openai.APITimeoutError as exc:
        if type(exc.__cause__).__name__ != "ConnectTimeout":
            return None  # connected; the answer is slow
        reason = f"no connection within {timeout_s:g} s"
    except openai.APIConnectionError as exc:
        reason = why(exc)
    except openai.APIError:  # an HTTP answer of any status: the endpoint is there
        return None
    except ValueError as exc:  # a base_url the HTTP client cannot use
        reason = f"bad base_url: {short(exc)}"
    else:
        return None
    return f"{ep.label} is unreachable: {reason} (GET {url}, {timeout_s:g} s timeout)"

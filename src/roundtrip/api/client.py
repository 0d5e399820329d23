"""One client for every OpenAI-compatible endpoint: OpenAI itself, or a local vLLM/Ollama server.

Everything that talks to an API goes through :class:`ApiClient`, which adds to the ``openai``
SDK (used with its own retries off, so there is one retry policy):

- **retries** with exponential backoff on 429, 5xx, timeouts, connection errors and malformed
  responses; a 429's ``Retry-After`` (seconds or HTTP date; ``retry-after-ms`` too) is honored;
  other 4xx (bad request, bad key) fail at once;
- **a concurrency limit** shared by all threads of the process (``concurrency``);
- **backoff outside the workers**: :meth:`ApiClient.map` (and :func:`pool_map`) run a function
  over items on ``concurrency`` workers, and a request that must wait before its retry puts its
  item back (it is called again once the wait is over, the request going on with its next
  attempt) instead of holding a worker, so a few items that fail on every attempt do not leave
  the endpoint idle;
- **an endpoint found down early**: before the first request it sends, a client checks once that
  the endpoint answers at all (:func:`probe_endpoint`, a short timeout), and its circuit breaker
  opens after ``max_consecutive_failures`` requests in a row (in the order they were first
  sent) got no answer (connection errors, timeouts) or failed after all their attempts: from
  then on no request is sent
  (:class:`EndpointDown`, one line naming ``api.endpoints.<name>`` and its ``base_url``), so a
  job whose endpoint went away stops in seconds instead of retrying every item;
- **a response cache on disk**, one JSON file per request, keyed by the SHA-256 of the full
  request: kind, model, prompt/messages and parameters, with every image replaced by the SHA-256 of
  its bytes. A cached request is never sent again, and each answer is written (atomically) the
  moment it arrives, so a crash loses no paid response. Failures are not cached, so the next run
  asks exactly the requests that failed;
- **usage** (:class:`Usage`: HTTP requests sent, answered and failed requests, retries, cache
  hits, tokens, images sent and received, seconds) summed per client and appended to a run
  ledger by the workflow's scripts (:func:`append_usage`).

Models run in process (:mod:`roundtrip.readers.transformers_vlm`) keep the same contract: their
answers go to the same :class:`ResponseCache`, and their :class:`Usage` (from
:func:`local_usage`) goes to the same ledger.

The key is read from the environment variable named by ``key_env`` when the client is built; it is
never written anywhere (cache entries hold the request without headers and the response).
"""
from __future__ import annotations

import base64
import email.utils
import hashlib
import heapq
import json
import logging
import os
import random
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)


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
    """The request was not sent: the endpoint did not answer the client's first check
    (:func:`probe_endpoint`), or its circuit breaker opened (``max_consecutive_failures``). The
    message is one line naming ``api.endpoints.<name>`` and its ``base_url``."""

    kind = "endpoint down"


#: Key used for endpoints that need none (local vLLM/Ollama); the SDK insists on a value.
NO_KEY = "not-needed"
#: The response cache's folder when the config names none (endpoints and in-process models).
DEFAULT_CACHE_DIR = "api_cache"
#: Seconds the first check of an endpoint waits for any answer (:func:`probe_endpoint`).
PROBE_TIMEOUT_S = 5.0
#: Settings of ``api.endpoints.<name>`` that change how answers are fetched, never which: a
#: workflow keeps them out of what decides whether a job must run again
#: (:func:`without_transport`, :func:`with_transport`).
TRANSPORT_KEYS = ("timeout_s", "max_retries", "backoff_s", "max_backoff_s", "concurrency",
                  "max_consecutive_failures")


@dataclass(frozen=True)
class Endpoint:
    """One entry of ``api.endpoints`` in the config.

    Attributes:
        name: the config key (used in messages and the usage ledger).
        base_url: e.g. ``https://api.openai.com/v1``, ``http://localhost:8000/v1`` (vLLM),
            ``http://localhost:11434/v1`` (Ollama).
        key_env: name of the environment variable holding the key; ``None`` for servers that need
            no key. Never the key itself.
        timeout_s: seconds per attempt.
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts at most).
        backoff_s: first backoff delay; attempt ``k`` waits ``backoff_s * 2**k`` (x1 to 1.25
            jitter), at most ``max_backoff_s``.
        max_backoff_s: cap of the backoff and of an honored ``Retry-After``.
        concurrency: requests in flight at once, per process.
        cache_dir: folder of the response cache (shared by all endpoints; keys include the model).
        max_consecutive_failures: the circuit breaker: after this many requests in a row (in
            the order they were first sent) got no answer at all (connection error, timeout),
            or failed after all their attempts (or at once, on a 4xx), the client sends nothing
            more (:class:`EndpointDown`). A request sent after one that got an HTTP answer (or
            a good one) starts the count again, so a few items that fail on every attempt and
            retry late, one after the other, never open it; 0 turns the breaker off.
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
        """From ``api.endpoints.<name>`` (unknown keys raise ``TypeError``)."""
        return cls(name=name, **{k: v for k, v in spec.items() if k != "name"})

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


@dataclass
class Usage:
    """What a client (or an in-process model) spent. Counts:

    - ``attempts``: HTTP requests sent to the endpoint, every retry included: what the server
      received (0 for a model run in process);
    - ``requests``: requests answered (what is billed; in process: answers generated);
    - ``failures``: requests given up on: after all their attempts, on a non-retryable error
      (a 4xx), or because the endpoint was found down (:class:`EndpointDown`: before their
      first attempt, ``not_sent`` of them, or before a retry);
    - ``not_sent``: requests never sent because the endpoint was found down;
    - ``retries``: attempts after a request's first (``attempts`` = ``requests`` +
      ``failures`` - ``not_sent`` + ``retries``);
    - ``cache_hits``: answers served from the response cache, never sent;
    - ``input_tokens``, ``output_tokens``: of answered requests, as the endpoint reports them;
    - ``images_sent``: images carried by the attempts sent (chat image parts, edit inputs);
    - ``images``: images received (image generation and edits);
    - ``seconds``: wall-clock seconds the attempts took (backoff waits excluded; in process:
      generation).
    """
    attempts: int = 0
    requests: int = 0
    failures: int = 0
    not_sent: int = 0
    retries: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    images_sent: int = 0
    images: int = 0
    seconds: float = 0.0

    def add_response(self, response: dict, images: int = 0, seconds: float = 0.0) -> None:
        """Count one answered request: its ``usage`` block (chat: prompt/completion tokens;
        images: input/output tokens), ``images`` images received and ``seconds`` it took."""
        u = response.get("usage") or {}
        self.requests += 1
        self.input_tokens += int(u.get("prompt_tokens", u.get("input_tokens", 0)) or 0)
        self.output_tokens += int(u.get("completion_tokens", u.get("output_tokens", 0)) or 0)
        self.images += images
        self.seconds += float(seconds)

    def as_dict(self) -> dict:
        return asdict(self)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(obj: Any) -> Any:
    """``obj`` with image payloads (data URLs, bytes) replaced by their SHA-256: the cache key
    depends on the image content, not on megabytes of base64."""
    if isinstance(obj, bytes):
        return {"sha256": _sha256(obj)}
    if isinstance(obj, str) and obj.startswith("data:"):
        return {"sha256": _sha256(obj.encode())}
    if isinstance(obj, dict):
        return {k: _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    return obj


class ResponseCache:
    """Answers on disk, ``{root}/{key[:2]}/{key}.json`` with the (canonical) request beside the
    response. Writes go to a temporary file then ``os.replace``, so a file is whole or absent."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @staticmethod
    def key(canonical: dict) -> str:
        """Key of a request already passed through :func:`_canonical`."""
        return _sha256(json.dumps(canonical, sort_keys=True).encode())

    def path(self, key: str) -> Path:
        """File of the entry ``key`` (a hex SHA-256)."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The cached response dict, or None when absent or damaged."""
        p = self.path(key)
        if not p.is_file():
            return None
        try:
            return json.loads(p.read_text())["response"]
        except (OSError, ValueError, KeyError):  # a damaged entry is a miss, not a crash
            log.warning("ignoring damaged cache entry %s", p)
            return None

    def put(self, key: str, canonical: dict, response: dict) -> None:
        """Store ``response`` with its canonical request (no key, no image bytes), atomically."""
        p = self.path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"request": canonical, "response": response,
                                   "cached_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
        os.replace(tmp, p)


@dataclass
class Reply:
    """An answer: the SDK response as a plain dict, whether it came from the cache, and the
    number of attempts it took (0 when cached)."""
    response: dict
    cached: bool
    attempts: int = 0

    @property
    def text(self) -> str:
        """Text of the first choice of a chat completion.

        Raises:
            MalformedResponse: no choices or no message content.
        """
        try:
            content = self.response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise MalformedResponse(f"chat response without message content: {exc!r}") from exc
        if content is None:
            raise MalformedResponse("chat response with empty content")
        return content

    def image_bytes(self) -> bytes:
        """The first image (``data[0].b64_json``) decoded.

        Raises:
            MalformedResponse: no image in the response.
        """
        try:
            return base64.b64decode(self.response["data"][0]["b64_json"], validate=True)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise MalformedResponse(f"image response without b64_json image: {exc!r}") from exc


def retry_after_s(headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
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


def _as_endpoint(endpoint: "Endpoint | dict") -> Endpoint:
    if isinstance(endpoint, Endpoint):
        return endpoint
    return Endpoint.from_config(endpoint["name"], endpoint)


def probe_endpoint(endpoint: "Endpoint | dict", timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Whether an endpoint answers at all: one ``GET {base_url}/models`` (the OpenAI API's model
    list, which vLLM and Ollama serve too) with ``timeout_s``, no retry.

    Any HTTP answer counts, whatever its status (a server that wants another key or has no
    ``/models`` route still answers), and so does a connection accepted whose answer is slow (a
    server that hangs is the circuit breaker's to find, :class:`ApiClient`); only a connection
    that cannot be made (refused, unknown host, no connection within ``timeout_s``) makes the
    endpoint unreachable. The endpoint's key is sent where its variable is set (as every
    request sends it), never written anywhere.

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

    ep = _as_endpoint(endpoint)
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
        why = f"no connection within {timeout_s:g} s"
    except openai.APIConnectionError as exc:
        why = _why(exc)
    except openai.APIError:  # an HTTP answer of any status: the endpoint is there
        return None
    except ValueError as exc:  # a base_url the HTTP client cannot use
        why = f"bad base_url: {_short(exc)}"
    else:
        return None
    return f"{ep.label} is unreachable: {why} (GET {url}, {timeout_s:g} s timeout)"


class _RetryLater(BaseException):
    """Raised out of a request made inside :func:`pool_map`'s workers instead of waiting for its
    retry: the pool calls the item's function again after ``delay_s``. A ``BaseException``, so
    that no ``except Exception`` of the item's function takes it for a failure."""

    def __init__(self, delay_s: float, client: "ApiClient"):
        super().__init__(delay_s)
        self.delay_s, self.client = delay_s, client


@dataclass
class _Task:
    """One item of :func:`pool_map` and what its requests carry over from one call to the next:
    per request key, the attempts made and the request's number (``(attempts, seq)``: a retry
    goes on counting), keys ``answered`` while the item was being done (served again from the
    cache without counting a cache hit), and the ``client`` that put it aside (its breaker can
    wake it early)."""
    item: Any
    attempts: dict[str, tuple[int, int]] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    client: "ApiClient | None" = None


_WORKER = threading.local()


def _current_task() -> _Task | None:
    """The :func:`pool_map` item the calling thread is working on, or None outside a pool."""
    return getattr(_WORKER, "task", None)


def pool_map(fn: Callable[[Any], Any], items, workers: int,
             on_call: Callable[[bool], None] | None = None) -> list:
    """``fn`` over ``items`` on ``workers`` threads; results in the items' order, an exception
    raised by ``fn`` becoming its item's result (one failure does not stop the others).

    A request of an :class:`ApiClient` made inside ``fn`` that has to wait before its retry does
    not wait in its worker: the item is put aside, and ``fn`` is called on it again once the
    backoff (or the server's ``Retry-After``) has passed, the request going on with its next
    attempt, while the worker takes the next item. The workers stay busy with the items that
    get answers; only the failing ones wait. Items put aside by a client whose endpoint has
    been found down (:attr:`ApiClient.down`) are called again at once, and fail without a
    request. ``fn`` must therefore be safe to call again on an item; a request it already got
    answered is served from the response cache (and not counted as a cache hit).

    Args:
        fn: called with one item; returns its result.
        items: the items (any iterable; read once).
        workers: threads (at least 1, at most one per item).
        on_call: called after each call of ``fn``, from its worker, with ``True`` when the item
            was put aside for a retry (one more call to come) and ``False`` when it is done;
            e.g. a job's progress.

    Returns:
        list: one result (or exception) per item, in order.
    """
    items = list(items)
    results: list = [None] * len(items)
    if not items:
        return results
    tasks = [_Task(item) for item in items]
    ready = [(0.0, i) for i in range(len(items))]  # a heap of (time it may run, index)
    left = [len(items)]
    cond = threading.Condition()

    def take() -> int | None:  # called with cond held
        while left[0]:
            now = time.monotonic()
            if ready and ready[0][0] <= now:
                return heapq.heappop(ready)[1]
            for k, (_, i) in enumerate(ready):  # put aside by a client now down: at once
                if tasks[i].client is not None and tasks[i].client.down is not None:
                    ready[k] = ready[-1]
                    ready.pop()
                    heapq.heapify(ready)
                    return i
            cond.wait(ready[0][0] - now if ready else None)
        return None

    def work() -> None:
        while True:
            with cond:
                i = take()
            if i is None:
                return
            task, later = tasks[i], None
            _WORKER.task = task
            try:
                out = fn(task.item)
            except _RetryLater as exc:
                later = exc
            except Exception as exc:  # noqa: BLE001 - the item's result, recorded by the caller
                out = exc
            finally:
                _WORKER.task = None
            with cond:
                if later is not None:
                    task.client = later.client
                    heapq.heappush(ready, (time.monotonic() + later.delay_s, i))
                else:
                    results[i] = out
                    left[0] -= 1
                cond.notify_all()
            if on_call is not None:
                on_call(later is not None)

    threads = [threading.Thread(target=work, name=f"roundtrip pool {k}", daemon=True)
               for k in range(max(1, min(int(workers), len(items))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


class ApiClient:
    """Requests to one endpoint with retries, a concurrency limit, the disk cache, the circuit
    breaker and usage.

    Args:
        endpoint: the endpoint settings.
        sleep: the function used to wait between attempts outside :meth:`map` (tests pass a
            recorder).
        probe: check the endpoint once (:func:`probe_endpoint`) before the first request sent.

    Attributes:
        down: why no request is sent any more (the first check found the endpoint unreachable,
            or the breaker opened), one line naming ``api.endpoints.<name>`` and its
            ``base_url``; None while requests are sent.

    Raises:
        MissingApiKey: at construction, before any request.
    """

    def __init__(self, endpoint: Endpoint, sleep: Callable[[float], None] = time.sleep,
                 probe: bool = True):
        import openai

        self.endpoint = endpoint
        self._sdk = openai.OpenAI(api_key=endpoint.api_key(), base_url=endpoint.base_url,
                                  timeout=endpoint.timeout_s, max_retries=0)
        self.cache = ResponseCache(endpoint.cache_dir)
        self.usage = Usage()
        self.down: str | None = None
        self._sleep = sleep
        self._slots = threading.Semaphore(max(1, endpoint.concurrency))
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._probed = not probe
        # the breaker: requests are numbered as first sent; those sent after the last one that
        # got an HTTP answer (a good answer) and got none (failed) are the ones "in a row"
        self._seq = self._answered_seq = self._ok_seq = 0
        self._silent: set[int] = set()
        self._failed: set[int] = set()

    # -- public requests ---------------------------------------------------------------------
    def chat(self, model: str, messages: list[dict], **params) -> Reply:
        """``chat.completions.create``; ``messages`` may hold image parts with data URLs."""
        request = {"kind": "chat", "model": model, "messages": messages, "params": params}
        return self._request(request, lambda: self._sdk.chat.completions.create(
            model=model, messages=messages, **params), images_sent=_image_parts(messages))

    def generate_image(self, model: str, prompt: str, **params) -> Reply:
        """``images.generate`` asking for base64 output (``b64_json``)."""
        params = {"response_format": "b64_json", **params} if not model.startswith("gpt-image") \
            else params  # gpt-image models always return base64 and reject response_format
        request = {"kind": "images.generate", "model": model, "prompt": prompt, "params": params}
        return self._request(request, lambda: self._sdk.images.generate(
            model=model, prompt=prompt, **params), images=1)

    def edit_image(self, model: str, image_png: bytes, prompt: str, **params) -> Reply:
        """``images.edit`` with one PNG input image."""
        request = {"kind": "images.edit", "model": model, "prompt": prompt, "image": image_png,
                   "params": params}
        return self._request(request, lambda: self._sdk.images.edit(
            model=model, image=("image.png", image_png, "image/png"), prompt=prompt, **params),
            images=1, images_sent=1)

    def map(self, fn: Callable[[Any], Any], items: list) -> list:
        """``fn`` over ``items`` on ``concurrency`` workers (:func:`pool_map`: a request waiting
        for its retry does not hold a worker); an exception becomes the item's result (never
        raised), so one failure does not stop the others."""
        return pool_map(fn, items, self.endpoint.concurrency)

    # -- machinery ---------------------------------------------------------------------------
    def _request(self, request: dict, send: Callable[[], Any], images: int = 0,
                 images_sent: int = 0) -> Reply:
        """The cached answer, else ``send()`` with retries; answers are validated (text or
        image present) before they are cached, so a cached answer needs no second check."""
        canonical = _canonical(request)  # hashes image payloads once, for key and entry
        key = ResponseCache.key(canonical)
        task = _current_task()
        cached = self.cache.get(key)
        if cached is not None:
            if task is None or key not in task.answered:  # not an answer of this very item
                with self._lock:
                    self.usage.cache_hits += 1
            return Reply(cached, cached=True)
        response, attempts = self._with_retries(send, request, key, task, images_sent)
        self.cache.put(key, canonical, response)  # before anything can go wrong downstream
        if task is not None:
            task.answered.add(key)
        with self._lock:
            self.usage.add_response(response, images=images)
        return Reply(response, cached=False, attempts=attempts)

    def _with_retries(self, send: Callable[[], Any], request: dict, key: str,
                      task: _Task | None, images_sent: int) -> tuple[dict, int]:
        import openai

        what = f"{request['kind']} {request['model']} at {self.endpoint.name}"
        attempt, seq = task.attempts.pop(key, (0, 0)) if task is not None else (0, 0)
        while True:
            self._check_up(attempted=attempt > 0)
            wait, answered = None, True
            if not seq:
                with self._lock:
                    self._seq += 1
                    seq = self._seq
            with self._lock:
                self.usage.attempts += 1
                self.usage.images_sent += images_sent
                self.usage.retries += bool(attempt)
            started = time.monotonic()
            try:
                with self._slots:
                    response = send()
                data = response.model_dump(mode="json") if hasattr(response, "model_dump") \
                    else None
                if not isinstance(data, dict):
                    raise MalformedResponse(f"unexpected response type {type(response).__name__}")
                self._validate(request["kind"], data)
                self._attempted(started, seq, answered=True, ok=True)
                return data, attempt + 1
            except openai.RateLimitError as exc:
                kind, last = "rate limited", f"429 rate limited: {_short(exc)}"
                wait = retry_after_s(exc.response.headers)
            except openai.APIStatusError as exc:
                kind, last = f"HTTP {exc.status_code}", f"HTTP {exc.status_code}: {_short(exc)}"
                if exc.status_code < 500 and exc.status_code not in (408, 409):
                    self._attempted(started, seq, answered=True, ok=False)
                    self._given_up(seq, last)
                    raise ApiError(f"{what}: {last}", kind=kind) from exc
            except openai.APITimeoutError:
                kind, last = "timed out", f"timed out after {self.endpoint.timeout_s} s"
                answered = False
            except openai.APIConnectionError as exc:
                kind, last = "connection error", f"connection error: {_why(exc)}"
                answered = False
            except (MalformedResponse, json.JSONDecodeError, openai.APIResponseValidationError,
                    ValueError) as exc:
                kind, last = "malformed response", f"malformed response: {_short(exc)}"
            self._attempted(started, seq, answered=answered, ok=False, last=last)
            if attempt == self.endpoint.max_retries:
                self._given_up(seq, last)
                raise ApiError(f"{what}: gave up after {attempt + 1} attempts; last error: "
                               f"{last}", kind=kind)
            delay = self._delay(attempt, wait)
            attempt += 1
            log.warning("%s: %s; retry %d/%d in %.2f s", what, last, attempt,
                        self.endpoint.max_retries, delay)
            if task is not None:  # in a pool: wait outside the worker
                task.attempts[key] = (attempt, seq)
                raise _RetryLater(delay, self)
            self._sleep(delay)

    def _check_up(self, attempted: bool = False) -> None:
        """Check the endpoint once before the first request sent; refuse to send once it is
        down.

        Args:
            attempted: the request has been sent before (a retry is refused).

        Raises:
            EndpointDown: :attr:`down` is set (counted as a failure; as not sent, unless
                ``attempted``).
        """
        if not self._probed:
            with self._probe_lock:
                if not self._probed:
                    why = probe_endpoint(self.endpoint, min(PROBE_TIMEOUT_S,
                                                            self.endpoint.timeout_s))
                    if why:
                        self._stop(why)
                    self._probed = True
        if self.down is not None:
            with self._lock:
                self.usage.failures += 1
                self.usage.not_sent += not attempted
            raise EndpointDown(f"not sent: {self.down}")

    def _attempted(self, started: float, seq: int, answered: bool, ok: bool,
                   last: str = "") -> None:
        """Count an attempt's seconds; the breaker's count of requests in a row (request
        number ``seq``) whose last attempt got no answer."""
        limit = self.endpoint.max_consecutive_failures
        with self._lock:
            self.usage.seconds += time.monotonic() - started
            if answered:
                self._silent.discard(seq)
                if seq > self._answered_seq:
                    self._answered_seq = seq
                    self._silent = {q for q in self._silent if q > seq}
            elif seq > self._answered_seq:
                self._silent.add(seq)
            if ok and seq > self._ok_seq:
                self._ok_seq = seq
                self._failed = {q for q in self._failed if q > seq}
            silent = len(self._silent)
        if limit and silent >= limit:
            self._stop(f"{self.endpoint.label}: {silent} requests in a row got no answer (last: "
                       f"{last}); nothing more is sent (circuit breaker, "
                       f"api.endpoints.{self.endpoint.name}.max_consecutive_failures: {limit})")

    def _given_up(self, seq: int, last: str) -> None:
        """Count a request given up on; the breaker's count of requests in a row that failed."""
        limit = self.endpoint.max_consecutive_failures
        with self._lock:
            self.usage.failures += 1
            if seq > self._ok_seq:
                self._failed.add(seq)
            failed = len(self._failed)
        if limit and failed >= limit:
            self._stop(f"{self.endpoint.label}: {failed} requests in a row failed (last: "
                       f"{last}); nothing more is sent (circuit breaker, "
                       f"api.endpoints.{self.endpoint.name}.max_consecutive_failures: {limit})")

    def _stop(self, why: str) -> None:
        """Send nothing more (the first reason is kept and logged once)."""
        with self._lock:
            if self.down is not None:
                return
            self.down = why
        log.error("%s", why)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:  # the server knows best; still capped
            return min(max(retry_after, 0.0), self.endpoint.max_backoff_s)
        base = self.endpoint.backoff_s * (2 ** attempt) * random.uniform(1.0, 1.25)
        return min(base, self.endpoint.max_backoff_s)

    @staticmethod
    def _validate(kind: str, data: dict) -> None:
        if kind == "chat":
            Reply(data, cached=False).text  # noqa: B018 - raises MalformedResponse
        else:
            Reply(data, cached=False).image_bytes()


def _image_parts(messages: list[dict]) -> int:
    """Images in chat messages (``image_url`` parts)."""
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for part in m["content"] if isinstance(part, dict)
               and part.get("type") == "image_url")


def _short(exc: Exception, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def _why(exc: Exception) -> str:
    """The SDK's message with its cause (``Connection error. ([Errno 111] Connection
    refused)``), shortened."""
    cause = exc.__cause__
    text = str(exc)
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text} ({cause})"
    return _short(Exception(text))


# -- clients shared within a process, and the usage ledger ------------------------------------
_CLIENTS: dict[Endpoint, ApiClient] = {}
_CLIENTS_LOCK = threading.Lock()
#: ``(name, where)`` -> usage of a model run in process (:func:`local_usage`).
_LOCAL_USAGE: dict[tuple[str, str], Usage] = {}


def client_for(endpoint: Endpoint | dict) -> ApiClient:
    """The process's client for ``endpoint`` (a resolved ``api.endpoints`` entry), built once so
    that its concurrency limit and usage are shared by every component using the endpoint."""
    if isinstance(endpoint, dict):
        endpoint = Endpoint.from_config(endpoint["name"], endpoint)
    with _CLIENTS_LOCK:
        if endpoint not in _CLIENTS:
            _CLIENTS[endpoint] = ApiClient(endpoint)
        return _CLIENTS[endpoint]


#: Run ledger, relative to the workflow's working directory: one line per API-using job.
USAGE_LEDGER = "results/api/usage.jsonl"


def local_usage(name: str, where: str) -> Usage:
    """The process's :class:`Usage` of a model run in process, created once, so that every
    component using the model adds to one record; :func:`append_usage` writes it to the ledger
    beside the endpoints'.

    Args:
        name: the ledger's ``endpoint`` column, e.g. ``transformers:google/gemma-3-12b-it``.
        where: the ledger's ``base_url`` column: the model's folder.
    """
    with _CLIENTS_LOCK:
        return _LOCAL_USAGE.setdefault((name, where), Usage())


def clear_clients() -> None:
    """Forget the process's clients and their usage, in-process models' usage included (tests;
    long-lived sessions)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()
        _LOCAL_USAGE.clear()


def append_usage(ledger: str | Path, job: str) -> list[dict]:
    """Append one JSON line per endpoint and per in-process model used by this process to
    ``ledger`` (nothing when none was). Returns the lines written.

    Each line: ``time`` (Unix seconds), ``job``, ``endpoint`` (an in-process model:
    ``transformers:<model>``), ``base_url`` (its folder) and :class:`Usage`.
    """
    now = round(time.time(), 3)
    lines = [{"time": now, "job": job, "endpoint": ep.name, "base_url": ep.base_url,
              **c.usage.as_dict()} for ep, c in _CLIENTS.items()]
    lines += [{"time": now, "job": job, "endpoint": name, "base_url": where, **u.as_dict()}
              for (name, where), u in _LOCAL_USAGE.items() if u != Usage()]
    if lines:
        Path(ledger).parent.mkdir(parents=True, exist_ok=True)
        with open(ledger, "a") as fh:  # one short write per line: appends do not interleave
            for line in lines:
                fh.write(json.dumps(line) + "\n")
    return lines


def endpoints_down() -> list[str]:
    """Why each endpoint of this process's clients sends nothing more (:attr:`ApiClient.down`),
    one line each; empty while every endpoint answers (what a job prints before it ends)."""
    with _CLIENTS_LOCK:
        return [c.down for c in _CLIENTS.values() if c.down is not None]


def image_data_url(png: bytes) -> str:
    """``data:image/png;base64,...`` for an image part of a chat message."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


USAGE_FIELDS = tuple(f.name for f in fields(Usage))


def summarize_usage(ledger: str | Path, since: float = 0.0) -> list[dict]:
    """Usage summed per endpoint over the ledger lines written at or after ``since`` (Unix
    seconds): one dict per endpoint with ``jobs`` and :data:`USAGE_FIELDS`. Empty when there is
    no ledger."""
    totals: dict[str, dict] = {}
    path = Path(ledger)
    if not path.is_file():
        return []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:  # a torn line from a killed job
            continue
        if rec.get("time", 0) < since:
            continue
        t = totals.setdefault(rec["endpoint"], {"endpoint": rec["endpoint"],
                                                "base_url": rec.get("base_url", ""), "jobs": 0,
                                                **dict.fromkeys(USAGE_FIELDS, 0)})
        t["jobs"] += 1
        for k in USAGE_FIELDS:
            t[k] += rec.get(k, 0) or 0
    for t in totals.values():
        t["seconds"] = round(t["seconds"], 3)
    return list(totals.values())


def usage_line(row: dict) -> str:
    """One row of :func:`summarize_usage` as the line printed at the end of a run:
    ``"API usage (local_vllm) at http://localhost:8000/v1: 737 HTTP requests sent, 575 answered,
    30 failed (12 not sent: endpoint down), 132 retries, 2,040 cache hits, 641 images sent, 0
    received, 412,006 tokens in, 2,901 out, 412.3 s in 3 jobs"``."""
    n = {k: int(row.get(k, 0) or 0) for k in USAGE_FIELDS if k != "seconds"}
    failed = f"{n['failures']:,} failed" + (f" ({n['not_sent']:,} not sent: endpoint down)"
                                             if n["not_sent"] else "")
    return (f"API usage ({row['endpoint']}) at {row.get('base_url', '')}: "
            f"{n['attempts']:,} HTTP requests sent, {n['requests']:,} answered, {failed}, "
            f"{n['retries']:,} retries, {n['cache_hits']:,} cache hits, {n['images_sent']:,} "
            f"images sent, {n['images']:,} received, {n['input_tokens']:,} tokens in, "
            f"{n['output_tokens']:,} out, {float(row.get('seconds', 0) or 0):.1f} s in "
            f"{int(row.get('jobs', 0) or 0)} jobs")


def write_usage_summary(ledger: str | Path, out_csv: str | Path, since: float) -> list[dict]:
    """Write :func:`summarize_usage` of this run to ``out_csv`` (nothing when no API was used)."""
    rows = summarize_usage(ledger, since)
    if rows:
        import csv

        with open(out_csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return rows

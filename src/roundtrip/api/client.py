"""One client for every OpenAI-compatible endpoint: OpenAI itself, or a local vLLM/Ollama server.

Everything that talks to an API goes through :class:`ApiClient`, built on the ``openai`` SDK's
``AsyncOpenAI`` (its own retries off, so there is one retry policy) over one connection pool per
endpoint, its requests coroutines on the process's event loop (:mod:`roundtrip.api.scheduler`):

- **the endpoint kept full**: ``concurrency`` requests in flight at once (:class:`~roundtrip.api.
  scheduler.Slots`). :meth:`ApiClient.stream` builds a job's requests (their images read and
  encoded) on a few builder threads, off the event loop, and yields each answer as it arrives,
  with no thread per request in flight; :meth:`ApiClient.map` runs a function that calls the
  request methods over a job's items on twice as many worker threads;
- **retries** after a backoff on 429, 5xx, timeouts and connection errors, a 429's
  ``Retry-After`` honored, and at once on a malformed answer; other 4xx fail at once. A retry
  waits out its backoff outside the slots and, once due, takes the next free slot before any
  fresh request;
- **an endpoint found down early**: before the first request it sends, a client checks once that
  the endpoint answers at all (:func:`~roundtrip.api.endpoint.probe_endpoint`), and its circuit
  breaker (:mod:`roundtrip.api.breaker`) opens after ``max_consecutive_failures`` attempts in a
  row failed by the connection; from then on nothing is sent, the requests waiting or in flight
  fail at once, and the items of :meth:`ApiClient.map` not yet begun are recorded without being
  built (:class:`~roundtrip.api.errors.EndpointDown`, one line naming ``api.endpoints.<name>``
  and its ``base_url``);
- **the response cache** (:mod:`roundtrip.api.cache`): a cached request is never sent again
  (a hit is one file read by its key), each answer is written the moment it arrives, failures
  are not cached;
- **usage** (:class:`~roundtrip.api.usage.Usage`) summed per client and appended to the run's
  ledger by the workflow's scripts (:func:`append_usage`).

The key is read from the environment variable named by ``key_env`` when the client is built; it is
never written anywhere (cache entries hold the request without headers and the response).

This module also gives the names of :mod:`roundtrip.api`'s other modules that the workflow's
scripts and the readers import from it.
"""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Iterator

from roundtrip.api.breaker import CircuitBreaker
from roundtrip.api.cache import ResponseCache, canonical, request_key
from roundtrip.api.endpoint import (
    DEFAULT_CACHE_DIR,
    NO_KEY,
    PROBE_TIMEOUT_S,
    TRANSPORT_KEYS,
    Endpoint,
    config_without_transport,
    probe_endpoint,
    with_transport,
    without_transport,
)
from roundtrip.api.errors import (
    ApiError,
    EndpointDown,
    HttpStatus,
    MalformedResponse,
    MissingApiKey,
    classify,
)
from roundtrip.api.images import image_data_url
from roundtrip.api.retry import backoff_s, retry_after_s
from roundtrip.api.scheduler import FRESH, RETRY, Slots, event_loop, item_workers, pool_map
from roundtrip.api.usage import (
    USAGE_FIELDS,
    USAGE_LEDGER,
    Usage,
    append_lines,
    clear_local_usage,
    ledger_line,
    local_lines,
    local_usage,
    summarize_usage,
    usage_line,
    write_usage_summary,
)

log = logging.getLogger(__name__)

#: Connections per pool of the HTTP library (``httpx``/``httpcore``): an endpoint with a larger
#: ``concurrency`` gets several pools of at most this many, each attempt sent on the one with the
#: fewest in flight. The library checks every connection of a pool (an idle one by probing its
#: socket) whenever a request enters or leaves it, so one pool of 256 connections costs each
#: request 256 checks (measured: ``benchmarks/api_client.py``).
POOL_CONNECTIONS = 16


@dataclass
class Reply:
    """An answer: the response as a plain dict (the endpoint's JSON), whether it came from the
    cache, and the number of attempts it took (0 when cached)."""
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


@dataclass
class Prepared:
    """One request built and ready to send (:meth:`ApiClient.prepare_chat`): ``kind``
    (``chat``, ``images.generate``, ``images.edit``), the canonical form and key of the cache,
    the coroutine function that sends one attempt on a connection pool (an ``(httpx client,
    AsyncOpenAI)`` pair), what messages call it, the images it carries and those its answer
    brings."""
    kind: str
    canonical: dict
    key: str
    send: Callable[[Any], Awaitable[Any]]
    what: str
    images_sent: int = 0
    images: int = 0


def _split_extras(params: dict) -> tuple[dict, dict]:
    """``(body fields, request options)`` of a request's parameters: the SDK's ``extra_body``
    merged into the body, ``extra_headers`` and ``extra_query`` as options, as the SDK's own
    methods do."""
    params = dict(params)
    headers, query = params.pop("extra_headers", None), params.pop("extra_query", None)
    extra = params.pop("extra_body", None) or {}
    options = {k: v for k, v in (("headers", headers), ("params", query)) if v}
    return {**params, **extra}, options


def _message(response) -> str:
    """The error message of an HTTP answer: its JSON ``error.message`` where it has one, else
    the start of its body, on one line."""
    try:
        data = json.loads(response.content)
        text = data["error"]["message"] if isinstance(data.get("error"), dict) else data["error"]
    except (ValueError, KeyError, TypeError, AttributeError):
        text = response.content[:200].decode("utf-8", "replace")
    return " ".join(str(text).split())[:200]


def _json_of(response) -> dict:
    """The JSON object of an HTTP answer (a raw SDK response or an ``httpx`` response).

    Raises:
        MalformedResponse: the body is not a JSON object.
    """
    http = getattr(response, "http_response", response)
    try:
        data = json.loads(http.content)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"answer is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MalformedResponse(f"answer is JSON {type(data).__name__}, not an object")
    return data


class ApiClient:
    """Requests to one endpoint with retries, ``concurrency`` in flight, the disk cache, the
    circuit breaker and usage (module docstring). The request methods are thread-safe and
    block their calling thread until the answer (or the error) is there.

    Args:
        endpoint: the endpoint settings.
        sleep: called with each backoff delay instead of waiting it (tests pass a recorder);
            None: wait.
        probe: check the endpoint once (:func:`~roundtrip.api.endpoint.probe_endpoint`) before
            the first request sent.

    Attributes:
        down: why no request is sent any more (the first check found the endpoint unreachable,
            or the breaker opened), one line naming ``api.endpoints.<name>`` and its
            ``base_url``; None while requests are sent.
        usage: what this client spent (:class:`~roundtrip.api.usage.Usage`).

    Raises:
        MissingApiKey: at construction, before any request.
    """

    def __init__(self, endpoint: Endpoint, sleep: Callable[[float], None] | None = None,
                 probe: bool = True):
        self.endpoint = endpoint
        self._key = endpoint.api_key()
        self.cache = ResponseCache(endpoint.cache_dir)
        self.usage = Usage()
        self.down: str | None = None
        self.breaker = CircuitBreaker(endpoint.max_consecutive_failures)
        self._sleep = sleep
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._probed = not probe
        self._loop = None  # the LoopThread, from the first request sent
        self._sdks: list = []  # (httpx client, AsyncOpenAI) per connection pool, made on the loop
        self._busy: list[int] = []  # attempts in flight per pool
        self._slots: Slots | None = None
        self._tasks: set = set()

    # -- public requests ---------------------------------------------------------------------
    @property
    def workers(self) -> int:
        """Worker threads of :meth:`map` (:func:`~roundtrip.api.scheduler.item_workers`: twice
        ``concurrency``; one at ``concurrency`` 1, the items then asked in order)."""
        return item_workers(self.endpoint.concurrency)

    def chat(self, model: str, messages: list[dict], **params) -> Reply:
        """``POST /chat/completions``; ``messages`` may hold image parts with data URLs.
        ``params`` are the request's other fields (``max_tokens``, ``temperature``, ...; the
        SDK's ``extra_body``, ``extra_headers``, ``extra_query`` as its methods take them).

        Raises:
            ApiError: no answer (its ``kind`` says why); :class:`EndpointDown`: not sent.
        """
        return self._get(self.prepare_chat(model, messages, **params))

    def prepare_chat(self, model: str, messages: list[dict], **params) -> Prepared:
        """The request of :meth:`chat`, built (body encoded, cache key hashed) and not sent:
        what :meth:`stream`'s ``build`` returns."""
        request = {"kind": "chat", "model": model, "messages": messages, "params": params}
        return self._prepare(request, self._post("/chat/completions", {"model": model,
                                                                       "messages": messages},
                                                 params), images_sent=_image_parts(messages))

    def generate_image(self, model: str, prompt: str, **params) -> Reply:
        """``POST /images/generations`` asking for base64 output (``b64_json``)."""
        params = {"response_format": "b64_json", **params} if not model.startswith("gpt-image") \
            else params  # gpt-image models always return base64 and reject response_format
        request = {"kind": "images.generate", "model": model, "prompt": prompt, "params": params}
        return self._get(self._prepare(request, self._post(
            "/images/generations", {"model": model, "prompt": prompt}, params), images=1))

    def edit_image(self, model: str, image_png: bytes, prompt: str, **params) -> Reply:
        """``POST /images/edits`` with one PNG input image (multipart, through the SDK's
        method)."""
        request = {"kind": "images.edit", "model": model, "prompt": prompt, "image": image_png,
                   "params": params}

        def send(pool):
            return pool[1].images.with_raw_response.edit(
                model=model, image=("image.png", image_png, "image/png"), prompt=prompt, **params)
        return self._get(self._prepare(request, send, images=1, images_sent=1))

    def map(self, fn: Callable[[Any], Any], items, on_done: Callable[[int, Any], None] | None
            = None) -> list:
        """``fn`` over ``items`` on :attr:`workers` threads (:func:`~roundtrip.api.scheduler.
        pool_map`); ``fn`` calls this client's request methods. An exception becomes the item's
        result (never raised), so one failure does not stop the others. Once the endpoint is
        found down, the items not yet begun get :class:`EndpointDown` at once, ``fn`` not
        called on them (counted as requests not sent, one each).

        Args:
            fn: called with one item from a worker thread.
            items: the items.
            on_done: called with ``(index, result)`` as each item finishes.

        Returns:
            One result (or exception) per item, in order.
        """
        return pool_map(fn, items, self.workers, on_done=on_done, stop=self.stopped)

    def stream(self, items: Iterable, build: Callable[[Any], Any],
               builders: int | None = None) -> Iterator[tuple[int, Any]]:
        """Ask the requests of ``items`` and yield ``(index, result)`` as the answers arrive, in
        the order they arrive: the endpoint kept at ``concurrency`` requests in flight without
        a thread each.

        ``build(item)`` runs on ``builders`` threads (off the event loop: images read and
        encoded there) and returns a :class:`Prepared` request (:meth:`prepare_chat`), whose
        result is its :class:`Reply` (from the cache, or fetched and cached the moment it
        arrives); anything else it returns, or raises, is the item's result as it is. At most
        ``concurrency`` + 4 x ``builders`` items are built and not yet yielded. Once the
        endpoint is found down, every item not yet built gets :class:`EndpointDown` at once
        (counted as a request not sent), without being built.

        Args:
            items: the items (read as they are needed).
            build: called with one item from a builder thread.
            builders: threads that build requests (default: the machine's cores, 1 to 4).

        Yields:
            ``(index in items, Reply | other result | Exception)``, one per item.
        """
        n = max(1, int(builders or min(4, os.cpu_count() or 1)))
        ahead = max(1, int(self.endpoint.concurrency)) + 4 * n
        results: queue.SimpleQueue = queue.SimpleQueue()
        pool = concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="roundtrip build")
        items = enumerate(items)
        pending, fed = 0, False
        try:
            while True:
                while not fed and pending < ahead:
                    if self.down is not None:
                        for i, _ in items:  # the rest at once
                            yield i, self.stopped()
                        fed = True
                        break
                    nxt = next(items, None)
                    if nxt is None:
                        fed = True
                        break
                    pool.submit(self._build_one, *nxt, build, results, pool)
                    pending += 1
                if pending == 0:
                    return
                i, out = results.get()
                pending -= 1
                yield i, out
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _build_one(self, i: int, item, build, results, pool) -> None:
        """:meth:`stream`'s work on one item in a builder thread: build it, answer a cached
        request, give the others to the event loop (their answers stored by a builder)."""
        try:
            req = build(item)
            if not isinstance(req, Prepared):
                results.put((i, req))
                return
            hit = self._cached(req)
            if hit is not None:
                results.put((i, hit))
                return
            self._check_up()
        except Exception as exc:  # noqa: BLE001 - the item's result, recorded by the caller
            results.put((i, exc))
            return
        if self._loop is None:
            self._loop = event_loop()

        def done(fut) -> None:  # on the event loop: store the answer in a builder thread
            try:
                pool.submit(self._finish_one, i, req, fut, results)
            except RuntimeError:  # the stream was closed early: nobody waits for it
                pass
        self._loop.submit(self._ask(req)).add_done_callback(done)

    def _finish_one(self, i: int, req: Prepared, fut, results) -> None:
        try:
            data, attempts = fut.result()
            out = self._store(req, data, attempts)
        except concurrent.futures.CancelledError:
            out = self._not_sent(tried=False)
        except Exception as exc:  # noqa: BLE001 - the item's result
            out = exc
        results.put((i, out))

    def stopped(self) -> EndpointDown | None:
        """While the endpoint is down: the error of an item not asked (counted as one request
        failed and not sent); else None."""
        if self.down is None:
            return None
        with self._lock:
            self.usage.failures += 1
            self.usage.not_sent += 1
        return EndpointDown(f"not sent: {self.down}")

    def close(self) -> None:
        """Close the connection pool (a later request opens a new one)."""
        pools, self._sdks = self._sdks, []
        if pools and self._loop is not None and self._loop.thread.is_alive():
            for http, _ in pools:
                try:
                    self._loop.run(http.aclose())
                except Exception:  # noqa: BLE001 - closing a pool that is gone already
                    pass

    # -- machinery ---------------------------------------------------------------------------
    def _post(self, path: str, fields: dict, params: dict):
        """The coroutine function of one attempt of a JSON ``POST {base_url}{path}``: the body
        (``fields`` and the request parameters, the SDK's ``extra_body`` merged in) encoded here,
        in the calling thread, once for every attempt; sent on a pool's connections with the
        key; an answer of status 400 or more raises :class:`~roundtrip.api.errors.HttpStatus`."""
        body, options = _split_extras(params)
        content = json.dumps({**fields, **body}).encode()
        url = self.endpoint.base_url.rstrip("/") + path
        headers = {"Authorization": f"Bearer {self._key}", "Content-Type": "application/json",
                   "Accept": "application/json", **options.get("headers", {})}
        query = options.get("params")

        async def send(pool):
            response = await pool[0].post(url, content=content, headers=headers, params=query)
            if response.status_code >= 400:
                raise HttpStatus(response.status_code, response.headers, _message(response))
            return response
        return send

    def _prepare(self, request: dict, send, images: int = 0, images_sent: int = 0) -> Prepared:
        """``request`` (kind, model, prompt or messages, parameters) with its cache key (image
        payloads hashed once, for key and entry) and the function that sends it."""
        canon = canonical(request)
        return Prepared(request["kind"], canon, request_key(canon), send,
                        f"{request['kind']} {request['model']} at {self.endpoint.name}",
                        images_sent=images_sent, images=images)

    def _cached(self, req: Prepared) -> Reply | None:
        """The cached answer of ``req`` (counted as a cache hit), or None."""
        cached = self.cache.get(req.key)
        if cached is None:
            return None
        with self._lock:
            self.usage.cache_hits += 1
        return Reply(cached, cached=True)

    def _store(self, req: Prepared, data: dict, attempts: int) -> Reply:
        """An answer fetched: cached (before anything can go wrong downstream) and counted."""
        self.cache.put(req.key, req.canonical, data)
        with self._lock:
            self.usage.add_response(data, images=req.images)
        return Reply(data, cached=False, attempts=attempts)

    def _get(self, req: Prepared) -> Reply:
        """The cached answer, else the answer fetched (and cached the moment it arrives);
        answers are validated (text or image present) before they are cached, so a cached
        answer needs no second check."""
        hit = self._cached(req)
        if hit is not None:
            return hit
        self._check_up()
        if self._loop is None:
            self._loop = event_loop()
        try:
            data, attempts = self._loop.run(self._ask(req))
        except concurrent.futures.CancelledError:  # cancelled before it began: the breaker
            raise self._not_sent(tried=False) from None
        return self._store(req, data, attempts)

    def _check_up(self) -> None:
        """Check the endpoint once before the first request sent; refuse to send once it is
        down.

        Raises:
            EndpointDown: :attr:`down` is set (counted as a request failed and not sent).
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
            raise self._not_sent(tried=False)

    def _not_sent(self, tried: bool) -> EndpointDown:
        """The error of a request abandoned because the endpoint is down, counted."""
        with self._lock:
            self.usage.failures += 1
            self.usage.not_sent += not tried
        return EndpointDown(f"{'not answered' if tried else 'not sent'}: {self.down}")

    def _clients(self) -> list:
        """The connection pools of this endpoint, made on the event loop on first use:
        ``concurrency`` connections in pools of at most :data:`POOL_CONNECTIONS`, each an
        ``httpx`` client (the ``openai`` SDK's HTTP library and its default client settings) and
        the SDK's ``AsyncOpenAI`` over it (its retries off; multipart requests); and the slots.
        JSON requests are sent on the ``httpx`` client itself: the SDK's request building and
        JSON encoding of the body would run on the event loop, which every request of the job
        shares (measured: ``benchmarks/api_client.py``)."""
        if not self._sdks:
            import httpx2  # the SDK's HTTP library
            import openai

            n = max(1, int(self.endpoint.concurrency))
            sizes = [min(POOL_CONNECTIONS, n - k) for k in range(0, n, POOL_CONNECTIONS)]
            for size in sizes:
                http = openai.DefaultAsyncHttpxClient(
                    timeout=self.endpoint.timeout_s, limits=httpx2.Limits(
                        max_connections=size, max_keepalive_connections=size))
                self._sdks.append((http, openai.AsyncOpenAI(
                    api_key=self._key, base_url=self.endpoint.base_url,
                    timeout=self.endpoint.timeout_s, max_retries=0, http_client=http)))
            self._busy = [0] * len(sizes)
            self._slots = Slots(n)
        return self._sdks

    async def _ask(self, req: Prepared) -> tuple[dict, int]:
        """Attempts of one request until an answer or a final failure, on the event loop: each
        attempt holds a slot; a retry waits out its backoff outside them and goes before fresh
        requests once due.

        Returns:
            ``(response, attempts)``.

        Raises:
            ApiError: a final failure (counted); :class:`EndpointDown`: the endpoint is down
                (counted as not sent where no attempt was made).
        """
        task = asyncio.current_task()
        self._tasks.add(task)
        state = {"tried": False}
        try:
            return await self._attempts(req, state)
        except asyncio.CancelledError:
            if self.down is None:
                raise
            raise self._not_sent(tried=state["tried"]) from None
        except EndpointDown:
            raise
        except ApiError:
            with self._lock:
                self.usage.failures += 1
            raise
        finally:
            self._tasks.discard(task)

    async def _attempts(self, req: Prepared, state: dict) -> tuple[dict, int]:
        ep = self.endpoint
        sdks = self._clients()
        attempt = 0
        while True:
            if self.down is not None:
                raise self._not_sent(tried=state["tried"])
            await self._slots.acquire(RETRY if attempt else FRESH)
            started, failure = time.monotonic(), None
            try:
                if self.down is not None:
                    raise self._not_sent(tried=state["tried"])
                state["tried"] = True
                pool = min(range(len(sdks)), key=self._busy.__getitem__)  # one has room
                self._busy[pool] += 1
                try:
                    data = _json_of(await req.send(sdks[pool]))
                    _validate(req.kind, data)
                except asyncio.CancelledError:
                    self._attempted(True, started, attempt, req.images_sent)  # in flight
                    raise
                except Exception as exc:  # noqa: BLE001 - classified; a bug raises TypeError
                    failure = classify(exc, ep.timeout_s)
                finally:
                    self._busy[pool] -= 1
            finally:
                self._slots.release()
            self._attempted(failure is None or failure.sent, started, attempt, req.images_sent)
            if failure is None:
                self.breaker.record(False)
                return data, attempt + 1
            limit = ep.max_consecutive_failures
            if self.breaker.record(failure.connection, why=(
                    f"{ep.label}: {limit} attempts in a row failed by the connection (last: "
                    f"{failure.message}); nothing more is sent (circuit breaker, "
                    f"api.endpoints.{ep.name}.max_consecutive_failures: {limit})")):
                self._stop(self.breaker.why)
            if self.down is not None:
                raise self._not_sent(tried=True)
            if not failure.retry:
                raise ApiError(f"{req.what}: {failure.message}", kind=failure.kind)
            if attempt >= ep.max_retries:
                raise ApiError(f"{req.what}: gave up after {attempt + 1} attempts; last error: "
                               f"{failure.message}", kind=failure.kind)
            delay = 0.0 if failure.at_once else backoff_s(attempt, ep.backoff_s,
                                                          ep.max_backoff_s, failure.retry_after_s)
            attempt += 1
            log.warning("%s: %s; retry %d/%d in %.2f s", req.what, failure.message, attempt,
                        ep.max_retries, delay)
            if self._sleep is not None and delay > 0:
                self._sleep(delay)
            elif delay > 0:
                await asyncio.sleep(delay)

    def _attempted(self, sent: bool, started: float, attempt: int, images_sent: int) -> None:
        """Count one attempt: sent (the server received it) or refused (no connection)."""
        with self._lock:
            self.usage.attempts += sent
            self.usage.refused += not sent
            self.usage.retries += attempt > 0
            self.usage.images_sent += images_sent if sent else 0
            self.usage.seconds += time.monotonic() - started

    def _stop(self, why: str) -> None:
        """Send nothing more (the first reason is kept and logged once); the requests waiting
        or in flight are cancelled and fail as :class:`EndpointDown`."""
        with self._lock:
            if self.down is not None:
                return
            self.down = why
        log.error("endpoint down: %s", why)
        if self._loop is not None:
            self._loop.loop.call_soon_threadsafe(self._cancel_requests)

    def _cancel_requests(self) -> None:
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()


def _validate(kind: str, data: dict) -> None:
    """Raise :class:`MalformedResponse` unless ``data`` holds what a ``kind`` request asks for:
    a chat message's text, or an image."""
    if kind == "chat":
        Reply(data, cached=False).text  # noqa: B018 - raises MalformedResponse
    else:
        Reply(data, cached=False).image_bytes()


def _image_parts(messages: list[dict]) -> int:
    """Images in chat messages (``image_url`` parts)."""
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for part in m["content"] if isinstance(part, dict)
               and part.get("type") == "image_url")


# -- clients shared within a process, and the usage ledger ------------------------------------
_CLIENTS: dict[Endpoint, ApiClient] = {}
_CLIENTS_LOCK = threading.Lock()


def client_for(endpoint: Endpoint | dict) -> ApiClient:
    """The process's client for ``endpoint`` (a resolved ``api.endpoints`` entry), built once so
    that its concurrency limit, breaker and usage are shared by every component using the
    endpoint.

    Raises:
        MissingApiKey: the endpoint's key variable is unset.
        TypeError: an entry with unknown keys.
    """
    endpoint = Endpoint.of(endpoint)
    with _CLIENTS_LOCK:
        if endpoint not in _CLIENTS:
            _CLIENTS[endpoint] = ApiClient(endpoint)
        return _CLIENTS[endpoint]


def stopped(endpoint: Endpoint | dict) -> EndpointDown | None:
    """:meth:`ApiClient.stopped` of the process's client for ``endpoint``; None where the
    process has no client for it yet (nothing was asked, so nothing found it down)."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(Endpoint.of(endpoint))
    return client.stopped() if client is not None else None


def clear_clients() -> None:
    """Forget the process's clients (their connection pools closed) and their usage, in-process
    models' usage included (tests; long-lived sessions)."""
    with _CLIENTS_LOCK:
        clients = list(_CLIENTS.values())
        _CLIENTS.clear()
    for c in clients:
        c.close()
    clear_local_usage()


def append_usage(ledger, job: str) -> list[dict]:
    """Append one JSON line per endpoint and per in-process model used by this process to
    ``ledger`` (nothing when none was). Returns the lines written.

    Each line: ``time`` (Unix seconds), ``job``, ``endpoint`` (an in-process model:
    ``transformers:<model>``), ``base_url`` (its folder), the :class:`~roundtrip.api.usage.Usage`
    counts and, for an endpoint found down, ``down`` (why; the end of the run reads it,
    :func:`~roundtrip.api.usage.endpoints_went_down`).
    """
    now = time.time()
    with _CLIENTS_LOCK:
        clients = list(_CLIENTS.items())
    lines = [ledger_line(job, ep.name, ep.base_url, c.usage, c.down, now) for ep, c in clients]
    lines += [ledger_line(job, name, where, u, None, now) for name, where, u in local_lines()]
    append_lines(ledger, lines)
    return lines


def endpoints_down() -> list[str]:
    """Why each endpoint of this process's clients sends nothing more (:attr:`ApiClient.down`),
    one line each; empty while every endpoint answers (what a job prints before it ends)."""
    with _CLIENTS_LOCK:
        return [c.down for c in _CLIENTS.values() if c.down is not None]


__all__ = ["DEFAULT_CACHE_DIR", "NO_KEY", "TRANSPORT_KEYS", "USAGE_FIELDS", "USAGE_LEDGER",
           "ApiClient", "ApiError", "Endpoint", "EndpointDown", "MalformedResponse",
           "MissingApiKey", "Prepared", "Reply", "ResponseCache", "Usage", "append_usage", "clear_clients",
           "client_for", "config_without_transport", "endpoints_down", "image_data_url",
           "local_usage", "pool_map", "probe_endpoint", "retry_after_s", "stopped", "summarize_usage",
           "usage_line", "with_transport", "without_transport", "write_usage_summary"]

"""One client for every OpenAI-compatible endpoint: OpenAI itself, or a local vLLM/Ollama server.

Everything that talks to an API goes through :class:`ApiClient`, which adds to the ``openai``
SDK (used with its own retries off, so there is one retry policy):

- **retries** with exponential backoff on 429, 5xx, timeouts, connection errors and malformed
  responses; a 429's ``Retry-After`` (seconds or HTTP date; ``retry-after-ms`` too) is honored;
  other 4xx (bad request, bad key) fail at once;
- **a concurrency limit** shared by all threads of the process (``concurrency``);
- **a response cache on disk**, one JSON file per request, keyed by the SHA-256 of the full
  request: kind, model, prompt/messages and parameters, with every image replaced by the SHA-256 of
  its bytes. A cached request is never sent again, and each answer is written (atomically) the
  moment it arrives, so a crash loses no paid response. Failures are not cached;
- **usage** (requests sent, cache hits, retries, tokens, images, seconds) summed per client and
  appended to a run ledger by the workflow's scripts (:func:`append_usage`).

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
import json
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)


class ApiError(RuntimeError):
    """A request failed for good (non-retryable error, or retries exhausted)."""


class MissingApiKey(ApiError):
    """The environment variable that should hold the endpoint's key is unset or empty."""


class MalformedResponse(ApiError):
    """The endpoint answered 200 with something that is not the expected response."""


#: Key used for endpoints that need none (local vLLM/Ollama); the SDK insists on a value.
NO_KEY = "not-needed"
#: The response cache's folder when the config names none (endpoints and in-process models).
DEFAULT_CACHE_DIR = "api_cache"


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

    @classmethod
    def from_config(cls, name: str, spec: dict) -> "Endpoint":
        """From ``api.endpoints.<name>`` (unknown keys raise ``TypeError``)."""
        return cls(name=name, **{k: v for k, v in spec.items() if k != "name"})

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


@dataclass
class Usage:
    """What a client (or an in-process model) spent: ``requests`` answered by the endpoint
    (what is billed; in process: answers generated), answers served from the cache
    (``cache_hits``), ``retries`` (failed attempts that were retried), ``failures`` (requests
    given up on), tokens of answered requests, images received, and ``seconds``: wall-clock
    seconds spent on answered requests (retries and waits included; in process: generation)."""
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
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


class ApiClient:
    """Requests to one endpoint with retries, a concurrency limit, the disk cache and usage.

    Args:
        endpoint: the endpoint settings.
        sleep: the function used to wait between attempts (tests pass a recorder).

    Raises:
        MissingApiKey: at construction, before any request.
    """

    def __init__(self, endpoint: Endpoint, sleep: Callable[[float], None] = time.sleep):
        import openai

        self.endpoint = endpoint
        self._sdk = openai.OpenAI(api_key=endpoint.api_key(), base_url=endpoint.base_url,
                                  timeout=endpoint.timeout_s, max_retries=0)
        self.cache = ResponseCache(endpoint.cache_dir)
        self.usage = Usage()
        self._sleep = sleep
        self._slots = threading.Semaphore(max(1, endpoint.concurrency))
        self._lock = threading.Lock()

    # -- public requests ---------------------------------------------------------------------
    def chat(self, model: str, messages: list[dict], **params) -> Reply:
        """``chat.completions.create``; ``messages`` may hold image parts with data URLs."""
        request = {"kind": "chat", "model": model, "messages": messages, "params": params}
        return self._request(request, lambda: self._sdk.chat.completions.create(
            model=model, messages=messages, **params))

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
            images=1)

    def map(self, fn: Callable[[Any], Any], items: list) -> list:
        """``fn`` over ``items`` with ``concurrency`` threads; an exception becomes the item's
        result (never raised), so one failure does not stop the others."""
        def safe(item):
            try:
                return fn(item)
            except Exception as exc:  # noqa: BLE001 - recorded per item by the caller
                return exc
        with ThreadPoolExecutor(max_workers=max(1, self.endpoint.concurrency)) as pool:
            return list(pool.map(safe, items))

    # -- machinery ---------------------------------------------------------------------------
    def _request(self, request: dict, send: Callable[[], Any], images: int = 0) -> Reply:
        """The cached answer, else ``send()`` with retries; answers are validated (text or
        image present) before they are cached, so a cached answer needs no second check."""
        canonical = _canonical(request)  # hashes image payloads once, for key and entry
        key = ResponseCache.key(canonical)
        cached = self.cache.get(key)
        if cached is not None:
            with self._lock:
                self.usage.cache_hits += 1
            return Reply(cached, cached=True)
        started = time.monotonic()
        response, attempts = self._with_retries(send, request)
        self.cache.put(key, canonical, response)  # before anything can go wrong downstream
        with self._lock:
            self.usage.add_response(response, images=images, seconds=time.monotonic() - started)
        return Reply(response, cached=False, attempts=attempts)

    def _with_retries(self, send: Callable[[], Any], request: dict) -> tuple[dict, int]:
        import openai

        what = f"{request['kind']} {request['model']} at {self.endpoint.name}"
        last = ""
        for attempt in range(self.endpoint.max_retries + 1):
            wait = None
            try:
                with self._slots:
                    response = send()
                data = response.model_dump(mode="json") if hasattr(response, "model_dump") \
                    else None
                if not isinstance(data, dict):
                    raise MalformedResponse(f"unexpected response type {type(response).__name__}")
                self._validate(request["kind"], data)
                return data, attempt + 1
            except openai.RateLimitError as exc:
                last = f"429 rate limited: {_short(exc)}"
                wait = retry_after_s(exc.response.headers)
            except openai.APIStatusError as exc:
                if exc.status_code < 500 and exc.status_code not in (408, 409):
                    raise ApiError(f"{what}: HTTP {exc.status_code}: {_short(exc)}") from exc
                last = f"HTTP {exc.status_code}: {_short(exc)}"
            except openai.APITimeoutError:
                last = f"timed out after {self.endpoint.timeout_s} s"
            except openai.APIConnectionError as exc:
                last = f"connection error: {_short(exc)}"
            except (MalformedResponse, json.JSONDecodeError, openai.APIResponseValidationError,
                    ValueError) as exc:
                last = f"malformed response: {_short(exc)}"
            if attempt == self.endpoint.max_retries:
                break
            delay = self._delay(attempt, wait)
            log.warning("%s: %s; retry %d/%d in %.2f s", what, last, attempt + 1,
                        self.endpoint.max_retries, delay)
            with self._lock:
                self.usage.retries += 1
            self._sleep(delay)
        with self._lock:
            self.usage.failures += 1
        raise ApiError(f"{what}: gave up after {self.endpoint.max_retries + 1} attempts; "
                       f"last error: {last}")

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


def _short(exc: Exception, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


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

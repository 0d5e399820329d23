"""The response cache: every answer on disk the moment it arrives, keyed by the request's
content, so that a rerun sends no request already answered and a crash loses no paid answer.

One JSON file per answer, ``{root}/{key[:2]}/{key}.json``, holding the canonical request (no key,
no image bytes: each image is its SHA-256) beside the response. The key is the SHA-256 of the
canonical request's JSON with sorted keys (:func:`request_key`): kind, model, prompt or messages,
parameters, and the SHA-256 of each image payload. Reading a cached answer is one lookup of that
file by its name: no listing, no index to load, nothing per entry but the entry itself.
Failures are never stored.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def canonical(obj: Any) -> Any:
    """``obj`` (a request: dicts, lists, strings, numbers) with image payloads replaced by their
    SHA-256: bytes by ``{"sha256": <hex of the bytes>}``, a data URL (``data:...``) by
    ``{"sha256": <hex of the URL's text>}``, so that the key depends on the image content, not
    on megabytes of base64."""
    if isinstance(obj, bytes):
        return {"sha256": sha256(obj)}
    if isinstance(obj, str) and obj.startswith("data:"):
        return {"sha256": sha256(obj.encode())}
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    return obj


def request_key(canonical_request: dict) -> str:
    """The cache key of a request already passed through :func:`canonical`: the hex SHA-256 of
    its JSON with sorted keys."""
    return sha256(json.dumps(canonical_request, sort_keys=True).encode())


class ResponseCache:
    """Answers on disk under ``root`` (module docstring). Writes go to a temporary file then
    ``os.replace``, so an entry is whole or absent; a damaged entry reads as absent.

    Args:
        root: the cache folder (``api.endpoints.<name>.cache_dir``); made on the first write.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._folders: set[str] = set()  # subfolders known to exist (no mkdir per answer)

    @staticmethod
    def key(canonical_request: dict) -> str:
        """:func:`request_key` of a request already passed through :func:`canonical`."""
        return request_key(canonical_request)

    def path(self, key: str) -> Path:
        """File of the entry ``key`` (a hex SHA-256)."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The cached response dict, or None when absent or damaged (a damaged entry is logged
        once per read and asked again, never a crash)."""
        try:
            with open(self.path(key), "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        try:
            return json.loads(data)["response"]
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring damaged cache entry %s", self.path(key))
            return None

    def put(self, key: str, canonical_request: dict, response: dict) -> None:
        """Store ``response`` with its canonical request (no key, no image bytes), atomically.

        Raises:
            OSError: the folder cannot be written.
        """
        p = self.path(key)
        if key[:2] not in self._folders:
            p.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(key[:2])
        tmp = f"{p}.{os.getpid()}.{threading.get_ident()}.tmp"
        data = json.dumps({"request": canonical_request, "response": response,
                           "cached_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data.encode())
        finally:
            os.close(fd)
        os.replace(tmp, p)

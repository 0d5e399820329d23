"""A small OpenAI-compatible HTTP server on loopback, for tests of the real client code path.

Endpoints: ``POST /v1/chat/completions`` (text and image parts), ``/v1/images/generations``,
``/v1/images/edits`` (multipart). Answers are deterministic:

- chat with an image: Tesseract's reading of the image (a stand-in VLM that really reads), or a
  JSON verdict when the prompt asks for a ``score``; a prompt asking to "describe" the image (a
  captioner) gets the reading of the white text box that images.generate draws;
- a VISTA question (the prompt asks for an option ``letter``): the answer of the offline question
  family's solver, to the text, or to Tesseract's reading of the last image (the question
  image), with a short reasoning trace before ``</think>``; ``cannot determine`` when the
  solver cannot;
- chat without an image: JSONL of scene descriptions or of movie titles and slogans (as many as
  the prompt's first number), or, for a translation request, the text upper-cased;
- images.generate: a picture derived from the prompt, with any double-quoted strings drawn large;
- images.edit: the input with its low bits cleared (a mildly lossy "recreation").

Faults are queued with :meth:`FakeOpenAI.inject` and consumed one per request in order: ``429``
(with Retry-After), ``500``, ``timeout`` (answers after ``slow_s``), ``malformed`` (200 with broken
JSON), ``wrong_size`` (an image at half the size). Requests whose body contains ``FAIL-ALWAYS``
(or whose input image is in ``fail_images``) always get 500; those whose body contains
``MALFORMED-ALWAYS`` always get a malformed 200. ``delay_s`` makes every answer take that long
(a model's time), ``answer`` replaces every chat answer by a fixed text (no Tesseract), and
``die_after=N`` kills the server after its N-th request: later requests get no answer and, once
it has shut down, no connection (:meth:`FakeOpenAI.kill` does it at any time).

Every request is counted as a server sees it: ``counts`` (POSTs per path), ``outcomes``
(``ok``, ``429``, ``500``, ``malformed``, ``401``, ``404``, ``dropped``), ``images_seen``
(images in the requests: chat image parts, edit inputs), ``tokens`` (the ``usage`` the
answered requests reported), ``probes`` (``GET /v1/models``, the clients' first check, not in
``counts``) and the requests in flight (:meth:`FakeOpenAI.mean_in_flight`, ``max_in_flight``).
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import threading
import time
from collections import Counter, deque
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from PIL import Image, ImageDraw, ImageFont


def _png(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


class FakeOpenAI:
    """Start with ``with FakeOpenAI(key="sk-test") as srv:``; ``srv.base_url`` is the ``/v1`` URL."""

    def __init__(self, key: str = "sk-test-key", slow_s: float = 2.0, delay_s: float = 0.0,
                 answer: str | None = None, die_after: int | None = None):
        self.key, self.slow_s, self.delay_s = key, slow_s, delay_s
        self.answer, self.die_after = answer, die_after
        self.faults: deque[str] = deque()
        self.fail_images: set[str] = set()
        self.counts: Counter = Counter()
        self.outcomes: Counter = Counter()
        self.tokens: Counter = Counter()
        self.images_seen = 0
        self.probes = 0
        self.requests: list[dict] = []  # headers and paths (bodies too large to keep)
        self.dead = False
        self.in_flight = self.max_in_flight = 0
        self._busy_s = 0.0  # integral of the requests in flight over time
        self._first = self._last = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def inject(self, *faults: str) -> None:
        self.faults.extend(faults)

    def total(self) -> int:
        return sum(self.counts.values())

    def mean_in_flight(self) -> float:
        """Requests in flight on average between the first request's arrival and the last
        answer (time-weighted); 0 before any request."""
        with self._lock:
            if self._first is None or self._last <= self._first:
                return 0.0
            return self._busy_s / (self._last - self._first)

    def kill(self) -> None:
        """Stop answering at once (a request still arriving gets its connection closed without
        an answer) and close the socket (later connections are refused)."""
        self.dead = True
        threading.Thread(target=self._close, daemon=True).start()

    def _close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _flight(self, step: int) -> None:
        now = time.monotonic()
        with self._lock:
            if self._first is None:
                self._first = self._last = now
            self._busy_s += self.in_flight * (now - self._last)
            self._last = now
            self.in_flight += step
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.dead = True
        self._close()

    # -- request handling --------------------------------------------------------------------
    def _handler(self):
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # connections kept open, as a real server does
            disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms stall)

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server API
                if srv.dead:
                    self.close_connection = True
                    return  # the connection closes without an answer
                with srv._lock:
                    srv.probes += 1
                if self.path.split("?")[0] == "/v1/models":
                    return self._json(200, {"object": "list", "data": [
                        {"id": "fake", "object": "model", "created": 0, "owned_by": "test"}]})
                return self._json(404, {"error": {"message": "unknown endpoint"}})

            def do_POST(self):  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if srv.dead:
                    with srv._lock:
                        srv.outcomes["dropped"] += 1
                    self.close_connection = True
                    return  # the connection closes without an answer
                srv._flight(+1)
                try:
                    outcome, code, data, headers = self._post(body)
                    with srv._lock:  # counted before the client can see the answer
                        srv.outcomes[outcome] += 1
                        if srv.die_after is not None and srv.total() >= srv.die_after:
                            srv.die_after = None
                            srv.kill()
                    self._raw(code, data, headers)
                finally:
                    srv._flight(-1)

            def _post(self, body) -> tuple[str, int, bytes, dict | None]:
                """``(outcome, HTTP status, body, headers)`` of the answer to a POST."""
                def out(outcome, code, obj, headers=None):
                    return outcome, code, json.dumps(obj).encode(), headers

                path = self.path.split("?")[0]
                with srv._lock:
                    srv.counts[path] += 1
                    srv.requests.append({"path": path, "auth": self.headers.get("Authorization")})
                    srv.images_seen += _images_in(path, body)
                    fault = srv.faults.popleft() if srv.faults else None
                if srv.delay_s:
                    time.sleep(srv.delay_s)
                if self.headers.get("Authorization") != f"Bearer {srv.key}":
                    return out("401", 401, {"error": {"message": "invalid api key"}})
                if fault == "429":
                    return out("429", 429, {"error": {"message": "slow down"}},
                               {"Retry-After": "0.2"})
                if fault == "500" or b"FAIL-ALWAYS" in body:
                    return out("500", 500, {"error": {"message": "internal error"}})
                if fault == "timeout":
                    time.sleep(srv.slow_s)
                if fault == "malformed" or b"MALFORMED-ALWAYS" in body:
                    return "malformed", 200, b'{"choices": [ {"message": ', None
                try:
                    answer = srv._answer(path, self.headers, body, fault)
                except KeyError as exc:
                    return out("404", 404, {"error": {"message": f"unknown endpoint {exc}"}})
                if answer is None:
                    return out("500", 500, {"error": {"message": "image marked to fail"}})
                with srv._lock:
                    srv.tokens.update({k: int(v) for k, v in (answer.get("usage") or {}).items()})
                return out("ok", 200, answer)

            def _json(self, code, obj, headers=None):
                self._raw(code, json.dumps(obj).encode(), headers)

            def _raw(self, code, data, headers=None):
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client timed out first
                    pass

        return Handler

    def _answer(self, path, headers, body, fault):
        if path == "/v1/chat/completions":
            return self._chat(json.loads(body))
        if path == "/v1/images/generations":
            req = json.loads(body)
            w, h = (int(v) for v in (req.get("size") or "1024x1024").split("x"))
            if fault == "wrong_size":
                w, h = w // 2, h // 2
            return self._image_response(self._picture(req["prompt"], w, h))
        if path == "/v1/images/edits":
            form = _multipart(headers, body)
            raw = form["image"]
            if hashlib.sha256(raw).hexdigest() in self.fail_images:
                return None
            img = Image.open(io.BytesIO(raw)).convert("RGB")
            arr = (np.asarray(img) & 0xF8) | 0x04  # lossy: 5 bits per channel kept
            out = Image.fromarray(arr.astype(np.uint8))
            if fault == "wrong_size":
                out = out.resize((max(1, img.width // 2), max(1, img.height // 2)))
            return self._image_response(out)
        raise KeyError(path)

    @staticmethod
    def _image_response(img):
        return {"created": 1700000000, "data": [{"b64_json": _png(img)}],
                "usage": {"input_tokens": 50, "output_tokens": 1000, "total_tokens": 1050}}

    def _chat(self, req):
        parts = req["messages"][-1]["content"]
        if isinstance(parts, str):
            parts = [{"type": "text", "text": parts}]
        text = " ".join(p.get("text", "") for p in parts if p["type"] == "text")
        images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
        if self.answer is not None:  # a fixed answer: no reading, no solving
            answer = self.answer
        elif "Which option did the model choose" in text:  # the VISTA judge fallback
            answer = self._vista_judge(text)
        elif "letter" in text:  # a VISTA question: the offline family's solver answers
            answer = self._vista_answer(text, images)
        elif images:
            img = Image.open(io.BytesIO(base64.b64decode(images[0].split(",", 1)[1])))
            if "describe" in text.lower():  # a captioner (Telephone Game): read the drawn text
                answer = _read_white_box(img)
            elif "score" in text:
                ink = (np.asarray(img.convert("L")) < 128).mean()
                score = 2 if ink > 0.001 else 0
                answer = json.dumps({"score": score, "explanation": f"fake judge: ink {ink:.4f}"})
            else:
                import pytesseract
                answer = pytesseract.image_to_string(img.convert("RGB"), config="--psm 6")
        elif "translat" in text.lower():
            answer = text.split("\n\n", 1)[-1].upper()
        else:
            n = int((re.findall(r"\d+", text) or ["3"])[0])
            seed = hashlib.sha256(text.encode()).hexdigest()[:6]
            if "title" in text.lower():
                answer = "\n".join(json.dumps({"title": f"Moon Harbor {seed[:3].upper()} {i}",
                                               "slogan": f"Every tide returns {i}"})
                                   for i in range(n))
            else:
                answer = "```jsonl\n" + "\n".join(
                    json.dumps({"description": f"Scene {seed}-{i}: a lighthouse on a cliff"})
                    for i in range(n)) + "\n```"
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000,
                "model": req["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": answer}}],
                "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(answer) // 4,
                          "total_tokens": (len(text) + len(answer)) // 4}}

    @staticmethod
    def _vista_judge(text: str) -> str:
        """The letter of the only option whose text the judged answer contains, else Z."""
        options = dict(re.findall(r"^([A-H])\. (.+)$", text.split("The model's answer:")[0], re.M))
        said = text.split("The model's answer:", 1)[-1].split("Which option", 1)[0].lower()
        hits = [k for k, v in options.items() if v.lower() in said]
        return hits[0] if len(hits) == 1 else "Z"

    @staticmethod
    def _vista_answer(text: str, images: list[str]) -> str:
        from roundtrip.readers.question_family import Unsolvable, solve

        if images:
            import pytesseract

            img = Image.open(io.BytesIO(base64.b64decode(images[-1].split(",", 1)[1])))
            question = pytesseract.image_to_string(img.convert("RGB"), config="--psm 3")
        else:
            question = text.rsplit("\n\n", 1)[0]
        try:
            return f"<think>solving the question</think>The answer is {solve(question)}."
        except Unsolvable as exc:
            return f"I cannot determine the answer ({exc})."

    @staticmethod
    def _picture(prompt: str, w: int, h: int) -> Image.Image:
        digest = hashlib.sha256(prompt.encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
        base = np.stack([127 + 120 * np.sin(2 * np.pi * (f * xx + g * yy))
                         for f, g in rng.uniform(0.5, 6, (3, 2))], -1)
        img = Image.fromarray(base.clip(0, 255).astype(np.uint8))
        quoted = re.findall(r'"([^"]+)"', prompt)
        if quoted:
            draw = ImageDraw.Draw(img)
            y = h // 8
            for i, s in enumerate(quoted[:2]):
                font = ImageFont.load_default(size=max(12, h // (12 if i == 0 else 20)))
                draw.rectangle([w // 16, y - 4, w - w // 16, y + font.size + 8], fill="white")
                draw.text((w // 12, y), s, fill="black", font=font)
                y += font.size * 2
        return img


def _images_in(path: str, body: bytes) -> int:
    """Images a request carries: a chat request's ``image_url`` parts, an edit's input."""
    if path.endswith("/images/edits"):
        return 1
    if not path.endswith("/chat/completions"):
        return 0
    try:
        messages = json.loads(body)["messages"]
    except (ValueError, KeyError):
        return 0
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for part in m["content"] if part.get("type") == "image_url")


def _read_white_box(img: Image.Image) -> str:
    """Tesseract's reading of the rows where an images.generate picture has its white text box
    (the colourful background defeats Tesseract's binarization), else of the whole image."""
    import pytesseract

    arr = np.asarray(img.convert("RGB"))
    rows = np.flatnonzero((arr == 255).all(axis=2).mean(axis=1) > 0.5)
    crop = arr[rows.min():rows.max() + 1] if len(rows) else arr
    return pytesseract.image_to_string(Image.fromarray(crop), config="--psm 6").strip()


def _multipart(headers, body: bytes) -> dict[str, bytes]:
    msg = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {headers['Content-Type']}\r\n\r\n".encode() + body)
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in msg.iter_parts()}

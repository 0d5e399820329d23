"""How fast the API client keeps an OpenAI-compatible endpoint busy: requests per second against a
loopback server of known latency, by requests in flight, beside the ideal rate (concurrency /
latency), the cost of a cache hit, the client's CPU per request, and the time 4 % of requests
malformed on every attempt add.

The server runs in a process of its own (:func:`serve`: asyncio, HTTP/1.1 with kept-alive
connections): every ``POST /v1/chat/completions`` is read whole, waits the set latency and gets
one fixed chat answer; a request whose body holds ``MALFORMED-ALWAYS`` gets a malformed 200 on
every attempt. It counts requests, the time-weighted mean of those in flight and its own CPU.

The requests are VISTA-Bench's VT requests, through the production path of its answer jobs:
the endpoint reader (:class:`roundtrip.readers.answerers.VlmAnswerer`) asks questions whose
rendered image is a file (:class:`roundtrip.api.images.ImageFile`, a seeded 800 x 500 render of
text lines, one file per request) through its client's stream
(:meth:`roundtrip.api.client.ApiClient.stream`: requests built on the builder threads,
``concurrency`` in flight), each answer going to the response cache. Measured, ``--repeats`` times each (medians recorded):

- **rates**: for each latency of ``--latencies`` (20 and 200 ms) and each concurrency of
  ``--concurrency`` (1, 8, 64, 256): ``--requests`` requests (2,000) with an empty cache, or as
  many as ``--max-ideal-s`` seconds hold at the ideal rate where that is fewer (at 200 ms and one
  in flight, 2,000 requests take 400 s); requests/s, the ratio to the ideal rate, the mean in
  flight at the server, the client's CPU seconds per request (all its threads) and the server's;
- **the caps of two cores**: *encode*: requests the workers build per second (image file read
  and base64-encoded, cache key hashed; nothing sent), for a render file sent as it is and for
  an image array PNG-encoded per request (the OCR and captioner requests); *end to end*: the
  rate at concurrency 64 against the server with no latency (client and server sharing the
  cores); each rate's ratio is also given against ``min(ideal, end-to-end cap)``;
- **cache hits**: the same requests again, every answer cached: milliseconds per hit;
- **malformed**: at 20 ms and concurrency 8, the rate's requests with 4 % of them malformed on
  every attempt (``max_retries`` 3: 4 attempts each, asked again at once), their time over the
  clean run's, in at least 5 pairs of runs (clean, then malformed; the median ratio).

Writes ``benchmarks/results/api_client.json`` (with the load average before and after: the
machine may be shared).

Usage: ``python benchmarks/api_client.py [--latencies 0.02 0.2] [--concurrency 1 8 64 256]
[--requests 2000] [--max-ideal-s 40] [--repeats 3] [--out JSON]``
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

from records import REPO, commit, write_record  # noqa: E402 - sibling module

MARKER = "MALFORMED-ALWAYS"
ANSWER = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench-vlm",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "The answer is A."}}],
    "usage": {"prompt_tokens": 300, "completion_tokens": 5, "total_tokens": 305}}).encode()
MALFORMED = b'{"choices": [ {"message": '
MODELS = json.dumps({"object": "list", "data": [{"id": "bench-vlm", "object": "model"}]}).encode()


# -- the server -------------------------------------------------------------------------------
def serve(port: int) -> None:
    """The loopback server (module docstring), until killed. ``GET /stats`` answers its counts
    since the last ``GET /reset?latency=<s>``, which also sets the latency."""
    state = {"latency": 0.02, "requests": 0, "in_flight": 0, "busy": 0.0, "first": None,
             "last": None, "cpu": time.process_time()}

    def flight(step: int) -> None:
        now = time.monotonic()
        if state["first"] is None:
            state["first"] = state["last"] = now
        state["busy"] += state["in_flight"] * (now - state["last"])
        state["last"] = now
        state["in_flight"] += step

    def reply(writer, body: bytes, status: str = "200 OK") -> None:
        writer.write(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"\r\n" % (status.encode(), len(body)) + body)

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                path = head.split(b" ", 2)[1].decode()
                if head.startswith(b"GET"):
                    if path.startswith("/reset"):
                        state.update(latency=float(path.split("latency=")[1]), requests=0,
                                     in_flight=0, busy=0.0, first=None, last=None,
                                     cpu=time.process_time())
                        reply(writer, b"{}")
                    elif path.startswith("/stats"):
                        span = (state["last"] or 0) - (state["first"] or 0)
                        reply(writer, json.dumps({
                            "requests": state["requests"],
                            "mean_in_flight": state["busy"] / span if span > 0 else 0.0,
                            "cpu_s": time.process_time() - state["cpu"]}).encode())
                    else:  # /v1/models: the client's first check
                        reply(writer, MODELS)
                else:
                    state["requests"] += 1
                    flight(+1)
                    try:
                        if state["latency"]:
                            await asyncio.sleep(state["latency"])
                        reply(writer, MALFORMED if MARKER.encode() in body else ANSWER)
                    finally:
                        flight(-1)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def _get(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return json.loads(r.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the requests -----------------------------------------------------------------------------
def make_renders(folder: Path, n: int) -> list[Path]:
    """``n`` distinct seeded 800 x 500 RGB renders of question text (PNG, 8-bit RGB, zlib
    level 6: the files a rendered question set holds, 15-25 kB each)."""
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(n):
        img = Image.new("RGB", (800, 500), "white")
        draw = ImageDraw.Draw(img)
        for j in range(12):
            draw.text((20, 20 + 38 * j), f"Question {k}, line {j}: which option is {k * 7 + j} "
                      f"+ {j}? A. {k * 7 + 2 * j} B. {k * 7 + 2 * j + 1}", fill="black")
        path = folder / f"q{k:05d}.png"
        img.save(path)
        paths.append(path)
    return paths


def questions(paths: list[Path], malformed: set[int] = frozenset(), arrays: bool = False):
    """VT questions of the renders (the image as a file, or decoded to an array); a question
    whose index is in ``malformed`` carries the server's marker in its hint."""
    from roundtrip.api.images import ImageFile
    from roundtrip.readers.answerers import Question

    out = []
    for k, p in enumerate(paths):
        image = ImageFile(p).array() if arrays else ImageFile(p)
        out.append(Question(item_id=f"q{k}", text=f"Question {k}", hint=MARKER if k in malformed
                            else "", options=[("A", "a"), ("B", "b")], question_image=image))
    return out


def reader_for(base_url: str, cache: Path, concurrency: int):
    from roundtrip.readers import build_answerer

    endpoint = {"name": "bench", "base_url": base_url, "key_env": None, "timeout_s": 60,
                "max_retries": 3, "backoff_s": 0.07, "max_backoff_s": 5,
                "concurrency": concurrency, "cache_dir": str(cache),
                "max_consecutive_failures": 10}
    return build_answerer("bench", {"type": "vlm", "endpoint": endpoint, "model": "bench-vlm",
                                    "prompt": "Original", "max_tokens": 8})


def ask_all(reader, qs) -> tuple[float, float, list]:
    """``(wall s, client CPU s, answers)`` of asking every question (VT) through the reader's
    stream, as VISTA-Bench's answer jobs do."""
    start, cpu = time.perf_counter(), time.process_time()
    out: list = [None] * len(qs)
    for i, answer in reader.stream([(q, "vt") for q in qs]):
        out[i] = answer
    return time.perf_counter() - start, time.process_time() - cpu, out


def one_run(base: str, paths, concurrency: int, latency: float, work: Path,
            malformed: set[int] = frozenset(), hits: bool = False) -> dict:
    """One measured run with an empty cache (and, with ``hits``, the same again from it)."""
    from roundtrip.api.client import clear_clients

    clear_clients()
    cache = work / f"cache-{time.monotonic_ns()}"
    reader = reader_for(base + "/v1", cache, concurrency)
    qs = questions(paths, malformed)
    _get(base, f"/reset?latency={latency}")
    wall, cpu, out = ask_all(reader, qs)
    stats = _get(base, "/stats")
    bad = [o for o in out if isinstance(o, Exception)]
    if len(bad) != len(malformed) or any(getattr(o, "kind", "") != "malformed response"
                                        for o in bad):
        raise RuntimeError(f"unexpected failures: {bad[:3]}")
    row = {"seconds": wall, "requests_per_s": len(qs) / wall, "client_cpu_ms_per_request":
           1000 * cpu / len(qs), "server_cpu_ms_per_request": 1000 * stats["cpu_s"] / len(qs),
           "mean_in_flight": stats["mean_in_flight"], "attempts": stats["requests"]}
    if hits:
        clear_clients()
        reader = reader_for(base + "/v1", cache, concurrency)
        _get(base, "/reset?latency=0")
        wall, cpu, _ = ask_all(reader, qs)
        assert _get(base, "/stats")["requests"] == 0, "a cached answer was asked again"
        row |= {"hit_ms": 1000 * wall / len(qs), "hit_cpu_ms": 1000 * cpu / len(qs)}
    shutil.rmtree(cache, ignore_errors=True)
    clear_clients()
    return row


def encode_cap(paths, arrays: bool, workers: int = 2) -> float:
    """Requests per second ``workers`` threads build (image read and encoded, cache key hashed;
    nothing sent): what the cores can encode (the stream's builders are the machine's cores,
    2 here)."""
    from roundtrip.api.cache import canonical, request_key
    from roundtrip.api.images import ImageFile, image_data_url, png_bytes
    from roundtrip.api.scheduler import pool_map
    from roundtrip.readers.answerers import PROMPT_PRESETS, vlm_parts

    qs = questions(paths, arrays=arrays)
    prompts = PROMPT_PRESETS["Original"]

    def part(p):  # as the endpoint reader lays out its request
        if isinstance(p, str):
            return {"type": "text", "text": p}
        png = p.png() if isinstance(p, ImageFile) else png_bytes(p)
        return {"type": "image_url", "image_url": {"url": image_data_url(png)}}

    def build(q):
        messages = [{"role": "user", "content": [part(p) for p in vlm_parts(q, "vt", prompts)]}]
        return request_key(canonical({"kind": "chat", "model": "bench-vlm",
                                      "messages": messages, "params": {}}))
    start = time.perf_counter()
    pool_map(build, qs, workers)
    return len(qs) / (time.perf_counter() - start)


def median_row(rows: list[dict]) -> dict:
    out = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    out["runs"] = [round(r["requests_per_s"], 1) for r in rows]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latencies", type=float, nargs="+", default=[0.02, 0.2])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64, 256])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--max-ideal-s", type=float, default=40.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/api_client.json"))
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="api_client_"))
    port = _free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                _get(base, "/stats")
                break
            except OSError:
                time.sleep(0.1)
        paths = make_renders(work / "renders", args.requests)
        sizes = [p.stat().st_size for p in paths]
        caps = {"encode_file_per_s": statistics.median(
                    encode_cap(paths, False) for _ in range(args.repeats)),
                "encode_array_per_s": statistics.median(
                    encode_cap(paths[:300], True) for _ in range(args.repeats))}
        caps["end_to_end_per_s"] = statistics.median(
            one_run(base, paths, 64, 0.0, work)["requests_per_s"] for _ in range(args.repeats))
        print(f"caps of this machine: {caps}", flush=True)
        rates = []
        for latency in args.latencies:
            for c in args.concurrency:
                ideal = c / latency
                n = max(50, min(args.requests, int(ideal * args.max_ideal_s)))
                rows = [one_run(base, paths[:n], c, latency, work, hits=(k == 0))
                        for k in range(args.repeats)]
                hit = {k: rows[0][k] for k in ("hit_ms", "hit_cpu_ms")}
                row = {"latency_s": latency, "concurrency": c, "requests": n,
                       "ideal_per_s": ideal, **median_row([{k: v for k, v in r.items()
                                                            if not k.startswith("hit")}
                                                           for r in rows]), **hit}
                row["ratio_to_ideal"] = row["requests_per_s"] / ideal
                row["ratio_to_capped_ideal"] = row["requests_per_s"] / min(
                    ideal, caps["end_to_end_per_s"])
                rates.append(row)
                print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                                  for k, v in row.items()}), flush=True)
        malformed = {k for k in range(args.requests) if k % 25 == 12}  # 4 %
        pairs = []
        for _ in range(max(5, args.repeats)):  # a ratio of two runs of seconds: more pairs
            clean = one_run(base, paths, 8, 0.02, work)
            bad = one_run(base, paths, 8, 0.02, work, malformed=malformed)
            pairs.append({"clean_s": clean["seconds"], "malformed_s": bad["seconds"],
                          "ratio": bad["seconds"] / clean["seconds"],
                          "attempts": bad["attempts"]})
        slow = {"latency_s": 0.02, "concurrency": 8, "requests": args.requests,
                "malformed_requests": len(malformed), "attempts_each": 4,
                "clean_s": statistics.median(p["clean_s"] for p in pairs),
                "malformed_s": statistics.median(p["malformed_s"] for p in pairs),
                "ratio": statistics.median(p["ratio"] for p in pairs),
                "ratios": [round(p["ratio"], 3) for p in pairs],
                "attempts": pairs[0]["attempts"],
                "attempts_ratio": pairs[0]["attempts"] / args.requests}
        print(json.dumps(slow), flush=True)
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    import openai

    record = {
        "benchmark": "api_client", "commit": commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "openai": openai.__version__, "platform": platform.platform()},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "settings": {"repeats": args.repeats, "requests": args.requests,
                     "max_ideal_s": args.max_ideal_s, "image": "800x500 RGB render, PNG file "
                     f"sent as it is, {min(sizes)}-{max(sizes)} bytes", "max_retries": 3},
        "caps": caps, "rates": rates, "malformed": slow,
    }
    write_record(args.out, record)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

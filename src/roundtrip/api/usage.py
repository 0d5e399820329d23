"""What the requests of a run spent, counted apart (:class:`Usage`), and the run's ledger: one JSON
line per job and endpoint (or model run in process) appended to ``results/api/usage.jsonl``,
summed per endpoint into ``results/api/usage_summary.csv`` and one console line each at the end
of a run.

Models run in process (:mod:`roundtrip.readers.transformers_vlm`) keep the endpoints' contract:
their :class:`Usage` comes from :func:`local_usage` and goes to the same ledger.
"""
from __future__ import annotations

import csv
import json
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

#: Run ledger, relative to the workflow's working directory: one line per API-using job.
USAGE_LEDGER = "results/api/usage.jsonl"


@dataclass
class Usage:
    """What a client (or an in-process model) spent. Counts:

    - ``attempts``: HTTP requests sent to the endpoint, every retry included: what the server
      received (0 for a model run in process). An attempt whose connection could not be made
      sent nothing and is counted in ``refused`` instead;
    - ``refused``: attempts whose connection could not be made (refused, no connection within
      the timeout): nothing reached the server;
    - ``requests``: requests answered (what is billed; in process: answers generated);
    - ``failures``: requests given up on: after all their attempts, on a non-retryable error
      (a 4xx), or because the endpoint was found down (:class:`~roundtrip.api.errors.
      EndpointDown`: before their first attempt, ``not_sent`` of them, or before a retry);
    - ``not_sent``: requests never tried because the endpoint was found down;
    - ``retries``: attempts after a request's first, sent or refused
      (``attempts + refused = requests + failures - not_sent + retries``);
    - ``cache_hits``: answers served from the response cache, never sent;
    - ``input_tokens``, ``output_tokens``: of answered requests, as the endpoint reports them;
    - ``images_sent``: images carried by the attempts sent (chat image parts, edit inputs);
    - ``images``: images received (image generation and edits);
    - ``seconds``: wall-clock seconds the attempts took, summed over attempts in flight at once
      (backoff waits excluded; in process: generation).
    """
    attempts: int = 0
    refused: int = 0
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
        """The counts as a plain dict (the ledger line's fields)."""
        return asdict(self)


USAGE_FIELDS = tuple(f.name for f in fields(Usage))

_LOCK = threading.Lock()
#: ``(name, where)`` -> usage of a model run in process (:func:`local_usage`).
_LOCAL_USAGE: dict[tuple[str, str], Usage] = {}


def local_usage(name: str, where: str) -> Usage:
    """The process's :class:`Usage` of a model run in process, created once, so that every
    component using the model adds to one record; :func:`roundtrip.api.client.append_usage`
    writes it to the ledger beside the endpoints'.

    Args:
        name: the ledger's ``endpoint`` column, e.g. ``transformers:google/gemma-3-12b-it``.
        where: the ledger's ``base_url`` column: the model's folder.
    """
    with _LOCK:
        return _LOCAL_USAGE.setdefault((name, where), Usage())


def local_lines() -> list[tuple[str, str, Usage]]:
    """``(name, where, usage)`` of the in-process models of this process that spent something."""
    with _LOCK:
        return [(name, where, u) for (name, where), u in _LOCAL_USAGE.items() if u != Usage()]


def clear_local_usage() -> None:
    """Forget the in-process models' usage (tests; long-lived sessions)."""
    with _LOCK:
        _LOCAL_USAGE.clear()


def ledger_line(job: str, endpoint: str, base_url: str, usage: Usage, down: str | None = None,
                now: float | None = None) -> dict:
    """One line of the ledger: ``time`` (Unix seconds), ``job``, ``endpoint``, ``base_url``, the
    :class:`Usage` counts and, where the endpoint was found down during the job, ``down``: why
    (one line naming ``api.endpoints.<name>``)."""
    line = {"time": round(time.time() if now is None else now, 3), "job": job,
            "endpoint": endpoint, "base_url": base_url, **usage.as_dict()}
    if down:
        line["down"] = down
    return line


def append_lines(ledger: str | Path, lines: list[dict]) -> None:
    """Append ``lines`` to ``ledger`` as JSON, one short write each, so that the appends of jobs
    running side by side do not interleave; nothing when ``lines`` is empty."""
    if not lines:
        return
    Path(ledger).parent.mkdir(parents=True, exist_ok=True)
    with open(ledger, "a") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


def _records(ledger: str | Path, since: float):
    path = Path(ledger)
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:  # a torn line from a killed job
            continue
        if rec.get("time", 0) >= since:
            yield rec


def summarize_usage(ledger: str | Path, since: float = 0.0) -> list[dict]:
    """Usage summed per endpoint over the ledger lines written at or after ``since`` (Unix
    seconds): one dict per endpoint with ``endpoint``, ``base_url``, ``jobs`` and
    :data:`USAGE_FIELDS` (a line of an older ledger without a field counts 0 for it). Empty when
    there is no ledger."""
    totals: dict[str, dict] = {}
    for rec in _records(ledger, since):
        t = totals.setdefault(rec["endpoint"], {"endpoint": rec["endpoint"],
                                                "base_url": rec.get("base_url", ""), "jobs": 0,
                                                **dict.fromkeys(USAGE_FIELDS, 0)})
        t["jobs"] += 1
        for k in USAGE_FIELDS:
            t[k] += rec.get(k, 0) or 0
    for t in totals.values():
        t["seconds"] = round(t["seconds"], 3)
    return list(totals.values())


def endpoints_went_down(ledger: str | Path, since: float = 0.0) -> list[str]:
    """Why each endpoint found down by a job of the ledger since ``since`` (Unix seconds) sent
    nothing more: one line per endpoint (the first job's reason), in ledger order; empty where
    none went down."""
    out: dict[str, str] = {}
    for rec in _records(ledger, since):
        if rec.get("down"):
            out.setdefault(rec["endpoint"], f"{rec['down']} (job {rec.get('job', '?')})")
    return list(out.values())


def usage_line(row: dict) -> str:
    """One row of :func:`summarize_usage` as the line printed at the end of a run:
    ``"API usage (local_vllm) at http://localhost:8000/v1: 737 HTTP requests sent (9 more
    refused: no connection), 575 answered, 30 failed (12 not sent: endpoint down), 132 retries,
    2,040 cache hits, 641 images sent, 0 received, 412,006 tokens in, 2,901 out, 412.3 s in 3
    jobs"``."""
    n = {k: int(row.get(k, 0) or 0) for k in USAGE_FIELDS if k != "seconds"}
    sent = f"{n['attempts']:,} HTTP requests sent" + (
        f" ({n['refused']:,} more refused: no connection)" if n["refused"] else "")
    failed = f"{n['failures']:,} failed" + (f" ({n['not_sent']:,} not sent: endpoint down)"
                                             if n["not_sent"] else "")
    return (f"API usage ({row['endpoint']}) at {row.get('base_url', '')}: "
            f"{sent}, {n['requests']:,} answered, {failed}, "
            f"{n['retries']:,} retries, {n['cache_hits']:,} cache hits, {n['images_sent']:,} "
            f"images sent, {n['images']:,} received, {n['input_tokens']:,} tokens in, "
            f"{n['output_tokens']:,} out, {float(row.get('seconds', 0) or 0):.1f} s in "
            f"{int(row.get('jobs', 0) or 0)} jobs")


def write_usage_summary(ledger: str | Path, out_csv: str | Path, since: float) -> list[dict]:
    """Write :func:`summarize_usage` of this run (lines since ``since``) to ``out_csv``: columns
    ``endpoint, base_url, jobs`` and :data:`USAGE_FIELDS`; nothing when no API was used.
    Returns the rows."""
    rows = summarize_usage(ledger, since)
    if rows:
        Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
        with open(out_csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return rows

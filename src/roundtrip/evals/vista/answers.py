"""Answers of one (reader, model, question set): every question as pure text and every render
as visualized text (VT), extracted and scored (VISTA-Bench Sec. 4 and App. C.3).

The model is ``original`` (the renders as built) or a model of the zoo whose reconstructions of
the renders the reader sees (the tokenizer axis); the item's own pictures are always the
originals. Text-mode answers do not depend on the model; their rows are repeated in every
model's file (API answers come from the cache).

Every manifest item gets a VT row and every question a text row, with ``status`` and ``reason``:
``ok`` (answered; the answer may still be invalid: counted wrong, as the release counts it),
``error`` (no answer: the request or the generation failed, ``reason`` starting with what went
wrong, e.g. ``connection error: ...``, ``endpoint down: ...``; ``hit`` empty: an error is not an
answer, so it is left out of the accuracies and counted in footnotes, and the next run asks it
again) or ``not_scored`` (the render or its reconstruction does not exist, or the question is
outside what the reader answers at all, ``reason`` starting with :data:`OUT_OF_SCOPE`; left out
of accuracies, counted in footnotes).

A reader with ``answer_many`` (run in process, batched) is asked its questions a batch at a
time, requests with as many images together. An endpoint reader (``stream``) is asked through
its client's stream (:meth:`roundtrip.api.client.ApiClient.stream`): its requests built on a
few threads, ``concurrency`` in flight, each answer scored as it arrives; it is given its images
as files (:class:`roundtrip.api.images.ImageFile`), read when the request is built, so that a
cached answer costs no decoding, and once its endpoint is found down the questions not yet
asked are error rows at once. The others (the offline solver) answer one question at a time on
their ``workers`` threads (:func:`roundtrip.api.scheduler.pool_map`). The job logs its progress
(:class:`roundtrip.core.progress.Progress`).

Errors are asked again by the next run of the job: failed requests are not cached, and
:func:`write_answers` keeps a record beside ``answers.csv`` (:data:`REASK_FILE`) that changes
whenever a run leaves errors to ask again; the workflow passes it to the job as a parameter
(:func:`reask_marker`), so Snakemake runs the job again, which sends only the requests whose
answers are not cached. A request malformed on every attempt of a run (the failure of the
request, not of the endpoint) is asked again by at most ``api.max_reask_runs`` later runs of
the job (:func:`exhausted`); then it stays an error with its reason, is not asked again and no
longer makes the job run again.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import OrderedDict
from pathlib import Path

import pandas as pd

from roundtrip.api.errors import MALFORMED
from roundtrip.api.images import ImageFile
from roundtrip.core.imaging import ImageReadError, read_image
from roundtrip.core.progress import Progress
from roundtrip.evals.vista.extract import (
    JUDGE,
    JUDGE_PROMPT_DEFAULT,
    OPEN,
    PROSE,
    RELEASE,
    extract_answer,
    is_refusal,
    judge_letter,
    score_open,
    split_reasoning,
)
from roundtrip.evals.vista.prompts import RELEASE_LAYOUT, message
from roundtrip.readers.answerers import TEXT, VT, Question

log = logging.getLogger(__name__)

ANSWER_COLUMNS = ["item_id", "question_id", "mode", "category", "subfield", "source",
                  "modality", "font", "size", "table1", "audit", "raw", "reasoning", "extracted",
                  "extracted_by", "answer", "hit", "exact_match", "status", "reason"]
OK, ERROR, NOT_SCORED = "ok", "error", "not_scored"
#: The start of the reason of a question the reader cannot answer at all (status not_scored).
OUT_OF_SCOPE = "outside the reader's scope"
#: Questions whose pictures are kept in memory at once (a request reads them again after).
IMAGE_CACHE_QUESTIONS = 64
#: Beside ``answers.csv``: the record of the last run of the job that left errors
#: (:func:`write_answers`, :func:`reask_marker`).
REASK_FILE = "reask.json"
#: :func:`reask_marker` of a job none of whose runs left an error.
NO_ERRORS = "no errors to ask again"
#: In the reason of an error row no later run asks again (:func:`write_answers`).
NOT_ASKED_AGAIN = "not asked again"


def error_reason(exc: BaseException) -> str:
    """The ``reason`` of an error row: what went wrong first (an API error's ``kind``, e.g.
    ``connection error``, ``endpoint down``; else the exception's type), then the message;
    at most 300 characters."""
    kind = getattr(exc, "kind", None) or type(exc).__name__
    return f"{kind}: {exc}"[:300]


def job_fingerprint(params: dict, inputs=()) -> str:
    """What an answer job's re-ask record belongs to: the hex SHA-256 of its tracked parameters
    (``params``: reader, judge, extraction, prompt layout; JSON with sorted keys) and of the bytes
    of its input files (manifest, reconstruction status, OCR). A record of another fingerprint
    (a reader, prompt or question set changed) counts nothing (:func:`exhausted`)."""
    h = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode())
    for path in inputs:
        h.update(Path(path).read_bytes())
    return h.hexdigest()


def _record(answers_csv: str | Path) -> dict:
    """The :data:`REASK_FILE` beside ``answers_csv``, or ``{}`` (none, or damaged)."""
    try:
        record = json.loads(Path(answers_csv).with_name(REASK_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _row_key(mode: str, item_id: str) -> str:
    return f"{mode}/{item_id}"


def exhausted(answers_csv: str | Path, fingerprint: str, max_reask_runs: int) -> dict:
    """The jobs not to ask again: ``{(mode, item_id): reason}`` of the requests malformed on
    every attempt of ``1 + max_reask_runs`` runs in a row of this job (the first and
    ``api.max_reask_runs`` later ones), from the :data:`REASK_FILE` beside ``answers_csv`` when
    its fingerprint is ``fingerprint`` (:func:`job_fingerprint`); each keeps its last reason."""
    record = _record(answers_csv)
    if record.get("fingerprint") != fingerprint:
        return {}
    out = {}
    for key, item in (record.get("items") or {}).items():
        if int(item.get("runs", 0)) > int(max_reask_runs):
            mode, _, item_id = key.partition("/")
            out[(mode, item_id)] = str(item.get("reason", ""))
    return out


def write_answers(rows: pd.DataFrame, path: str | Path, fingerprint: str = "",
                  max_reask_runs: int = 1, skipped=()) -> int:
    """Write an answer job's rows to ``path`` (``answers.csv``) and keep the re-ask record
    (:data:`REASK_FILE`) beside it.

    The record counts, per job malformed on every attempt (reason starting with ``malformed
    response``), the runs in a row it failed so; a job asked again by ``max_reask_runs`` later
    runs and failing again gets its reason ended with ``not asked again`` and is no longer asked
    (:func:`exhausted`). Where a run leaves other errors, or malformed ones that may still be
    asked again, the record's round goes up, so that the next run of the workflow runs the job
    again (:func:`reask_marker`); a run without such errors leaves the round as it is (a run
    after it then has nothing to do).

    Args:
        rows: the job's rows (:data:`ANSWER_COLUMNS`); the reasons of newly exhausted jobs are
            completed in place.
        path: ``answers.csv``.
        fingerprint: the job's :func:`job_fingerprint`; a record of another resets the counts.
        max_reask_runs: ``api.max_reask_runs`` (>= 0).
        skipped: ``(mode, item_id)`` of the jobs not asked this run (:func:`exhausted`): their
            counts stay.

    Returns:
        The number of error rows.
    """
    path = Path(path)
    record = _record(path)
    before = (record.get("items") or {}) if record.get("fingerprint") == fingerprint else {}
    skipped = {_row_key(m, i) for m, i in skipped}
    items, again = {}, 0
    error_rows = rows.index[rows["status"] == ERROR]
    for idx in error_rows:
        reason = str(rows.at[idx, "reason"])
        key = _row_key(rows.at[idx, "mode"], rows.at[idx, "item_id"])
        if not reason.startswith(MALFORMED):
            again += 1
            continue
        runs = int(before.get(key, {}).get("runs", 0)) + (key not in skipped)
        if runs > max_reask_runs and key not in skipped:
            reason = (f"{reason} (malformed on every attempt of {runs} runs: "
                      f"{NOT_ASKED_AGAIN}, api.max_reask_runs: {max_reask_runs})")
            rows.at[idx, "reason"] = reason
        items[key] = {"runs": runs, "reason": reason}
        again += runs <= max_reask_runs
    rows.to_csv(path, index=False)
    if again or items or record:
        out = {k: record[k] for k in ("round", "errors", "rows", "written") if k in record}
        if again:
            out = {"round": int(record.get("round", 0)) + 1, "errors": again, "rows": len(rows),
                   "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        out |= {"fingerprint": fingerprint, "items": items}
        tmp = path.with_name(REASK_FILE + ".tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(path.with_name(REASK_FILE))
    return len(error_rows)


def reask_marker(answers_csv: str | Path) -> str:
    """What the workflow passes to an answer job as its ``reask`` parameter: one line from the
    :data:`REASK_FILE` beside ``answers_csv`` (``"round 2: 283 of 600 answers were errors;
    asked again"``), :data:`NO_ERRORS` where no run left errors to ask again. It changes only
    when a run of the job leaves errors to ask again, so Snakemake (whose default rerun triggers
    include parameters) runs the job again once after each such run, and a run after one
    without them is a no-op."""
    r = _record(answers_csv)
    try:
        return f"round {int(r['round'])}: {int(r['errors'])} of {int(r['rows'])} answers were " \
               "errors; asked again"
    except (KeyError, TypeError, ValueError):
        return NO_ERRORS


def out_of_scope(rows: pd.DataFrame) -> pd.Series:
    """Which rows of an answers frame are questions outside what the reader answers at all
    (``reason`` starting with :data:`OUT_OF_SCOPE`): a bool Series on ``rows``' index."""
    return rows["reason"].astype(str).str.startswith(OUT_OF_SCOPE)


def read_questions_manifest(path: str | Path) -> pd.DataFrame:
    """A question set's manifest with every column as a string."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("item_id", "status", "question_text", "answer") if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not a question set (no column {missing}); VISTA answers "
                         "need a vista_questions or vista_release dataset")
    return df


def _options(row: dict) -> list[tuple[str, str]]:
    try:
        return [tuple(o) for o in json.loads(row.get("options") or "[]")]
    except json.JSONDecodeError:
        return []


def _question_rows(manifest: pd.DataFrame) -> list[dict]:
    """One row per question (the first render that names it), for the text mode."""
    seen, out = set(), []
    for row in manifest.to_dict("records"):
        qid = row.get("question_id") or ""
        if qid and qid not in seen:
            seen.add(qid)
            out.append(row)
    return out


def _picture_paths(row: dict) -> list[str]:
    return [r for r in (row.get("item_images") or "").split("|") if r]


class _Images:
    """Loads the item's pictures (VLM readers only; the offline solver never looks), keeping
    the last :data:`IMAGE_CACHE_QUESTIONS` questions' in memory; a reader that takes image files
    (``sends_files``: an endpoint reader) gets :class:`~roundtrip.api.images.ImageFile` objects
    instead, read when its request is built."""

    def __init__(self, root: Path, wanted: bool, files: bool = False):
        self.root, self.wanted, self.files = root, wanted, files
        self.cache: OrderedDict[str, list] = OrderedDict()

    def count(self, row: dict) -> int:
        """How many pictures a request of ``row`` carries (without reading them)."""
        return len(_picture_paths(row)) if self.wanted else 0

    def of(self, row: dict) -> list:
        rels = _picture_paths(row)
        if not self.wanted or not rels:
            return []
        if self.files:
            return [_image_file(self.root / r) for r in rels]
        key = row.get("question_id")
        if key not in self.cache:
            self.cache[key] = [read_image(self.root / r) for r in rels]
            if len(self.cache) > IMAGE_CACHE_QUESTIONS:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        return self.cache[key]


def _image_file(path: Path) -> ImageFile:
    """An :class:`~roundtrip.api.images.ImageFile` of an existing file.

    Raises:
        ImageReadError: the file is missing (as :func:`~roundtrip.core.imaging.read_image`
            says it).
    """
    if not path.is_file():
        read_image(path)  # raises with read_image's message
    return ImageFile(path)


def answer_set(manifest_path: str | Path, reader, model: str = "original",
               recon_dir: str | Path | None = None, ocr_csv: str | Path | None = None,
               judge: dict | None = None, extraction: str = RELEASE,
               prompt_layout: str = RELEASE_LAYOUT, skip: dict | None = None) -> pd.DataFrame:
    """Ask ``reader`` every question of a set in both modes and score the answers.

    Args:
        manifest_path: ``results/datasets/{dataset}/manifest.csv`` of a question set.
        reader: an answerer of :mod:`roundtrip.readers.answerers`.
        model: ``original`` or the zoo model whose reconstructions are read (VT mode).
        recon_dir: ``results/recon/{model}/{dataset}`` (with ``status.csv``) for a model.
        ocr_csv: the OCR of the question images (``item_id, text, status, reason``) for readers
            with ``needs_ocr``: of the renders (model ``original``) or of the reconstructions.
        judge: ``{"endpoint": resolved endpoint, "model": ..., "prompt": ...}``: a chat model
            that maps an output no rule could read to an option (off when None).
        extraction: ``release`` (VLMEvalKit's rule as the release ran it) or ``prose`` (App.
            C.3's prose): :mod:`roundtrip.evals.vista.extract`.
        prompt_layout: ``release`` (the requests as the release sends them) or ``matched``
            (the reader's own layout): :mod:`roundtrip.evals.vista.prompts`.
        skip: ``{(mode, item_id): reason}`` of jobs not asked again (:func:`exhausted`): error
            rows with that reason.

    Returns:
        DataFrame with :data:`ANSWER_COLUMNS`: text rows first (``item_id`` = question id),
        then one VT row per manifest item, in manifest order. ``table1`` is ``1`` on text rows
        and on each question's Table 1 render; ``audit`` is the render audit's verdict
        (``passed``, ``failed``, ``not judged``; VISTA-Bench App. B.3); ``modality`` is
        ``multimodal`` for questions with pictures of their own, else ``unimodal``; ``hit`` is
        scored by ``extraction``; ``exact_match`` is an open question's exact-match credit
        (1.0/0.0; empty for multiple-choice questions).

    Raises:
        ValueError: the manifest is not a question set; a needed input is missing.
    """
    manifest_path = Path(manifest_path)
    manifest = read_questions_manifest(manifest_path)
    images = _Images(manifest_path.parent, wanted=getattr(reader, "sees_item_images", True),
                     files=getattr(reader, "sends_files", False))
    ocr = _read_ocr(ocr_csv) if reader.needs_ocr else None
    if reader.needs_ocr and ocr is None:
        raise ValueError(f"reader {reader.name} needs the OCR of the question images")
    recon = _recon_status(recon_dir) if model != "original" else None
    manifest["audit"] = _audit_verdicts(manifest_path.parent / "audit.csv", manifest["item_id"])
    ask = _Asking(reader, manifest_path.parent, images, recon, ocr,
                  {"judge": judge, "extraction": extraction, "layout": prompt_layout})

    jobs = [(TEXT, row) for row in _question_rows(manifest)]
    jobs += [(VT, row) for row in manifest.to_dict("records")]
    rows: list[dict | None] = [None] * len(jobs)
    pending = []  # indices of the jobs the reader is asked
    for i, (mode, row) in enumerate(jobs):
        rows[i] = ask.skipped(mode, row)
        if rows[i] is None and skip and (mode, _base(mode, row)["item_id"]) in skip:
            rows[i] = _base(mode, row) | {"status": ERROR,
                                          "reason": skip[(mode, _base(mode, row)["item_id"])]}
        if rows[i] is None:
            pending.append(i)
    label = getattr(reader, "config_key", "") or reader.name
    what = f"VISTA answers of {label} ({model}) on {manifest_path.parent.name}"
    if hasattr(reader, "answer_many"):
        with Progress(len(pending), what, unit="answers", logger=log) as progress:
            _ask_in_batches(ask, jobs, pending, rows, progress)
    else:
        with Progress(len(pending), what, unit="answers", logger=log) as progress:
            _ask_one_by_one(ask, jobs, pending, rows, progress)
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


def _ask_one_by_one(ask: "_Asking", jobs: list, pending: list[int], rows: list,
                    progress: Progress) -> None:
    """Ask a reader without ``answer_many`` the ``pending`` jobs. An endpoint reader
    (``stream``) is asked through its client's stream: the requests built on a few threads,
    ``concurrency`` in flight, each answer scored as it arrives, and, once its endpoint is
    found down, the jobs not yet asked error rows at once. Any other reader (the offline
    solver; an endpoint reader whose ``answer`` a test replaced) answers on its ``workers``
    threads (:func:`roundtrip.api.scheduler.pool_map`; one where it has none)."""
    from roundtrip.api.scheduler import pool_map

    reader = ask.reader
    if hasattr(reader, "stream") and not reader.asks_itself():
        _ask_streamed(ask, jobs, pending, rows, progress)
        return

    def done(k: int, out) -> None:
        progress.add()

    workers = max(1, int(getattr(reader, "workers", 1)))
    outs = pool_map(lambda i: ask.one(*jobs[i]), pending, workers, on_done=done,
                    stop=getattr(reader, "stopped", None))
    for i, out in zip(pending, outs):
        if isinstance(out, Exception):
            if getattr(out, "kind", None) is None:  # not an API error: a bug, not an answer
                raise out
            out = ask.scored(*jobs[i], None, out)  # the endpoint was down: not asked
        rows[i] = out


def _ask_streamed(ask: "_Asking", jobs: list, pending: list[int], rows: list,
                  progress: Progress) -> None:
    """:func:`_ask_one_by_one` through the reader's ``stream``: each job's question is
    prepared (its images as files) on the stream's builder threads; a job that cannot be
    asked gets its final row there (not scored), an image file that cannot be read costs its
    answer only (not scored), a request that cannot be laid out or gets no answer is an error
    row; each answer is scored as it arrives."""
    questions: dict[int, Question] = {}

    def question(i: int):
        q = ask.prepare(*jobs[i])
        if not isinstance(q, Question):
            return q  # the job's final row
        questions[i] = q
        return q, jobs[i][0]

    for k, out in ask.reader.stream(pending, question):
        i = pending[k]
        mode, row = jobs[i]
        if isinstance(out, dict):
            rows[i] = out
        elif isinstance(out, ImageReadError):
            rows[i] = _base(mode, row) | {"status": NOT_SCORED, "reason": f"image: {out}"}
        elif isinstance(out, Exception):
            if not isinstance(out, (RuntimeError, ValueError)):
                raise out  # not the reader's failure: a bug
            rows[i] = ask.scored(mode, row, None, out)
        else:
            rows[i] = ask.scored(mode, row, questions.pop(i), out)
        progress.add()


def _ask_in_batches(ask: "_Asking", jobs: list, pending: list[int], rows: list,
                    progress: Progress) -> None:
    """Ask a batching reader (``answer_many``) the ``pending`` jobs, ``batch_size`` at a time:
    requests with as many images together (a batch of the model holds one image count), in
    manifest order within each count; only one batch's images are in memory at once."""
    size = max(1, int(getattr(ask.reader, "batch_size", 8)))
    by_count: dict[int, list[int]] = {}
    for i in pending:
        by_count.setdefault(ask.images_per_request(*jobs[i]), []).append(i)
    chunks = [same[k:k + size] for _, same in sorted(by_count.items())
              for k in range(0, len(same), size)]
    for chunk in chunks:
        prepared = {i: ask.prepare(*jobs[i]) for i in chunk}
        asked = [i for i in chunk if isinstance(prepared[i], Question)]
        for i in chunk:
            if not isinstance(prepared[i], Question):
                rows[i] = prepared[i]  # not scored: a render or a picture that cannot be read
        answers = ask.reader.answer_many([(prepared[i], jobs[i][0]) for i in asked])
        for i, raw in zip(asked, answers, strict=True):
            rows[i] = ask.scored(jobs[i][0], jobs[i][1], prepared[i], raw)
        progress.add(len(chunk))


class _Asking:
    """One reader's questions of one (model, set): what is skipped, the requests, the scores."""

    def __init__(self, reader, root: Path, images: _Images, recon, ocr, how: dict):
        self.reader, self.root, self.images = reader, root, images
        self.recon, self.ocr, self.how = recon, ocr, how
        self._scope: dict[str, str | None] = {}

    def skipped(self, mode: str, row: dict) -> dict | None:
        """The final row of a job the reader is not asked (an unusable row, a question outside
        the reader's scope), else None."""
        out = _base(mode, row)
        why = _unusable(mode, row)
        if why:
            return out | {"status": NOT_SCORED, "reason": why}
        why = self.out_of_scope(row)
        if why:
            return out | {"status": NOT_SCORED, "reason": f"{OUT_OF_SCOPE}: {why}"}
        return None

    def out_of_scope(self, row: dict) -> str | None:
        """Why the reader cannot answer the question of ``row`` at all (its ``out_of_scope``, on
        the pure text, once per question), or None."""
        check = getattr(self.reader, "out_of_scope", None)
        if check is None:
            return None
        qid = row.get("question_id") or row["item_id"]
        if qid not in self._scope:
            self._scope[qid] = check(Question(item_id=qid, text=row["question_text"],
                                              hint=row.get("hint", ""), options=_options(row)))
        return self._scope[qid]

    def images_per_request(self, mode: str, row: dict) -> int:
        return self.images.count(row) + (mode == VT and not self.reader.needs_ocr)

    def prepare(self, mode: str, row: dict) -> Question | dict:
        """The question as the reader gets it, or the final row where it cannot be asked."""
        out = _base(mode, row)
        try:
            q = _question(self.reader, mode, row, self.root, self.images, self.recon, self.ocr)
            q.message = message(self.reader, mode, row, q, self.how["layout"])
        except _NotScored as exc:
            return out | {"status": NOT_SCORED, "reason": str(exc)}
        except (ImageReadError, OSError) as exc:
            return out | {"status": NOT_SCORED, "reason": f"image: {exc}"}
        return q

    def scored(self, mode: str, row: dict, q: Question | None, raw: str | Exception) -> dict:
        """The row of one answer; an exception (the request or the generation failed) is an
        error row: its reason (:func:`error_reason`), no answer, no score (``hit`` and
        ``exact_match`` empty: left out of the accuracies, never counted wrong)."""
        out = _base(mode, row)
        if isinstance(raw, Exception):
            log.warning("%s %s: %s", mode, out["item_id"], raw)
            return out | {"status": ERROR, "reason": error_reason(raw)}
        return out | score(raw, q.options, row.get("answer", ""), row.get("question_text", ""),
                           self.how["judge"], self.how["extraction"])

    def one(self, mode: str, row: dict) -> dict:
        """Ask the reader one job (readers without ``answer_many``)."""
        q = self.prepare(mode, row)
        if not isinstance(q, Question):
            return q
        try:
            raw = self.reader.answer(q, mode)
        except ImageReadError as exc:  # an image file read when the request was built
            return _base(mode, row) | {"status": NOT_SCORED, "reason": f"image: {exc}"}
        except (RuntimeError, ValueError) as exc:  # ApiError is a RuntimeError
            raw = exc
        return self.scored(mode, row, q, raw)


def _audit_verdicts(path: Path, item_ids: pd.Series) -> list[str]:
    """Per item, the render audit's verdict (:func:`~roundtrip.datasets.rendered.audit.
    judge_verdict`) from ``audit.csv`` beside the manifest; ``not judged`` without one (the
    VISTA-Bench release was audited by its authors)."""
    from roundtrip.datasets.rendered.audit import NOT_JUDGED, judge_verdict

    if not path.is_file():
        return [NOT_JUDGED] * len(item_ids)
    audit = pd.read_csv(path, dtype=str, keep_default_na=False)
    scores = dict(zip(audit["item_id"], audit.get("judge_score", pd.Series(dtype=str))))
    return [judge_verdict(scores.get(i, "")) for i in item_ids]


def _read_ocr(path) -> dict[str, tuple[str, str, str]] | None:
    if path is None:
        return None
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    return {r["item_id"]: (r["text"], r["status"], r["reason"]) for r in df.to_dict("records")}


def _recon_status(recon_dir) -> dict:
    if recon_dir is None:
        raise ValueError("a model's answers need its reconstruction folder")
    df = pd.read_csv(Path(recon_dir) / "status.csv", dtype=str, keep_default_na=False)
    return {"dir": Path(recon_dir),
            "rows": {r["item_id"]: (r["status"], r["reason"]) for r in df.to_dict("records")}}


def _base(mode: str, row: dict) -> dict:
    is_text = mode == TEXT
    return {"item_id": row["question_id"] if is_text else row["item_id"],
            "question_id": row.get("question_id", ""), "mode": mode,
            "category": row.get("category", ""), "subfield": row.get("subfield", ""),
            "source": row.get("source", ""),
            "modality": row.get("modality") or ("multimodal" if row.get("item_images")
                                                else "unimodal"),
            "font": "" if is_text else row.get("font", ""),
            "size": "" if is_text else row.get("font_size_pt", ""),
            # text rows: one per question; VT rows: the question's Table 1 render (App. B.2);
            # manifests without the column hold one render per question
            "table1": "1" if is_text else (row.get("table1") or "1"),
            "audit": "" if is_text else row.get("audit", ""),
            "raw": "", "reasoning": "", "extracted": "", "extracted_by": "",
            "answer": row.get("answer", ""), "hit": math.nan, "exact_match": math.nan,
            "status": OK, "reason": ""}


def _unusable(mode: str, row: dict) -> str | None:
    """Why a manifest row cannot be asked in ``mode``, or None. A row that failed as a whole
    (no question text: a release row that could not be read) keeps its own reason in both
    modes; a render that failed costs only the VT answer."""
    if not row.get("question_text"):
        return row.get("reason") or "no question text"
    if mode == VT and row.get("status") != "ok":
        return f"render: {row.get('reason', '')}"
    return None


class _NotScored(Exception):
    pass


def _question(reader, mode, row, root, images, recon, ocr) -> Question:
    q = Question(item_id=row["item_id"], text=row["question_text"], hint=row.get("hint", ""),
                 options=_options(row), images=images.of(row))
    if mode == TEXT:
        return q
    if recon is not None:
        status, reason = recon["rows"].get(row["item_id"], ("missing", "not reconstructed"))
        if status != "ok":
            raise _NotScored(f"reconstruction {status}: {reason}")
    if reader.needs_ocr:
        text, status, reason = ocr.get(row["item_id"], ("", "missing", "no OCR row"))
        if status != "ok":
            raise _NotScored(f"OCR {status}: {reason}")
        q.ocr_text = text
    else:
        path = (recon["dir"] / f"{row['item_id']}.png" if recon is not None
                else root / row["path"])
        q.question_image = _image_file(path) if images.files else read_image(path)
    return q


def score(raw: str, options: list[tuple[str, str]], answer: str, question: str = "",
          judge: dict | None = None, rule: str = RELEASE) -> dict:
    """Extract and score one raw output (:mod:`roundtrip.evals.vista.extract`).

    Args:
        raw: the reader's output, reasoning trace included.
        options: ``[(letter, text)]``; empty for an open question.
        answer: the reference (a letter; an open question's text).
        question, judge: the judge fallback (off when ``judge`` is None).
        rule: ``release`` (headline) or ``prose``.

    Returns:
        ``raw, reasoning, extracted, extracted_by, hit`` (1.0 or 0.0; invalid counts wrong),
        ``exact_match`` (an open question's exact-match credit, 1.0/0.0; NaN for a
        multiple-choice question) and ``reason`` (why an answer is invalid). An open question
        is ``extracted_by`` ``open``; its ``hit`` is 0.0 under the release's rule (no option,
        no letter: App. C.3's pipeline as released) and its exact match under ``prose``.

    Raises:
        ValueError: an unknown rule.
    """
    if rule not in (RELEASE, PROSE):
        extract_answer("", [], rule)  # raises with the known rules
    reasoning, final = split_reasoning(raw)
    row = {"raw": raw, "reasoning": reasoning}
    if not options:
        exact = float(score_open(final, answer))
        # the release finds no letter without options: never right (can_infer on {} -> Z)
        hit = exact if rule == PROSE else float(answer == extract_answer(final, {}).letter)
        return row | {"extracted": final.strip(), "extracted_by": OPEN, "hit": hit,
                      "exact_match": exact, "reason": ""}
    ex = extract_answer(final, options, rule)
    letter, how, why = ex.letter, ex.how, ex.why
    if letter is None and judge and not is_refusal(final) and final.strip():
        letter = _ask_judge(judge, question, options, final)
        if letter:
            how, why = JUDGE, ""
    return row | {"extracted": letter or "", "extracted_by": how,
                  "hit": float(letter is not None and letter == answer), "exact_match": math.nan,
                  "reason": why}


def _ask_judge(judge: dict, question: str, options, output: str) -> str | None:
    from roundtrip.api.client import client_for

    prompt = (judge.get("prompt") or JUDGE_PROMPT_DEFAULT).format(
        question=question, options="\n".join(f"{k}. {v}" for k, v in options), output=output)
    try:
        reply = client_for(judge["endpoint"]).chat(
            judge["model"], [{"role": "user", "content": prompt}], max_tokens=8, temperature=0.0)
        return judge_letter(reply.text, dict(options))
    except RuntimeError as exc:
        log.warning("judge failed: %s", exc)
        return None

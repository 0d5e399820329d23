"""Render audit: read every render back and score it against its ground truth.

Each item is read with Tesseract in its language (upscaled ``upscale`` times with Lanczos first,
because Tesseract misreads glyphs under about 20 px however clean they are) and scored by CER
(:mod:`roundtrip.metrics.text`); items above ``max_cer`` are flagged, never dropped. Posters are
read region by region (title box, slogan box), so reading order does not count as error.

A VLM judge (VISTA-Bench Appendix B.3) scores renders 0 (misaligned), 1 (acceptable) or
2 (flawless); :class:`RenderJudge` is the interface and :data:`JUDGES` the registry that an API
backend adds itself to. Without a judge, the judge columns say so. Only score 2 is admitted
(:func:`judge_verdict`); the VISTA tables leave the other renders out by default.

A judge that gives no verdict (its answer fails, or is no JSON verdict) leaves the render "not
judged". Where that is so for more than ``audit.max_no_verdict`` of a set's renders (default
:data:`MAX_NO_VERDICT`), the audit did not run: :func:`judge_coverage` counts it from
``audit.csv``, the build logs it, and :func:`audit_findings` says it on the report's first page
("the judge gave no verdict on 21 of 21 renders: the render audit did not run").
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
from PIL import Image

from roundtrip.core.registry import build_registered
from roundtrip.metrics.text import Normalization, text_errors
from roundtrip.readers import JUDGE_TYPES, read_in_batches
from roundtrip.readers.tesseract import TesseractOCR
from roundtrip.readers.vlm import JudgeVerdict

log = logging.getLogger(__name__)

AUDIT_COLUMNS = ["item_id", "status", "reason", "lang", "cer", "wer", "flagged", "ocr_text",
                 "judge", "judge_score", "judge_explanation"]


class RenderJudge(Protocol):
    """A render judge: compares an image with the text it should show.

    ``judge(image, reference)`` takes an ``(H, W, 3)`` uint8 image and the ground-truth text and
    returns a :class:`JudgeVerdict`; it raises ``RuntimeError`` when the judge cannot answer
    (the audit records the reason for that item and goes on).
    """
    name: str

    def judge(self, image: np.ndarray, reference: str) -> JudgeVerdict: ...


#: judge type -> factory(**config) (the readers registry).
JUDGES: dict[str, type] = JUDGE_TYPES


@dataclass(frozen=True)
class AuditSettings:
    """``max_cer``: flag threshold; ``psm``: Tesseract page segmentation mode (6: one block);
    ``upscale``: integer Lanczos factor before OCR; ``threads``: parallel Tesseract processes."""
    max_cer: float = 0.1
    psm: int = 6
    upscale: int = 2
    threads: int = 2


def _upscaled(image: np.ndarray, factor: int) -> np.ndarray:
    if factor <= 1:
        return image
    im = Image.fromarray(image)
    return np.asarray(im.resize((im.width * factor, im.height * factor), Image.LANCZOS))


def _regions(item) -> list[tuple[np.ndarray, str]]:
    """(image, text) pairs to read: the boxed regions of a poster, else the whole image."""
    extra = item.extra or {}
    if "title_box" in extra:
        out = []
        for name in ("title", "slogan"):
            x0, y0, x1, y1 = (int(v) for v in extra[f"{name}_box"].split())
            pad = 8
            crop = item.image[max(0, y0 - pad):y1 + pad, max(0, x0 - pad):x1 + pad]
            out.append((crop, extra[name]))
        return out
    return [(item.image, extra.get("text", ""))]


def audit_items(items: list, settings: AuditSettings, norm: Normalization = Normalization(),
                judge: RenderJudge | None = None) -> pd.DataFrame:
    """Audit rendered items (``roundtrip.datasets.Item`` with ``extra["text"]``, ``["lang"]``).

    Returns:
        DataFrame with :data:`AUDIT_COLUMNS`, one row per item; items that were not rendered
        have ``status=error`` and their reason; ``flagged`` is True when ``cer > max_cer``.

    Raises:
        OCRUnavailable: Tesseract or a language's data is missing (before any work).
    """
    ocr = TesseractOCR(psm=settings.psm)
    langs = sorted({(it.extra or {}).get("lang", "eng") for it in items if it.image is not None})
    if langs:
        ocr.check(langs)

    verdicts = _batch_verdicts(judge, items)

    def one(item, reads: list, verdict) -> dict:
        extra = item.extra or {}
        lang = extra.get("lang", "eng")
        row = dict.fromkeys(AUDIT_COLUMNS, "") | {"item_id": item.item_id, "lang": lang,
                                                  "cer": np.nan, "wer": np.nan}
        if item.image is None:
            return row | {"status": "error", "reason": item.reason, "flagged": True}
        if failed := next((r for r in reads if isinstance(r, Exception)), None):
            return row | {"status": "error", "reason": f"OCR failed: {failed}", "flagged": True}
        hyp = "\n".join(reads)
        ref = "\n".join(t for _, t in _regions(item))
        cer, wer, why = text_errors(ref, hyp, norm.for_language(lang))
        row |= {"status": "ok" if not why else "undefined", "reason": why, "cer": cer,
                "wer": wer, "flagged": bool(not cer <= settings.max_cer), "ocr_text": hyp}
        row |= _judged(judge, item.image, extra.get("text", ""), verdict)
        return row

    reads = _read_regions(ocr, items, settings)
    with ThreadPoolExecutor(max_workers=max(1, settings.threads)) as pool:
        rows = list(pool.map(one, items, reads, verdicts))
    return pd.DataFrame(rows, columns=AUDIT_COLUMNS)


def _read_regions(ocr: TesseractOCR, items: list, settings: AuditSettings) -> list[list]:
    """Per item, the reading of each of its regions (:func:`_regions`; none for an item not
    rendered): a text, or the exception its OCR raised. Regions of one language are read in
    batches, one Tesseract process per batch (:func:`roundtrip.readers.read_in_batches`), and
    upscaled only in their batch's thread."""
    jobs, owners = [], []
    for k, item in enumerate(items):
        if item.image is None:
            continue
        lang = (item.extra or {}).get("lang", "eng")
        for image, _ in _regions(item):
            jobs.append((lang, image))
            owners.append(k)
    texts = read_in_batches(ocr, jobs, lambda image: _upscaled(image, settings.upscale),
                            settings.threads)
    out: list[list] = [[] for _ in items]
    for k, text in zip(owners, texts, strict=True):
        out[k].append(text)
    return out


def _batch_verdicts(judge: RenderJudge | None, items: list) -> list:
    """Per item, the verdict of a judge that scores many renders at once (``judge_many``: an
    in-process VLM batches them on the GPU), or None where the judge is asked item by item."""
    if judge is None or not hasattr(judge, "judge_many"):
        return [None] * len(items)
    rendered = [k for k, item in enumerate(items) if item.image is not None]
    found = judge.judge_many([(items[k].image, (items[k].extra or {}).get("text", ""))
                              for k in rendered])
    out: list = [None] * len(items)
    for k, verdict in zip(rendered, found, strict=True):
        out[k] = verdict
    return out


def _judged(judge: RenderJudge | None, image: np.ndarray, text: str, verdict=None) -> dict:
    """The judge columns of one render; ``verdict``: its verdict (or the exception) when the
    judge scored it in a batch, else the judge is asked now."""
    if judge is None:
        return {"judge": "", "judge_score": np.nan,
                "judge_explanation": "no judge configured (audit.judge)"}
    if verdict is None:
        try:
            verdict = judge.judge(image, text)
        except (RuntimeError, ValueError) as exc:
            verdict = exc
    if isinstance(verdict, Exception):
        return {"judge": judge.name, "judge_score": np.nan, "judge_explanation": f"failed: {verdict}"}
    return {"judge": judge.name, "judge_score": verdict.score,
            "judge_explanation": verdict.explanation}


#: The only judge score admitted into the benchmark: 2, "Flawless" (VISTA-Bench App. B.3).
ADMITTED_SCORE = 2
PASSED, FAILED, NOT_JUDGED = "passed", "failed", "not judged"


def judge_verdict(score) -> str:
    """Whether a render passes VISTA-Bench's audit (App. B.3: only score 2 is admitted).

    Args:
        score: the judge's score (0, 1, 2; a string or number as read from ``audit.csv``), or
            empty/NaN when no judge scored the render.

    Returns:
        :data:`PASSED` (score 2), :data:`FAILED` (0 or 1) or :data:`NOT_JUDGED`. The CER
        read-back (``flagged``) is not the paper's audit and does not enter the verdict: it
        measures Tesseract's reading as much as the render.
    """
    try:
        value = float(score)
    except (TypeError, ValueError):
        return NOT_JUDGED
    if np.isnan(value):
        return NOT_JUDGED
    return PASSED if int(value) == ADMITTED_SCORE else FAILED


#: Default of ``audit.max_no_verdict``: the share of a set's renders the judge may give no
#: verdict on before its audit counts as not run (:meth:`JudgeCoverage.ran`).
MAX_NO_VERDICT = 0.5


@dataclass(frozen=True)
class JudgeCoverage:
    """What the judge of one set's audit answered.

    Attributes:
        judge: the judge's name (``transformers:<model>``, ``vlm:<model>``).
        renders: renders the judge was asked about (the rendered items whose OCR read-back
            worked; the others are not judged).
        no_verdict: of them, those without a verdict (no answer, or no JSON verdict).
        reason: the ``judge_explanation`` of the first of those (``failed: ...``), or "".
    """
    judge: str
    renders: int
    no_verdict: int
    reason: str = ""

    def ran(self, max_no_verdict: float = MAX_NO_VERDICT) -> bool:
        """Whether the audit ran: no more than ``max_no_verdict`` (a share in [0, 1]) of the
        renders went without a verdict (a set with no render asked counts as run)."""
        return self.no_verdict <= max_no_verdict * self.renders


def judge_coverage(audit: pd.DataFrame | str | Path) -> JudgeCoverage | None:
    """:class:`JudgeCoverage` of an audit (its frame, or ``audit.csv``), None where no judge
    was configured (the ``judge`` column is empty on every row)."""
    if not isinstance(audit, pd.DataFrame):
        audit = pd.read_csv(audit, keep_default_na=False, dtype=str)
    judge = audit["judge"].fillna("").astype(str)
    asked = audit[judge != ""]
    if asked.empty:
        return None
    scores = pd.to_numeric(asked["judge_score"], errors="coerce")
    missing = asked[scores.isna()]
    reason = str(missing["judge_explanation"].iloc[0]) if len(missing) else ""
    return JudgeCoverage(str(asked["judge"].iloc[0]), len(asked), len(missing), reason)


def no_verdict_sentence(coverages: dict[str, JudgeCoverage],
                        max_no_verdict: float = MAX_NO_VERDICT) -> str | None:
    """The report's sentence on the sets whose audit did not run (:meth:`JudgeCoverage.ran`),
    e.g. ``The render judge (transformers:/models/tiny) gave no verdict on 21 of 21 renders
    (vista_questions): the render audit did not run (audit.max_no_verdict: 0.5); first reason:
    failed: no JSON object in the response.``; None where every audit ran.

    Args:
        coverages: dataset -> the coverage of its audit (sets without a judge left out).
        max_no_verdict: ``audit.max_no_verdict``.
    """
    bad = {d: c for d, c in coverages.items() if not c.ran(max_no_verdict)}
    if not bad:
        return None
    judges = sorted({c.judge for c in bad.values()})
    n, total = sum(c.no_verdict for c in bad.values()), sum(c.renders for c in bad.values())
    reason = next((" ".join(c.reason.split()) for c in bad.values() if c.reason), "")
    reason = f"; first reason: {reason[:200]}" if reason else ""
    return (f"The render judge ({', '.join(judges)}) gave no verdict on {n} of {total} renders "
            f"({', '.join(bad)}): the render audit did not run (audit.max_no_verdict: "
            f"{max_no_verdict:g}){reason}.")


def audit_findings(config: dict, datasets: list[str] | None = None,
                   root: str | Path = "results") -> list[str]:
    """The report's first-page sentence on the render audit (:func:`no_verdict_sentence`) of a
    run, read from each rendered set's ``{root}/datasets/{dataset}/audit.csv``; none where
    ``audit.judge`` is unset or every audit ran.

    Args:
        config: the run's config (``audit.judge``, ``audit.max_no_verdict``, the datasets).
        datasets: the sets to look at (default every set of the config; those without an
            ``audit.csv``, the sets that are not rendered, are passed over).
        root: the results folder.
    """
    audit_cfg = config.get("audit") or {}
    if not audit_cfg.get("judge"):
        return []
    names = list(config.get("datasets") or {}) if datasets is None else datasets
    coverages = {}
    for d in names:
        path = Path(root) / "datasets" / d / "audit.csv"
        if path.is_file() and (coverage := judge_coverage(path)) is not None:
            coverages[d] = coverage
    sentence = no_verdict_sentence(coverages, audit_cfg.get("max_no_verdict", MAX_NO_VERDICT))
    return [sentence] if sentence else []


def build_judge(spec: dict | None) -> RenderJudge | None:
    """The judge of ``audit.judge`` (``{"type": ..., **options}``), or None when unset.

    Raises:
        ValueError: an unknown judge type (the message lists the registered ones) or bad
            arguments; the message names ``audit.judge``.
    """
    if not spec:
        return None
    return build_registered(JUDGES, spec, "audit.judge", "judge")

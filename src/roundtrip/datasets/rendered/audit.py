"""Render audit: read every render back and score it against its ground truth.

Each item is read with Tesseract in its language (upscaled ``upscale`` times with Lanczos first,
because Tesseract misreads glyphs under about 20 px however clean they are) and scored by CER
(:mod:`roundtrip.metrics.text`); items above ``max_cer`` are flagged, never dropped. Posters are
read region by region (title box, slogan box), so reading order does not count as error.

A VLM judge (VISTA-Bench Appendix B.3) scores renders 0 (misaligned), 1 (acceptable) or
2 (flawless); :class:`RenderJudge` is the interface and :data:`JUDGES` the registry that an API
backend adds itself to. Without a judge, the judge columns say so. Only score 2 is admitted
(:func:`judge_verdict`); the VISTA tables leave the other renders out by default.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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


def build_judge(spec: dict | None) -> RenderJudge | None:
    """The judge of ``audit.judge`` (``{"type": ..., **options}``), or None when unset.

    Raises:
        ValueError: an unknown judge type (the message lists the registered ones) or bad
            arguments; the message names ``audit.judge``.
    """
    if not spec:
        return None
    return build_registered(JUDGES, spec, "audit.judge", "judge")

"""Text preservation of a (model, dataset) (VTBench Task 3): OCR of every reconstruction, then
CER/WER against the OCR of the original and against the ground truth (no torch import).

Every manifest item gets a row; unscorable items carry ``status`` and ``reason``.
"""
from __future__ import annotations

import io
import logging
import math
from pathlib import Path

import pandas as pd

from roundtrip.core.manifest import read_item_csv, read_manifest
from roundtrip.core.recon_items import ReconContext
from roundtrip.metrics.text import Normalization, raw_text_errors, text_errors

log = logging.getLogger(__name__)

TEXT_COLUMNS = ["item_id", "status", "reason", "cer", "wer", "cer_gt", "wer_gt",
                "cer_norm", "wer_norm", "cer_gt_norm", "wer_gt_norm"]


def score_text(manifest_path: str | Path, ocr_original: str | Path, ocr_model: str | Path,
               status_path: str | Path | None, norm: Normalization) -> pd.DataFrame:
    """CER/WER of each reconstruction's OCR against the original's OCR (``cer``, ``wer``) and
    against ground-truth text where the manifest has it (``cer_gt``, ``wer_gt``).

    ``cer``, ``wer``, ``cer_gt``, ``wer_gt`` are VTBench App. F Eqs. 3-4 on the texts as they are
    (:func:`~roundtrip.metrics.text.raw_text_errors`); the ``*_norm`` columns are the same rates
    after ``norm`` (roundtrip's variant, :func:`~roundtrip.metrics.text.text_errors`).

    Returns:
        DataFrame with :data:`TEXT_COLUMNS`; undefined values are NaN with the reason.
    """
    manifest = read_manifest(manifest_path)
    orig = read_item_csv(ocr_original).set_index("item_id")
    hyp = read_item_csv(ocr_model).set_index("item_id")  # a path or a file-like object
    status = read_item_csv(status_path).set_index("item_id") if status_path else None
    has_gt = "text" in manifest.columns
    rows = []
    for _, item in manifest.iterrows():
        item_id = item["item_id"]
        row = dict.fromkeys(TEXT_COLUMNS, math.nan) | {"item_id": item_id, "status": "ok",
                                                       "reason": ""}
        reason = _unscorable(item_id, status, orig, hyp)
        if reason:
            row.update(status="error" if "unsupported" not in reason else "unsupported",
                       reason=reason)
            rows.append(row)
            continue
        hyp_text = hyp.loc[item_id, "text"]
        item_norm = norm.for_language(item.get("lang", ""))
        reasons = _score_into(row, "", orig.loc[item_id, "text"], hyp_text, item_norm,
                              "vs OCR of original")
        if has_gt and item.get("text", ""):
            reasons += _score_into(row, "_gt", item["text"], hyp_text, item_norm,
                                   "vs ground truth")
        row["reason"] = "; ".join(reasons)
        if reasons and all(math.isnan(row[k]) for k in ("cer", "cer_gt")):
            row["status"] = "undefined"
        rows.append(row)
    return pd.DataFrame(rows, columns=TEXT_COLUMNS)


def _score_into(row: dict, suffix: str, reference, hypothesis, norm: Normalization,
                against: str) -> list[str]:
    """Write ``cer{suffix}``/``wer{suffix}`` (as written) and their ``_norm`` twins into
    ``row``; return the reasons of undefined values."""
    reference = "" if pd.isna(reference) else str(reference)
    hypothesis = "" if pd.isna(hypothesis) else str(hypothesis)
    c, w, why = raw_text_errors(reference, hypothesis)
    cn, wn, why_norm = text_errors(reference, hypothesis, norm)
    row.update({f"cer{suffix}": c, f"wer{suffix}": w,
                f"cer{suffix}_norm": cn, f"wer{suffix}_norm": wn})
    reasons = [f"{against}: {why}"] if why else []
    if why_norm and why_norm != why:
        reasons.append(f"{against} (normalized): {why_norm}")
    return reasons


def _unscorable(item_id, status, orig, hyp) -> str:
    if status is not None:
        if item_id not in status.index:
            return "no reconstruction status recorded"
        if status.loc[item_id, "status"] != "ok":
            return f"reconstruction {status.loc[item_id, 'status']}: {status.loc[item_id, 'reason']}"
    for name, table in (("original", orig), ("reconstruction", hyp)):
        if item_id not in table.index:
            return f"no OCR of the {name}"
        if table.loc[item_id, "status"] != "ok":
            return f"OCR of the {name} failed: {table.loc[item_id, 'reason']}"
    return ""



def text_dataset_kinds(manifests: dict[str, str | Path], default_langs: dict[str, str]
                       ) -> tuple[dict[str, bool], set[str]]:
    """Which text datasets have ground truth, and which are in scripts without word spaces.

    Args:
        manifests: ``dataset -> manifest path``.
        default_langs: ``dataset -> datasets.<name>.lang`` for manifests without a ``lang`` column.

    Returns:
        ``(dataset -> has ground-truth text, datasets where WER is undefined)``.
    """
    has_gt, cer_only = {}, set()
    for dataset, path in manifests.items():
        m = read_manifest(path)
        has_gt[dataset] = "text" in m.columns and bool((m["text"] != "").any())
        langs = set(m["lang"]) if "lang" in m.columns else {default_langs[dataset]}
        if all(Normalization().for_language(lang).remove_whitespace for lang in langs):
            cer_only.add(dataset)
    return has_gt, cer_only


def score_reconstructions(ctx: ReconContext, options: dict) -> dict[str, pd.DataFrame]:
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): for every OCR engine, the
    OCR of the reconstructions (``ocr_{engine}``) and their CER/WER (``text_{engine}``).

    Args:
        options: ``engines`` (``ocr.engines``: name -> spec), ``ocr_original`` (name -> the
            OCR file of the originals), ``lang`` (the dataset's language), ``normalization``
            (``ocr.normalization``).
    """
    from roundtrip.readers import build_ocr
    from roundtrip.stages.ocr import languages, ocr_dataset

    norm = Normalization.from_config(options["normalization"])
    out = {}
    for name, spec in options["engines"].items():
        engine = build_ocr(name, spec)
        log.info("%s version %s", name, engine.check(languages(ctx.manifest, options["lang"])))
        rows = ocr_dataset(engine, ctx.manifest, options["lang"], ctx.status,
                           threads=getattr(engine, "concurrency", ctx.threads))
        # scored from its CSV text, as a separate job reading the file would score it
        text = io.StringIO(rows.to_csv(index=False))
        out[f"ocr_{name}"] = rows
        out[f"text_{name}"] = score_text(ctx.manifest, options["ocr_original"][name], text,
                                         ctx.status, norm)
    return out

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

from roundtrip.core.imaging import read_image, same_pixels
from roundtrip.core.manifest import read_item_csv, read_manifest
from roundtrip.core.recon_items import ReconItem
from roundtrip.core.scoring import ReconScorer
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


class TextScorer(ReconScorer):
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): for every OCR engine, the
    OCR of the reconstructions (``ocr_{engine}``) and their CER/WER (``text_{engine}``).

    Options: ``engines`` (``ocr.engines``: name -> spec), ``ocr_original`` (name -> the OCR file
    of the originals), ``lang`` (the dataset's language; an item's own ``lang`` wins),
    ``normalization`` (``ocr.normalization``).

    Records: ``{engine: (text, status, reason)}`` of a reconstructed item, None of the others.
    """

    def __init__(self, ctx, options: dict):
        super().__init__(ctx, options)
        self._engines, self._originals = None, {}

    def record_options(self, options: dict) -> dict:
        # the normalization is applied in finish: changing it reads nothing again
        return {k: v for k, v in options.items() if k != "normalization"}

    def complete(self, record) -> bool:
        # an engine that failed on the item (an API timeout...) reads it again on a rerun
        return record is None or all(status == "ok" for _, status, _ in record.values())

    def _built(self) -> dict:
        from roundtrip.readers import build_ocr
        from roundtrip.stages.ocr import languages

        if self._engines is None:
            self._engines = {}
            for name, spec in self.options["engines"].items():
                engine = build_ocr(name, spec)
                log.info("%s version %s", name,
                         engine.check(languages(self.ctx.manifest, self.options["lang"])))
                self._engines[name] = engine
        return self._engines

    def score(self, items: list[ReconItem]) -> list:
        from roundtrip.readers import ocr_items

        ok = [item for item in items if item.status == "ok"]
        if not ok:
            return [None] * len(items)
        read = {}
        for name, engine in self._built().items():
            same = self._same_as_original(name, engine, ok)
            triples = [(i.item_id, i.read_reconstruction(),
                        i.fields.get("lang") or self.options["lang"])
                       for i in ok if i.item_id not in same]
            rows = ocr_items(engine, triples,
                             threads=getattr(engine, "concurrency", self.ctx.threads))
            for r in rows.itertuples():
                read.setdefault(r.item_id, {})[name] = (r.text, r.status, r.reason)
            for item_id, reading in same.items():
                read.setdefault(item_id, {})[name] = reading
        return [read.get(item.item_id) for item in items]

    def _same_as_original(self, name: str, engine, items: list[ReconItem]) -> dict:
        """Item -> the original's reading, for the items whose reconstruction is pixel for
        pixel their dataset original (a lossless model): a deterministic engine reads them as
        it read the original (``ocr_original``), so they are not read again. The comparison is
        with the dataset's file, not with the item's reference path: a reference saved as a
        copy with the original's pixels (a status file of an earlier version, a protocol of a
        user's) counts as the original."""
        if not getattr(engine, "deterministic", False):
            return {}
        original = self._original_readings(name)
        same = {}
        for item in items:
            reading = original.get(item.item_id)
            if reading and reading[1] == "ok" and self._is_original(item):
                same[item.item_id] = reading
        return same

    def _is_original(self, item: ReconItem) -> bool:
        """The reconstruction has the shape, dtype and pixels of the dataset's original file."""
        rec = item.read_reconstruction()
        if not same_pixels(item.read_reference(), rec):  # the model's input is the reference
            return False
        path = self.ctx.manifest.parent / item.fields.get("path", "")
        if item.reference == path:
            return True
        try:  # a protocol's copy of the reference: ocr_original read the dataset's file
            return same_pixels(read_image(path), rec)
        except (OSError, ValueError):  # ImageReadError is a ValueError
            return False

    def _original_readings(self, name: str) -> dict:
        if name not in self._originals:
            rows = read_item_csv(self.options["ocr_original"][name])
            self._originals[name] = {r.item_id: (r.text, r.status, r.reason)
                                     for r in rows.itertuples()}
        return self._originals[name]

    def finish(self, items: list[ReconItem], records: list) -> dict[str, pd.DataFrame]:
        norm = Normalization.from_config(self.options["normalization"])
        out = {}
        for name in self.options["engines"]:
            rows = ocr_rows(items, [r[name] if r else None for r in records])
            # scored from its CSV text, as a separate job reading the file would score it
            text = io.StringIO(rows.to_csv(index=False))
            out[f"ocr_{name}"] = rows
            out[f"text_{name}"] = score_text(self.ctx.manifest, self.options["ocr_original"][name],
                                             text, self.ctx.status, norm)
        return out


def ocr_rows(items: list[ReconItem], records: list) -> pd.DataFrame:
    """The OCR file of a model's reconstructions: ``item_id, text, status, reason``, the read
    items in manifest order, then the items without an image (``status=error``, ``no image to
    read``), as :func:`roundtrip.stages.ocr.ocr_dataset` writes it."""
    read = [{"item_id": i.item_id, "text": r[0], "status": r[1], "reason": r[2]}
            for i, r in zip(items, records) if r is not None]
    skipped = [{"item_id": i.item_id, "text": "", "status": "error", "reason": "no image to read"}
               for i, r in zip(items, records) if r is None]
    return pd.concat([pd.DataFrame(read, columns=["item_id", "text", "status", "reason"]),
                      pd.DataFrame(skipped, columns=["item_id", "text", "status", "reason"])],
                     ignore_index=True)

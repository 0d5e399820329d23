"""Text preservation of a (model, dataset) (VTBench Task 3): OCR of every reconstruction, then
CER/WER against the OCR of the original and against the ground truth.

Two readings, two conventions:

* the released evaluator's (the headline, ``*_vtbench``): both images at 256 x 256, read after
  a resize to 1024 x 1024 (:func:`~roundtrip.evals.vtbench.released.ocr_view`); CER and WER of
  the set as its ``CharacterErrorRate``/``WordErrorRate`` sum them
  (:class:`~roundtrip.evals.vtbench.released.ReleasedTextRates`), with Eq. 4's word-level WER
  pooled the same way beside (``wer_words_vtbench``). Read for the text sets of Table 3, not
  for question sets (VISTA-Bench renders), whose reconstructions only other evaluations read;
* roundtrip's (``cer``, ``wer`` and their ``_norm``/``_gt`` twins): the images at the size the
  model was scored at, App. F Eqs. 3-4 per item, then the mean over items.

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
#: Per-item columns of the released evaluator's reading (:func:`released_text_rows`): the
#: item's rates and the counts the set's rates sum.
RELEASED_TEXT_COLUMNS = ["cer_vtbench", "wer_vtbench", "wer_words_vtbench", "edits_vtbench",
                         "chars_vtbench", "wer_edits_vtbench", "word_edits_vtbench",
                         "words_vtbench"]
#: The OCR file of the released evaluator's reading: both images of each item.
VIEW_OCR_COLUMNS = ["item_id", "text_original", "text", "status", "reason"]
#: Why a text set has no released CER/WER.
NO_VIEW = ("the released evaluator's OCR (256 -> 1024 px) is read for Table 3's text sets, "
           "not for question sets")


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



def released_text_rows(per_item: pd.DataFrame, readings: dict[str, tuple]
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The released evaluator's CER/WER of a set, added to the per-item text frame.

    Args:
        per_item: :func:`score_text`'s frame (manifest order).
        readings: ``item_id -> (text of the original, text of the reconstruction, status,
            reason)`` of the released reading (:func:`~roundtrip.evals.vtbench.released.ocr_view`
            of both evaluated images) of the reconstructed items.

    Returns:
        ``(per_item with RELEASED_TEXT_COLUMNS, set rows)``: the set rows ``cer_vtbench``,
        ``wer_vtbench``, ``wer_words_vtbench`` (``metric, value, n, note``) sum the counts of the
        items read, as the released metrics' states do; an item whose reading failed is left
        out of the sums and its row says why.
    """
    from roundtrip.evals.vtbench.released import ReleasedTextRates, released_text_counts

    out = per_item.copy()
    for col in RELEASED_TEXT_COLUMNS:
        out[col] = math.nan
    rates, reasons = ReleasedTextRates(), []
    for j, item_id in enumerate(out["item_id"]):
        if item_id not in readings:
            continue
        original, text, status, reason = readings[item_id]
        if status != "ok":
            reasons.append(f"{item_id}: {reason}")
            note = f"released OCR: {reason}"
            out.loc[j, "reason"] = "; ".join(r for r in (out.loc[j, "reason"], note) if r)
            continue
        counts = released_text_counts(original, text)
        rates.add(counts)
        chars, words = counts["chars"], counts["words"]
        out.loc[j, RELEASED_TEXT_COLUMNS] = [
            counts["edits"] / chars if chars else math.nan,
            counts["wer_edits"] / words if words else math.nan,
            counts["word_edits"] / words if words else math.nan,
            *(counts[k] for k in ("edits", "chars", "wer_edits", "word_edits", "words"))]
    return out, released_set_rows(rates, reasons)


def original_view_readings(engine, manifest_path: str | Path, lang: str, threads: int = 1
                           ) -> pd.DataFrame:
    """The released evaluator's reading of a dataset's originals: each original's 256 px copy
    resized to 1024 px (:func:`~roundtrip.evals.vtbench.released.ocr_view`), read by ``engine``.
    A model whose reference is the original reuses it (:class:`TextScorer`).

    Returns:
        Rows ``item_id, text, status, reason`` of the readable items in manifest order, an
        unreadable file as a row with its reason.
    """
    from roundtrip.core.imaging import ImageReadError
    from roundtrip.evals.vtbench.released import evaluated_view, ocr_view
    from roundtrip.readers import ocr_items

    manifest = read_manifest(manifest_path)
    root, parts, jobs, failed = Path(manifest_path).parent, [], [], []
    for r in manifest.itertuples():
        if r.status != "ok":
            continue
        try:
            image = ocr_view(evaluated_view(read_image(root / r.path)))
        except (ImageReadError, ValueError) as exc:
            failed.append({"item_id": r.item_id, "text": "", "status": "error",
                           "reason": str(exc)})
            continue
        jobs.append((r.item_id, image, getattr(r, "lang", "") or lang))
        if len(jobs) == _VIEW_CHUNK:  # a few 1024 px images in memory at a time
            parts.append(ocr_items(engine, jobs, threads=threads))
            jobs = []
    parts.append(ocr_items(engine, jobs, threads=threads))
    rows = pd.concat([*parts, pd.DataFrame(failed, columns=["item_id", "text", "status",
                                                             "reason"])], ignore_index=True)
    order = {i: k for k, i in enumerate(manifest["item_id"])}
    return rows.sort_values("item_id", key=lambda c: c.map(order), kind="stable",
                            ignore_index=True)


#: Originals read at once by :func:`original_view_readings` (3 MB each at 1024 px).
_VIEW_CHUNK = 32


def released_set_rows(rates, reasons: list[str] | None = None, note: str = "") -> pd.DataFrame:
    """Set rows ``cer_vtbench``, ``wer_vtbench``, ``wer_words_vtbench`` of a
    :class:`~roundtrip.evals.vtbench.released.ReleasedTextRates` (or NaN with ``note``)."""
    values = rates.rates() if rates is not None else {}
    n = rates.n if rates is not None else 0
    if rates is not None and n and not rates.sums["chars"]:
        note = "the OCR of every original is empty: 0.0, as the released metric returns"
    elif reasons:
        note = f"{len(reasons)} item(s) not read: {reasons[0]}" + (" ..." if len(reasons) > 1
                                                                   else "")
    rows = [{"metric": f"{m}_vtbench", "value": values.get(m, math.nan), "n": n, "note": note}
            for m in ("cer", "wer", "wer_words")]
    return pd.DataFrame(rows, columns=["metric", "value", "n", "note"])


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
    OCR of the reconstructions at the scored size (``ocr_{engine}``) and their CER/WER
    (``text_{engine}``), and, for Table 3's text sets, the released evaluator's reading of both
    images (``ocr_vtbench_{engine}``) and its CER/WER of the set (``text_set_{engine}``).

    Options: ``engines`` (``ocr.engines``: name -> spec), ``ocr_original`` (name -> the OCR file
    of the originals), ``ocr_original_vtbench`` (name -> the originals' released reading, or
    None: no released reading of this set, whose ``text_set_*`` rows then say so; without the
    key, neither ``text_set_*`` nor ``ocr_vtbench_*`` is written), ``lang`` (the dataset's
    language; an item's own ``lang`` wins), ``normalization`` (``ocr.normalization``).

    Records: ``{engine: (text, status, reason)}`` of a reconstructed item, with
    ``{engine + "@vtbench": (text of the original, text, status, reason)}`` for the released
    reading; None of the others.
    """

    def __init__(self, ctx, options: dict):
        super().__init__(ctx, options)
        self._engines, self._originals, self._views = None, {}, {}

    def record_options(self, options: dict) -> dict:
        # the normalization is applied in finish: changing it reads nothing again
        return {k: v for k, v in options.items() if k != "normalization"}

    def complete(self, record) -> bool:
        # an engine that failed on the item (an API timeout...) reads it again on a rerun
        return record is None or all(r[-2] == "ok" for r in record.values())

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

    def _lang(self, item: ReconItem) -> str:
        return item.fields.get("lang") or self.options["lang"]

    def score(self, items: list[ReconItem]) -> list:
        from roundtrip.readers import ocr_items

        ok = [item for item in items if item.status == "ok"]
        if not ok:
            return [None] * len(items)
        read = {}
        for name, engine in self._built().items():
            same = self._same_as_original(name, engine, ok)
            triples = [(i.item_id, i.read_reconstruction(), self._lang(i))
                       for i in ok if i.item_id not in same]
            rows = ocr_items(engine, triples,
                             threads=getattr(engine, "concurrency", self.ctx.threads))
            for r in rows.itertuples():
                read.setdefault(r.item_id, {})[name] = (r.text, r.status, r.reason)
            for item_id, reading in same.items():
                read.setdefault(item_id, {})[name] = reading
            if (self.options.get("ocr_original_vtbench") or {}).get(name):
                for item_id, reading in self._released_readings(name, engine, ok).items():
                    read[item_id][f"{name}@vtbench"] = reading
        return [read.get(item.item_id) for item in items]

    def _released_readings(self, name: str, engine, items: list[ReconItem]) -> dict:
        """Item -> ``(text of the original, text of the reconstruction, status, reason)``: the
        OCR of both evaluated (256 px) images resized to 1024 px, as the released evaluator
        reads them. The original's reading comes from the originals' file when the item's
        reference is the dataset's file; a reconstruction whose evaluated image equals the
        original's is not read again by a deterministic engine."""
        from roundtrip.evals.vtbench.released import evaluated_view, ocr_view
        from roundtrip.readers import ocr_items

        originals = self._view_readings(name)
        deterministic = getattr(engine, "deterministic", False)
        jobs, views, known = [], {}, {}
        for item in items:
            ref_view = evaluated_view(item.read_reference())
            rec_view = evaluated_view(item.read_reconstruction())
            stored = originals.get(item.item_id)
            if stored and stored[1] == "ok" and item.reference == self._dataset_file(item):
                known[(item.item_id, "original")] = stored
            else:
                jobs.append(((item.item_id, "original"), ocr_view(ref_view), self._lang(item)))
            views[item.item_id] = deterministic and same_pixels(ref_view, rec_view)
            if not views[item.item_id]:
                jobs.append(((item.item_id, "text"), ocr_view(rec_view), self._lang(item)))
        rows = ocr_items(engine, [(k, image, lang) for k, image, lang in jobs],
                         threads=getattr(engine, "concurrency", self.ctx.threads))
        for key, r in zip([k for k, _, _ in jobs], rows.itertuples()):
            known[key] = (r.text, r.status, r.reason)
        out = {}
        for item in items:
            original = known[(item.item_id, "original")]
            text = original if views[item.item_id] else known[(item.item_id, "text")]
            failed = [f"{w}: {r[2]}" for w, r in (("original", original), ("reconstruction", text))
                      if r[1] != "ok"]
            out[item.item_id] = (original[0] if original[1] == "ok" else "",
                                 text[0] if text[1] == "ok" else "",
                                 "error" if failed else "ok", "; ".join(failed))
        return out

    def _dataset_file(self, item: ReconItem) -> Path:
        return self.ctx.manifest.parent / item.fields.get("path", "")

    def _view_readings(self, name: str) -> dict:
        """Item -> the released reading of the dataset original ``(text, status, reason)``."""
        if name not in self._views:
            rows = read_item_csv(self.options["ocr_original_vtbench"][name])
            self._views[name] = {r.item_id: (r.text, r.status, r.reason)
                                 for r in rows.itertuples()}
        return self._views[name]

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
        path = self._dataset_file(item)
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
        views = self.options.get("ocr_original_vtbench") or {}
        out = {}
        for name in self.options["engines"]:
            rows = ocr_rows(items, [r[name] if r else None for r in records])
            # scored from its CSV text, as a separate job reading the file would score it
            text = io.StringIO(rows.to_csv(index=False))
            out[f"ocr_{name}"] = rows
            per_item = score_text(self.ctx.manifest, self.options["ocr_original"][name], text,
                                  self.ctx.status, norm)
            readings = {i.item_id: r[f"{name}@vtbench"] for i, r in zip(items, records)
                        if r and f"{name}@vtbench" in r}
            if views.get(name):
                per_item, set_rows = released_text_rows(per_item, readings)
            else:
                per_item = per_item.assign(**dict.fromkeys(RELEASED_TEXT_COLUMNS, math.nan))
                set_rows = released_set_rows(None, note=NO_VIEW)
            out[f"text_{name}"] = per_item
            if "ocr_original_vtbench" not in self.options:
                continue  # a caller without the released reading: the per-item file only
            out[f"text_set_{name}"] = set_rows
            out[f"ocr_vtbench_{name}"] = pd.DataFrame(
                [{"item_id": k, "text_original": v[0], "text": v[1], "status": v[2],
                  "reason": v[3]} for k, v in readings.items()], columns=VIEW_OCR_COLUMNS)
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

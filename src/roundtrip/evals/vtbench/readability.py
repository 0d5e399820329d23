"""Readability of the references of the CER/WER columns: how well an OCR engine reads the
originals, in each view a column reads them.

Every CER/WER "vs OCR of the original" column (VTBench App. F: the OCR of a reconstruction
against the OCR of its original) scores the reconstruction against the engine's reading of the
original. Where the engine cannot read the original in that view, the column compares one
unreadable text with another, and its numbers say nothing about the model. Two views are read:

* ``vtbench``: the released evaluator's, the original's 256 x 256 copy read after a resize to
  1024 x 1024 (``results/ocr/{engine}/original/{dataset}.vtbench.csv``), the reference of the
  ``*_vtbench`` columns (CER/WER (VTBench eval.), WER (Eq. 4, words));
* ``full``: the dataset's original file as built (``results/ocr/{engine}/original/{dataset}.csv``),
  the reference of roundtrip's per-item ``cer``/``wer`` and their ``(norm.)`` twins.

The measure, per (dataset, engine, view), from those files (nothing is read again):

* a set with ground truth (manifest ``text``): the mean over items of the CER of the original's
  reading against the ground truth after ``ocr.normalization`` (App. F Eq. 3,
  :func:`roundtrip.metrics.text.text_errors`: the definition of the ``(GT)`` ``(norm.)``
  columns and of the render audit), over the items with ground truth and a reading;
* every set: the share of the readings that are empty after that normalization.

A reference is *unreadable* where its CER against the ground truth exceeds
``ocr.readability.max_cer`` or its share of empty readings exceeds ``ocr.readability.max_empty``
(:class:`Thresholds`, both 0.5 by default: most of the text, or most of the pages, lost in the
reading). The cells that score against an unreadable reference keep their values and get a
footnote naming the reference and its figure (:func:`flag_cells`, :func:`flag_agreement`); the
report's first page leaves them out of its ranking.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from roundtrip.core.manifest import read_item_csv, read_manifest
from roundtrip.metrics.text import Normalization, normalize_text, text_errors

#: The table's name (``results/tables/ocr_readability.{csv,md,tex}``).
READABILITY_TABLE = "ocr_readability"
#: The released evaluator's view (256 px copy read at 1024 px) and the dataset file's.
VTBENCH_VIEW, FULL_VIEW = "vtbench", "full"
#: View -> how the table names it.
VIEWS = {VTBENCH_VIEW: "256 -> 1024 px (VTBench eval.)", FULL_VIEW: "full size"}
#: Metric (a column of the text tables) -> the view of the reference it is scored against;
#: the ground-truth columns (``*_gt*``) have no OCR reference and are not here.
VIEW_OF_METRIC = {**dict.fromkeys(("cer_vtbench", "wer_vtbench", "wer_words_vtbench"),
                                  VTBENCH_VIEW),
                  **dict.fromkeys(("cer", "wer", "cer_norm", "wer_norm"), FULL_VIEW)}
#: The table's columns (CSV): ``items`` manifest items built, ``read`` readings of the
#: originals that succeeded, ``gt_items`` those with ground truth, ``cer_gt`` (NaN without
#: ground truth), ``empty_share`` in [0, 1], ``readable`` ``yes``/``no``/``n/a``, ``over``
#: (the measures above their thresholds: ``cer``, ``empty``, ``cer+empty`` or empty),
#: ``max_cer``/``max_empty`` (the thresholds), ``reason`` (why not: the footnote of the flagged
#: cells), ``tables`` (the tables whose columns score against this reference), ``reference``
#: (the file of the readings).
COLUMNS = ["dataset", "engine", "view", "items", "read", "gt_items", "cer_gt", "empty_share",
           "readable", "over", "max_cer", "max_empty", "reason", "tables", "reference"]


@dataclass(frozen=True)
class Thresholds:
    """When a reference is unreadable (``ocr.readability``): a CER against the ground truth
    above ``max_cer``, or a share of empty readings above ``max_empty`` (both in [0, 1] for
    the share, >= 0 for the CER; strict inequalities)."""
    max_cer: float = 0.5
    max_empty: float = 0.5

    @classmethod
    def from_config(cls, cfg: dict | None) -> "Thresholds":
        """From ``ocr.readability`` (missing keys: the defaults)."""
        cfg = dict(cfg or {})
        return cls(**{k: float(cfg[k]) for k in ("max_cer", "max_empty") if k in cfg})


def reference_file(engine: str, dataset: str, view: str) -> str:
    """The OCR file of the originals that ``view`` reads: ``results/ocr/{engine}/original/
    {dataset}.csv`` (``full``) or ``.vtbench.csv`` (``vtbench``), as ``ocr_original`` and
    ``ocr_original_sets`` write them.

    Raises:
        KeyError: an unknown view.
    """
    suffix = {FULL_VIEW: ".csv", VTBENCH_VIEW: ".vtbench.csv"}[view]
    return f"results/ocr/{engine}/original/{dataset}{suffix}"


def references(datasets: list[str], engines: dict[str, list[str]], released: set[str] | list
               ) -> list[dict]:
    """Every reference a text table scores against: per dataset, per engine reading it, the
    ``full`` view and, for the sets with the released reading (``released``), the ``vtbench``
    view. Entries ``{"dataset", "engine", "view", "path"}`` in that order."""
    out = []
    for d in datasets:
        for e in engines[d]:
            views = (FULL_VIEW, VTBENCH_VIEW) if d in released else (FULL_VIEW,)
            out += [{"dataset": d, "engine": e, "view": v, "path": reference_file(e, d, v)}
                    for v in views]
    return out


def reference_readability(readings: pd.DataFrame, manifest: pd.DataFrame, lang: str,
                          norm: Normalization = Normalization()) -> dict:
    """How well one engine read one set's originals in one view.

    Args:
        readings: the OCR file of the originals (``item_id, text, status, reason``).
        manifest: the set's manifest (:func:`roundtrip.core.manifest.read_manifest`); its
            ``text`` column is the ground truth, its ``lang`` column an item's language.
        lang: the set's language (``datasets.<name>.lang``) for items without one.
        norm: ``ocr.normalization``; Chinese and Japanese items drop whitespace
            (:meth:`~roundtrip.metrics.text.Normalization.for_language`).

    Returns:
        ``items`` (manifest items with status ok), ``read`` (readings with status ok of those
        items), ``gt_items`` (those with non-empty ground truth), ``cer_gt`` (mean over them of
        the normalized CER of the reading against the ground truth; NaN with none; >= 0, may
        exceed 1), ``empty_share`` (share of the ``read`` readings empty after normalization,
        in [0, 1]; NaN with none; ``empty`` their count), ``failed`` (the first failed
        reading's reason, or ``""``).
    """
    ok = manifest[manifest["status"] == "ok"]
    rows = readings[readings["item_id"].astype(str).isin(set(ok["item_id"].astype(str)))]
    good = rows[rows["status"] == "ok"]
    failed = rows[rows["status"] != "ok"]
    first = ok.drop_duplicates("item_id")
    fields = first.set_index(first["item_id"].astype(str))
    cers, empty = [], 0
    for item_id, text in zip(good["item_id"].astype(str), good["text"]):
        item = fields.loc[item_id]
        item_lang = (item.get("lang", "") if "lang" in fields.columns else "") or lang
        item_norm = norm.for_language(item_lang)
        reading = "" if pd.isna(text) else str(text)
        empty += not normalize_text(reading, item_norm)
        truth = str(item.get("text", "")) if "text" in fields.columns else ""
        if normalize_text(truth, item_norm):
            cers.append(text_errors(truth, reading, item_norm)[0])
    n = len(good)
    return {"items": len(ok), "read": n, "gt_items": len(cers),
            "cer_gt": sum(cers) / len(cers) if cers else math.nan, "empty": empty,
            "empty_share": empty / n if n else math.nan,
            "failed": str(failed["reason"].iloc[0]) if len(failed) else ""}


def verdict(figures: dict, engine: str, view: str, thresholds: Thresholds
            ) -> tuple[str, list[str], str]:
    """``(readable, over, reason)`` of one reference's :func:`reference_readability` figures:
    ``("yes", [], "")``; ``("no", over, why)`` where the CER against the ground truth exceeds
    ``max_cer`` (``"cer"`` in ``over``) or the share of empty readings exceeds ``max_empty``
    (``"empty"``), ``why`` naming the engine, the view and each figure over its threshold (the
    footnote of the flagged cells); or ``("n/a", [], why)`` where no original was read."""
    if not figures["read"]:
        why = f"no reading of the originals by {engine} at {VIEWS[view]}"
        return "n/a", [], why + (f" ({figures['failed']})" if figures["failed"] else "")
    over, why = [], []
    cer = figures["cer_gt"]
    if not math.isnan(cer) and cer > thresholds.max_cer:
        over.append("cer")
        why.append(f"{engine} reads the originals at {VIEWS[view]} with CER {cer:.4f} against "
                   f"the ground truth (above ocr.readability.max_cer {thresholds.max_cer:g})")
    share = figures["empty_share"]
    if share > thresholds.max_empty:
        over.append("empty")
        why.append(f"{figures['empty']} of {figures['read']} of {engine}'s readings of the "
                   f"originals at {VIEWS[view]} are empty (share {share:.2f}, above "
                   f"ocr.readability.max_empty {thresholds.max_empty:g})")
    return ("no" if over else "yes"), over, "; ".join(why)


def readability_table(refs: list[dict], manifests: dict[str, str | Path],
                      langs: dict[str, str], norm: Normalization, thresholds: Thresholds,
                      table_engine: str | None = None) -> pd.DataFrame:
    """The readability of every reference (:func:`references`), one row each
    (:data:`COLUMNS`), computed from the OCR files of the originals.

    Args:
        refs: ``{"dataset", "engine", "view", "path"}`` entries.
        manifests: dataset -> its manifest.
        langs: dataset -> ``datasets.<name>.lang``.
        norm: ``ocr.normalization``.
        table_engine: the engine of ``text_preservation`` (``tables.ocr_engine``): its rows
            name that table among those scoring against them (``tables``); every engine's rows
            name ``ocr_robustness``, and ``ocr_rank_agreement`` where the view is the one it
            ranks by (the released view where the set has it).
    """
    released = {r["dataset"] for r in refs if r["view"] == VTBENCH_VIEW}
    rows, read = [], {}
    for ref in refs:
        d, e, v = ref["dataset"], ref["engine"], ref["view"]
        if d not in read:
            read[d] = read_manifest(manifests[d])
        figures = reference_readability(read_item_csv(ref["path"]), read[d], langs.get(d, ""),
                                        norm)
        readable, over, reason = verdict(figures, e, v, thresholds)
        ranked = v == (VTBENCH_VIEW if d in released else FULL_VIEW)
        tables = (["text_preservation"] * (e == table_engine) + ["ocr_robustness"]
                  + ["ocr_rank_agreement"] * ranked)
        rows.append({"dataset": d, "engine": e, "view": v,
                     **{k: figures[k] for k in ("items", "read", "gt_items", "cer_gt",
                                                "empty_share")},
                     "readable": readable, "over": "+".join(over),
                     "max_cer": thresholds.max_cer, "max_empty": thresholds.max_empty,
                     "reason": reason, "tables": ", ".join(tables),
                     "reference": str(ref["path"])})
    return pd.DataFrame(rows, columns=COLUMNS)


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as the Markdown, LaTeX and the report print it: dataset, engine, view (as
    :data:`VIEWS` names it), originals read (``read of items``), CER vs ground truth, share of
    empty readings, readable (``no`` with the measures over their thresholds, e.g.
    ``no (CER)``)."""
    names = {"cer": "CER", "empty": "empty"}

    def shown(readable: str, over: str) -> str:
        over = ", ".join(names[m] for m in str(over or "").split("+") if m in names)
        return f"{readable} ({over})" if readable == "no" and over else readable

    return pd.DataFrame({
        "dataset": frame["dataset"], "engine": frame["engine"],
        "view": frame["view"].map(VIEWS),
        "originals read": [f"{r} of {n}" for r, n in zip(frame["read"], frame["items"])],
        "CER vs ground truth": frame["cer_gt"].astype(float),
        "empty readings": frame["empty_share"].astype(float),
        "readable": [shown(r, o) for r, o in zip(frame["readable"], frame["over"])]})


def table_notes(thresholds: Thresholds) -> list[str]:
    """The notes under the table: what each view is the reference of, the measures, the
    thresholds and what a flag does."""
    return [
        f"View {VIEWS[VTBENCH_VIEW]}: the originals' 256 x 256 copies read after a resize to "
        "1024 x 1024, the reference of CER/WER (VTBench eval.) and WER (Eq. 4, words); "
        f"{VIEWS[FULL_VIEW]}: the originals as built, the reference of CER/WER (per-item mean) "
        "and (norm.). The (GT) columns score against the ground truth and need no reference",
        "CER vs ground truth: mean over the items with ground truth of the CER of the "
        "original's reading against it, after ocr.normalization (App. F Eq. 3, as the (GT, "
        "norm.) columns score a reconstruction); – where the set has no ground truth. Empty "
        "readings: the share of the originals read as no text after that normalization",
        f"Unreadable (readable: no): CER vs ground truth above {thresholds.max_cer:g} "
        f"(ocr.readability.max_cer) or empty readings above {thresholds.max_empty:g} "
        "(ocr.readability.max_empty). The cells scored against such a reference (tables: "
        "text_preservation, ocr_robustness, ocr_rank_agreement) keep their values with a "
        "footnote, and the report's first page leaves them out of its CER ranking",
    ]


def unreadable(frame: pd.DataFrame) -> dict[tuple[str, str, str], str]:
    """``(dataset, engine, view) -> footnote`` of the unreadable references of a
    :func:`readability_table` frame (or the table's CSV read back)."""
    bad = frame[frame["readable"] == "no"]
    return {(str(r.dataset), str(r.engine), str(r.view)):
            f"reference unreadable: {r.reason}; table {READABILITY_TABLE}"
            for r in bad.itertuples()}


def flag_cells(table, notes: dict[tuple[str, str, str], str], key) -> int:
    """Add the footnote of an unreadable reference to every cell scored against it.

    Args:
        table: a built :class:`roundtrip.tables.Table`.
        notes: :func:`unreadable`'s mapping.
        key: column -> ``(dataset, engine)`` of its reference, or None (a column without
            one), e.g. ``lambda col: (col.dataset, "tesseract")``.

    Returns:
        The number of columns flagged.
    """
    flagged = 0
    for j, col in enumerate(table.columns):
        view = VIEW_OF_METRIC.get(col.metric)
        where = key(col) if view else None
        note = notes.get((*where, view)) if where else None
        if not note:
            continue
        flagged += 1
        for model in table.models:
            cell = table.cells[(model, j)]
            if note not in cell.notes:
                cell.notes.append(note)
    return flagged


def flag_agreement(agreement: pd.DataFrame, notes: dict[tuple[str, str, str], str],
                   released: set[str] | list) -> pd.DataFrame:
    """The rank-agreement rows whose rankings rest on an unreadable reference get its footnote
    in their ``note``: a row ranks by the released rates (view ``vtbench``) where its dataset
    is in ``released``, else by the per-item means (``full``), under ``engine_a`` and
    ``engine_b``. Returns a copy."""
    out = agreement.copy()
    for i, row in out.iterrows():
        view = VTBENCH_VIEW if row["dataset"] in released else FULL_VIEW
        found = [notes[k] for e in (row["engine_a"], row["engine_b"])
                 if e and (k := (row["dataset"], e, view)) in notes]
        if found:
            out.at[i, "note"] = "; ".join([n for n in [str(row["note"] or "")] if n] + found)
    return out

"""VISTA-Bench tables from the answer files (CSV, Markdown, LaTeX with bootstrap CIs and n):

- ``vista_accuracy`` (Table 1): per task category VT and Text accuracy (%), Overall, and
  Gap = Overall VT - Overall Text; one row per reader on the original renders;
- ``vista_font`` (Figs. 3, 7, 11): VT accuracy and gap per font size (in the size-sweep style)
  and per font style (at the style-sweep size); one row per (reader, model);
- ``vista_rendering_errors`` (Sec. 4.3): the share of VT answers that are wrong although the
  same reader answers the question right as Text, per size and style, and their share of all VT
  errors;
- ``vista_subfield``: VT and Text accuracy per subfield;
- ``vista_tokenizers``: the tokenizer axis; VT accuracy on each model's reconstructions beside
  the same reader's VT accuracy on the originals and its Text accuracy.

Invalid answers count as wrong; every cell with some says how many in a footnote.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from roundtrip.metrics.accuracy import accuracy_values, paired_gaps
from roundtrip.metrics.stats import Summary, bootstrap_mean
from roundtrip.tables import Cell, Column, Table

ORIGINAL = "original"  # the model name of the unmodified renders (roundtrip.models.ORIGINAL)
TABLES = ["vista_accuracy", "vista_font", "vista_rendering_errors", "vista_subfield",
          "vista_tokenizers"]

Key = tuple[str, str, str]  # (reader, model, dataset)


def _fmt_size(size) -> str:
    try:
        return f"{float(size):g} pt"
    except (TypeError, ValueError):
        return str(size)


def question_gaps(vt: pd.DataFrame, text: pd.DataFrame) -> np.ndarray:
    """Per-question gaps (points) of VT rows against the text rows of the same reader
    (:func:`roundtrip.metrics.accuracy.paired_gaps`)."""
    by_q = {q: g["hit"].astype(float).tolist() for q, g in vt.groupby("question_id")}
    return paired_gaps(by_q, dict(zip(text["question_id"], text["hit"].astype(float))))


def right_as_text(text: pd.DataFrame) -> set[str]:
    """Ids of the questions answered right in text mode."""
    return set(text.loc[text["hit"] == 1.0, "question_id"])


class Scorer:
    """Cells from answer frames, with the bootstrap settings of the run."""

    def __init__(self, bootstrap: dict | None = None):
        self.b = {"samples": 1000, "confidence": 0.95, "seed": 0} | (bootstrap or {})

    def summary(self, values) -> Summary:
        return bootstrap_mean(values, self.b["samples"], self.b["confidence"], self.b["seed"])

    def accuracy(self, rows: pd.DataFrame, why_empty: str = "no answers") -> Cell:
        """Accuracy (%) over ``rows``; footnotes count invalid and unscored answers."""
        if rows.empty:
            return Cell(Summary(math.nan, math.nan, math.nan, 0), [why_empty])
        s = self.summary(accuracy_values(rows["hit"].astype(float)))
        return Cell(s, _notes(rows))

    def gap(self, vt: pd.DataFrame, text: pd.DataFrame) -> Cell:
        """Modality gap (percentage points) over the questions present in both frames."""
        values = question_gaps(vt, text)
        if not len(values):
            return Cell(Summary(math.nan, math.nan, math.nan, 0), ["no question scored in both "
                                                                  "modes"])
        return Cell(self.summary(values))

    def rendering_errors(self, vt: pd.DataFrame, text: pd.DataFrame) -> Cell:
        """% of VT answers wrong whose question the same reader answers right as Text."""
        right = right_as_text(text)
        v = vt[vt["hit"].notna()]
        if v.empty:
            return Cell(Summary(math.nan, math.nan, math.nan, 0), ["no VT answer scored"])
        values = 100.0 * ((v["hit"].astype(float) == 0) & v["question_id"].isin(right))
        return Cell(self.summary(values.to_numpy(dtype=float)))


def _notes(rows: pd.DataFrame) -> list[str]:
    notes = []
    n = len(rows)
    invalid = int(((rows["extracted_by"] == "invalid") & rows["hit"].notna()).sum())
    if invalid:
        notes.append(f"{invalid} of {n} answers invalid (counted wrong)")
    unscored = rows[rows["hit"].isna()]
    if len(unscored):
        reasons = Counter(str(r).split(":")[0] for r in unscored["reason"])
        top = "; ".join(f"{k} ({v}x)" for k, v in reasons.most_common(2))
        notes.append(f"{len(unscored)} of {n} not scored: {top}")
    return notes


def read_answers(path) -> pd.DataFrame:
    """An ``answers.csv``: text columns as strings, ``hit`` as float (NaN = not scored)."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df["hit"] = pd.to_numeric(df["hit"], errors="coerce")
    return df


def _modes(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    return df[df["mode"] == "vt"], df[df["mode"] == "text"]


def _row_name(reader: str, dataset: str, model: str | None, many_sets: bool) -> str:
    name = reader if model is None else f"{reader} / {model}"
    return f"{name} ({dataset})" if many_sets else name


def _mc(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["extracted_by"] != "open"]


def accuracy_table(answers: dict[Key, pd.DataFrame], scorer: Scorer) -> Table:
    """VISTA-Bench Table 1 over the original renders (module docstring)."""
    keys = [k for k in answers if k[1] == ORIGINAL]
    many = len({k[2] for k in keys}) > 1
    categories = list(dict.fromkeys(c for k in keys for c in answers[k]["category"] if c))
    has_open = any((answers[k]["extracted_by"] == "open").any() for k in keys)
    cols = [Column(c, m, lab, 1, group=c or "uncategorized", show_n=True)
            for c in categories for m, lab in (("vt_accuracy", "VT"), ("text_accuracy", "Text"))]
    cols += [Column("overall", "vt_accuracy", "VT", 1, group="Overall", show_n=True),
             Column("overall", "text_accuracy", "Text", 1, group="Overall", show_n=True),
             Column("overall", "modality_gap", "Gap", 1, group="Overall", show_n=True)]
    if has_open:
        cols += [Column("open", "vt_accuracy", "VT", 1, group="Open (exact match)", show_n=True),
                 Column("open", "text_accuracy", "Text", 1, group="Open (exact match)",
                        show_n=True)]
    rows = [_row_name(r, d, None, many) for r, _, d in keys]
    table = Table("vista_accuracy", "VISTA-Bench accuracy (%) as visualized text (VT) and as "
                  "pure text, per category; Gap = Overall VT - Overall Text (points)", rows, cols,
                  row_label="Reader")
    for row, key in zip(rows, keys):
        df = answers[key]
        mc = _mc(df)
        vt, text = _modes(mc)
        for j, col in enumerate(cols):
            if col.dataset == "open":
                ovt, otext = _modes(df[df["extracted_by"] == "open"])
                cell = scorer.accuracy(ovt if col.metric == "vt_accuracy" else otext)
            elif col.metric == "modality_gap":
                cell = scorer.gap(vt, text)
            else:
                part = vt if col.metric == "vt_accuracy" else text
                if col.dataset != "overall":
                    part = part[part["category"] == col.dataset]
                cell = scorer.accuracy(part, "no question of this category")
            table.cells[(row, j)] = cell
    return table


def sweep_groups(df: pd.DataFrame, sweep: dict | None) -> list[tuple[str, str, pd.DataFrame]]:
    """``(kind, label, VT rows)`` per font size and per font style. With the paper's grid
    (``sweep`` names ``size_style`` and ``style_size``), sizes are compared in the size-sweep
    style and styles at the style-sweep size (VISTA-Bench Sec. 3.2); otherwise every render of
    a size (style) counts."""
    vt = df[df["mode"] == "vt"].copy()
    vt["size_f"] = pd.to_numeric(vt["size"], errors="coerce")
    out = []
    size_style = (sweep or {}).get("size_style")
    style_size = (sweep or {}).get("style_size")
    for size in sorted(vt["size_f"].dropna().unique()):
        part = vt[vt["size_f"] == size]
        if size_style:
            part = part[part["font"] == size_style]
        if len(part):
            out.append(("size", _fmt_size(size), part))
    for style in dict.fromkeys(vt["font"]):
        if not style:
            continue
        part = vt[vt["font"] == style]
        if style_size is not None:
            part = part[part["size_f"] == float(style_size)]
        if len(part):
            out.append(("style", style, part))
    return out


def _sweep_table(name: str, title: str, answers: dict[Key, pd.DataFrame], sweeps: dict,
                 scorer: Scorer, metrics: list[tuple[str, str]]) -> Table:
    keys = list(answers)
    many = len({k[2] for k in keys}) > 1
    groups_of = {k: {(kind, label): part for kind, label, part in
                     sweep_groups(_mc(answers[k]), sweeps.get(k[2]))} for k in keys}
    labels = list(dict.fromkeys(g for k in keys for g in groups_of[k]))
    cols = [Column(f"{kind}={label}", m, lab, 1, group=label, show_n=True)
            for kind, label in labels for m, lab in metrics]
    rows = [_row_name(r, d, m, many) for r, m, d in keys]
    table = Table(name, title, rows, cols, row_label="Reader / model")
    for row, key in zip(rows, keys):
        df = _mc(answers[key])
        text = df[df["mode"] == "text"]
        groups = groups_of[key]
        for j, col in enumerate(cols):
            kind, label = col.dataset.split("=", 1)
            part = groups.get((kind, label))
            if part is None:
                cell = Cell(Summary(math.nan, math.nan, math.nan, 0), ["not rendered"])
            elif col.metric == "vt_accuracy":
                cell = scorer.accuracy(part)
            elif col.metric == "modality_gap":
                cell = scorer.gap(part, text[text["question_id"].isin(part["question_id"])])
            else:
                cell = scorer.rendering_errors(part, text)
            table.cells[(row, j)] = cell
    return table


def font_table(answers, sweeps, scorer) -> Table:
    """VT accuracy and gap per font size and style (Figs. 3, 7, 11)."""
    return _sweep_table("vista_font", "VT accuracy (%) and modality gap (points) per font size "
                        "and font style", answers, sweeps, scorer,
                        [("vt_accuracy", "VT"), ("modality_gap", "Gap")])


def rendering_errors_table(answers, sweeps, scorer) -> Table:
    """Rendering-related errors per size and style (Sec. 4.3), and their share of VT errors."""
    table = _sweep_table("vista_rendering_errors", "Rendering-related errors: % of VT answers "
                         "wrong where the same reader answers the question right as Text",
                         answers, sweeps, scorer, [("rendering_errors", "Rend. err.")])
    share_col = Column("all", "rendering_share", "% of VT errors", 1, group="All renders",
                       source="set", show_n=True)
    table.columns.append(share_col)
    j = len(table.columns) - 1
    for row, key in zip(table.models, answers):
        df = _mc(answers[key])
        vt, text = _modes(df)
        right = right_as_text(text)
        wrong = vt[vt["hit"] == 0.0]
        n = len(wrong)
        share = 100.0 * wrong["question_id"].isin(right).mean() if n else math.nan
        table.cells[(row, j)] = Cell(Summary(share, math.nan, math.nan, n),
                                     [] if n else ["no VT error"])
    return table


def subfield_table(answers, scorer) -> Table:
    """VT and Text accuracy per (category, subfield), original renders."""
    keys = [k for k in answers if k[1] == ORIGINAL]
    many = len({k[2] for k in keys}) > 1
    subs = list(dict.fromkeys((c, s) for k in keys for c, s in
                              zip(answers[k]["category"], answers[k]["subfield"]) if s))
    cols = [Column(f"{c}/{s}", m, lab, 1, group=f"{c}: {s}" if c else s, show_n=True)
            for c, s in subs for m, lab in (("vt_accuracy", "VT"), ("text_accuracy", "Text"))]
    rows = [_row_name(r, d, None, many) for r, _, d in keys]
    table = Table("vista_subfield", "VT and Text accuracy (%) per subfield", rows, cols,
                  row_label="Reader")
    for row, key in zip(rows, keys):
        vt, text = _modes(_mc(answers[key]))
        for j, col in enumerate(cols):
            c, s = col.dataset.split("/", 1)
            part = vt if col.metric == "vt_accuracy" else text
            cell = scorer.accuracy(part[(part["category"] == c) & (part["subfield"] == s)],
                                   "no question of this subfield")
            table.cells[(row, j)] = cell
    return table


def tokenizer_table(answers, scorer) -> Table:
    """The tokenizer axis: what reading a reconstruction costs the reader."""
    keys = [k for k in answers if k[1] != ORIGINAL]
    many = len({k[2] for k in keys}) > 1
    cols = [Column("recon", "vt_accuracy", "VT (recon.)", 1, group="Reconstructions",
                   show_n=True),
            Column("recon", "modality_gap", "Gap (recon.)", 1, group="Reconstructions",
                   show_n=True),
            Column("recon", "delta_vt", "VT recon. - VT orig.", 1, group="Reconstructions",
                   show_n=True),
            Column("original", "vt_accuracy", "VT (orig.)", 1, group="Originals", show_n=True),
            Column("original", "text_accuracy", "Text", 1, group="Originals", show_n=True)]
    rows = [_row_name(r, d, m, many) for r, m, d in keys]
    table = Table("vista_tokenizers", "The tokenizer axis: VT accuracy (%) of a reader on each "
                  "model's reconstructions of the question images, beside its VT and Text "
                  "accuracy on the originals", rows, cols, row_label="Reader / model")
    for row, key in zip(rows, keys):
        vt, text = _modes(_mc(answers[key]))
        orig = answers.get((key[0], ORIGINAL, key[2]))
        ovt, otext = _modes(_mc(orig)) if orig is not None else (vt.iloc[:0], text.iloc[:0])
        missing = Cell(Summary(math.nan, math.nan, math.nan, 0),
                       ["the reader was not run on the originals"])
        for j, col in enumerate(cols):
            if col.dataset == "recon":
                if col.metric == "vt_accuracy":
                    cell = scorer.accuracy(vt)
                elif col.metric == "modality_gap":
                    cell = scorer.gap(vt, text)
                else:
                    cell = _delta(scorer, vt, ovt) if orig is not None else missing
            elif orig is None:
                cell = missing
            else:
                cell = scorer.accuracy(ovt if col.metric == "vt_accuracy" else otext)
            table.cells[(row, j)] = cell
    return table


def _delta(scorer: Scorer, vt: pd.DataFrame, ovt: pd.DataFrame) -> Cell:
    """Paired per-render difference of VT hits, reconstruction minus original (points)."""
    a = vt.set_index("item_id")["hit"].astype(float)
    b = ovt.set_index("item_id")["hit"].astype(float)
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    if both.empty:
        return Cell(Summary(math.nan, math.nan, math.nan, 0), ["no render scored in both"])
    return Cell(scorer.summary(100.0 * (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()))


def gap_curves(answers: dict[Key, pd.DataFrame], sweeps: dict) -> pd.DataFrame:
    """``reader, model, dataset, kind (size|style), group, gap, vt, n`` for the figure."""
    out = []
    for (reader, model, dataset), df in answers.items():
        df = _mc(df)
        text = df[df["mode"] == "text"]
        for kind, label, part in sweep_groups(df, sweeps.get(dataset)):
            gaps = question_gaps(part, text)
            vals = part["hit"].dropna()
            out.append({"reader": reader, "model": model, "dataset": dataset, "kind": kind,
                        "group": label, "gap": float(np.mean(gaps)) if len(gaps) else math.nan,
                        "vt": 100.0 * float(vals.mean()) if len(vals) else math.nan,
                        "n": int(len(vals))})
    return pd.DataFrame(out, columns=["reader", "model", "dataset", "kind", "group", "gap", "vt",
                                      "n"])

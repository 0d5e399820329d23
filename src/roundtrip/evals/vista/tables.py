"""VISTA-Bench tables from the answer files (CSV, Markdown, LaTeX with bootstrap CIs and n):

- ``vista_accuracy`` (Table 1): per task category VT and Text accuracy (%), Overall VT, Text
  and Gap, then the Multimodal and Unimodal gaps (Fig. 8, §4.3); one row per reader on the
  original renders. VT counts **one render per question**, the question's Table 1 render
  (``table1``: drawn from App. B.2 Table 5's (font, size) distribution; the release renders each
  question once), so Overall weights every question once, as Table 1. Categories in the paper's
  order (Perception, Reasoning, MM Knowledge, Unimodal), others after; open questions are
  scored by exact match and count in their category and in Overall (§3.3);
- ``vista_font`` (Figs. 3, 7, 11): VT accuracy and gap per font size (in the size-sweep style)
  and per font style (at the style-sweep size); one row per (reader, model);
- ``vista_rendering_errors`` (Sec. 4.3): the share of VT answers that are wrong although the
  same reader answers the question right as Text, per size and style, and their share of all VT
  errors;
- ``vista_subfield``: VT and Text accuracy per subfield (Table 1 renders);
- ``vista_source`` (Fig. 2): VT, Text and gap per source benchmark (MMBench, SEED-Bench, MMMU,
  MMLU), where the source is known;
- ``vista_tokenizers``: the tokenizer axis; VT accuracy on each model's reconstructions beside
  the same reader's VT accuracy on the originals and its Text accuracy.

The gap is Acc_Text - Acc_VT in points (App. D.1, Figs. 8 and 11) in every table of this
module: positive when the reader does worse on pixels (Table 1 prints VT - Text; the run's rows
beside the published ones take the paper's sign, :func:`roundtrip.evals.vista.findings.
table1_cells`). Invalid answers count as wrong, as the release counts them; every cell with
some says how many in a footnote. An error (the request or the generation failed: ``status``
``error``) is not an answer: it is left out of every cell, never counted wrong, and every cell
with some counts them, with their most common reasons, in a footnote of its own. A question
whose Table 1 render failed the render audit (judge score below 2, App.
B.3) is left out of Table 1 in both modes, and every failed render of the sweeps too, unless
``include_failed_audit`` is set; each table's note counts them. A question outside what a
reader answers at all (the offline solver on questions not of its family: reason
:data:`~roundtrip.evals.vista.answers.OUT_OF_SCOPE`) is left out of that reader's cells, not
counted wrong: a footnote counts it, ``vista_accuracy`` gets an ``In scope`` column (questions
the reader answers, of all), and a cell with no question in scope reads n/a with the reason.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from roundtrip.core.manifest import ORIGINAL
from roundtrip.evals.vista.answers import ERROR, OUT_OF_SCOPE, out_of_scope
from roundtrip.metrics.accuracy import accuracy_values, paired_gaps
from roundtrip.metrics.stats import Summary, bootstrap_mean
from roundtrip.tables import Cell, Column, Table
from roundtrip.tables.reasons import counted, summarize_reasons

TABLES = ["vista_accuracy", "vista_font", "vista_rendering_errors", "vista_subfield",
          "vista_source", "vista_tokenizers"]
#: Table 1's task categories in the paper's order (§3.3): a category matches the first entry
#: whose words all occur in its name (case-insensitive); other categories follow in order of
#: appearance.
CATEGORY_ORDER = (("Perception", ("perception",)), ("Reasoning", ("reasoning",)),
                  ("MM Knowledge", ("knowledge",)), ("Unimodal", ("unimodal",)))
GAP_LABEL = "Gap (Text - VT)"
#: The ``vista_accuracy`` column of the questions a reader answers at all (``overall.in_scope``;
#: present where some reader leaves questions out of its scope).
IN_SCOPE_LABEL = "In scope"
#: The note of a cell none of whose questions the reader answers at all ("n/a:": one footnote
#: for every column of the table).
ALL_OUT_OF_SCOPE = "n/a: every question outside the reader's scope (table note)"
#: The column group of Overall with open questions credited by exact match (roundtrip's
#: convention, beside the release's Overall).
OPEN_EXACT = "Overall, open by exact match"
NO_SOURCE = "source unknown"  # the vista_source column of a set without source benchmarks
#: Fig. 2's source benchmarks, in its order (the loaders map a set's rows to them).
SOURCE_ORDER = ("MMBench", "SEED-Bench", "MMMU", "MMLU")

Key = tuple[str, str, str]  # (reader, model, dataset)


def _fmt_size(size) -> str:
    try:
        return f"{float(size):g} pt"
    except (TypeError, ValueError):
        return str(size)


def question_gaps(vt: pd.DataFrame, text: pd.DataFrame) -> np.ndarray:
    """Per-question modality gaps Acc_Text - Acc_VT in points (VISTA-Bench App. D.1: positive
    when VT is worse), of VT rows against the text rows of the same reader; a question with
    several renders gets the mean of their hits (:func:`roundtrip.metrics.accuracy.paired_gaps`,
    whose VT - Text sign is flipped here)."""
    by_q = {q: g["hit"].astype(float).tolist() for q, g in vt.groupby("question_id")}
    return -paired_gaps(by_q, dict(zip(text["question_id"], text["hit"].astype(float))))


def category_rank(name: str) -> int:
    """Position of a category in Table 1's order (:data:`CATEGORY_ORDER`); unknown: after."""
    low = name.lower()
    if "unimodal" in low:
        return 3
    for k, (_, words) in enumerate(CATEGORY_ORDER[:3]):
        if all(w in low for w in words):
            return k
    return len(CATEGORY_ORDER)


def ordered_categories(names) -> list[str]:
    """Distinct non-empty category names in Table 1's order (:func:`category_rank`)."""
    unique = list(dict.fromkeys(n for n in names if n))
    return sorted(unique, key=lambda n: (category_rank(n), unique.index(n)))


def table1_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Text rows and each question's Table 1 render (``table1 == "1"``; App. B.2): one VT row
    per question, so that Overall weights every question once.

    Raises:
        ValueError: the answers have VT rows but none flagged (written by an older reader
            job).
    """
    flagged = df["table1"].astype(str) == "1" if "table1" in df.columns else None
    if flagged is None or not flagged[df["mode"] == "vt"].any() and (df["mode"] == "vt").any():
        raise ValueError("answers without Table 1 render flags (table1 column); rerun the "
                         "vista_answers jobs")
    # a text row flagged 0 is a question left out of Table 1 (its render failed the audit)
    text = (df["mode"] == "text") & (df["table1"].astype(str) != "0")
    return df[text | flagged]


def admitted(df: pd.DataFrame, include_failed: bool = False) -> tuple[pd.DataFrame, int]:
    """``(rows, n_left_out)``: the answers without the renders that failed the render audit
    (VISTA-Bench App. B.3 admits only judge score 2), unless ``include_failed``. A question
    whose Table 1 render failed leaves Table 1 in both modes: its text row is flagged
    ``table1 = 0`` (:func:`table1_rows` leaves it out), so that Table 1's two modes stay matched
    (§3.3); the sweeps pair each render with the text answer as before. ``n_left_out`` counts
    the VT rows left out."""
    if include_failed or "audit" not in df.columns:
        return df, 0
    failed = (df["mode"] == "vt") & (df["audit"] == "failed")
    out = df[~failed]
    if "table1" in df.columns:
        lost = set(df.loc[failed & (df["table1"].astype(str) == "1"), "question_id"])
        out = out.copy()
        out.loc[(out["mode"] == "text") & out["question_id"].isin(lost), "table1"] = "0"
    return out, int(failed.sum())


def prepare(answers: dict[Key, pd.DataFrame], include_failed_audit: bool = False
            ) -> tuple[dict[Key, pd.DataFrame], list[str]]:
    """The answers every table is made from, and the note that goes under each table: renders
    that failed the render audit are left out unless ``include_failed_audit``
    (:func:`admitted`, VISTA-Bench App. B.3)."""
    out, left_out = {}, 0
    for key, df in answers.items():
        out[key], n = admitted(df, include_failed_audit)
        left_out += n
    return out, audit_note(left_out, include_failed_audit) + scope_notes(out)


def scope_notes(answers: dict[Key, pd.DataFrame]) -> list[str]:
    """One table note per (reader, set) that leaves questions out of its scope, on the original
    renders: how many of the questions and what the reader answers."""
    notes = []
    for (reader, model, dataset), df in answers.items():
        text = df[df["mode"] == "text"]
        outside = out_of_scope(text)
        if model == ORIGINAL and outside.any():
            notes.append(f"{reader} on {dataset}: {int(outside.sum())} of {len(text)} questions "
                         f"outside the reader's scope, left out of its cells (not counted "
                         f"wrong): {scope_reason(text)}")
    return notes


def audit_note(left_out: int, include_failed: bool) -> list[str]:
    """The table note on the render audit (App. B.3)."""
    if include_failed:
        return ["renders that failed the render audit (judge score < 2, VISTA-Bench App. B.3) "
                "are included (vista.include_failed_audit)"]
    if left_out:
        return [f"{left_out} VT answers on renders that failed the render audit (judge score "
                "< 2, VISTA-Bench App. B.3) left out, and in Table 1 their questions' text "
                "answers too (vista.include_failed_audit: true keeps them)"]
    return []


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
        """Accuracy (%) over ``rows``, errors left out; footnotes count the errors
        (:func:`error_notes`), then the invalid and unscored answers among the others."""
        if rows.empty:
            return Cell(Summary(math.nan, math.nan, math.nan, 0), [why_empty])
        if out_of_scope(rows).all():
            return Cell(Summary(math.nan, math.nan, math.nan, 0), [ALL_OUT_OF_SCOPE])
        errors = is_error(rows)
        s = self.summary(accuracy_values(rows.loc[~errors, "hit"].astype(float)))
        return Cell(s, error_notes(rows) + (_notes(rows[~errors]) if (~errors).any() else []))

    def gap(self, vt: pd.DataFrame, text: pd.DataFrame) -> Cell:
        """Modality gap Acc_Text - Acc_VT (points, :func:`question_gaps`) over the questions
        present in both frames; errors are left out (footnote)."""
        values = question_gaps(vt[~is_error(vt)], text[~is_error(text)])
        notes = error_notes(pd.concat([vt, text]))
        if not len(values):
            return Cell(Summary(math.nan, math.nan, math.nan, 0),
                        [_why_none(text, "no question scored in both modes")] + notes)
        return Cell(self.summary(values), notes)

    def rendering_errors(self, vt: pd.DataFrame, text: pd.DataFrame) -> Cell:
        """% of VT answers wrong whose question the same reader answers right as Text; errors
        are left out (footnote)."""
        right = right_as_text(text)
        v = vt[vt["hit"].notna() & ~is_error(vt)]
        notes = error_notes(vt)
        if v.empty:
            return Cell(Summary(math.nan, math.nan, math.nan, 0),
                        [_why_none(vt, "no VT answer scored")] + notes)
        values = 100.0 * ((v["hit"].astype(float) == 0) & v["question_id"].isin(right))
        return Cell(self.summary(values.to_numpy(dtype=float)), notes)


def is_error(rows: pd.DataFrame) -> pd.Series:
    """Which rows are errors (``status`` ``error``: the request or the generation failed, no
    answer): a bool Series on ``rows``' index."""
    if "status" not in rows.columns:
        return pd.Series(False, index=rows.index)
    return rows["status"].astype(str) == ERROR


def error_notes(rows: pd.DataFrame) -> list[str]:
    """The footnote of the errors among ``rows`` (none without): ``"3 of 20 answers are errors
    (no answer: left out, not counted wrong): connection error (2x); endpoint down (1x)"``, the
    reasons by what went wrong (:func:`roundtrip.evals.vista.answers.error_reason`)."""
    errors = rows[is_error(rows)]
    if errors.empty:
        return []
    labels = (str(r).split(":")[0] for r in errors["reason"])
    return [counted(len(errors), len(rows), "answers are errors (no answer: left out, not "
                    "counted wrong)", labels)]


def scope_reason(rows: pd.DataFrame) -> str:
    """What the reader answers, from the reasons of its out-of-scope rows (the most common one,
    without the question's own detail); ``""`` without such rows."""
    reasons = rows.loc[out_of_scope(rows), "reason"].astype(str)
    if reasons.empty:
        return ""
    general = reasons.str.removeprefix(OUT_OF_SCOPE + ": ").str.split("; this one").str[0]
    return str(general.value_counts().index[0])


def _why_none(rows: pd.DataFrame, otherwise: str) -> str:
    """Why a cell over ``rows`` has no value: every question outside the reader's scope, or
    ``otherwise``."""
    if len(rows) and out_of_scope(rows).all():
        return ALL_OUT_OF_SCOPE
    return otherwise


def _notes(rows: pd.DataFrame) -> list[str]:
    notes = []
    n = len(rows)
    invalid = int(((rows["extracted_by"] == "invalid") & rows["hit"].notna()).sum())
    if invalid:
        notes.append(f"{invalid} of {n} answers invalid (counted wrong)")
    outside = out_of_scope(rows)
    if outside.any():
        notes.append(f"{int(outside.sum())} of {n} outside the reader's scope, left out (not "
                     "counted wrong; table note)")
    unscored = rows[rows["hit"].isna() & ~outside]
    if len(unscored):
        top = summarize_reasons((str(r).split(":")[0] for r in unscored["reason"]), top=2,
                                counts="always")
        notes.append(f"{len(unscored)} of {n} not scored: {top}")
    return notes


def read_answers(path) -> pd.DataFrame:
    """An ``answers.csv``: text columns as strings, ``hit`` and ``exact_match`` as float (NaN =
    not scored; ``exact_match`` NaN for multiple-choice questions and in files written before
    it existed). An error row is never scored, also in files written when errors were scored
    wrong (``hit`` 0, ``extracted_by`` invalid): its ``hit`` and ``exact_match`` read NaN and
    its ``extracted_by`` empty."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df["hit"] = pd.to_numeric(df["hit"], errors="coerce")
    df["exact_match"] = pd.to_numeric(df.get("exact_match", pd.Series(math.nan, df.index)),
                                      errors="coerce")
    errors = is_error(df)
    if errors.any():
        df.loc[errors, ["hit", "exact_match"]] = math.nan
        df.loc[errors, "extracted_by"] = ""
    return df


def with_exact_match(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with each open question's ``hit`` replaced by its exact-match credit (roundtrip's
    convention beside the release's, which never credits an open question)."""
    if "exact_match" not in df.columns:
        return df
    out = df.copy()
    is_open = out["extracted_by"] == "open"
    out.loc[is_open, "hit"] = out.loc[is_open, "exact_match"].astype(float)
    return out


def _modes(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    return df[df["mode"] == "vt"], df[df["mode"] == "text"]


def _row_name(reader: str, dataset: str, model: str | None, many_sets: bool) -> str:
    name = reader if model is None else f"{reader} / {model}"
    return f"{name} ({dataset})" if many_sets else name


def accuracy_table(answers: dict[Key, pd.DataFrame], scorer: Scorer) -> Table:
    """VISTA-Bench Table 1 over the original renders (module docstring).

    Columns: VT and Text per category (Table 1's order), Overall VT, Text and Gap, the gap over
    Multimodal and over Unimodal questions (Fig. 8), and, when the set has open questions, their
    accuracy apart (they also count in their category and Overall).
    """
    keys = [k for k in answers if k[1] == ORIGINAL]
    many = len({k[2] for k in keys}) > 1
    frames = {k: table1_rows(answers[k]) for k in keys}
    categories = ordered_categories(c for k in keys for c in answers[k]["category"])
    has_open = any((answers[k]["extracted_by"] == "open").any() for k in keys)
    modalities = [m for m in ("multimodal", "unimodal")
                  if any((answers[k].get("modality", pd.Series(dtype=str)) == m).any()
                         for k in keys)]
    cols = [Column(c, m, lab, 1, group=c, show_n=True)
            for c in categories for m, lab in (("vt_accuracy", "VT"), ("text_accuracy", "Text"))]
    cols += [Column("overall", "vt_accuracy", "VT", 1, group="Overall", show_n=True),
             Column("overall", "text_accuracy", "Text", 1, group="Overall", show_n=True),
             Column("overall", "modality_gap", GAP_LABEL, 1, group="Overall", show_n=True)]
    cols += [Column(f"modality={m}", "modality_gap", GAP_LABEL, 1, group=m.capitalize(),
                    show_n=True) for m in modalities]
    scoped = any(out_of_scope(frames[k]).any() for k in keys)
    if scoped:  # a reader that cannot answer every question: how many it can, of all
        cols.append(Column("overall", "in_scope", IN_SCOPE_LABEL, 0, source="set",
                           group="Overall", show_n=True))
    if has_open:
        cols += [Column("open", "vt_accuracy", "VT", 1, group="Open (exact match)", show_n=True),
                 Column("open", "text_accuracy", "Text", 1, group="Open (exact match)",
                        show_n=True)]
        cols += [Column("overall_exact", m, lab, 1, group=OPEN_EXACT, show_n=True)
                 for m, lab in (("vt_accuracy", "VT"), ("text_accuracy", "Text"),
                                ("modality_gap", GAP_LABEL))]
    rows = [_row_name(r, d, None, many) for r, _, d in keys]
    table = Table("vista_accuracy", "VISTA-Bench accuracy (%) as visualized text (VT, one render "
                  "per question) and as pure text, per category; Gap = Text - VT (points)",
                  rows, cols, row_label="Reader")
    for row, key in zip(rows, keys):
        vt, text = _modes(frames[key])
        for j, col in enumerate(cols):
            table.cells[(row, j)] = (_in_scope_cell(text) if col.metric == "in_scope" else
                                     _accuracy_cell(scorer, col, vt, text))
    if scoped:
        table.notes.append(f"{IN_SCOPE_LABEL}: questions the reader answers at all, of all "
                           "questions (n); the others are left out of its cells, not counted "
                           "wrong, and a cell with none in scope reads n/a")
    return table


def _in_scope_cell(text: pd.DataFrame) -> Cell:
    """Questions (text rows) the reader answers at all, of all questions."""
    outside = out_of_scope(text)
    return Cell(Summary(float((~outside).sum()), math.nan, math.nan, len(text)))


def _accuracy_cell(scorer: Scorer, col: Column, vt: pd.DataFrame, text: pd.DataFrame) -> Cell:
    if col.dataset == "open":
        vt, text = vt[vt["extracted_by"] == "open"], text[text["extracted_by"] == "open"]
        vt, text = with_exact_match(vt), with_exact_match(text)
    elif col.dataset == "overall_exact":
        vt, text = with_exact_match(vt), with_exact_match(text)
    elif col.dataset.startswith("modality="):
        m = col.dataset.split("=", 1)[1]
        return scorer.gap(vt[vt["modality"] == m], text[text["modality"] == m])
    elif col.dataset != "overall":
        vt, text = vt[vt["category"] == col.dataset], text[text["category"] == col.dataset]
    if col.metric == "modality_gap":
        return scorer.gap(vt, text)
    return scorer.accuracy(vt if col.metric == "vt_accuracy" else text,
                           "no question of this category")


def sweep_groups(df: pd.DataFrame, sweep: dict | None) -> list[tuple[str, str, pd.DataFrame]]:
    """``(kind, label, VT rows)`` per font size and per font style.

    With ``sweep`` naming ``size_style`` and ``style_size`` (the paper's grid, and the release),
    sizes are compared in the size-sweep style (kind ``size``) and styles at the style-sweep
    size (kind ``style``; VISTA-Bench Sec. 2, Figs. 3, 7, 11); otherwise every render of a size
    (style) counts. ``pooled: true`` (the release, one render per question at a drawn (font,
    size)) adds every render of a size over all fonts (kind ``size_all``, label ``9 pt (all
    fonts)``) and of a style over all sizes (``style_all``, ``Arial (all sizes)``), named
    beside. Fonts are matched case-insensitively."""
    vt = df[df["mode"] == "vt"].copy()
    vt["size_f"] = pd.to_numeric(vt["size"], errors="coerce")
    vt["font_key"] = vt["font"].astype(str).str.strip().str.lower()
    sweep = sweep or {}
    size_style = str(sweep.get("size_style") or "").lower()
    style_size = sweep.get("style_size")
    sizes = sorted(vt["size_f"].dropna().unique())
    styles = [s for s in dict.fromkeys(vt["font"]) if s]
    out = []
    for size in sizes:
        part = vt[vt["size_f"] == size]
        if size_style:
            part = part[part["font_key"] == size_style]
        if len(part):
            out.append(("size", _fmt_size(size), part))
    for style in styles:
        part = vt[vt["font"] == style]
        if style_size is not None:
            part = part[part["size_f"] == float(style_size)]
        if len(part):
            out.append(("style", style, part))
    if sweep.get("pooled"):
        out += [("size_all", f"{_fmt_size(size)} (all fonts)", vt[vt["size_f"] == size])
                for size in sizes]
        out += [("style_all", f"{style} (all sizes)", vt[vt["font"] == style])
                for style in styles]
    return out


def _sweep_table(name: str, title: str, answers: dict[Key, pd.DataFrame], sweeps: dict,
                 scorer: Scorer, metrics: list[tuple[str, str]]) -> Table:
    keys = list(answers)
    many = len({k[2] for k in keys}) > 1
    groups_of = {k: {(kind, label): part for kind, label, part in
                     sweep_groups(answers[k], sweeps.get(k[2]))} for k in keys}
    labels = list(dict.fromkeys(g for k in keys for g in groups_of[k]))
    cols = [Column(f"{kind}={label}", m, lab, 1, group=label, show_n=True)
            for kind, label in labels for m, lab in metrics]
    rows = [_row_name(r, d, m, many) for r, m, d in keys]
    table = Table(name, title, rows, cols, row_label="Reader / model")
    for row, key in zip(rows, keys):
        df = answers[key]
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
    return _sweep_table("vista_font", "VT accuracy (%) and modality gap (Text - VT, points) per "
                        "font size and font style", answers, sweeps, scorer,
                        [("vt_accuracy", "VT"), ("modality_gap", GAP_LABEL)])


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
        df = answers[key]
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
        vt, text = _modes(table1_rows(answers[key]))
        for j, col in enumerate(cols):
            c, s = col.dataset.split("/", 1)
            part = vt if col.metric == "vt_accuracy" else text
            cell = scorer.accuracy(part[(part["category"] == c) & (part["subfield"] == s)],
                                   "no question of this subfield")
            table.cells[(row, j)] = cell
    return table


def source_table(answers: dict[Key, pd.DataFrame], scorer: Scorer) -> Table:
    """VT, Text and gap (Text - VT) per source benchmark (VISTA-Bench Fig. 2: MMBench,
    SEED-Bench, MMMU, MMLU, in that order; other values after), Table 1 renders, original
    renders. The loaders map each row to its benchmark (``source``; the release's MMBench rows
    carry MMBench's per-question provenance, kept as ``source_raw``). Without any known source
    one column says why."""
    keys = [k for k in answers if k[1] == ORIGINAL]
    many = len({k[2] for k in keys}) > 1
    found = list(dict.fromkeys(s for k in keys
                               for s in answers[k].get("source", pd.Series(dtype=str)) if s))
    sources = [s for s in SOURCE_ORDER if s in found] + [s for s in found
                                                         if s not in SOURCE_ORDER]
    metrics = (("vt_accuracy", "VT"), ("text_accuracy", "Text"), ("modality_gap", GAP_LABEL))
    cols = [Column(s, m, lab, 1, group=s, show_n=True) for s in sources for m, lab in metrics]
    if not cols:
        cols = [Column(NO_SOURCE, "vt_accuracy", "VT", 1, group="Source benchmark",
                       show_n=True)]
    rows = [_row_name(r, d, None, many) for r, _, d in keys]
    table = Table("vista_source", "VT and Text accuracy (%) and gap (Text - VT, points) per "
                  "source benchmark", rows, cols, row_label="Reader")
    for row, key in zip(rows, keys):
        vt, text = _modes(table1_rows(answers[key]))
        for j, col in enumerate(cols):
            if col.dataset == NO_SOURCE:
                cell = Cell(Summary(math.nan, math.nan, math.nan, 0),
                            ["no question of the set names its source benchmark (source "
                             "column of the release TSV)"])
            else:
                v, t = vt[vt["source"] == col.dataset], text[text["source"] == col.dataset]
                cell = (scorer.gap(v, t) if col.metric == "modality_gap" else
                        scorer.accuracy(v if col.metric == "vt_accuracy" else t))
            table.cells[(row, j)] = cell
    return table


#: The note of an empty ``vista_tokenizers`` (the findings say it in the same words).
NO_TOKENIZER_AXIS = ("no model's reconstructions of the question images were read "
                     "(vista.models is [], or no model runs on the question sets): the "
                     "tokenizer axis is off")


def tokenizer_table(answers, scorer) -> Table:
    """The tokenizer axis: what reading a reconstruction costs the reader. Without any model's
    answers the table has no rows and says why (:data:`NO_TOKENIZER_AXIS`)."""
    keys = [k for k in answers if k[1] != ORIGINAL]
    many = len({k[2] for k in keys}) > 1
    cols = [Column("recon", "vt_accuracy", "VT (recon.)", 1, group="Reconstructions",
                   show_n=True),
            Column("recon", "modality_gap", "Gap Text - VT (recon.)", 1, group="Reconstructions",
                   show_n=True),
            Column("recon", "delta_vt", "VT recon. - VT orig.", 1, group="Reconstructions",
                   show_n=True),
            Column("original", "vt_accuracy", "VT (orig.)", 1, group="Originals", show_n=True),
            Column("original", "text_accuracy", "Text", 1, group="Originals", show_n=True)]
    rows = [_row_name(r, d, m, many) for r, m, d in keys]
    table = Table("vista_tokenizers", "The tokenizer axis: VT accuracy (%) of a reader on each "
                  "model's reconstructions of the question images, beside its VT and Text "
                  "accuracy on the originals", rows, cols, row_label="Reader / model")
    if not keys:
        table.notes.append(NO_TOKENIZER_AXIS)
    for row, key in zip(rows, keys):
        vt, text = _modes(answers[key])
        orig = answers.get((key[0], ORIGINAL, key[2]))
        ovt, otext = _modes(orig) if orig is not None else (vt.iloc[:0], text.iloc[:0])
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
    """Paired per-render difference of VT hits, reconstruction minus original (points); errors
    on either side are left out (footnote)."""
    a = vt[~is_error(vt)].set_index("item_id")["hit"].astype(float)
    b = ovt[~is_error(ovt)].set_index("item_id")["hit"].astype(float)
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    notes = error_notes(pd.concat([vt, ovt]))
    if both.empty:
        return Cell(Summary(math.nan, math.nan, math.nan, 0),
                    ["no render scored in both"] + notes)
    return Cell(scorer.summary(100.0 * (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()), notes)


def gap_curves(answers: dict[Key, pd.DataFrame], sweeps: dict) -> pd.DataFrame:
    """``reader, model, dataset, kind (size|style), group, gap, vt, n`` for the figure."""
    out = []
    for (reader, model, dataset), df in answers.items():
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

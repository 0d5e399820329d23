"""VISTA-Bench's findings for the report's first page and its headline figure.

The paper's headline comparison (VISTA-Bench Table 1, Sec. 4.2) is each reader's accuracy on
visualized text (VT: the question rendered as an image) against pure text, and the modality
gap ``Acc_Text - Acc_VT`` in points (App. D.1; positive when the reader does worse on pixels).
Everything here is read from the run's tables (:mod:`roundtrip.evals.vista.tables`), except the
paired comparison of the two best readers and the count of each reader's errors and invalid
answers, which need their per-question answers
(``results/vista/{reader}/original/{dataset}/answers.csv``).

An error (the request or the generation failed) is not an answer: the tables leave it out. Page 1
says, per reader, how many of its answers are errors and how many invalid where either is more
than :data:`MENTION_SHARE` of them, and states no finding for a reader more than
``vista.max_error_share`` (:data:`MAX_ERROR_SHARE`) of whose answers are errors: no gap, no
ranking, no bar in the headline figure, no row beside the published Table 1; only the sentence
that says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.manifest import ORIGINAL
from roundtrip.metrics.stats import Summary
from roundtrip.report.findings import Ranking, RunResults, number, table_summary, with_ci

ACCURACY = "vista_accuracy"
TOKENIZERS = "vista_tokenizers"
VT_METRIC = "VT accuracy (%)"
WHERE = "(one render per question)"
IN_SCOPE = "overall.in_scope"  # questions a reader answers at all (vista_accuracy)
#: A reader's share of errors, or of invalid answers, above which page 1 names the count (below
#: it, the tables' footnotes count them).
MENTION_SHARE = 0.02
#: ``vista.max_error_share``'s default: a reader with a larger share of errors gets no finding.
MAX_ERROR_SHARE = 0.1
#: Questions in the benchmark (VISTA-Bench Sec. 1, Sec. 3: 1,500 instances): what a run's row
#: beside the published Table 1 says it covers.
BENCHMARK_QUESTIONS = 1500


# -- reading the tables -------------------------------------------------------------------------
def reader_rows(results: RunResults) -> list[tuple[str, Summary, Summary, Summary]]:
    """``(row label, VT, Text, Gap)`` of every row of ``vista_accuracy`` (VISTA-Bench Table 1,
    Overall columns; accuracies in %, the gap Text - VT in points, each with its bootstrap CI
    over questions), in table order; rows without an overall VT accuracy (e.g. a reader none of
    whose questions is in its scope) are left out. Empty where the run wrote no such table."""
    table = results.table(ACCURACY)
    if table is None or table.empty or "overall.vt_accuracy" not in table:
        return []
    out = []
    for _, row in table.iterrows():
        vt = table_summary(row, "overall.vt_accuracy")
        if math.isnan(vt.mean):
            continue
        out.append((str(row.iloc[0]), vt, table_summary(row, "overall.text_accuracy"),
                    table_summary(row, "overall.modality_gap")))
    return out


# -- per-question answers for the paired comparison ---------------------------------------------
def _file_parts(path: Path) -> tuple[str, str, str]:
    """``(reader, model, dataset)`` of ``results/vista/{reader}/{model}/{dataset}/answers.csv``."""
    return path.parts[-4], path.parts[-3], path.parts[-2]


def _include_failed_audit(results: RunResults) -> bool:
    """``vista.include_failed_audit`` of the run's config, where the results carry it (the
    tables leave out renders that failed the render audit unless it is set, App. B.3)."""
    config = getattr(results, "config", None) or {}
    return bool((config.get("vista") or {}).get("include_failed_audit", False))


def per_question_vt(results: RunResults) -> pd.DataFrame:
    """VT hits (100 right / 0 wrong, invalid answers wrong; not scored dropped) of each row of
    ``vista_accuracy`` on its questions' Table 1 renders (one render per question, App. B.2),
    from the declared answer files of the original renders.

    Returns:
        columns ``model`` (the table's row label: the reader, with `` (dataset)`` when several
        question sets ran), ``item_id`` (``dataset/question_id``), ``value``; empty without
        files.
    """
    from roundtrip.evals.vista.tables import admitted, read_answers, table1_rows

    files = [Path(f) for f in results.files if Path(f).name == "answers.csv"
             and _file_parts(Path(f))[1] == ORIGINAL]
    many = len({_file_parts(f)[2] for f in files}) > 1
    frames = []
    for f in files:
        reader, _, dataset = _file_parts(f)
        df, _ = admitted(read_answers(f), _include_failed_audit(results))
        df = table1_rows(df)
        vt = df[(df["mode"] == "vt") & df["hit"].notna()]
        frames.append(pd.DataFrame({
            "model": f"{reader} ({dataset})" if many else reader,
            "item_id": dataset + "/" + vt["question_id"].astype(str),
            "value": 100.0 * vt["hit"].astype(float)}))
    if not frames:
        return pd.DataFrame(columns=["model", "item_id", "value"])
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class AnswerCounts:
    """What a reader's answers on the original renders hold, over its Table 1 rows (one render
    per question and the text rows; renders that failed the render audit left out as the
    tables leave them, questions outside its scope and unusable renders not counted).

    Attributes:
        label: the ``vista_accuracy`` row label (``reader``, ``reader (dataset)``).
        questions: questions of the set in Table 1 (text rows).
        asked: answers the reader was asked, both modes.
        errors: of them, errors (no answer: the request or the generation failed).
        invalid: of them, answers with no option to read (counted wrong).
        reasons: the errors' most common causes with counts (``connection error (283x)``).
        final: of the errors, those no later run asks again (malformed on every attempt of
            ``1 + api.max_reask_runs`` runs: their reason says ``not asked again``).
    """
    label: str
    questions: int
    asked: int
    errors: int
    invalid: int
    reasons: str
    final: int = 0

    @property
    def error_share(self) -> float:
        """Errors over answers asked, in [0, 1] (0 with none asked)."""
        return self.errors / self.asked if self.asked else 0.0

    @property
    def invalid_share(self) -> float:
        """Invalid answers over answers asked, in [0, 1]."""
        return self.invalid / self.asked if self.asked else 0.0


def answer_counts(results: RunResults) -> dict[str, AnswerCounts]:
    """:class:`AnswerCounts` per ``vista_accuracy`` row label, from the declared answer files of
    the original renders; empty without files."""
    return answer_counts_of(results.files, _include_failed_audit(results))


def _original_files(files) -> list[Path]:
    return [Path(f) for f in files if Path(f).name == "answers.csv"
            and _file_parts(Path(f))[1] == ORIGINAL]


def answer_counts_of(files, include_failed_audit: bool = False) -> dict[str, AnswerCounts]:
    """:class:`AnswerCounts` per row label (``reader``, or ``reader (dataset)`` where several
    question sets ran) of the answer files of the original renders among ``files``
    (``results/vista/{reader}/original/{dataset}/answers.csv``); the counts page 1 and the end
    of a run (:func:`roundtrip.evals.vista.plan.VistaPlan.error_problems`) both read."""
    from roundtrip.evals.vista.answers import NOT_ASKED_AGAIN, NOT_SCORED, out_of_scope
    from roundtrip.evals.vista.tables import admitted, is_error, read_answers, table1_rows
    from roundtrip.tables.reasons import summarize_reasons

    files = _original_files(files)
    many = len({_file_parts(f)[2] for f in files}) > 1
    out = {}
    for f in files:
        reader, _, dataset = _file_parts(f)
        df = table1_rows(admitted(read_answers(f), include_failed_audit)[0])
        asked = df[~out_of_scope(df) & (df["status"] != NOT_SCORED)]
        errors = asked[is_error(asked)]
        label = f"{reader} ({dataset})" if many else reader
        out[label] = AnswerCounts(
            label, int((df["mode"] == "text").sum()), len(asked), len(errors),
            int(((asked["extracted_by"] == "invalid") & ~is_error(asked)).sum()),
            summarize_reasons((str(r).split(":")[0] for r in errors["reason"]), top=2,
                              counts="always"),
            int(errors["reason"].astype(str).str.contains(NOT_ASKED_AGAIN, regex=False).sum()))
    return out


@dataclass(frozen=True)
class PairedAnswers:
    """A reader's Table 1 questions scored in both modes, the set a modality gap is over
    (VISTA-Bench App. D.1: the gap pairs each question's text answer with its VT answer).

    Attributes:
        label: the ``vista_accuracy`` row label.
        questions: the reader's Table 1 questions (in its scope).
        vt, text: hits (100 right, 0 wrong) of the paired questions, in the same order.
        no_vt, no_text: why each unpaired question has no scored VT or text answer: ``error:
            <kind>`` (no answer) or the first words of a not-scored row's reason.
    """
    label: str
    questions: int
    vt: np.ndarray
    text: np.ndarray
    no_vt: tuple[str, ...]
    no_text: tuple[str, ...]

    @property
    def n(self) -> int:
        """Questions scored in both modes."""
        return len(self.vt)


def _why_unscored(row) -> str:
    from roundtrip.evals.vista.answers import ERROR

    if row is None:
        return "no answer row"
    first = str(row["reason"]).split(":")[0] or str(row["status"])
    return f"error: {first}" if row["status"] == ERROR else first


def paired_answers(results: RunResults) -> dict[str, PairedAnswers]:
    """:class:`PairedAnswers` per ``vista_accuracy`` row label, from the declared answer files
    of the original renders (questions outside a reader's scope left out, as its accuracies
    leave them); empty without files."""
    from roundtrip.evals.vista.answers import out_of_scope
    from roundtrip.evals.vista.tables import admitted, read_answers, table1_rows

    files = _original_files(results.files)
    many = len({_file_parts(f)[2] for f in files}) > 1
    out = {}
    for f in files:
        reader, _, dataset = _file_parts(f)
        df = table1_rows(admitted(read_answers(f), _include_failed_audit(results))[0])
        df = df[~out_of_scope(df)]
        text = {r["question_id"]: r for r in df[df["mode"] == "text"].to_dict("records")}
        vt = {r["question_id"]: r for r in df[df["mode"] == "vt"].to_dict("records")}
        pairs, no_vt, no_text = [], [], []
        for q, t in text.items():
            v = vt.get(q)
            v_ok = v is not None and not math.isnan(v["hit"])
            t_ok = not math.isnan(t["hit"])
            if v_ok and t_ok:
                pairs.append((100.0 * v["hit"], 100.0 * t["hit"]))
                continue
            if not v_ok:
                no_vt.append(_why_unscored(v))
            if not t_ok:
                no_text.append(_why_unscored(t))
        arr = np.array(pairs, float).reshape(-1, 2)
        label = f"{reader} ({dataset})" if many else reader
        out[label] = PairedAnswers(label, len(text), arr[:, 0], arr[:, 1], tuple(no_vt),
                                   tuple(no_text))
    return out


def left_out_sentence(paired: dict[str, PairedAnswers]) -> str | None:
    """Per reader some of whose questions are not scored in both modes: how many of its
    questions the gap leaves out, and why (no VT answer, no text answer, with their causes);
    None where every reader's gap is over all its questions."""
    from roundtrip.tables.reasons import summarize_reasons

    parts = []
    for label, p in paired.items():
        left = p.questions - p.n
        if left <= 0:
            continue
        why = []
        for n, mode, reasons in ((len(p.no_vt), "VT", p.no_vt),
                                 (len(p.no_text), "text", p.no_text)):
            if n:
                why.append(f"{n} without a scored {mode} answer ("
                           f"{summarize_reasons(reasons, top=2, counts='always')})")
        parts.append(f"{label}'s gap is over {p.n} of its {p.questions} questions; {left} "
                     f"{'is' if left == 1 else 'are'} left out: " + ", ".join(why))
    return ". ".join(parts) + "." if parts else None


def _paired_rows(results: RunResults, rows) -> list:
    """``rows`` (:func:`reader_rows`) with each VT and Text accuracy over the questions its gap
    is over, where the table's three cells count different questions (errors or unscored
    answers in one mode only): the paired accuracies from the answer files, with the run's
    bootstrap CIs, and the gap's n. A row whose files are not declared keeps the table's
    cells."""
    if all(vt.n == text.n == gap.n for _, vt, text, gap in rows):
        return list(rows)
    paired = paired_answers(results)
    out = []
    for name, vt, text, gap in rows:
        p = paired.get(name)
        if not (vt.n == text.n == gap.n) and p is not None and p.n == gap.n:
            vt, text = results.summary(p.vt), results.summary(p.text)
        out.append((name, vt, text, gap))
    return out


def max_error_share(results: RunResults) -> float:
    """``vista.max_error_share`` of the run's config (:data:`MAX_ERROR_SHARE` where it has
    none)."""
    config = getattr(results, "config", None) or {}
    value = (config.get("vista") or {}).get("max_error_share")
    return MAX_ERROR_SHARE if value is None else float(value)


def too_many_errors(results: RunResults) -> set[str]:
    """Row labels of the readers more than ``vista.max_error_share`` of whose answers are
    errors: page 1 states no finding for them."""
    limit = max_error_share(results)
    return {label for label, c in answer_counts(results).items() if c.error_share > limit}


def _pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def answers_sentence(results: RunResults) -> str | None:
    """Per reader whose errors or invalid answers are more than :data:`MENTION_SHARE` of its
    answers, how many; for a reader over ``vista.max_error_share``, that it gets no finding;
    None where no reader has enough of either to mention."""
    limit = max_error_share(results)
    parts = []
    for label, c in answer_counts(results).items():
        said = []
        if c.errors and c.error_share > MENTION_SHARE:
            again = ("asked again by the next run" if not c.final else
                     f"asked again by the next run but for {c.final} malformed on every attempt "
                     "of 1 + api.max_reask_runs runs" if c.final < c.errors else
                     "not asked again (each malformed on every attempt of 1 + "
                     "api.max_reask_runs runs)")
            said.append(f"{c.errors} of {c.asked} answers ({_pct(c.error_share)}) are errors "
                        f"({c.reasons}): left out of its accuracies, not counted wrong, and "
                        f"{again}")
            if c.error_share > limit:
                said.append(f"more than vista.max_error_share ({100 * limit:g} %), so no "
                            "finding is reported for it")
        if c.invalid and c.invalid_share > MENTION_SHARE:
            said.append(f"{c.invalid} of {c.asked} ({_pct(c.invalid_share)}) are invalid (no "
                        "option could be read: counted wrong, as the release counts them)")
        if said:
            parts.append(f"{label}: " + "; ".join(said))
    return ". ".join(parts) + "." if parts else None


# -- sentences ----------------------------------------------------------------------------------
def _signed(s: Summary) -> str:
    """A difference in points with its sign and CI: ``+40.0 [10.0, 70.0]``."""
    return f"{'+' if s.mean > 0 else ''}{with_ci(s, 1)}"


def gap_sentence(rows, confidence: float = 0.95, left_out: int = 0) -> str:
    """The paper's comparison (Table 1): VT against Text accuracy and the modality gap, for the
    one reader, or for the readers with the largest and smallest gap and how many readers' gap
    interval (at the run's bootstrap ``confidence``) lies above 0; ``left_out``: readers with
    no finding (too many errors), named in :func:`answers_sentence`. The accuracies of a gap
    are over the questions it is over (:func:`_paired_rows`), so one n is stated; where they
    are not (the answer files are not there), the gap is stated alone with its n."""
    if len(rows) == 1:
        name, vt, text, gap = rows[0]
        only = ("it is the run's only reader" if not left_out else
                f"it is the only reader reported ({left_out} other{'s' * (left_out > 1)} with "
                "too many errors)")
        if not vt.n == text.n == gap.n:
            return (f"{name}'s modality gap (Text - VT) is {_signed(gap)} points over the "
                    f"{gap.n} questions scored both as visualized text (one render per "
                    f"question) and as pure text; {only}, so readers are not ranked.")
        return (f"{name} answers {with_ci(vt, 1)} % of {vt.n} questions right as visualized "
                f"text (one render per question) and {with_ci(text, 1)} % as pure text: a "
                f"modality gap (Text - VT) of {_signed(gap)} points; {only}, so readers are not "
                "ranked.")
    known = [r for r in rows if not math.isnan(r[3].mean)]
    if not known:
        return f"No modality gap could be computed for the {len(rows)} readers (no question " \
               "was scored both as text and as visualized text)."
    known.sort(key=lambda r: -r[3].mean)
    above = sum(1 for r in known if not math.isnan(r[3].ci_low) and r[3].ci_low > 0)
    (hi, hvt, htext, hgap), (lo, lvt, ltext, lgap) = known[0], known[-1]

    def pair(vt, text, gap):
        if not vt.n == text.n == gap.n:
            return f"over {gap.n} questions scored in both modes"
        return f"VT {number(vt.mean, 1)} % vs Text {number(text.mean, 1)} %"
    return (f"The modality gap (Text - VT, overall) lies above 0 with {100 * confidence:g} % "
            f"confidence for "
            f"{above} of {len(known)} readers; it is largest for {hi} ({_signed(hgap)} points: "
            f"{pair(hvt, htext, hgap)}) and smallest for {lo} ({_signed(lgap)}: "
            f"{pair(lvt, ltext, lgap)}).")


def vt_ranking(results: RunResults, rows) -> list[str]:
    """Best and worst reader on overall VT accuracy with the table's CIs, and the best against
    the runner-up as a paired bootstrap difference over the questions both answered (their
    Table 1 renders), from the answer files."""
    order = sorted(((name, vt) for name, vt, _, _ in rows), key=lambda r: (-r[1].mean, r[0]))
    per_q = per_question_vt(results)
    have = set(per_q["model"])
    best, runner = order[0][0], order[1][0]
    if best not in have or runner not in have:
        ranking = Ranking(VT_METRIC, order, None, 0, "reader")
        first = ranking.sentences(1, WHERE)[0]
        return [first, f"{best} and {runner} are not compared question by question: their "
                       "answer files are not among the report's inputs."]
    a = per_q[per_q["model"] == best].set_index("item_id")["value"]
    b = per_q[per_q["model"] == runner].set_index("item_id")["value"]
    shared = a.index.intersection(b.index)
    diff = results.paired(a.loc[shared].to_numpy(), b.loc[shared].to_numpy())
    return Ranking(VT_METRIC, order, diff, len(shared), "reader").sentences(1, WHERE)


def scope_rows(results: RunResults) -> list[tuple[str, int, int]]:
    """``(row label, questions in scope, questions)`` of the ``vista_accuracy`` rows whose
    reader leaves some questions out of its scope (the ``In scope`` column); empty where none
    does."""
    table = results.table(ACCURACY)
    if table is None or table.empty or IN_SCOPE not in table:
        return []
    out = []
    for _, row in table.iterrows():
        s = table_summary(row, IN_SCOPE)
        if not math.isnan(s.mean) and int(s.mean) < s.n:
            out.append((str(row.iloc[0]), int(s.mean), s.n))
    return out


def _scope_of(results: RunResults, label: str) -> str:
    """What the reader of a row label (``reader`` or ``reader (dataset)``) answers at all, from
    its type (:attr:`roundtrip.readers.answerers.OcrSolverAnswerer.SCOPE`), or ``""``."""
    from roundtrip.readers.answerers import ANSWERER_TYPES

    readers = ((results.config or {}).get("vista") or {}).get("readers") or {}
    spec = readers.get(label.split(" (")[0]) or {}
    return getattr(ANSWERER_TYPES.get(spec.get("type")), "SCOPE", "")


def scope_sentence(results: RunResults) -> str | None:
    """Readers that cannot answer every question (:func:`scope_rows`): how many they answer,
    what they answer, and that the rest is left out of their accuracies (not counted wrong)
    and of the comparison with the published VLMs; None where every reader answers every
    question."""
    parts = []
    for label, k, n in scope_rows(results):
        what = _scope_of(results, label)
        what = f" ({label} answers only {what})" if what else ""
        if k == 0:
            parts.append(f"{label} answers none of the {n} questions{what}: they are left out "
                         "of its accuracies, which read n/a, not counted wrong")
        else:
            parts.append(f"{label} answers {k} of the {n} questions{what}: its accuracies are "
                         f"over those {k}; the other {n - k} are left out, not counted wrong")
    if not parts:
        return None
    return ("; ".join(parts) + ". A reader that leaves questions out is not set beside the "
            "published VLMs of Table 1.")


def _reader_of(label: str) -> tuple[str, str | None]:
    """``(reader, dataset or None)`` of a row label: ``reader``, ``reader (dataset)``, ``reader
    / model``, ``reader / model (dataset)``."""
    dataset = label.rsplit(" (", 1)[1].rstrip(")") if label.endswith(")") else None
    return label.split(" (")[0].split(" / ")[0], dataset


def _left_out(label: str, failing: set[str]) -> bool:
    """Whether a row label belongs to a reader with no finding (``failing``: row labels of
    ``vista_accuracy``)."""
    reader, dataset = _reader_of(label)
    return any(r == reader and (d is None or dataset is None or d == dataset)
               for r, d in map(_reader_of, failing))


def tokenizer_sentence(results: RunResults, failing: set[str] = frozenset()) -> str | None:
    """The tokenizer axis (``vista_tokenizers``): the (reader, model) rows whose reconstructions
    cost the least and the most VT accuracy against the original renders (paired per render,
    points, with CIs), leaving out the readers in ``failing`` (too many errors); that the axis
    is off where the table has no rows; None where the table is missing or has no such
    value."""
    from roundtrip.evals.vista.tables import NO_TOKENIZER_AXIS

    table = results.table(TOKENIZERS)
    if table is not None and table.empty:
        return f"The tokenizer axis is not reported: {NO_TOKENIZER_AXIS}."
    if table is None or "recon.delta_vt" not in table:
        return None
    deltas = [(str(row.iloc[0]), table_summary(row, "recon.delta_vt")) for _, row in table.iterrows()
              if not _left_out(str(row.iloc[0]), failing)]
    deltas = sorted((d for d in deltas if not math.isnan(d[1].mean)), key=lambda d: -d[1].mean)
    if not deltas:
        return None
    (top, t), (bottom, b) = deltas[0], deltas[-1]
    if len(deltas) == 1:
        return (f"Read from the model's reconstructions, {top} changes VT accuracy by "
                f"{_signed(t)} points against the original renders.")
    return (f"Read from reconstructions instead of the original renders, VT accuracy holds up "
            f"best for {top} ({_signed(t)} points) and worst for {bottom} "
            f"({_signed(b)} points), of {len(deltas)} reader / model pairs.")


def findings(results: RunResults) -> list[str]:
    """Two to five sentences: VT against Text accuracy and the modality gap per reader
    (VISTA-Bench Table 1) over the questions scored in both modes, with how many questions each
    reader's gap leaves out and why (:func:`left_out_sentence`), how many answers are errors or
    invalid where more than
    :data:`MENTION_SHARE` (:func:`answers_sentence`), the best and worst reader on VT accuracy
    with the best against the runner-up over their shared questions, the readers that cannot
    answer every question (:func:`scope_sentence`), and the tokenizer axis (or that it is off).
    A reader more than ``vista.max_error_share`` of whose answers are errors is in none of
    them but the count of its errors. Says what is missing where ``vista_accuracy`` was not
    written or holds no reader with an accuracy."""
    rows = reader_rows(results)
    scope = scope_sentence(results)
    counts = answers_sentence(results)
    failing = too_many_errors(results)
    if not rows:
        if results.table(ACCURACY) is None:
            return ["VISTA-Bench's accuracies could not be reported: the run wrote no "
                    "vista_accuracy table."]
        out = ["VISTA-Bench's accuracies could not be reported: vista_accuracy holds no reader "
               "with an overall VT accuracy."]
        return out + [s for s in (counts, scope, tokenizer_sentence(results, failing)) if s]
    shown = [r for r in rows if r[0] not in failing]
    if not shown:
        out = [f"No modality gap is reported: every reader's answers are more than "
               f"{100 * max_error_share(results):g} % errors (vista.max_error_share)."]
        return out + [s for s in (counts, scope) if s]
    paired = _paired_rows(results, shown)
    out = [gap_sentence(paired, float((results.bootstrap or {}).get("confidence", 0.95)),
                        left_out=len(rows) - len(shown))]
    if any(not vt.n == text.n == gap.n for _, vt, text, gap in shown):
        left = left_out_sentence({k: v for k, v in paired_answers(results).items()
                                  if k not in failing})
        if left:
            out[0] += " " + left
    out += [counts] if counts else []
    if len(shown) > 1:
        out += vt_ranking(results, shown)
    out += [s for s in (scope, tokenizer_sentence(results, failing)) if s]
    return out[:5]


# -- headline figure ----------------------------------------------------------------------------
def _narrow(ax, groups: int) -> None:
    """Keep bars of a few groups from filling the panel: room for at least three groups."""
    pad = max(0.0, (3 - groups) / 2)
    ax.set_xlim(-0.6 - pad, groups - 0.4 + pad)


def _bars(ax, rows, colour: dict) -> None:
    """VT (filled) and Text (outlined) accuracy per reader with CI whiskers, the gap written
    above each pair."""
    x = np.arange(len(rows))
    w = 0.38
    for i, (name, vt, text, gap) in enumerate(rows):
        c = colour[name]
        for dx, s, fill in ((-w / 2, vt, c), (w / 2, text, "white")):
            err = ([[s.mean - s.ci_low], [s.ci_high - s.mean]]
                   if not math.isnan(s.ci_low) else None)
            ax.bar(x[i] + dx, s.mean, w, color=fill, edgecolor=c, linewidth=1.2, yerr=err,
                   ecolor="#333333", capsize=2, error_kw={"linewidth": 0.8})
        top = max(v for v in (vt.ci_high, text.ci_high, vt.mean, text.mean) if not math.isnan(v))
        ax.text(x[i], min(top + 3, 109), f"gap {_signed(Summary(gap.mean, math.nan, 0, 0))}",
                ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(x, [r[0] for r in rows], rotation=20 if len(rows) > 3 else 0,
                  ha="right" if len(rows) > 3 else "center")
    _narrow(ax, len(rows))
    ax.set_ylim(0, 115)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("VT (filled) vs Text (outlined), overall")


def _tokenizer_panel(ax, table: pd.DataFrame, models: list[str]) -> None:
    """VT accuracy on the original renders and on each model's reconstructions, per reader
    (``vista_tokenizers``; every render counts, not only the Table 1 one)."""
    from roundtrip.report.style import PUBLISHED_GREY, colours

    split = table.iloc[:, 0].astype(str).str.rsplit(" / ", n=1, expand=True)
    if split.shape[1] < 2:  # labels without a model: nothing to tell apart
        split[1] = ""
    split[1] = split[1].fillna("")
    # "model (dataset)" where several question sets ran: the model keeps its run colour
    model_of = {label: label.split(" (")[0] for label in split[1]}
    readers = list(dict.fromkeys(split[0]))
    colour = colours(list(models) + [m for m in model_of.values() if m not in models])
    w = 0.8 / (split[1].nunique() + 1)
    for i, reader in enumerate(readers):
        part = table[split[0] == reader]
        bars = [("original renders", PUBLISHED_GREY,
                 table_summary(part.iloc[0], "original.vt_accuracy"))]
        bars += [(split.loc[idx, 1], colour[model_of[split.loc[idx, 1]]],
                  table_summary(row, "recon.vt_accuracy")) for idx, row in part.iterrows()]
        for k, (label, c, s) in enumerate(bars):
            err = ([[s.mean - s.ci_low], [s.ci_high - s.mean]]
                   if not math.isnan(s.ci_low) else None)
            # the group of bars centred on the reader's tick
            ax.bar(i + (k - (len(bars) - 1) / 2) * w, s.mean, w, color=c, yerr=err,
                   ecolor="#333333", capsize=2, error_kw={"linewidth": 0.8},
                   label=label if i == 0 else None)
    ax.set_xticks(np.arange(len(readers)), readers)
    _narrow(ax, len(readers))
    ax.set_ylim(0, 105)
    ax.set_ylabel("VT accuracy (%)")
    ax.set_title("Tokenizer axis: reading reconstructions")
    ax.legend(loc="upper right", frameon=False)


def headline_figure(results: RunResults, path: Path) -> str | None:
    """VT against Text accuracy per reader with the gap written above each pair (VISTA-Bench
    Table 1), beside the tokenizer axis where ``vista_tokenizers`` has rows; None where
    ``vista_accuracy`` holds no reader."""
    from roundtrip.report import style

    failing = too_many_errors(results)
    rows = [r for r in reader_rows(results) if r[0] not in failing]
    if not rows:
        return None
    tok = results.table(TOKENIZERS)
    if failing and tok is not None and not tok.empty:
        tok = tok[[not _left_out(str(label), failing) for label in tok.iloc[:, 0]]]
    has_tok = (tok is not None and not tok.empty
               and {"recon.vt_accuracy", "original.vt_accuracy"} <= set(tok.columns))
    fig, axes = style.figure(1, 2 if has_tok else 1, height_in=2.8)
    _bars(axes[0, 0], rows, style.colours([r[0] for r in rows]))
    if has_tok:
        _tokenizer_panel(axes[0, 1], tok, results.models)
    style.save(fig, path)
    caption = ("Overall accuracy (%) of each reader on visualized text (VT, one render per "
               "question; filled) and on pure text (outlined), 95 % bootstrap CIs; above each "
               "pair the modality gap Text - VT in points (VISTA-Bench Table 1).")
    if failing:
        caption += (f" Not drawn: {', '.join(sorted(failing))} (more than "
                    f"{100 * max_error_share(results):g} % of the answers are errors, "
                    "vista.max_error_share).")
    if has_tok:
        caption += (" Right: VT accuracy over every render, on the original renders (grey) and "
                    "on each model's reconstructions of them (vista_tokenizers).")
    return caption


def paper_gap(text_minus_vt: float) -> str:
    """A ``vista_accuracy`` gap (Text - VT, points) as Table 1 prints its Gap: VT - Text, one
    decimal, with its sign (``-11.4``, ``+0.3``; ``0.0`` for no gap)."""
    vt_minus_text = round(-float(text_minus_vt), 1) + 0.0  # no "-0.0"
    return f"{vt_minus_text:+.1f}" if vt_minus_text else "0.0"


def table1_cells(results: RunResults) -> pd.DataFrame | None:
    """The readers' rows of VISTA-Bench Table 1 in the published cells' layout
    (:mod:`roundtrip.tables.published`): VT and Text accuracy per category and Overall, and the
    Overall gap, to one decimal as the paper prints them; only where every question set of the
    run is the release (``type: vista_release``, or a set marked ``paper_data``), so that the
    rows measure what the paper's do. The gap takes Table 1's sign, VT - Text (:func:`paper_gap`;
    ``vista_accuracy`` holds Text - VT), so one sign runs down the column beside the published
    rows. Run categories are matched to the paper's column groups by name (case-insensitive);
    others are left out, and so is a reader that leaves questions out of its scope
    (:func:`scope_rows`: its numbers are not over the paper's questions) or more than
    ``vista.max_error_share`` of whose answers are errors (:func:`too_many_errors`). Each row
    also gets a cell ``n`` (:data:`roundtrip.tables.published.RUN_N_COLUMN`): the questions it
    is over, against the benchmark's :data:`BENCHMARK_QUESTIONS`, saying where that is a subset
    (:func:`roundtrip.tables.published.run_coverage`), and how many answers of each mode were
    scored where errors left some out.

    Returns:
        ``table, row_group, row, column_group, column, printed`` rows, or None.
    """
    datasets = (results.config.get("datasets") or {})
    names = (results.config.get("vista") or {}).get("datasets") or [
        d for d, s in datasets.items() if s.get("type") in ("vista_questions", "vista_release")]
    if not names or any(datasets[d].get("type") != "vista_release"
                        and not datasets[d].get("paper_data") for d in names):
        return None
    table = results.table(ACCURACY)
    if table is None or table.empty:
        return None
    from roundtrip.tables.published import RUN_N_COLUMN, run_coverage

    partial = {label for label, _, _ in scope_rows(results)} | too_many_errors(results)
    counts = answer_counts(results)
    groups = {"multimodal perception", "multimodal reasoning", "multimodal knowledge",
              "unimodal knowledge", "overall"}
    rows = []
    for _, r in table.iterrows():
        if str(r.iloc[0]) in partial:
            continue
        vt, text = table_summary(r, "overall.vt_accuracy"), table_summary(r, "overall.text_accuracy")
        questions = counts[str(r.iloc[0])].questions if str(r.iloc[0]) in counts \
            else max(vt.n, text.n)

        def cell(group, column, printed):
            rows.append({"table": "Table 1", "row_group": "This run", "row": str(r["reader"]),
                         "column_group": group, "column": column, "printed": printed})
        for col in table.columns:
            group, _, metric = col.rpartition(".")
            if group.lower() not in groups or metric not in ("vt_accuracy", "text_accuracy"):
                continue
            if pd.notna(r[col]):
                cell(group.title() if group != "overall" else "Overall",
                     "VT" if metric == "vt_accuracy" else "Text", f"{float(r[col]):.1f}")
        gap = r.get("overall.modality_gap")
        if pd.notna(gap):
            cell("Overall", "Gap", paper_gap(gap))
        if questions:
            scored = ("" if vt.n == text.n == questions else
                      f"; scored {vt.n:,} VT, {text.n:,} Text")
            cell("", RUN_N_COLUMN, run_coverage(questions, BENCHMARK_QUESTIONS) + scored)
    return pd.DataFrame(rows) if rows else None

"""Checkpoint B against checkpoint A, across every evaluation: the comparison layer.

One comparison serves both ways in: the config's ``compare:`` entries (both sides in one results
folder, rule ``compare``) and ``roundtrip compare RESULTS_A RESULTS_B`` (two finished results
folders). It reads every evaluation's per-item files through the evaluation's declarations
(:attr:`roundtrip.core.evaluation.Evaluation.comparisons`,
:class:`roundtrip.core.comparison.ComparedMetric`) and names no evaluation itself:

1. **Files.** A declaration's pattern (``metrics/{name}/{dataset}/image_quality.csv``) is
   matched in each results folder; only files that one of its tables read (their provenance
   records' ``inputs``) are kept, so each evaluation reads its own datasets. In one run, a
   dataset only one of the two ran on (``datasets.<d>.models``) makes no row; between runs, a
   file the candidate's run lacks makes a row that says so.
2. **Comparable?** Between runs, the dataset's items (the manifest's ``item_id`` and ``sha256``,
   or ``text``), the metric's definition (``definition``, as the provenance records of the
   tables that read the file recorded it) and the declaration's reference files must be the
   same; a mismatch, or a definition a run did not record, is named in the row's note and the
   row is left out of the statistics.
3. **Items.** Rows whose ``status`` is ``ok`` with a value pair by the item keys; items scored
   on one side only are counted (``n_unpaired``) and listed in ``compare_items`` with the
   reason.
4. **Statistics** (:mod:`roundtrip.metrics.paired`): per-item numbers, binary outcomes and
   set-level numbers recomputed from the items, clusters resampled whole; Holm within each
   (comparison, evaluation)'s headline metrics, Benjamini-Yekutieli across all rows; a verdict
   per row with the margin of ``compare.margins`` (default: the metric's printed precision).

Rows of the ``compare`` table (:data:`ROW_COLUMNS`) and of ``compare_items``
(:data:`ITEM_COLUMNS`) come out as data frames; :func:`what_changed` says them in sentences.
"""
from __future__ import annotations

import importlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.comparison import DATASET, NAME, ComparedMetric, NotMeasured, names_table
from roundtrip.core.hashing import sha256_file
from roundtrip.metrics import METRICS
from roundtrip.metrics.paired import (BETTER, BINARY, EQUIVALENT, INCONCLUSIVE, SET, WORSE,
                                      Paired, PairedSettings, benjamini_yekutieli, holm,
                                      paired_items, paired_set, resolution, verdict)

#: The verdict of a row that was not compared (a changed dataset, a file on one side only).
NOT_COMPARED = "not compared"

#: Columns of the ``compare`` table, in order. ``higher_is_better`` is the metric's direction
#: (:func:`info_of`), the one its verdict follows; a ``compare.csv`` written before it was a
#: column lacks it (:func:`roundtrip.report.compare.read_rows` reads such a file all the same).
ROW_COLUMNS = ["comparison", "baseline", "candidate", "evaluation", "dataset", "where", "metric",
               "kind", "n_paired", "n_unpaired", "baseline_value", "candidate_value",
               "difference", "ci_low", "ci_high", "test", "p", "p_holm", "p_by", "effect",
               "ties", "flips", "detectable", "margin", "digits", "higher_is_better", "headline",
               "verdict", "note"]
#: Columns of the ``compare_items`` table, in order.
ITEM_COLUMNS = ["comparison", "evaluation", "dataset", "where", "metric", "item_id", "cluster",
                "baseline_value", "candidate_value", "difference", "paired", "reason",
                "baseline_text", "candidate_text"]


class CompareError(ValueError):
    """A comparison that cannot start (a results folder that is not one, an unknown name); the
    message says what to give where."""


@dataclass(frozen=True)
class PairSpec:
    """One comparison: ``candidate`` against ``baseline``.

    Attributes:
        baseline, candidate: names (a model, a VISTA reader, a Telephone pair); between runs,
            the baseline is read in run A and the candidate in run B.
        label: the row label (default ``candidate vs baseline``).
        margins: metric -> equivalence margin in the metric's units (``compare.margins``);
            a metric without one uses its printed precision (:func:`margin_of`).
    """
    baseline: str
    candidate: str
    label: str = ""
    margins: dict = field(default_factory=dict, hash=False)

    @property
    def name(self) -> str:
        return self.label or f"{self.candidate} vs {self.baseline}"


#: The settings of a ``compare:`` section given as a plain list (config.schema.yaml).
DEFAULTS = {"pairs": [], "margins": {}, "resamples": 10_000, "confidence": 0.95, "power": 0.8,
            "seed": 0, "gallery_items": 3}


def compare_config(config: dict) -> dict:
    """The config's ``compare:`` section as a mapping with every setting (:data:`DEFAULTS`):
    a plain list is its ``pairs``."""
    section = config.get("compare") or []
    if isinstance(section, list):
        section = {"pairs": section}
    return {**DEFAULTS, **section}


def pairs_from_config(config: dict) -> list[PairSpec]:
    """:class:`PairSpec` of the config's ``compare:`` entries, each entry's ``margins`` over the
    section's ``margins``."""
    section = compare_config(config)
    margins = dict(section["margins"] or {})
    return [PairSpec(e["baseline"], e["candidate"], e.get("label") or "",
                     {**margins, **(e.get("margins") or {})}) for e in section["pairs"]]


def settings_from_config(config: dict) -> PairedSettings:
    """The :class:`~roundtrip.metrics.paired.PairedSettings` of the config's ``compare:``."""
    s = compare_config(config)
    return PairedSettings(int(s["resamples"]), float(s["confidence"]), float(s["power"]),
                          int(s["seed"]))


@dataclass
class Side:
    """One side of a (set-level) comparison, for a declaration's ``set_value`` function.

    Attributes:
        folder: the results folder; name: the compared name; dataset: the dataset;
        dims: the pattern's other wildcards; file: the per-item file read;
        frame: its rows of the shared items, in the same order on both sides.
    """
    folder: Path
    name: str
    dataset: str
    dims: dict
    file: Path
    frame: pd.DataFrame

    def records(self, scorer: str) -> dict:
        """``item_id -> record`` of one reconstruction scorer (``perceptual``, ``tokens``) in
        this side's score journals (``recon/{name}/{dataset}/shards/*.scores.pkl``, the last
        record of an item winning): the per-item data a set-level number is recomputed from
        (features, token grids)."""
        from roundtrip.core.scoring import read_score_journal

        out: dict = {}
        for path in sorted(self.path("recon/{name}/{dataset}/shards").glob("*.scores.pkl")):
            for key, pairs in read_score_journal(path):
                if key.split(":", 1)[0] == scorer:
                    out.update(pairs)
        return out

    def path(self, pattern: str) -> Path:
        """A pattern of the declaration's wildcards (``{name}``, ``{dataset}``, ...) as a file
        of this side."""
        return self.folder / pattern.format(name=self.name, dataset=self.dataset, **self.dims)


def info_of(cm: ComparedMetric) -> tuple[str, bool, int]:
    """``(label, higher_is_better, digits)`` of a declaration: its own fields, else
    :data:`roundtrip.metrics.METRICS`.

    Raises:
        CompareError: a metric neither declares nor METRICS knows.
    """
    known = METRICS.get(cm.metric)
    label = cm.label or (known.label if known else cm.metric)
    higher = cm.higher_is_better if cm.higher_is_better is not None else (
        known.higher_is_better if known else None)
    digits = cm.digits if cm.digits is not None else (known.digits if known else None)
    if higher is None or digits is None:
        raise CompareError(f"metric {cm.metric!r} has no direction or precision: declare "
                           "higher_is_better and digits in its ComparedMetric, or add it to "
                           "roundtrip.metrics.METRICS")
    return label, bool(higher), int(digits)


def margin_of(pair: PairSpec, cm: ComparedMetric, digits: int) -> float:
    """The equivalence margin of a row: ``margins[metric]`` (or by its label), else the step of
    the metric's printed precision (:func:`roundtrip.metrics.paired.resolution`)."""
    for key in (cm.metric, cm.label):
        if key and key in pair.margins:
            return float(pair.margins[key])
    return resolution(digits)


def results_folder(path: str | Path) -> Path:
    """The results folder of ``path``: itself where it holds ``tables/``, else its
    ``results/``.

    Raises:
        CompareError: neither holds a ``tables`` folder.
    """
    path = Path(path)
    for folder in (path, path / "results"):
        if (folder / "tables").is_dir():
            return folder
    raise CompareError(f"{path} is not a results folder: give the folder that holds tables/ "
                       "(results/ of a finished run) or the folder the run ran in")


def _pattern_regex(pattern: str, constraints=None) -> tuple[re.Pattern, list[str]]:
    names = re.findall(r"{(\w+)}", pattern)
    parts = re.split(r"{\w+}", pattern)
    constraints = constraints or {}
    body = "".join(re.escape(p) + (f"({constraints.get(names[i], '[^/]+')})"
                                   if i < len(names) else "")
                   for i, p in enumerate(parts))
    return re.compile(body + r"\Z"), names


class Run:
    """What one results folder holds for a comparison: the files of each declaration, by
    (name, dataset, other wildcards), the digests of its manifests and reference files, and the
    metric definitions its tables recorded.

    Args:
        folder: a results folder (:func:`results_folder`).
    """

    def __init__(self, folder: str | Path):
        self.folder = results_folder(folder)
        self._read_by: dict[str, set[str]] | None = None
        self._defined: dict[str, dict | None] = {}
        self._digests: dict[Path, str] = {}
        self._manifests: dict[str, str | None] = {}
        self.read: set[Path] = set()
        #: the per-item files read, by path (callers must not modify them)
        self.frames: dict[Path, pd.DataFrame] = {}
        #: their rows by item, per file and key columns (:func:`_items`)
        self.bases: dict[tuple, pd.DataFrame] = {}

    @property
    def read_by(self) -> dict[str, set[str]]:
        """Table name -> the files (relative to the results folder) its provenance record
        lists as inputs."""
        if self._read_by is None:
            self._read_by = {}
            for f in sorted((self.folder / "tables").glob("*.provenance.json")):
                try:
                    record = json.loads(f.read_text())
                except (OSError, ValueError):
                    continue
                inputs = record.get("inputs", {})
                rel = {p.split("results/", 1)[1] if "results/" in p else p for p in inputs}
                table = f.name.removesuffix(".provenance.json")
                self._read_by[table] = rel
                self._defined[table] = record.get("definitions")
        return self._read_by

    def definitions(self, evaluation: str, cm: ComparedMetric, path: Path) -> set:
        """The definitions of a declaration's metric that the provenance records of the tables
        (of its ``tables``) that read ``path`` hold (:func:`roundtrip.core.comparison
        .recorded_definitions`), None for a table that recorded none (made before roundtrip
        recorded them); empty where no table lists the file."""
        rel = path.relative_to(self.folder).as_posix()
        out = set()
        for table, inputs in self.read_by.items():
            if rel in inputs and names_table(cm.tables, table):
                out.add(((self._defined[table] or {}).get(evaluation) or {}).get(cm.metric))
        return out

    def files(self, cm: ComparedMetric) -> dict[tuple, tuple[dict, Path]]:
        """``(name, dataset, other wildcards...) -> (wildcards, file)`` of a declaration's
        files in this folder that its tables read (all matches where it names no table)."""
        regex, names = _pattern_regex(cm.files, cm.wildcards)
        glob = re.sub(r"{\w+}", "*", cm.files)
        allowed = None
        if cm.tables:
            allowed = set()
            for table, inputs in self.read_by.items():
                if names_table(cm.tables, table):
                    allowed |= inputs
        out = {}
        for path in sorted(self.folder.glob(glob)):
            rel = path.relative_to(self.folder).as_posix()
            m = regex.match(rel)
            if not m or (allowed is not None and rel not in allowed):
                continue
            wild = dict(zip(names, m.groups()))
            dims = {k: v for k, v in wild.items() if k not in (NAME, DATASET)}
            out[(wild.get(NAME), wild.get(DATASET), *sorted(dims.items()))] = (wild, path)
        return out

    def digest(self, path: Path) -> str | None:
        """SHA-256 of a file (None where it is missing), read once."""
        if path not in self._digests:
            self._digests[path] = sha256_file(path) if path.is_file() else None
        return self._digests[path]

    def manifest(self, dataset: str) -> str | None:
        """A digest of the dataset's items (``item_id`` with ``sha256``, else ``text``, else the
        whole row less ``path``), so the same items built in another folder compare equal; None
        where there is no manifest."""
        if dataset not in self._manifests:
            path = self.folder / "datasets" / dataset / "manifest.csv"
            if not path.is_file():
                self._manifests[dataset] = None
            else:
                import hashlib

                df = pd.read_csv(path, dtype=str, keep_default_na=False)
                self.read.add(path)
                cols = [c for c in ("item_id", "sha256") if c in df.columns]
                if "sha256" not in df.columns:
                    cols = [c for c in df.columns if c != "path"]
                text = df[cols].to_csv(index=False)
                self._manifests[dataset] = hashlib.sha256(text.encode()).hexdigest()
        return self._manifests[dataset]


def common_names(run_a: Run, run_b: Run, evaluations) -> list[str]:
    """The names (models, readers, pairs) both runs have files of, for some evaluation's
    declaration, in run A's order: what ``roundtrip compare`` compares when given no name."""
    names_a, names_b = {}, set()
    for ev in evaluations.values():
        for cm in ev.comparisons:
            names_a.update(dict.fromkeys(k[0] for k in run_a.files(cm)))
            names_b |= {k[0] for k in run_b.files(cm)}
    return [n for n in names_a if n in names_b]


def _read(run: Run, path: Path) -> pd.DataFrame:
    """A per-item file as read (once per run: several metrics read one file)."""
    run.read.add(path)
    if path not in run.frames:
        run.frames[path] = pd.read_csv(path, dtype={"item_id": str}, keep_default_na=False,
                                       na_values=["", "nan", "NaN"])
    return run.frames[path]


def _where_text(dims: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(dims.items()))


def _key(df: pd.DataFrame, columns) -> pd.Series:
    """The columns' values as text, joined with ``/`` (an item's or a cluster's key)."""
    key = df[columns[0]].astype(str)
    for col in columns[1:]:
        key = key + "/" + df[col].astype(str)
    return key


def _items(run: Run, path: Path, cm: ComparedMetric) -> pd.DataFrame:
    """The declaration's rows of a per-item file: ``where`` applied, an ``_item`` key, a
    ``_cluster`` key, ``_ok`` (status ok and a value), ``_value`` (the column times scale)
    and ``_reason``; the keys and statuses made once per file and key columns."""
    key = (path, cm.rows, cm.item, cm.cluster, tuple(sorted(cm.where.items())))
    if key not in run.bases:
        run.bases[key] = _base(_read(run, path), cm)
    df = run.bases[key].copy()
    if df.empty:
        return df.assign(_value=pd.Series(dtype=float), _ok=pd.Series(dtype=bool))
    if cm.column and cm.column in df.columns:
        value = pd.to_numeric(df[cm.column], errors="coerce") * cm.scale
    elif cm.column and cm.kind != SET:
        raise CompareError(f"{cm.files}: no column {cm.column!r} ({cm.metric})")
    else:
        value = pd.Series(0.0, df.index)
    df["_value"] = value
    ok = df["_status"] == "ok"
    df["_ok"] = ok & value.notna()
    df.loc[ok & value.isna(), "_reason"] = f"no {cm.column} value"
    return df


def _base(frame: pd.DataFrame, cm: ComparedMetric) -> pd.DataFrame:
    """:func:`_items` without the metric's column: rows, keys, status and reason."""
    df = _set_function(cm.rows)(frame) if cm.rows else frame
    for col, value in cm.where.items():
        if col not in df.columns:
            return df.iloc[0:0].assign(_item=[], _cluster=[], _status=[], _reason=[])
        df = df[df[col].astype(str) == str(value)]
    df = df.copy()
    missing = [c for c in (*cm.item, *cm.cluster) if c not in df.columns]
    if missing:
        raise CompareError(f"{cm.files}: no column {', '.join(missing)} (item keys of "
                           f"{cm.metric})")
    df["_item"] = _key(df, cm.item)
    df["_cluster"] = _key(df, cm.cluster) if cm.cluster else df["_item"]
    status = (df["status"].astype(str) if "status" in df.columns
              else pd.Series("ok", df.index, dtype=object))
    df["_status"] = status
    reason = pd.Series("", df.index, dtype=object)
    bad = (status != "ok").to_numpy()
    if bad.any():
        why = (df.loc[bad, "reason"].map(lambda x: "" if pd.isna(x) else str(x))
               if "reason" in df.columns else pd.Series("", df.index[bad]))
        reason[bad] = status[bad] + np.where(why != "", ": " + why, "")
    df["_reason"] = reason
    return df.drop_duplicates("_item", keep="last")


@dataclass
class Comparison:
    """The outcome: ``rows`` (:data:`ROW_COLUMNS`), ``items`` (:data:`ITEM_COLUMNS`), the files
    read on each side (for provenance), and ``gallery``: per row whose declaration has
    ``images``, the items that changed most (binary outcomes: that flipped) whose images both
    sides kept, each a dict of ``comparison, evaluation, dataset, where, metric, item_id,
    baseline, candidate, baseline_image, candidate_image, original`` (paths; ``original`` may be
    None), ``difference, baseline_value, candidate_value`` (the row's units), ``kind, digits``,
    ``text`` (whether the declaration has one) and ``baseline_text, candidate_text``."""
    rows: pd.DataFrame
    items: pd.DataFrame
    inputs: list[Path]
    gallery: list[dict]


def _set_function(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _row(pair, ev, cm, dataset, dims, label, digits, note="", **values) -> dict:
    row = dict.fromkeys(ROW_COLUMNS, math.nan)
    row.update(comparison=pair.name, baseline=pair.baseline, candidate=pair.candidate,
               evaluation=ev.label, dataset=dataset, where=_where_text(dims), metric=label,
               kind=cm.kind, headline=bool(cm.headline), note=note, verdict=NOT_COMPARED,
               test="", flips="", higher_is_better=info_of(cm)[1])
    row.update(values)
    row["digits"] = digits
    return row


def compare(run_a: Run, run_b: Run, pairs: list[PairSpec], evaluations,
            settings: PairedSettings = PairedSettings(), gallery_items: int = 3) -> Comparison:
    """Compare every pair in every evaluation that declares comparisons.

    Args:
        run_a, run_b: the baseline's and the candidate's results folders (the same
            :class:`Run` for a comparison inside one run).
        pairs: the comparisons.
        evaluations: the registered evaluations (``key -> Evaluation``), in report order.
        settings: resamples, confidence, power, seed.
        gallery_items: per image row, how many of the most changed items the gallery keeps.

    Returns:
        :class:`Comparison`. Adjusted p-values and verdicts are computed over all its rows.

    Raises:
        CompareError: a declaration without direction or precision, or a file without its
            item columns.
    """
    same = run_a.folder.resolve() == run_b.folder.resolve()
    rows, items, gallery = [], [], []
    for ev in evaluations.values():
        for cm in ev.comparisons:
            label, higher, digits = info_of(cm)
            files_a, files_b = run_a.files(cm), run_b.files(cm)
            for pair in pairs:
                for key, (wild, path_a) in files_a.items():
                    if key[0] != pair.baseline:
                        continue
                    dataset = wild.get(DATASET, "")
                    dims = {k: v for k, v in wild.items() if k not in (NAME, DATASET)}
                    other = files_b.get((pair.candidate, *key[1:]))
                    args = (pair, ev, cm, dataset, dims, label, digits)
                    if other is None:  # in one run: not run on it (datasets.<d>.models)
                        if not same:
                            rel = cm.files.format(name=pair.candidate, dataset=dataset, **dims)
                            rows.append(_row(*args, note=f"the candidate run has no {rel}"))
                        continue
                    path_b = other[1]
                    problem = "" if same else _incomparable(run_a, run_b, ev.key, cm, dataset,
                                                            dims, path_a, path_b)
                    if problem:
                        rows.append(_row(*args, note=problem))
                        continue
                    row, item_rows, best = _compare_files(run_a, run_b, pair, ev, cm, dataset,
                                                          dims, path_a, path_b, settings,
                                                          (label, higher, digits),
                                                          gallery_items)
                    if row is None:  # the run did not measure it (NotMeasured)
                        continue
                    rows.append(row)
                    items += item_rows
                    gallery += best
    frame = _adjust(pd.DataFrame(rows, columns=ROW_COLUMNS + ["_result"]), settings)
    item_frame = pd.DataFrame(items, columns=ITEM_COLUMNS)
    inputs = sorted(run_a.read | run_b.read)
    return Comparison(frame, item_frame, inputs, gallery)


def _incomparable(run_a: Run, run_b: Run, evaluation: str, cm: ComparedMetric, dataset: str,
                  dims: dict, path_a: Path, path_b: Path) -> str:
    """Why the two runs' rows of a dataset do not compare (its items, the metric's recorded
    definition or a reference file differ, or a run recorded no definition), or ``""``."""
    ma, mb = run_a.manifest(dataset), run_b.manifest(dataset)
    if ma != mb:
        return (f"dataset {dataset} changed between the runs (its manifest's items differ): "
                "left out")
    da, db = run_a.definitions(evaluation, cm, path_a), run_b.definitions(evaluation, cm, path_b)
    unrecorded = [side for side, d in (("A", da), ("B", db)) if not d or None in d]
    if unrecorded:
        runs = "runs A and B record" if len(unrecorded) == 2 else f"run {unrecorded[0]} records"
        return (f"{runs} no definition of {cm.metric} (tables made before roundtrip recorded "
                "them): left out")
    if da != db:
        return (f"the definition of {cm.metric} differs between the runs (A: "
                f"{' | '.join(sorted(da))}; B: {' | '.join(sorted(db))}): left out")
    for pattern in cm.references:
        rel = pattern.format(dataset=dataset, **dims)
        da, db = run_a.digest(run_a.folder / rel), run_b.digest(run_b.folder / rel)
        run_a.read.add(run_a.folder / rel)
        run_b.read.add(run_b.folder / rel)
        if da != db:
            return f"{rel} (what {cm.metric} is measured against) differs between the runs: left out"
    return ""


def _compare_files(run_a, run_b, pair, ev, cm, dataset, dims, path_a, path_b, settings, info,
                   gallery_items):
    """One row of the comparison (and its item rows and gallery entries) from the two sides'
    files; ``(None, [], [])`` where the run did not measure the metric."""
    with np.errstate(invalid="ignore"):  # inf - inf: PSNR of two exact copies, left out
        return _compare_frames(run_a, run_b, pair, ev, cm, dataset, dims, path_a, path_b,
                               settings, info, gallery_items)


def _compare_frames(run_a, run_b, pair, ev, cm, dataset, dims, path_a, path_b, settings, info,
                    gallery_items):
    label, _, digits = info  # the direction: the row's higher_is_better (_row)
    a = _items(run_a, path_a, cm).set_index("_item", drop=False)
    b = _items(run_b, path_b, cm).set_index("_item", drop=False)
    ok_a = set(a.index[a["_ok"].to_numpy(dtype=bool)])
    ok_b = set(b.index[b["_ok"].to_numpy(dtype=bool)])
    shared = [i for i in a.index if i in ok_a and i in ok_b]
    paired = set(shared)
    only = [i for i in dict.fromkeys([*a.index, *b.index]) if i not in paired]
    where = _where_text(dims)
    item_rows = []
    for i in only:
        ra = a["_reason"].get(i, "no row") if i in a.index else "no row"
        rb = b["_reason"].get(i, "no row") if i in b.index else "no row"
        if i not in ok_a and i not in ok_b:
            why = f"not scored on either side ({pair.baseline}: {ra or 'no value'}; " \
                  f"{pair.candidate}: {rb or 'no value'})"
        elif i not in ok_b:
            why = f"{pair.candidate}: {rb or 'no value'}"
        else:
            why = f"{pair.baseline}: {ra or 'no value'}"
        item_rows.append({"comparison": pair.name, "evaluation": ev.label, "dataset": dataset,
                          "where": where, "metric": label, "item_id": i,
                          "cluster": a["_cluster"].get(i, b["_cluster"].get(i, "")),
                          "baseline_value": a["_value"].get(i, math.nan),
                          "candidate_value": b["_value"].get(i, math.nan),
                          "difference": math.nan, "paired": False, "reason": why,
                          "baseline_text": "", "candidate_text": ""})
    base = a.loc[shared]
    cand = b.loc[shared]
    clusters = base["_cluster"].to_numpy() if cm.cluster else None
    texts = None
    if cm.kind == SET:
        fn = _set_function(cm.set_value)
        side_a = Side(run_a.folder, pair.baseline, dataset, dims, path_a,
                      base.reset_index(drop=True))
        side_b = Side(run_b.folder, pair.candidate, dataset, dims, path_b,
                      cand.reset_index(drop=True))
        try:
            statistic = fn(side_a, side_b)
            result = paired_set(statistic, len(shared), clusters, settings)
        except NotMeasured:
            return None, [], []
        except (OSError, ValueError, KeyError) as exc:
            row = _row(pair, ev, cm, dataset, dims, label, digits,
                       note=f"the set number could not be recomputed from the items: {exc}")
            return row, item_rows, []
    else:
        try:  # binary outcomes are tested as 0/1, then given in the row's units
            result = _scaled(paired_items(base["_value"].to_numpy(float) / cm.scale,
                                          cand["_value"].to_numpy(float) / cm.scale,
                                          clusters, cm.kind, settings), cm.scale)
        except ValueError as exc:
            row = _row(pair, ev, cm, dataset, dims, label, digits,
                       note=f"{path_a.name}: {exc}")
            return row, item_rows, []
        texts = _texts(run_a, run_b, pair, cm, dataset, dims, a, b) if cm.text else None
        diff = cand["_value"].to_numpy(float) - base["_value"].to_numpy(float)
        for k, i in enumerate(shared):
            item_rows.append({"comparison": pair.name, "evaluation": ev.label,
                              "dataset": dataset, "where": where, "metric": label,
                              "item_id": i, "cluster": base["_cluster"].iat[k],
                              "baseline_value": base["_value"].iat[k],
                              "candidate_value": cand["_value"].iat[k],
                              "difference": diff[k], "paired": True, "reason": "",
                              "baseline_text": texts[0].get(i, "") if texts else "",
                              "candidate_text": texts[1].get(i, "") if texts else ""})
    if result.n == 0:  # nothing scored on both sides: no row where nothing was scored at all
        if not only and not result.not_finite:
            return None, [], []
        why = (f"{result.not_finite} shared item(s) without a finite value on a side (PSNR = "
               "inf of an exact copy)" if result.not_finite else
               f"no item scored on both sides ({len(only)} on one side or neither)")
        return (_row(pair, ev, cm, dataset, dims, label, digits, note=why,
                     n_paired=0, n_unpaired=len(only)), item_rows, [])
    note = cm.note
    if result.not_finite:
        note = "; ".join(filter(None, [note, (
            f"{result.not_finite} shared item(s) without a finite value on a side (PSNR = inf "
            "of an exact copy) left out")]))
    row = _row(pair, ev, cm, dataset, dims, label, digits, note=note,
               n_paired=result.n, n_unpaired=len(only), baseline_value=result.baseline,
               candidate_value=result.candidate, difference=result.difference,
               ci_low=result.ci_low, ci_high=result.ci_high, test=result.test, p=result.p,
               effect=result.effect, ties=result.ties,
               flips="" if result.flips is None else
               f"{result.flips[0]} right->wrong, {result.flips[1]} wrong->right",
               detectable=result.detectable, margin=margin_of(pair, cm, digits),
               verdict=INCONCLUSIVE)
    row["_result"] = result
    best = []
    if cm.images and cm.kind != SET and len(shared):
        best = _gallery(run_a, run_b, pair, ev, cm, dataset, dims, shared, base, cand,
                        texts, (label, digits), gallery_items)
    return row, item_rows, best


def _gallery(run_a, run_b, pair, ev, cm, dataset, dims, shared, base, cand, texts, info,
             limit: int) -> list[dict]:
    """The gallery entries of one row: up to ``limit`` of the shared items whose images both
    sides kept, the largest change first (binary outcomes: the items that flipped, right ->
    wrong first), each with both sides' images, the original, both values (in the row's
    units), what each side read or answered and whether the declaration has ``text``."""
    label, digits = info
    b_values = base["_value"].to_numpy(float)
    c_values = cand["_value"].to_numpy(float)
    d = c_values - b_values
    if cm.kind == BINARY:
        # flipped only; right -> wrong (d < 0) before wrong -> right, each in item order
        order = [k for k in np.argsort(np.sign(d), kind="stable") if d[k] != 0]
    else:
        size = np.abs(d)
        size[~np.isfinite(size)] = -1
        order = list(np.argsort(-size, kind="stable"))
    patterns = (cm.images,) if isinstance(cm.images, str) else tuple(cm.images)
    kept = []
    for k in order:
        i = shared[k]
        item = str(base[cm.image_item].iat[k]) if cm.image_item else i
        for pattern in patterns:
            pa = run_a.folder / pattern.format(name=pair.baseline, dataset=dataset, item=item,
                                               **dims)
            pb = run_b.folder / pattern.format(name=pair.candidate, dataset=dataset, item=item,
                                               **dims)
            if pa.is_file() and pb.is_file():
                break
        else:
            continue
        kept.append({"comparison": pair.name, "evaluation": ev.label, "dataset": dataset,
                     "where": _where_text(dims), "metric": label,
                     "item_id": item, "baseline": pair.baseline, "candidate": pair.candidate,
                     "baseline_image": pa, "candidate_image": pb,
                     "original": _original(run_a, cm, dataset, dims, item, pa),
                     "difference": float(d[k]), "baseline_value": float(b_values[k]),
                     "candidate_value": float(c_values[k]), "kind": cm.kind,
                     "digits": digits, "text": bool(cm.text),
                     "baseline_text": texts[0].get(i, "") if texts else "",
                     "candidate_text": texts[1].get(i, "") if texts else ""})
        if len(kept) >= limit:
            break
    return kept


def _scaled(result: Paired, scale: float) -> Paired:
    """A comparison in the row's units: values, interval, standard error and detectable
    difference times ``scale`` (an accuracy in points); tests and counts unchanged."""
    if scale == 1.0:
        return result
    from dataclasses import replace

    return replace(result, **{k: getattr(result, k) * scale for k in (
        "baseline", "candidate", "difference", "ci_low", "ci_high", "eq_low", "eq_high", "se",
        "detectable")})


def _original(run: Run, cm: ComparedMetric, dataset: str, dims: dict, item: str,
              recon: Path) -> Path | None:
    """The original an item was compared with: the protocol's reference beside the
    reconstruction (``ref/``), else the declaration's ``original`` pattern."""
    ref = recon.parent / "ref" / recon.name
    if ref.is_file():
        return ref
    if cm.original:
        path = run.folder / cm.original.format(dataset=dataset, item=item, **dims)
        return path if path.is_file() else None
    return None


def _texts(run_a, run_b, pair, cm, dataset, dims, a, b) -> tuple[dict, dict]:
    """What each side read or answered per item (``text``: ``column`` or ``pattern:column``)."""
    out = []
    for run, name, frame in ((run_a, pair.baseline, a), (run_b, pair.candidate, b)):
        pattern, _, column = cm.text.rpartition(":")
        if pattern:
            path = run.folder / pattern.format(name=name, dataset=dataset, **dims)
            if not path.is_file():
                out.append({})
                continue
            df = _read(run, path)
            out.append(dict(zip(df["item_id"].astype(str), df[column].fillna("").astype(str)))
                       if column in df.columns else {})
        else:
            out.append(dict(zip(frame["_item"], frame[column].fillna("").astype(str)))
                       if column in frame.columns else {})
    return out[0], out[1]


def _adjust(frame: pd.DataFrame, settings: PairedSettings) -> pd.DataFrame:
    """Holm within each (comparison, evaluation)'s headline rows, Benjamini-Yekutieli across
    all rows; the verdict of each compared row from its adjusted p (headline rows: the larger
    of the two)."""
    if frame.empty:
        return frame[ROW_COLUMNS]
    compared = (frame["verdict"] != NOT_COMPARED).to_numpy()
    p = pd.to_numeric(frame["p"], errors="coerce").to_numpy(float)
    frame["p_by"] = benjamini_yekutieli(np.where(compared, p, np.nan))
    frame["p_holm"] = math.nan
    head = compared & frame["headline"].astype(bool)
    for _, idx in frame[head].groupby(["comparison", "evaluation"], sort=False).groups.items():
        frame.loc[idx, "p_holm"] = holm(p[frame.index.get_indexer(idx)])
    verdicts = []
    for _, r in frame.iterrows():
        if r["verdict"] == NOT_COMPARED or not isinstance(r.get("_result"), Paired):
            verdicts.append(r["verdict"])
            continue
        adjusted = max(r["p_by"], r["p_holm"]) if r["headline"] else r["p_by"]
        verdicts.append(verdict(r["_result"], float(adjusted), bool(r["higher_is_better"]),
                                float(r["margin"]), int(r["digits"]), settings.alpha))
    frame["verdict"] = verdicts
    return frame[ROW_COLUMNS].reset_index(drop=True)


def regressions(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose verdict is ``worse`` (after correction)."""
    return rows[rows["verdict"] == WORSE] if len(rows) else rows


def _fmt(x: float, digits: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.{digits}f}"


def row_text(r) -> str:
    """One row in words: ``PSNR on natural (ocr=...): -1.23 [-1.50, -0.95]``, at the metric's
    printed precision (its ``digits``)."""
    digits = int(r["digits"]) if not pd.isna(r.get("digits")) else 3
    where = f" ({r['where']})" if isinstance(r.get("where"), str) and r["where"] else ""
    return (f"{r['metric']} on {r['dataset']}{where}: {_fmt(r['difference'], digits)} "
            f"[{_fmt(r['ci_low'], digits)}, {_fmt(r['ci_high'], digits)}]")


def what_changed(rows: pd.DataFrame, largest: int = 2) -> list[str]:
    """The comparison in sentences, one per (comparison, evaluation): how many rows improved,
    regressed, stayed equivalent or are inconclusive, the largest changes (the better and worse
    rows whose difference is the most times the smallest difference their items could detect,
    so rows of different metrics compare), and the rows not compared."""
    out = []
    if rows is None or rows.empty:
        return out
    for (name, ev), g in rows.groupby(["comparison", "evaluation"], sort=False):
        done = g[g["verdict"] != NOT_COMPARED]
        skipped = g[g["verdict"] == NOT_COMPARED]
        notes = list(dict.fromkeys(skipped["note"]))
        others = len(notes) - 1
        why = (f"{notes[0]}" + (f"; and {others} other reason{'s' * (others > 1)}" if others
                                 else "")) if notes else ""
        if done.empty:
            out.append(f"{name}, {ev}: nothing compared ({why}).")
            continue
        counts = done["verdict"].value_counts()
        parts = [f"{counts.get(v, 0)} {v}" for v in (BETTER, WORSE, EQUIVALENT, INCONCLUSIVE)]
        text = f"{name}, {ev}: of {len(done)} rows, " + ", ".join(parts)
        unsure = done[done["verdict"] == INCONCLUSIVE]
        if len(unsure) == len(done):
            n = pd.to_numeric(unsure["n_paired"], errors="coerce")
            text += (f"; {int(n.min())} to {int(n.max())} items per row are too few to tell "
                     f"after correcting for {len(rows[rows['verdict'] != NOT_COMPARED])} "
                     "tests (the column detectable: the smallest change each row could show)")
        moved = done[done["verdict"].isin([BETTER, WORSE])].copy()
        if len(moved):
            moved["_size"] = (moved["difference"].abs()
                              / pd.to_numeric(moved["detectable"], errors="coerce")
                              .replace(0, np.nan)).fillna(np.inf)
            top = moved.sort_values("_size", ascending=False).head(largest)
            text += "; largest: " + "; ".join(f"{row_text(r)} ({r['verdict']})"
                                             for _, r in top.iterrows())
        if len(skipped):
            text += f"; {len(skipped)} not compared ({why})"
        out.append(text + ".")
    return out

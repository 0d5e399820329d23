"""The report's first page: what each evaluation found, in sentences generated from its tables.

An evaluation writes its sentences in :meth:`roundtrip.core.evaluation.Evaluation.findings`
from a :class:`RunResults` (its tables as data frames, the per-item files it declared). The
helpers here make the sentences every evaluation shares read the same way: best and worst model
on the headline metric with the 95 % CI of each, and the best against the runner-up as a paired
difference over the items both were measured on: one use of the comparison of checkpoints
(:func:`roundtrip.metrics.paired.paired_items`: BCa paired bootstrap, Wilcoxon's test,
:func:`roundtrip.metrics.paired.verdict`). A model "beats" the runner-up only where that
comparison says better: the interval excludes 0, the test rejects, and the difference does not
print as 0 at the metric's precision; else the two are "equivalent" within the printed
precision's step, or "indistinguishable".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from roundtrip.metrics.paired import (BETTER, EQUIVALENT, WORSE, Paired, paired_items,
                                      resolution, verdict)
from roundtrip.metrics.stats import Summary, bootstrap_mean


@dataclass
class RunResults:
    """What one evaluation's findings and headline figure read.

    Attributes:
        tables: table name -> its CSV (``results/tables/{name}.csv``) for every table of the run.
        files: the per-item files the evaluation declared
            (:meth:`~roundtrip.core.evaluation.Evaluation.findings_inputs`).
        models: the run's models in config order (colours follow this order).
        bootstrap: ``samples``, ``confidence``, ``seed`` of the config's ``tables.bootstrap``.
        published: ``True`` where the config asks for the papers' published numbers
            (``report.published``).
        config: the run's config (filled in), for what a finding must know of the setup.
    """
    tables: dict[str, Path]
    files: list[Path] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    bootstrap: dict = field(default_factory=dict)
    published: bool = True
    config: dict = field(default_factory=dict)

    _frames: dict = field(default_factory=dict, repr=False)

    def table(self, name: str) -> pd.DataFrame | None:
        """The table's CSV as a frame (numbers as floats, empty cells NaN), or None where the
        run did not write it; a file that holds nothing at all (an optional table written
        without its header) reads as a frame without rows or columns. Read once; callers must
        not modify it."""
        if name not in self.tables:
            return None
        if name not in self._frames:
            try:
                self._frames[name] = pd.read_csv(self.tables[name])
            except pd.errors.EmptyDataError:
                self._frames[name] = pd.DataFrame()
        return self._frames[name]

    def summary(self, values) -> Summary:
        """Mean and bootstrap CI of ``values`` with the run's bootstrap settings."""
        return bootstrap_mean(values, **self._boot)

    def paired(self, a, b) -> Paired:
        """``a`` against ``b`` item by item (``a - b``; :func:`roundtrip.metrics.paired
        .paired_items` with ``b`` the baseline), with the settings of the config's ``compare:``
        section (10,000 BCa resamples by default), as the comparison of checkpoints does."""
        from roundtrip.tables.compare import settings_from_config

        return paired_items(b, a, settings=settings_from_config(self.config or {}))

    @property
    def _boot(self) -> dict:
        b = self.bootstrap or {}
        return {"n_boot": int(b.get("samples", 1000)), "confidence": float(b.get("confidence",
                                                                               0.95)),
                "seed": int(b.get("seed", 0))}


def number(value: float, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals; ``inf``/``nan`` spelled out."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def with_ci(s: Summary, digits: int = 2) -> str:
    """``mean [low, high]``; the interval is left out where it is undefined (fewer than 2
    items)."""
    if math.isnan(s.ci_low):
        return number(s.mean, digits)
    return f"{number(s.mean, digits)} [{number(s.ci_low, digits)}, {number(s.ci_high, digits)}]"


@dataclass
class Ranking:
    """Models ranked on one per-item metric.

    Attributes:
        metric: its name as printed (``PSNR (dB)``).
        order: ``(model, Summary)`` best first.
        diff: best against runner-up over the items both have (:class:`~roundtrip.metrics
            .paired.Paired`, best minus runner-up), or None with fewer than two models.
        shared: how many items the two have in common.
        noun: what is ranked, singular (``model``, ``reader``, ``model pair``).
        higher_is_better: the metric's direction (the verdict's).
    """
    metric: str
    order: list[tuple[str, Summary]]
    diff: Paired | None
    shared: int
    noun: str = "model"
    higher_is_better: bool = True

    def sentences(self, digits: int = 2, where: str = "") -> list[str]:
        """Two sentences: the best and worst model with their CIs, and the best against the
        runner-up: "beats" only where :func:`roundtrip.metrics.paired.verdict` says better
        at ``digits`` decimals (margin: one step of that precision), else "equivalent within"
        that step or "indistinguishable"."""
        if not self.order:
            return [f"No {self.noun} has a {self.metric} value{where}."]
        (best, b), (worst, w) = self.order[0], self.order[-1]
        where = f" {where}" if where else ""
        if len(self.order) == 1:
            return [f"{best} is the only {self.noun} with a {self.metric}{where}: "
                    f"{with_ci(b, digits)}."]
        first = (f"On {self.metric}{where}, {best} is best ({with_ci(b, digits)}) and {worst} "
                 f"worst ({with_ci(w, digits)}), of {len(self.order)} {self.noun}s.")
        runner = self.order[1][0]
        d = self.diff
        if d is None or d.n == 0:
            return [first, f"{best} and {runner} share no item to compare on."]
        spread = (f"{'+' if d.difference >= 0 else ''}{number(d.difference, digits)} "
                  f"[{number(d.ci_low, digits)}, {number(d.ci_high, digits)}]")
        margin = resolution(digits)
        said = verdict(d, d.p, self.higher_is_better, margin, digits)
        shared = f"their {d.n} shared items"
        if said in (BETTER, WORSE):
            text = (f"{best} beats the runner-up {runner} by {spread} "
                    f"(paired bootstrap over {d.n} shared items)")
        elif said == EQUIVALENT:
            text = (f"{best} and the runner-up {runner} are equivalent within "
                    f"±{number(margin, digits)}, the metric's printed precision: the paired "
                    f"difference over {shared} is {spread}")
        elif math.isnan(d.ci_low) or d.ci_low <= 0 <= d.ci_high:
            text = (f"{best} and the runner-up {runner} are indistinguishable: the paired "
                    f"difference over {shared} is {spread}, which spans 0")
        elif abs(d.difference) < margin / 2:
            text = (f"{best} and the runner-up {runner} are indistinguishable at the printed "
                    f"precision: the paired difference over {shared} is {spread}")
        else:
            text = (f"{best} and the runner-up {runner} are indistinguishable: the paired "
                    f"difference over {shared} is {spread}, but Wilcoxon's test gives p = "
                    f"{d.p:.2g}")
        return [first, text + "."]


def rank(results: RunResults, per_item: pd.DataFrame, metric: str, higher_is_better: bool,
         noun: str = "model") -> Ranking:
    """Rank models on a per-item metric.

    Args:
        per_item: one row per (model, item) with columns ``model``, ``item_id``, ``value``
            (float; NaN rows are dropped, infinite values count in the mean but not in the
            paired difference).
        metric: printed name; higher_is_better: the metric's direction.
        noun: what the ``model`` column holds, for the sentences (``reader``, ``model pair``).
    """
    df = per_item.dropna(subset=["value"])
    order = []
    for model, g in df.groupby("model", sort=False):
        order.append((model, results.summary(g["value"].to_numpy())))
    sign = -1 if higher_is_better else 1
    order.sort(key=lambda ms: (sign * ms[1].mean if not math.isnan(ms[1].mean) else math.inf,
                               ms[0]))
    if len(order) < 2:
        return Ranking(metric, order, None, 0, noun, higher_is_better)
    a = df[df["model"] == order[0][0]].set_index("item_id")["value"]
    b = df[df["model"] == order[1][0]].set_index("item_id")["value"]
    shared = a.index.intersection(b.index)
    diff = results.paired(a.loc[shared].to_numpy(), b.loc[shared].to_numpy())
    return Ranking(metric, order, diff, len(shared), noun, higher_is_better)


def table_summary(row: pd.Series, column: str) -> Summary:
    """The cell ``column`` of a summary table's row, with its ``.ci_low``, ``.ci_high`` and
    ``.n`` columns (the table engine's CSV layout), as a :class:`Summary`; NaN (n 0) for what
    the table lacks or leaves empty."""
    def get(key):
        v = pd.to_numeric(pd.Series([row.get(key, math.nan)]), errors="coerce").iloc[0]
        return float(v)

    n = get(f"{column}.n")
    return Summary(get(column), get(f"{column}.ci_low"), get(f"{column}.ci_high"),
                   0 if math.isnan(n) else int(n))


def rank_table(table: pd.DataFrame, label: str, column: str, higher_is_better: bool
               ) -> list[tuple[str, Summary]]:
    """Rows of a summary table ranked on ``column`` (:func:`table_summary`): ``[(label,
    Summary)]`` best first, rows without a value last."""
    out = [(str(row[label]), table_summary(row, column)) for _, row in table.iterrows()]
    sign = -1 if higher_is_better else 1
    return sorted(out, key=lambda r: (math.isnan(r[1].mean),
                                      sign * r[1].mean if not math.isnan(r[1].mean) else 0, r[0]))


def per_item_metric(files, file_name: str, column: str, datasets=None, leave_out=()
                    ) -> pd.DataFrame:
    """One per-item metric from the reconstruction jobs' files
    (``results/metrics/{model}/{dataset}/{file_name}``, declared by
    :meth:`~roundtrip.core.evaluation.Evaluation.findings_inputs`).

    Args:
        files: the declared files; others, missing ones and those without ``column`` are
            skipped.
        file_name: e.g. ``image_quality.csv``; column: e.g. ``psnr``.
        datasets: keep only these datasets (all if None).
        leave_out: models to drop.

    Returns:
        ``model``, ``dataset``, ``item_id`` (str), ``value`` (float; NaN where not a number),
        rows whose ``status`` is not ``ok`` dropped, in file order.
    """
    frames = []
    for f in map(Path, files):
        model, dataset = f.parent.parent.name, f.parent.name
        if f.name != file_name or model in leave_out or not f.is_file() or (
                datasets is not None and dataset not in datasets):
            continue
        df = pd.read_csv(f)
        if column not in df.columns:
            continue
        if "status" in df.columns:
            df = df[df["status"] == "ok"]
        frames.append(pd.DataFrame({"model": model, "dataset": dataset,
                                    "item_id": df["item_id"].astype(str),
                                    "value": pd.to_numeric(df[column], errors="coerce")}))
    if not frames:
        return pd.DataFrame(columns=["model", "dataset", "item_id", "value"])
    return pd.concat(frames, ignore_index=True)


def paper_datasets(results: RunResults) -> set[str]:
    """The run's datasets marked as a paper's own data (config ``datasets.<name>.paper_data``),
    whose rows the report prints beside the published ones."""
    return {d for d, spec in (results.config.get("datasets") or {}).items()
            if spec.get("paper_data")}

"""Robustness of text preservation to the OCR backend (VTBench Appendix G, Table 5).

Every OCR engine of the config reads the same originals and reconstructions; CER and WER of each
model are reported per text dataset and engine, as VTBench does (its Table 5 is one dataset, the
movie posters: its first column equals Table 3's poster CER/WER, so the headline is the released
evaluator's CER/WER of the set, :mod:`roundtrip.evals.vtbench.released`; roundtrip's per-item
means at the scored size follow). WER is left out for scripts without word spaces (Chinese,
Japanese), as the paper prints CER only there. VTBench observes that the ranking of models is
stable across backends without measuring it; :func:`rank_agreement` measures it with Kendall's
tau-b between the model rankings of each pair of engines, per dataset
(:func:`agreement_per_dataset`), on the headline rates (roundtrip's per-item means where a set
has no released reading).
"""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import pandas as pd

WER_UNDEFINED = "WER not defined for scripts without word spaces"


def engine_of(per_item_path: str | Path) -> str:
    """OCR engine of ``results/metrics/{model}/{dataset}/text_{engine}.csv`` (or of its set
    file, ``text_set_{engine}.csv``)."""
    return Path(per_item_path).stem.removeprefix("text_set_").removeprefix("text_")


def pooled_items(frames: dict[str, pd.DataFrame], cer_only: set[str]) -> pd.DataFrame:
    """Per-item text rows of one (model, engine) from several datasets, stacked.

    Args:
        frames: ``dataset -> per-item text frame`` (``roundtrip.evals.vtbench.text.TEXT_COLUMNS``).
        cer_only: datasets whose WER is undefined; their ``wer`` becomes NaN with the reason.

    Returns:
        The stacked rows with a ``dataset`` column; item ids become ``{dataset}/{item_id}``.
    """
    parts = []
    for dataset, df in frames.items():
        df = df.copy()
        df.insert(0, "dataset", dataset)
        df["item_id"] = dataset + "/" + df["item_id"].astype(str)
        if dataset in cer_only:
            df["wer"] = math.nan
            ok = df["status"] == "ok"
            df.loc[ok, "reason"] = WER_UNDEFINED
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def robustness_key(dataset: str, engine: str) -> str:
    """The column key of (dataset, engine) in the robustness table: ``{dataset}/{engine}``."""
    return f"{dataset}/{engine}"


def _engines_of(engines: list[str] | dict[str, list[str]], dataset: str) -> list[str]:
    return list(engines[dataset] if isinstance(engines, dict) else engines)


def headline_metrics(dataset: str, cer_only: set[str], released: set[str] | None = None
                     ) -> tuple[str, ...]:
    """The rates a dataset's engines are ranked by: the released evaluator's CER (and WER where
    defined), or roundtrip's per-item means for a set without the released reading."""
    rates = ("cer",) if dataset in cer_only else ("cer", "wer")
    if released is None or dataset in released:
        return tuple(f"{m}_vtbench" for m in rates)
    return rates


def robustness_columns(datasets: list[str], engines: list[str] | dict[str, list[str]],
                       cer_only: set[str], released: set[str] | None = None) -> list:
    """Columns of the per-dataset robustness table: per engine that reads the dataset, the
    released evaluator's CER (and WER where defined; file kind ``text_set``) where the set has
    that reading (``released``, default all), then roundtrip's per-item means (kind ``item``),
    grouped by dataset.

    Args:
        engines: the engines of every dataset, or ``dataset -> engines reading it``
            (``ocr.engines.<name>.datasets``).

    Returns:
        ``roundtrip.tables.Column`` list; ``Column.dataset`` is :func:`robustness_key`.
    """
    from roundtrip.evals.vtbench.tables import _col

    cols = []
    for d in datasets:
        for e in _engines_of(engines, d):
            key, group = robustness_key(d, e), f"{d} ({e})"
            rates = ("cer",) if d in cer_only else ("cer", "wer")
            if released is None or d in released:
                cols += [_col(key, f"{m}_vtbench", source="set", group=group, file="text_set")
                         for m in rates]
            cols += [_col(key, m, f"{m.upper()} (per-item mean)", group=group) for m in rates]
    return cols


def agreement_per_dataset(means: pd.DataFrame, datasets: list[str],
                          engines: list[str] | dict[str, list[str]],
                          metrics: dict[str, tuple[str, ...]] | None = None) -> pd.DataFrame:
    """:func:`rank_agreement` for each dataset, with a ``dataset`` column first.

    Args:
        means: one row per model, columns ``{dataset}/{engine}.{metric}`` (the robustness
            table's CSV means).
        engines: as in :func:`robustness_columns`.
        metrics: dataset -> the rates ranked (:func:`headline_metrics`; default CER and WER
            per-item means).
    """
    parts = []
    for d in datasets:
        rates = (metrics or {}).get(d, ("cer", "wer"))
        cols = {f"{robustness_key(d, e)}.{m}": f"{e}.{m}" for e in _engines_of(engines, d)
                for m in rates if f"{robustness_key(d, e)}.{m}" in means}
        part = rank_agreement(means[list(cols)].rename(columns=cols), rates)
        part.insert(0, "dataset", d)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _metric_name(metric: str) -> str:
    """``CER`` or ``WER``: the rate ranked (the released one where the set has it; the table's
    note says so)."""
    return metric.removesuffix("_vtbench").upper()


def rank_agreement(means: pd.DataFrame, metrics: tuple[str, ...] = ("cer", "wer")) -> pd.DataFrame:
    """Kendall's tau-b between the model rankings of every pair of engines.

    Args:
        means: one row per model, columns ``{engine}.{metric}`` (mean over pooled items; NaN
            where the model has no value).

    Returns:
        DataFrame ``engine_a, engine_b, metric, kendall_tau, p_value, n_models, note``; with
        fewer than two engines, one row saying so. tau is NaN (with the note) when fewer than
        three models have values under both engines or one engine ranks all models equal.
    """
    from scipy.stats import kendalltau

    engines = sorted({c.rsplit(".", 1)[0] for c in means.columns})
    rows = []
    for a, b in itertools.combinations(engines, 2):
        for metric in metrics:
            ca, cb = f"{a}.{metric}", f"{b}.{metric}"
            if ca not in means or cb not in means:
                continue
            both = means[[ca, cb]].dropna()
            row = {"engine_a": a, "engine_b": b, "metric": _metric_name(metric),
                   "kendall_tau": math.nan,
                   "p_value": math.nan, "n_models": len(both), "note": ""}
            if len(both) < 3:
                row["note"] = f"needs at least 3 models with values under both engines ({len(both)})"
            elif both[ca].nunique() < 2 or both[cb].nunique() < 2:
                row["note"] = "an engine gives every model the same value: no ranking"
            else:
                res = kendalltau(both[ca], both[cb])
                row |= {"kendall_tau": float(res.statistic), "p_value": float(res.pvalue)}
            rows.append(row)
    if not rows:
        note = ("rank agreement needs two OCR engines reading the dataset (ocr.engines, "
                f"and their datasets key); it has {len(engines)}: {', '.join(engines) or 'none'}")
        rows.append({"engine_a": engines[0] if engines else "", "engine_b": "", "metric": "",
                     "kendall_tau": math.nan, "p_value": math.nan, "n_models": len(means),
                     "note": note})
    return pd.DataFrame(rows, columns=["engine_a", "engine_b", "metric", "kendall_tau", "p_value",
                                       "n_models", "note"])

"""MediBench tables: modality rows x model columns, row and column averages (MediBench Tables 1-6).

Every table is written as CSV (numbers, one column per model and metric), Markdown and LaTeX
(cells such as ``31.2/0.871``), with numbered footnotes. A cell that could not be computed reads
``n/a`` and its footnote says why; a cell computed on fewer items than the set has says how many
and why. PSNR of an exact reconstruction is ``inf`` and is printed so. The ``Avg`` column is the
mean over the evaluated models, leaving out ``identity`` rows (a reference whose PSNR is infinite)
and the image baselines; the ``Average`` row is the mean over the rows above it.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pandas as pd

from roundtrip.core.manifest import read_manifest
from roundtrip.tables import exact_note, format_value, read_per_item, write_frame
from roundtrip.tables.matrix import Notes, tuple_formatter, write_matrix

#: Baseline feature names of the latent tables (``features`` column of the baselines' file).
BASELINES_2D = ("pixels", "ResNet-18 (ImageNet)", "ResNet-18 (random init)")
METRIC_LABELS = {"accuracy": "Acc", "macro_f1": "Macro-F1", "macro_precision": "Macro-P",
                 "macro_recall": "Macro-R", "macro_auc": "Macro-AUC"}


def _reasons(df: pd.DataFrame, metric: str) -> str:
    bad = df[df[metric].isna()] if metric in df else df
    c = Counter(f"{s}: {r}" if r else str(s) for s, r in zip(bad["status"], bad["reason"]))
    return "; ".join(f"{k} ({v}x)" if v > 1 else k for k, v in c.most_common(3))


def _mean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return float(v.mean()) if len(v) else math.nan


def _avg_models(models: list[str], specs: dict) -> list[str]:
    return [m for m in models if specs.get(m, {}).get("type") != "identity"]


# -- fidelity ----------------------------------------------------------------------------------
def fidelity_cells(datasets: list[str], models: list[str], modalities: dict[str, str],
                   not_run: dict, by_item_modality: bool = True):
    """``{(modality, model): ((psnr, ssim), note)}`` from ``image_quality.csv`` files; 2D sets
    are grouped by each item's manifest ``modality`` (several sets may share a modality).
    A mean made infinite by exactly reconstructed items carries a note counting them
    (:func:`roundtrip.tables.exact_note`); constant volumes are counted too."""
    frames: dict[tuple[str, str], list[pd.DataFrame]] = {}
    reasons: dict[tuple[str, str], str] = {}
    rows: list[str] = []
    constant: set[str] = set()
    for d in datasets:
        manifest = read_manifest(f"results/datasets/{d}/manifest.csv")
        item_mod = dict(zip(manifest["item_id"], manifest["modality"])) \
            if by_item_modality and "modality" in manifest else {}
        if "notes" in manifest:  # constant volumes: scaled to all zeros (datasets.volumes)
            constant.update((d, i) for i in manifest.loc[
                manifest["notes"].str.contains("constant volume"), "item_id"])
        for m in models:
            if (m, d) in not_run:
                for mod in sorted(set(item_mod.values()) or {modalities[d]}):
                    reasons.setdefault((mod, m), not_run[(m, d)])
                    rows.append(mod)
                continue
            per_item = read_per_item(f"results/metrics/{m}/{d}/image_quality.csv")
            per_item["dataset"] = d
            per_item["modality"] = per_item["item_id"].map(item_mod).fillna(modalities[d]) \
                if item_mod else modalities[d]
            per_item.loc[per_item["modality"] == "", "modality"] = modalities[d]
            for mod, group in per_item.groupby("modality", sort=False):
                frames.setdefault((mod, m), []).append(group)
                rows.append(mod)
    cells = {}
    for key, parts in frames.items():
        df = pd.concat(parts)
        scored = df["psnr"].notna().sum() if "psnr" in df else 0
        note = "" if scored == len(df) else \
            f"{scored} of {len(df)} items scored; not scored: {_reasons(df, 'psnr')}"
        exact = exact_note(pd.to_numeric(df["psnr"], errors="coerce")) if "psnr" in df else ""
        if exact:  # an inf mean says how many items were exact
            note = "; ".join(n for n in (note, exact) if n)
        if n_const := sum((d, i) in constant for d, i in zip(df["dataset"], df["item_id"])):
            note = "; ".join(n for n in (note, f"{n_const} constant volume(s), all zeros after "
                                               "intensity scaling") if n)
        cells[key] = ((_mean(df.get("psnr", pd.Series(dtype=float))),
                       _mean(df.get("ssim", pd.Series(dtype=float)))), note)
    for key, why in reasons.items():
        cells.setdefault(key, ((math.nan, math.nan), why))
    return list(dict.fromkeys(rows)), cells


def write_fidelity(name: str, title: str, datasets, models, specs, modalities, not_run, out_dir):
    """PSNR (dB) / SSIM per modality x model (MediBench Tables 1 and 3) from the
    ``image_quality.csv`` files under ``results/metrics``; returns the written paths."""
    rows, cells = fidelity_cells(datasets, models, modalities, not_run)
    notes = Notes(["Cells: PSNR (dB) / SSIM, means over items in [0, 1] intensities "
                   "(MediBench Sec. 3.1); inf = exact reconstruction. Avg leaves out identity "
                   "(a reference row)."])
    return write_matrix(name, title, "Modality", rows, models, cells, ("psnr", "ssim"), notes, out_dir,
                  _avg_models(models, specs), tuple_formatter(),
                  "n/a: no dataset of this kind in the config")


# -- structure ---------------------------------------------------------------------------------
def write_structure(name, title, datasets, models, specs, modalities, not_run, segmenter: dict,
                    qc_note: str, out_dir):
    """SegQC / SegSim / mean Dice per volume dataset x model, all in [0, 1] (MediBench Table 4),
    from ``structure.csv``; the footnote names the segmenter and what its SegQC is."""
    cells, rows = {}, []
    for d in datasets:
        rows.append(modalities[d])
        for m in models:
            if (m, d) in not_run:
                cells[(modalities[d], m)] = ((math.nan,) * 3, not_run[(m, d)])
                continue
            df = read_per_item(f"results/metrics/{m}/{d}/structure.csv")
            scored = df["segsim"].notna().sum() if "segsim" in df else 0
            note = "" if scored == len(df) else \
                f"{scored} of {len(df)} volumes scored; not scored: {_reasons(df, 'segsim')}"
            vals = tuple(_mean(df[c]) if c in df else math.nan for c in ("segqc", "segsim", "dice_mean"))
            if math.isnan(vals[0]) and scored:
                note = (note + "; " if note else "") + f"SegQC n/a: {qc_note}"
            cells[(modalities[d], m)] = (vals, note)
    seg = ", ".join(f"{k}={v}" for k, v in segmenter.items())
    notes = Notes([f"Cells: SegQC / SegSim / mean Dice over labels, in [0, 1] (MediBench Sec. 3.2, "
                   f"Eq. 4). Segmenter: {seg}; {qc_note}. HD95 (mm) per volume is in "
                   "results/metrics/{model}/{dataset}/structure.csv."])
    return write_matrix(name, title, "Modality", rows, models, cells, ("segqc", "segsim", "dice"), notes,
                  out_dir, _avg_models(models, specs), tuple_formatter((3, 3, 3)),
                  "n/a: no volume dataset in the config")


# -- latent utility ----------------------------------------------------------------------------
def latent_rows(datasets, models, not_run) -> pd.DataFrame:
    """All classifier rows: ``dataset, features (model or baseline), head, metrics, reason``."""
    out = []
    for d in datasets:
        for m in models + ["original"]:
            if (m, d) in not_run:
                out.append({"dataset": d, "features": m, "head": "mlp", "status": "not run",
                            "reason": not_run[(m, d)]})
                continue
            df = read_per_item(f"results/metrics/{m}/{d}/latent_utility.csv")
            df = df.assign(dataset=d, features=[m if m != "original" else f for f in df["features"]])
            out += df.to_dict("records")
    # no labeled set: an empty frame that still has the columns the tables select on
    return pd.DataFrame(out) if out else pd.DataFrame(
        columns=["dataset", "features", "head", "status", "reason", "macro_auc"])


def write_latent(name, title, datasets, models, specs, modalities, rows: pd.DataFrame, out_dir,
                 head: str = "mlp"):
    """Macro-AUC in [0, 1] of ``head`` per task x (model latents, then image baselines)
    (MediBench Tables 2 and 5) from the rows of :func:`latent_rows`."""
    baselines = [f for f in dict.fromkeys(rows["features"]) if f not in models] if len(rows) else []
    cells = {}
    for _, r in rows[rows["head"] == head].iterrows():
        auc = float(r.get("macro_auc", math.nan))
        reason = "" if pd.isna(r.get("reason")) else str(r.get("reason"))
        note = reason if reason or (r["status"] == "ok" and not math.isnan(auc)) else str(r["status"])
        cells[(modalities[r["dataset"]], r["features"])] = ((auc,), note)
    notes = Notes([f"Cells: Macro-AUC of the {head.upper()} head on standardized features "
                   "(MediBench Sec. 3.3), pooled over held-out folds; model columns classify the "
                   "model's latent, the last columns are image baselines. Avg: models only. "
                   "All metrics and the linear head: medibench_classifiers."])
    return write_matrix(name, title, "Task", [modalities[d] for d in datasets], models + baselines,
                  cells, ("auc",), notes, out_dir, _avg_models(models, specs),
                  lambda v: format_value(v[0], 3), "n/a: no labeled dataset of this kind in the config")


def write_classifiers(rows: pd.DataFrame, out_dir):
    """Every classifier row (dataset, features, head, the five metrics in [0, 1], n_test)."""
    cols = ["dataset", "features", "head", *METRIC_LABELS, "n_test", "status", "reason"]
    df = rows.reindex(columns=cols).rename(columns=METRIC_LABELS)
    notes = ["Accuracy (exact match for multi-label), macro F1/precision/recall and macro AUC "
             "(one-vs-rest), scikit-learn; MediBench Sec. 3.3 and Tables 9-10."]
    return write_frame(df, "medibench_classifiers", "MediBench latent utility: all classifiers",
                       notes, out_dir, digits={k: 3 for k in METRIC_LABELS.values()} | {"n_test": 0})


# -- latent shapes -----------------------------------------------------------------------------
#: MediBench Table 6's representative 3D input (128 x 128 x 36 voxels, one channel).
VOLUME_3D = (128, 128, 36)


def latent_shapes(models) -> pd.DataFrame:
    """Latent shape, element count and compression ratio per model at 256^2/512^2 (3 channels)
    and for a 128x128x36 volume (2D models slice-wise along the last axis)."""
    from roundtrip.models.card import CARD_SIZES, compression_ratio

    rows = []
    for model in models:
        info = model.info()
        row = {"model": model.name, "family": info.family}
        for s in CARD_SIZES:
            shape = model.latent_shape(s, s)
            row[f"latent_{s}"] = "x".join(map(str, shape)) if shape else "–"
            row[f"elements_{s}"] = math.prod(shape) if shape else math.nan
            row[f"ratio_{s}"] = compression_ratio(shape, s, s)
        x, y, z = VOLUME_3D
        k = max(1, int(info.downsample))
        shape = None if getattr(model, "spatial_dims", 2) == 3 else \
            model.latent_shape(-(-x // k) * k, -(-y // k) * k)
        row["latent_3d"] = f"{z}x" + "x".join(map(str, shape)) if shape else "–"
        row["elements_3d"] = z * math.prod(shape) if shape else math.nan
        row["ratio_3d"] = row["elements_3d"] / (x * y * z)
        rows.append(row)
    return pd.DataFrame(rows)


def write_latent_shapes(models, out_dir):
    """:func:`latent_shapes` as the ``medibench_latent_shapes`` table (MediBench Table 6)."""
    df = latent_shapes(models)
    notes = ["Compression ratio = latent elements / input elements (MediBench Table 6); 2D inputs "
             "have 3 channels, the 3D example is 128x128x36 voxels with one channel (2D models "
             "encode its 36 slices, each replicated to 3 channels and padded to the model's "
             "downsample factor, so an identity model has ratio 3).",
             "–: the latent is not a fixed-shape tensor (codecs) or the shape is not exposed by "
             "a native 3D adapter."]
    return write_frame(df, "medibench_latent_shapes", "MediBench latent shapes and compression "
                       "ratios", notes, out_dir,
                       digits={"ratio_256": 4, "ratio_512": 4, "ratio_3d": 4, "elements_256": 0,
                               "elements_512": 0, "elements_3d": 0})


def write_all(models, specs, datasets_2d, datasets_3d, latent_datasets, modalities, not_run,
              segmenter: dict, qc_note: str, out_dir) -> list[Path]:
    """Every MediBench table but the latent shapes into ``out_dir`` (the ``medical_tables``
    rule; it builds no model, so it imports no torch)."""
    out_dir = Path(out_dir)
    paths = write_fidelity("medibench_2d_fidelity", "MediBench 2D reconstruction fidelity "
                           "(PSNR/SSIM)", datasets_2d, models, specs, modalities, not_run, out_dir)
    paths += write_fidelity("medibench_3d_fidelity", "MediBench 3D reconstruction fidelity "
                            "(PSNR/SSIM, 3D SSIM)", datasets_3d, models, specs, modalities,
                            not_run, out_dir)
    paths += write_structure("medibench_3d_structure", "MediBench 3D clinical structure "
                             "(SegQC/SegSim/Dice)", datasets_3d, models, specs, modalities,
                             not_run, segmenter, qc_note, out_dir)
    rows = latent_rows(latent_datasets, models, not_run)
    for dims, sets in (("2d", [d for d in latent_datasets if d in datasets_2d]),
                       ("3d", [d for d in latent_datasets if d in datasets_3d])):
        sub = rows[rows["dataset"].isin(sets)] if len(rows) else rows
        paths += write_latent(f"medibench_{dims}_latent", f"MediBench {dims.upper()} latent "
                              "utility (Macro-AUC)", sets, models, specs, modalities, sub, out_dir)
    paths += write_classifiers(rows, out_dir)
    return paths

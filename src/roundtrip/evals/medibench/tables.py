"""MediBench tables: dataset rows x model columns, row and column averages (MediBench Tables 1-6).

Every table is written as CSV (numbers, one column per model and metric), Markdown and LaTeX
(cells such as ``31.2/0.871``), with numbered footnotes. Layout as the paper prints Tables 1-5
(MediBench Sec. 4.2): one row per dataset (Table 7 lists PathMNIST and PCam as two rows), model
columns grouped by family (reference codecs, continuous VAEs, discrete/VQ tokenizers, then the
image baselines), the per-column best cell in bold (by SSIM in the fidelity tables, as the paper's
captions say; by SegSim in Table 4; by AUC in the latent tables), PSNR with one decimal, Table 4's
scores x100. A modality row pooling several datasets is added only when
``medical.pool_modalities`` asks for it, and is labelled ``Pooled: ...``.

A cell that could not be computed reads ``n/a`` and its footnote says why; a cell computed on
fewer items than the set has says how many and why. PSNR of an exact reconstruction is ``inf``.
The ``Avg`` column is the mean over the evaluated models, leaving out ``identity`` (a reference
whose PSNR is infinite) and the image baselines; the ``Average`` row is the mean over the dataset
rows (pooled rows are left out: they repeat their datasets' items).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from roundtrip.core.manifest import read_manifest
from roundtrip.tables import exact_note, format_value, read_per_item, write_frame
from roundtrip.tables.engine import tex_escape
from roundtrip.tables.matrix import Notes, nan_mean
from roundtrip.tables.reasons import summarize_reasons

#: Baseline feature names of the latent tables (``features`` column of the baselines' file).
BASELINES_2D = ("pixels", "ResNet-18 (ImageNet)", "ResNet-18 (random init)")
METRIC_LABELS = {"accuracy": "Acc", "macro_f1": "Macro-F1", "macro_precision": "Macro-P",
                 "macro_recall": "Macro-R", "macro_auc": "Macro-AUC"}
#: Column groups in the paper's order (Tables 1-5: "Continuous VAEs", "VQ VAEs"), with roundtrip's
#: reference codecs first and the image baselines last.
GROUPS = ("Reference", "Continuous", "Discrete", "Image baselines")
#: Name of the structure table's first score by segmenter: SegQC is SynthSeg's QC score
#: (MediBench Sec. 3.2, Pillar 2); the gmm segmenter's score is a different quantity.
QC_NAMES = {"synthseg": "SegQC", "gmm": "GMM-conf"}
POOLED = "Pooled: "

#: A file the rule passes in (``str`` or :class:`~pathlib.Path`).
PathLike = str | Path
#: ``(model, dataset) -> file`` of a metric the rule declares as input; the latent-utility map
#: also holds ``("original", dataset)``, the image baselines' file.
ModelDatasetFiles = Mapping[tuple[str, str], PathLike]


def _reasons(df: pd.DataFrame, metric: str) -> str:
    bad = df[df[metric].isna()] if metric in df else df
    labels = (f"{s}: {r}" if r else str(s) for s, r in zip(bad["status"], bad["reason"]))
    return summarize_reasons(labels, top=3, counts="repeated")


def _mean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return float(v.mean()) if len(v) else math.nan


def _avg_models(models: list[str], specs: dict) -> list[str]:
    return [m for m in models if specs.get(m, {}).get("type") != "identity"]


# -- layout ----------------------------------------------------------------------------------
def model_group(spec: dict | None) -> str:
    """Column group of a model spec (no model is built, so no torch): ``Continuous`` for
    continuous latents (``diffusers_kl``, ``monai_kl``, family ``continuous``), ``Discrete`` for
    quantized ones (``diffusers_vq``, ``monai_vqvae``, families VQ/LFQ/BSQ/RVQ/RBSQ),
    ``Reference`` for codecs and identity; ``Image baselines`` for a name without a spec."""
    if spec is None:
        return "Image baselines"
    kind, family = spec.get("type", ""), spec.get("family")
    if kind in ("identity", "jpeg", "webp", "resample", "api_image"):
        return "Reference"
    if family:
        return "Continuous" if family == "continuous" else "Discrete"
    return "Discrete" if kind in ("diffusers_vq", "monai_vqvae") else "Continuous"


def grouped_columns(columns: list[str], specs: dict) -> list[tuple[str, str]]:
    """``(group, column)`` in :data:`GROUPS` order, the config's order within a group."""
    tagged = [(model_group(specs.get(c) if c in specs else None), c) for c in columns]
    return sorted(tagged, key=lambda t: GROUPS.index(t[0]))


def _blocks(rows: list[tuple[str, str]], block_of: Mapping[str, str] | None
            ) -> list[tuple[str, list[tuple[str, str]]]]:
    """Rows grouped by block label (order of first appearance; one unnamed block without
    ``block_of``)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for key, label in rows:
        out.setdefault((block_of or {}).get(key, ""), []).append((key, label))
    return list(out.items())


def write_grouped(name: str, title: str, row_label: str, rows: list[tuple[str, str]],
                  columns: list[str], specs: dict, cells: dict, numbers: tuple[str, ...],
                  notes: Notes, out_dir, avg_columns: list[str], digits: tuple[int, ...],
                  bold_by: int, empty_note: str, scale: float = 1.0,
                  block_of: Mapping[str, str] | None = None,
                  block_column: str = "Block") -> list[Path]:
    """Write a MediBench matrix: CSV (raw numbers in the units of ``cells``), Markdown and LaTeX
    with a group header row, per-column best in bold and ``scale`` applied to printed values.

    Args:
        rows: ``(key, label)``; keys starting with :data:`POOLED` are pooled rows, left out of
            the Average row. cells: ``{(key, column): (values tuple, note)}``.
        bold_by: index into ``numbers`` of the value whose per-column maximum is bold.
        block_of: row key -> block label (e.g. the 2D input size): rows of one block are
            printed together under a header line, each block has its own ``Average`` row
            (``Average (<block>)``) and its own bold marks, so that no average or best cell
            mixes blocks (MediBench prints 256 x 256 and 512 x 512 in separate tables, 7 and 8).
            The CSV gets a ``block_column`` column. None or a single block: one table as before.
    """
    if not rows:
        return write_frame(pd.DataFrame({row_label: ["n/a"]}), name, title, [empty_note], out_dir)
    cols = [c for _, c in grouped_columns(columns, specs)]
    groups = [g for g, _ in grouped_columns(columns, specs)]
    blocks = _blocks(rows, block_of)
    several = len(blocks) > 1
    values: dict[tuple[str, str], tuple] = {}
    best: dict[tuple[str, str], str | None] = {}
    table: list[tuple[str, str, str]] = []  # (block, key, label) in print order, averages included
    for block, block_rows in blocks:
        for key, _ in block_rows:
            for c in cols:
                values[(key, c)] = cells.get((key, c), ((math.nan,) * len(numbers), ""))[0]
            values[(key, "Avg")] = tuple(
                nan_mean([values[(key, c)][i] for c in avg_columns if c in cols])
                for i in range(len(numbers)))
        plain = [k for k, _ in block_rows if not k.startswith(POOLED)]
        average = f"Average ({block})" if several else "Average"
        for c in cols + ["Avg"]:
            values[(average, c)] = tuple(nan_mean([values[(k, c)][i] for k in plain])
                                         for i in range(len(numbers)))
            scores = [(values[(k, c)][bold_by], k) for k in plain
                      if not math.isnan(values[(k, c)][bold_by])]
            for k, _ in block_rows:
                best[(k, c)] = max(scores)[1] if len(scores) > 1 else None
        table += [(block, k, label) for k, label in block_rows] + [(block, average, average)]
    labels = dict(rows)

    def text(key, c, md: bool) -> str:
        vals = values[(key, c)]
        if all(math.isnan(v) for v in vals):
            out = "n/a"
        else:
            out = "/".join(format_value(v * scale, d) for v, d in zip(vals, digits))
        if best.get((key, c)) == key and out != "n/a":
            out = f"**{out}**" if md else rf"\textbf{{{out}}}"
        note = ""
        if key in labels and c != "Avg":  # a dataset row's cell; average cells have no note
            note = cells[(key, c)][1] if (key, c) in cells else "not computed"
        mark = notes.mark(f"{labels.get(key, key)}, {c}: {note}") if note else ""
        if any(math.isinf(v) for v in vals) and (c == "Avg" or key not in labels):
            mark += notes.mark("an average over a cell that reads inf is inf (exact "
                               "reconstructions; the cell's note counts them)")
        return out + mark

    head = [c for c in cols + ["Avg"]]
    md_rows, tex_rows, csv_rows, shown = [], [], [], None
    for block, key, label in table:
        if several and block != shown:  # a header line per block
            md_rows.append([f"*{block}*"] + [""] * len(head))
            tex_rows.append([rf"\multicolumn{{{len(head) + 1}}}{{l}}{{\emph{{{tex_escape(block)}}}}}"])
            shown = block
        md_rows.append([label] + [text(key, c, True) for c in head])
        tex_rows.append([tex_escape(label)] + [text(key, c, False).replace("_", r"\_")
                                               for c in head])
        csv_rows.append(({block_column: block} if several else {}) | {row_label: label}
                        | {f"{c}.{n}": v for c in head for n, v in zip(numbers, values[(key, c)])})
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.{ext}" for ext in ("csv", "md", "tex")]
    pd.DataFrame(csv_rows).to_csv(paths[0], index=False)
    header_groups = [""] + groups + [""]
    md = [f"### {title}", "", "| " + " | ".join(header_groups) + " |",
          "|" + "|".join("---" for _ in header_groups) + "|",
          "| " + " | ".join([f"**{row_label}**"] + [f"**{c}**" for c in cols] + ["**Avg**"]) + " |"]
    md += ["| " + " | ".join(r) + " |" for r in md_rows]
    md += [""] + [f"[{i}] {n}" for i, n in enumerate(notes.texts, 1)]
    paths[1].write_text("\n".join(md) + "\n")
    spans, prev = [], None
    for g in groups:
        if g == prev:
            spans[-1][1] += 1
        else:
            spans.append([g, 1])
        prev = g
    group_line = " & ".join([""] + [rf"\multicolumn{{{n}}}{{c}}{{{tex_escape(g)}}}" for g, n in spans]
                            + [""]) + r" \\"
    tex = [r"\begin{table}[t]", r"\centering", r"\small", rf"\caption{{{tex_escape(title)}}}",
           rf"\label{{tab:{name}}}", r"\begin{tabular}{l" + "r" * (len(cols) + 1) + "}",
           r"\toprule", group_line,
           " & ".join(tex_escape(c) for c in [row_label] + cols + ["Avg"]) + r" \\", r"\midrule"]
    tex += [" & ".join(r) + r" \\" for r in tex_rows]
    tex += [r"\bottomrule", r"\end{tabular}"]
    tex += [rf"\par\footnotesize $^{{{i}}}$ {tex_escape(n)}" for i, n in enumerate(notes.texts, 1)]
    tex.append(r"\end{table}")
    paths[2].write_text("\n".join(tex) + "\n")
    return paths


def row_label(dataset: str, modality: str) -> str:
    """Row label of a dataset: ``dataset (modality)``, or the name alone when they agree."""
    return dataset if not modality or modality == dataset else f"{dataset} ({modality})"


# -- fidelity ----------------------------------------------------------------------------------
def _cell(df: pd.DataFrame, constant: set) -> tuple[tuple[float, float], str]:
    scored = df["psnr"].notna().sum() if "psnr" in df else 0
    note = "" if scored == len(df) else \
        f"{scored} of {len(df)} items scored; not scored: {_reasons(df, 'psnr')}"
    exact = exact_note(pd.to_numeric(df["psnr"], errors="coerce")) if "psnr" in df else ""
    if exact:  # an inf mean says how many items were exact
        note = "; ".join(n for n in (note, exact) if n)
    if n_const := sum((d, i) in constant for d, i in zip(df["dataset"], df["item_id"])):
        note = "; ".join(n for n in (note, f"{n_const} constant volume(s), all zeros after "
                                           "intensity scaling") if n)
    return ((_mean(df.get("psnr", pd.Series(dtype=float))),
             _mean(df.get("ssim", pd.Series(dtype=float)))), note)


def fidelity_cells(datasets: list[str], models: list[str], modalities: dict[str, str],
                   not_run: dict, pool_modalities: bool = False, *,
                   manifests: Mapping[str, PathLike], quality: ModelDatasetFiles,
                   held_out: Mapping[str, set[str] | None] | None = None):
    """Rows and cells of a fidelity table from ``image_quality.csv`` files.

    One row per dataset (MediBench Table 7: PathMNIST and PCam are separate rows); a dataset
    whose manifest gives its items several ``modality`` values (``skimage_medical``) gets one row
    per (dataset, modality), never mixing datasets. With ``pool_modalities``, one extra row per
    modality shared by several datasets pools their items (item-weighted), labelled
    ``Pooled: <modality> (k datasets)``. Cells average the dataset's held-out items only
    (``held_out``; MediBench reports fidelity on held-out data, the official test set where
    there is one: Secs. 1, 4.1; :func:`~.splits.held_out_items`).

    Args:
        manifests: dataset -> its ``manifest.csv``.
        quality: ``(model, dataset) -> image_quality.csv`` of every combination not in ``not_run``.
        held_out: dataset -> the item ids scored (None or absent: every item).

    Returns:
        ``(rows [(key, label)], cells {(key, model): ((psnr dB, ssim in [0, 1]), note)})``;
        cells of a (model, dataset) the config does not run are NaN with the reason.

    Raises:
        KeyError: a dataset or a (model, dataset) that runs is missing from ``manifests`` or ``quality``.
    """
    frames: dict[tuple[str, str], list[pd.DataFrame]] = {}
    reasons: dict[tuple[str, str], str] = {}
    rows: dict[str, str] = {}
    members: dict[str, set[str]] = {}
    constant: set = set()
    for d in datasets:
        manifest = read_manifest(manifests[d])
        item_mod = dict(zip(manifest["item_id"], manifest["modality"].fillna(""))) \
            if "modality" in manifest else {}
        mods = sorted({m for m in item_mod.values() if m}) or [modalities.get(d, d)]
        split = len(mods) > 1
        for mod in mods:
            key = f"{d}: {mod}" if split else d
            rows[key] = row_label(d, mod)
            members.setdefault(mod, set()).add(d)
        if "notes" in manifest:  # constant volumes: scaled to all zeros (datasets.volumes)
            constant.update((d, i) for i in manifest.loc[
                manifest["notes"].fillna("").str.contains("constant volume"), "item_id"])
        for m in models:
            if (m, d) in not_run:
                for mod in mods:
                    reasons[(f"{d}: {mod}" if split else d, m)] = not_run[(m, d)]
                continue
            per_item = read_per_item(quality[(m, d)])
            if (held_out or {}).get(d) is not None:  # the held-out part only
                per_item = per_item[per_item["item_id"].astype(str).isin(held_out[d])]
            per_item["dataset"] = d
            per_item["modality"] = (per_item["item_id"].map(item_mod).fillna("")
                                    if item_mod else "")
            per_item.loc[per_item["modality"] == "", "modality"] = mods[0]
            for mod, group in per_item.groupby("modality", sort=False):
                frames.setdefault((f"{d}: {mod}" if split else d, m), []).append(group)
                if pool_modalities:
                    frames.setdefault((f"{POOLED}{mod}", m), []).append(group)
    if pool_modalities:
        for mod, sets in members.items():
            if len(sets) > 1:
                rows[f"{POOLED}{mod}"] = f"{POOLED}{mod} ({len(sets)} datasets, item-weighted)"
    cells = {key: _cell(pd.concat(parts), constant) for key, parts in frames.items()
             if key[0] in rows}
    for key, why in reasons.items():
        cells.setdefault(key, ((math.nan, math.nan), why))
    return list(rows.items()), cells


def write_fidelity(name: str, title: str, datasets, models, specs, modalities, not_run, out_dir,
                   pool_modalities: bool = False, size_note: str = "", *,
                   manifests: Mapping[str, PathLike], quality: ModelDatasetFiles,
                   held_out: Mapping[str, tuple[set[str] | None, str]] | None = None,
                   blocks: Mapping[str, str] | None = None):
    """PSNR (dB, one decimal) / SSIM per dataset x model (MediBench Tables 1, 3, 7, 8) from the
    ``image_quality.csv`` files ``quality`` names (see :func:`fidelity_cells`); returns the
    written paths.

    Args:
        held_out: dataset -> ``(item ids scored or None for all, description)``
            (:func:`~.splits.held_out_items`); the note names each dataset's part.
        blocks: dataset -> block label (the 2D input size, :func:`size_blocks`): one block per
            size with its own Average row and bold marks (Table 1 is 256 x 256 only; Tables 7
            and 8 print the two sizes apart). Pooled rows pool within a block.
    """
    held_out = held_out or {}
    by_block: dict[str, list[str]] = {}
    for d in datasets:
        by_block.setdefault((blocks or {}).get(d, ""), []).append(d)
    rows, cells, block_of = [], {}, {}
    for block, sets in sorted(by_block.items(), key=lambda b: block_order(b[0])):
        block_rows, block_cells = fidelity_cells(
            sets, models, modalities, not_run, pool_modalities, manifests=manifests,
            quality=quality, held_out={d: held_out.get(d, (None, ""))[0] for d in sets})
        if len(by_block) > 1:  # the same modality pooled in two blocks: two rows
            rename = {k: f"{k} [{block}]" for k, _ in block_rows if k.startswith(POOLED)}
            block_rows = [(rename.get(k, k), label) for k, label in block_rows]
            block_cells = {(rename.get(k, k), m): v for (k, m), v in block_cells.items()}
        rows += block_rows
        cells |= block_cells
        block_of |= {k: block for k, _ in block_rows}
    parts = [f"{d}: {held_out[d][1]}" for d in datasets if held_out.get(d, (None, ""))[1]]
    notes = Notes(["Cells: PSNR (dB) / SSIM, means over the held-out items in [0, 1] "
                   "intensities (MediBench Sec. 3.2, Eq. 3; held-out data, Secs. 1 and 4.1); "
                   "inf = exact reconstruction. Rows: one per dataset (Sec. 4.2, Tables 7-8). "
                   "Bold: the best row of each column by SSIM (Tables 1, 3)"
                   + (", within each input size (Table 1: 256x256; Tables 7 and 8 apart), "
                      "each with its own Average row" if len(by_block) > 1 else "")
                   + ". Avg leaves out identity (a reference row)."
                   + (f" {size_note}" if size_note else "")]
                  + (["Items scored per dataset: " + "; ".join(parts) + "."] if parts else []))
    return write_grouped(name, title, "Dataset", rows, models, specs, cells, ("psnr", "ssim"),
                         notes, out_dir, _avg_models(models, specs), (1, 3), 1,
                         "n/a: no dataset of this kind in the config", block_of=block_of,
                         block_column="Size")


# -- structure ---------------------------------------------------------------------------------
def qc_name(segmenter: dict) -> str:
    """Table name of the segmenter's own score: ``SegQC`` only for SynthSeg's QC score
    (MediBench Sec. 3.2, Pillar 2); ``GMM-conf`` for the gmm segmenter's mean posterior of the
    assigned class; ``QC`` for any other segmenter."""
    return QC_NAMES.get(segmenter.get("type", "gmm"), "QC")


def write_structure(name, title, datasets, models, specs, modalities, not_run, segmenter: dict,
                    qc_note: str, out_dir, *, structure: ModelDatasetFiles):
    """SegQC / SegSim / mean Dice x100 per volume dataset x model (MediBench Table 4 prints
    84.1/99.2), from ``structure.csv``; the CSV keeps [0, 1]; the footnote names the segmenter
    and what its first score is.

    Args:
        structure: ``(model, dataset) -> structure.csv`` of every combination not in ``not_run``.

    Raises:
        KeyError: a (model, dataset) that runs is missing from ``structure``.
    """
    cells, rows = {}, []
    qc = qc_name(segmenter)
    for d in datasets:
        rows.append((d, row_label(d, modalities.get(d, d))))
        for m in models:
            if (m, d) in not_run:
                cells[(d, m)] = ((math.nan,) * 3, not_run[(m, d)])
                continue
            df = read_per_item(structure[(m, d)])
            scored = df["segsim"].notna().sum() if "segsim" in df else 0
            note = "" if scored == len(df) else \
                f"{scored} of {len(df)} volumes scored; not scored: {_reasons(df, 'segsim')}"
            vals = tuple(_mean(df[c]) if c in df else math.nan for c in ("segqc", "segsim", "dice_mean"))
            if math.isnan(vals[0]) and scored:
                note = (note + "; " if note else "") + f"{qc} n/a: {qc_note}"
            cells[(d, m)] = (vals, note)
    seg = ", ".join(f"{k}={v}" for k, v in segmenter.items())
    notes = Notes([f"Cells: {qc} / SegSim / mean Dice over labels, x100 as MediBench Table 4 "
                   f"(Sec. 3.2, Eq. 4). Segmenter: {seg}; {qc_note}. "
                   + ("SegQC is SynthSeg's QC score averaged over regions. " if qc == "SegQC" else
                      f"{qc} is not the paper's SegQC (SynthSeg's QC score). ")
                   + "Bold: the best row of each column by SegSim. HD95 (mm) per volume is in "
                   "results/metrics/{model}/{dataset}/structure.csv."])
    return write_grouped(name, title, "Dataset", rows, models, specs, cells,
                         (qc.lower().replace("-", "_"), "segsim", "dice"), notes, out_dir,
                         _avg_models(models, specs), (1, 1, 1), 1,
                         "n/a: no volume dataset in the config", scale=100.0)


# -- latent utility ----------------------------------------------------------------------------
def latent_rows(datasets, models, not_run, *, latent: ModelDatasetFiles) -> pd.DataFrame:
    """All classifier rows: ``dataset, features (model or baseline), head, metrics, split,
    reason``.

    Args:
        latent: ``(model, dataset) -> latent_utility.csv`` of every combination not in ``not_run`` and
            of ``("original", dataset)`` (the image baselines) for each dataset.

    Raises:
        KeyError: a file missing from ``latent``.
    """
    out = []
    for d in datasets:
        for m in models + ["original"]:
            if (m, d) in not_run:
                out.append({"dataset": d, "features": m, "head": "mlp", "status": "not run",
                            "reason": not_run[(m, d)]})
                continue
            df = read_per_item(latent[(m, d)])
            df = df.assign(dataset=d, features=[m if m != "original" else f for f in df["features"]])
            out += df.to_dict("records")
    # no labeled set: an empty frame that still has the columns the tables select on
    return pd.DataFrame(out) if out else pd.DataFrame(
        columns=["dataset", "features", "head", "status", "reason", "macro_auc", "split"])


def split_notes(rows: pd.DataFrame) -> list[str]:
    """One sentence per dataset naming the split its classifiers used (MediBench Sec. 4.1,
    Tables 11-12): the ``split`` column of the latent-utility rows."""
    if "split" not in rows or rows.empty:
        return []
    out = []
    for d, g in rows.groupby("dataset", sort=False):
        splits = [s for s in dict.fromkeys(g["split"].dropna().astype(str)) if s]
        if splits:
            out.append(f"{d}: {'; '.join(splits)}")
    return ["Split per dataset: " + " | ".join(out) + "."] if out else []


def write_latent(name, title, datasets, models, specs, modalities, rows: pd.DataFrame, out_dir,
                 head: str = "mlp", blocks: Mapping[str, str] | None = None):
    """Macro-AUC in [0, 1] of ``head`` per dataset x (model latents, then image baselines)
    (MediBench Tables 2 and 5) from the rows of :func:`latent_rows`; the note names each
    dataset's split. ``blocks``: dataset -> input-size block (:func:`size_blocks`; Table 2 is at
    256 x 256): each block its own Average row and bold marks."""
    baselines = [f for f in dict.fromkeys(rows["features"]) if f not in models] if len(rows) else []
    cells = {}
    for _, r in rows[rows["head"] == head].iterrows():
        auc = float(r.get("macro_auc", math.nan))
        reason = "" if pd.isna(r.get("reason")) else str(r.get("reason"))
        note = reason if reason or (r["status"] == "ok" and not math.isnan(auc)) else str(r["status"])
        cells[(r["dataset"], r["features"])] = ((auc,), note)
    notes = Notes([f"Cells: Macro-AUC of the {head.upper()} head on standardized features "
                   "(MediBench Sec. 3.2, Pillar 3), on each dataset's held-out test part; model "
                   "columns classify the model's latent, the last columns are image baselines. "
                   "Bold: the best row of each column. Avg: models only. All metrics and the "
                   "linear head: medibench_classifiers."] + split_notes(rows))
    ordered = sorted(datasets, key=lambda d: block_order((blocks or {}).get(d, "")))
    return write_grouped(name, title, "Dataset",
                         [(d, row_label(d, modalities.get(d, d))) for d in ordered],
                         models + baselines, specs, cells, ("auc",), notes, out_dir,
                         _avg_models(models, specs), (3,), 0,
                         "n/a: no labeled dataset of this kind in the config",
                         block_of=blocks, block_column="Size")


def write_classifiers(rows: pd.DataFrame, out_dir):
    """Every classifier row (dataset, features, head, the five metrics in [0, 1], n_test, split)."""
    cols = ["dataset", "features", "head", *METRIC_LABELS, "n_test", "split", "status", "reason"]
    df = rows.reindex(columns=cols).rename(columns=METRIC_LABELS)
    notes = ["Accuracy (exact match for multi-label), macro F1/precision/recall and macro AUC "
             "(one-vs-rest), scikit-learn; MediBench Sec. 3.2 (Pillar 3) and Tables 9-10. "
             "split: the train/test split of the row (Sec. 4.1, Tables 11-12)."]
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


#: Block label of the 2D sets without a fixed input size (protocols other than ``fixed``).
OTHER_SIZES = "other sizes"


def size_blocks(datasets: list[str], sizes: Mapping[str, int | None]) -> dict[str, str]:
    """Dataset -> the block of its 2D input size: ``"256x256"`` for a set at a fixed size,
    :data:`OTHER_SIZES` for the others (MediBench Tables 1, 2 and 7 are at 256 x 256, Table 8
    at 512 x 512: one block per size)."""
    return {d: f"{sizes[d]}x{sizes[d]}" if sizes.get(d) else OTHER_SIZES for d in datasets}


def block_order(label: str) -> tuple:
    """Sort key of block labels: fixed sizes ascending (``"256x256"`` before ``"512x512"``),
    then any other label."""
    head = label.split("x", 1)[0]
    return (0, int(head), label) if head.isdigit() else (1, 0, label)


def size_note(sizes: dict[str, int | None]) -> str:
    """The 2D input sizes (MediBench App. A: every model at 256^2 and 512^2, Tables 7-8)."""
    if not sizes:
        return ""
    by = {}
    for d, s in sizes.items():
        by.setdefault(s, []).append(d)
    parts = [f"{s}x{s}: {', '.join(ds)}" for s, ds in sorted(by.items(), key=lambda t: t[0] or 0)]
    return ("Input sizes (App. A: images resized to a fixed size for every model; non-square "
            "images center-cropped first): " + "; ".join(parts) + ".")


def held_out_parts(datasets: list[str], settings: Mapping[str, dict | None], *,
                   manifests: Mapping[str, PathLike]) -> dict[str, tuple[set[str] | None, str]]:
    """Dataset -> ``(held-out item ids or None for all, description)``
    (:func:`~.splits.held_out_items` on its manifest and latent-utility settings); a split that
    cannot be made (one subject) scores every item and says why."""
    from roundtrip.evals.medibench.splits import held_out_items

    out = {}
    for d in datasets:
        manifest = read_manifest(manifests[d])
        try:
            out[d] = held_out_items(manifest, settings.get(d))
        except ValueError as exc:
            out[d] = (None, f"all {int((manifest['status'] == 'ok').sum())} items (no held-out "
                            f"part: {exc})")
    return out


def write_all(models, specs, datasets_2d, datasets_3d, latent_datasets, modalities, not_run,
              segmenter: dict, qc_note: str, out_dir, pool_modalities: bool = False,
              sizes: dict[str, int | None] | None = None, *, manifests: Mapping[str, PathLike],
              quality: ModelDatasetFiles, structure: ModelDatasetFiles, latent: ModelDatasetFiles,
              settings: Mapping[str, dict | None] | None = None) -> list[Path]:
    """Every MediBench table but the latent shapes into ``out_dir`` (the ``medical_tables``
    rule; it builds no model, so it imports no torch).

    Every file it reads is one the rule declares as input, passed in by the mappings.

    Args:
        pool_modalities: add the labelled pooled-modality rows (``medical.pool_modalities``).
        sizes: 2D dataset -> its fixed input side (protocol ``fixed``): the 2D tables print one
            block per size (:func:`size_blocks`) and the note names them.
        manifests: dataset -> ``manifest.csv``, for every dataset of the tables.
        quality, structure, latent: ``(model, dataset) -> image_quality.csv / structure.csv /
            latent_utility.csv`` (see :func:`fidelity_cells`, :func:`write_structure`,
            :func:`latent_rows`).
        settings: dataset -> its latent-utility settings (None for a set without labels): the
            fidelity tables score the held-out part of that split (:func:`held_out_parts`).

    Raises:
        KeyError: a file the tables need is missing from the mappings.
    """
    out_dir = Path(out_dir)
    sizes = sizes or {}
    blocks = size_blocks(datasets_2d, sizes)
    held_out = held_out_parts(datasets_2d + datasets_3d, settings or {}, manifests=manifests)
    paths = write_fidelity("medibench_2d_fidelity", "MediBench 2D reconstruction fidelity "
                           "(PSNR/SSIM)", datasets_2d, models, specs, modalities, not_run, out_dir,
                           pool_modalities, size_note(sizes), manifests=manifests,
                           quality=quality, held_out=held_out, blocks=blocks)
    paths += write_fidelity("medibench_3d_fidelity", "MediBench 3D reconstruction fidelity "
                            "(PSNR/SSIM, 3D SSIM)", datasets_3d, models, specs, modalities,
                            not_run, out_dir, pool_modalities, manifests=manifests,
                            quality=quality, held_out=held_out)
    paths += write_structure("medibench_3d_structure", "MediBench 3D clinical structure "
                             "(SegQC/SegSim/Dice)", datasets_3d, models, specs, modalities,
                             not_run, segmenter, qc_note, out_dir, structure=structure)
    rows = latent_rows(latent_datasets, models, not_run, latent=latent)
    for dims, sets in (("2d", [d for d in latent_datasets if d in datasets_2d]),
                       ("3d", [d for d in latent_datasets if d in datasets_3d])):
        sub = rows[rows["dataset"].isin(sets)] if len(rows) else rows
        paths += write_latent(f"medibench_{dims}_latent", f"MediBench {dims.upper()} latent "
                              "utility (Macro-AUC)", sets, models, specs, modalities, sub, out_dir,
                              blocks=blocks if dims == "2d" else None)
    paths += write_classifiers(rows, out_dir)
    return paths

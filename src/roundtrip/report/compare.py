"""What a person reads of a comparison of two checkpoints (:mod:`roundtrip.tables.compare`):
the tables ``compare`` and ``compare_items``, the figure of every difference with its interval
coloured by verdict, the gallery of the items that changed most (original | A | B, zoomed) and
the lines of the OCR and VISTA items that flipped. The rule ``compare`` and ``roundtrip compare``
both write them with :func:`write_comparison`; the PDF report's "What changed" section reads
them back (:func:`read_rows`)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.metrics.paired import BETTER, EQUIVALENT, INCONCLUSIVE, WORSE
from roundtrip.tables.compare import (ITEM_COLUMNS, NOT_COMPARED, ROW_COLUMNS, Comparison,
                                      what_changed)
from roundtrip.tables.engine import write_frame

#: The colour of each verdict in the figures (Okabe & Ito 2008: blue, vermillion, green, grey).
VERDICT_COLOURS = {BETTER: "#0072B2", WORSE: "#D55E00", EQUIVALENT: "#009E73",
                   INCONCLUSIVE: "#8a8a8a"}
#: Table names and figure file names.
ROWS_TABLE, ITEMS_TABLE = "compare", "compare_items"
DIFFERENCES, GALLERY = "differences.png", "changed.png"
#: Panels of the differences figure at most (the rest are in the table).
MAX_PANELS = 8


def _cell(x, digits: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def _p(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.3g}" if x >= 0.001 else "<0.001"


def rows_markdown(rows: pd.DataFrame) -> pd.DataFrame:
    """The ``compare`` rows as the Markdown, LaTeX and PDF show them: numbers at each metric's
    printed precision, ``difference [low, high]``, raw and adjusted p."""
    out = []
    for _, r in rows.iterrows():
        d = int(r["digits"]) if not pd.isna(r["digits"]) else 3
        diff = "–" if pd.isna(r["difference"]) else (
            f"{r['difference']:+.{d}f} [{_cell(r['ci_low'], d)}, {_cell(r['ci_high'], d)}]")
        adjusted = r["p_by"] if pd.isna(r["p_holm"]) else max(r["p_by"], r["p_holm"])
        out.append({"comparison": r["comparison"], "evaluation": r["evaluation"],
                    "dataset": r["dataset"] + (f" ({r['where']})" if r["where"] else ""),
                    "metric": r["metric"],
                    "n": "–" if pd.isna(r["n_paired"]) else
                    f"{int(r['n_paired'])}" + (f" (+{int(r['n_unpaired'])})"
                                               if r["n_unpaired"] else ""),
                    "baseline": _cell(r["baseline_value"], d),
                    "candidate": _cell(r["candidate_value"], d),
                    "difference [95 % CI]": diff, "p": _p(r["p"]), "p adj.": _p(adjusted),
                    "detectable": _cell(r["detectable"], d), "verdict": r["verdict"]})
    return pd.DataFrame(out, columns=["comparison", "evaluation", "dataset", "metric", "n",
                                      "baseline", "candidate", "difference [95 % CI]", "p",
                                      "p adj.", "detectable", "verdict"])


def _notes(rows: pd.DataFrame, settings) -> list[str]:
    notes = [f"Candidate minus baseline. Paired BCa bootstrap intervals ({settings.resamples} "
             f"resamples, {100 * settings.confidence:g} %; nested items resampled as clusters); "
             "p: Wilcoxon signed-rank (per-item numbers), exact McNemar (right or wrong), "
             "the paired bootstrap (set-level numbers); p adj.: Holm within each evaluation's "
             "headline metrics and Benjamini-Yekutieli across all rows (the larger of the two "
             "for headline rows). n (+k): paired items (k scored on one side only, listed in "
             "compare_items). detectable: the smallest difference these items detect with "
             f"{100 * settings.power:g} % power. Verdicts: docs/comparing.md."]
    skipped = rows[rows["verdict"] == NOT_COMPARED]
    for note in dict.fromkeys(skipped["note"]):
        notes.append(f"not compared: {note}")
    for note in dict.fromkeys(rows.loc[(rows["verdict"] != NOT_COMPARED)
                                       & (rows["note"] != ""), "note"]):
        notes.append(note)
    return notes


def write_tables(comparison: Comparison, out_dir: str | Path, settings) -> list[Path]:
    """``compare.{csv,md,tex}`` and ``compare_items.{csv,md,tex}`` in ``out_dir``; the CSVs
    hold every column unformatted (:data:`~roundtrip.tables.compare.ROW_COLUMNS`,
    :data:`~roundtrip.tables.compare.ITEM_COLUMNS`)."""
    rows = comparison.rows
    paths = write_frame(rows_markdown(rows), ROWS_TABLE,
                        "Checkpoint B against checkpoint A: every metric of every evaluation",
                        _notes(rows, settings), out_dir, csv_frame=rows[ROW_COLUMNS])
    items = comparison.items
    shown = items.assign(
        baseline_value=items["baseline_value"].map(lambda x: _cell(x, 4)),
        candidate_value=items["candidate_value"].map(lambda x: _cell(x, 4)),
        difference=items["difference"].map(lambda x: _cell(x, 4)),
        paired=items["paired"].map(lambda x: "yes" if x else "no"))
    paths += write_frame(shown[ITEM_COLUMNS[:-2] + ["reason"]].iloc[:, :12]
                         if len(shown) else pd.DataFrame(columns=ITEM_COLUMNS[:12]),
                         ITEMS_TABLE, "Checkpoint B against checkpoint A: every item",
                         ["Items scored on one side only have paired = no and the reason."],
                         out_dir, csv_frame=items[ITEM_COLUMNS])
    return paths


def read_rows(path: str | Path) -> pd.DataFrame | None:
    """The ``compare`` CSV back as a frame (None where it is missing)."""
    path = Path(path)
    if not path.is_file():
        return None
    frame = pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"],
                        dtype={"where": str, "note": str, "flips": str, "test": str,
                               "baseline_text": str, "candidate_text": str, "reason": str})
    text = [c for c in ("where", "note", "flips", "test", "baseline_text", "candidate_text",
                        "reason") if c in frame.columns]
    frame[text] = frame[text].fillna("")
    return frame


def difference_figure(rows: pd.DataFrame, path: str | Path) -> str:
    """Every compared row's difference with its interval, one panel per (evaluation, metric),
    one line per dataset, coloured by verdict, the equivalence margin shaded; at most
    :data:`MAX_PANELS` panels (the largest changes first). Returns the caption."""
    from roundtrip.report.style import figure, save

    done = rows[rows["verdict"] != NOT_COMPARED].copy()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if done.empty:
        fig, axes = figure(1, 1, height_in=0.8)
        axes[0, 0].axis("off")
        axes[0, 0].text(0.5, 0.5, "No row was compared.", ha="center", va="center")
        save(fig, path)
        return "No row was compared."
    single = done["comparison"].nunique() == 1
    done["_panel"] = ((done["evaluation"] if single else done["comparison"] + " | "
                       + done["evaluation"]) + ": " + done["metric"])
    size = (done["difference"].abs() / done["detectable"].replace(0, np.nan)).fillna(0)
    order = list(dict.fromkeys(done.assign(_s=size).sort_values("_s", ascending=False)["_panel"]))
    panels = [p for p in dict.fromkeys(done["_panel"]) if p in order[:MAX_PANELS]]
    cols = 2 if len(panels) > 1 else 1
    n_rows = math.ceil(len(panels) / cols)
    heights = [len(done[done["_panel"] == p]) for p in panels]
    fig, axes = figure(n_rows, cols, height_in=max(1.4, sum(
        max(heights[i:i + cols]) for i in range(0, len(panels), cols)) * 0.15 + 0.55 * n_rows))
    for k, panel in enumerate(panels):
        ax = axes[k // cols, k % cols]
        g = done[done["_panel"] == panel].reset_index(drop=True)
        y = np.arange(len(g))[::-1]
        margin = float(g["margin"].iloc[0])
        ax.axvspan(-margin, margin, color="#e8e8e8", zorder=0)
        ax.axvline(0, color="black", linewidth=0.6)
        for yi, (_, r) in zip(y, g.iterrows()):
            c = VERDICT_COLOURS.get(r["verdict"], "#8a8a8a")
            lo, hi = r["ci_low"], r["ci_high"]
            if not (pd.isna(lo) or pd.isna(hi)):
                ax.plot([lo, hi], [yi, yi], color=c, linewidth=1.6)
            ax.plot([r["difference"]], [yi], "o", color=c, markersize=3)
        ax.set_yticks(y)
        ax.set_yticklabels([d + (" " + ", ".join(v.split("=", 1)[-1] for v in w.split(", "))
                                 if w else "") for d, w in
                            zip(g["dataset"], g["where"].fillna(""))], fontsize=7.5)
        ax.set_title(panel, fontsize=7.5, loc="left")
        ax.set_ylim(-0.7, len(g) - 0.3)
    for k in range(len(panels), n_rows * cols):
        axes[k // cols, k % cols].axis("off")
    if single:
        fig.suptitle(done["comparison"].iloc[0], fontsize=8.5)
    save(fig, path)
    shown = "" if len(order) <= MAX_PANELS else (
        f" The {MAX_PANELS} panels with the largest changes are shown; every row is in the "
        "compare table.")
    return ("Candidate minus baseline per metric and dataset, with the 95 % paired bootstrap "
            "interval; blue better, vermillion worse, green equivalent within the margin "
            "(grey band), grey inconclusive (after Holm and Benjamini-Yekutieli)." + shown)


def changed_gallery(gallery: list[dict], path: str | Path, per_row: int = 3) -> str | None:
    """The items that changed most, one line each: original | baseline | candidate, each
    zoomed on the window where the two reconstructions differ most
    (:func:`roundtrip.report.gallery.detail_window` of their difference). Returns the caption,
    or None (no file written) where no compared item kept its images."""
    if not gallery:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from roundtrip.core.imaging import read_image, to_uint8
    from roundtrip.report.gallery import detail_window
    from roundtrip.report.style import figure, save

    # per (comparison, dataset), the first metric's items that changed, largest change first:
    # a few items per set, each once
    first = {}
    for g in gallery:
        first.setdefault((g["comparison"], g["dataset"], g["where"]), g["metric"])
    seen, chosen, shown = {}, [], set()
    for g in sorted(gallery, key=lambda g: -abs(g["difference"])):
        key = (g["comparison"], g["dataset"], g["where"])
        item = (*key, g["item_id"])
        if (g["difference"] == 0 or first[key] != g["metric"] or item in shown
                or seen.get(key, 0) >= per_row - 1 or len(chosen) >= 2 * per_row):
            continue
        seen[key] = seen.get(key, 0) + 1
        shown.add(item)
        chosen.append(g)
    if not chosen:
        return None
    fig, axes = figure(len(chosen), 3, height_in=1.45 * len(chosen))
    for i, g in enumerate(chosen):
        a = to_uint8(read_image(g["baseline_image"]))
        b = to_uint8(read_image(g["candidate_image"]))
        orig = to_uint8(read_image(g["original"])) if g.get("original") else None
        same = a.shape == b.shape
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).astype(np.uint8) if same else a
        y, x, side = detail_window(np.repeat(diff.max(axis=2, keepdims=True), 3, axis=2)
                                   if same else a)
        panels = [("original", orig), (g["baseline"], a), (g["candidate"], b)]
        d = g.get("digits", 2)
        for j, (label, img) in enumerate(panels):
            ax = axes[i, j]
            ax.axis("off")
            if img is None:
                ax.text(0.5, 0.5, "n/a", ha="center", va="center")
            else:
                crop = img[y:y + side, x:x + side] if img.shape[:2] == a.shape[:2] else img
                ax.imshow(crop, interpolation="nearest")
            title = label if j else f"{g['dataset']}/{g['item_id']}"
            if j == 2:
                title += f" ({g['metric']} {g['difference']:+.{d}f})"
            ax.set_title(title, fontsize=7.5)
    save(fig, path)
    return ("The items whose value changed most (of the kept reconstructions; per dataset, "
            "its first metric): original, baseline and candidate, zoomed on where the two "
            "differ most; the change of the item's metric beside the candidate.")


def flipped_lines(items: pd.DataFrame, limit: int = 4) -> list[str]:
    """The OCR and VISTA items that flipped, in words: binary outcomes that changed (right ->
    wrong first) and text items whose value changed most, with what each side read or
    answered."""
    if items is None or items.empty:
        return []
    texts = items[(items["paired"].astype(str).isin(["True", "true", "1"]))
                  & ((items["baseline_text"].fillna("") != "")
                     | (items["candidate_text"].fillna("") != ""))].copy()
    texts = texts[pd.to_numeric(texts["difference"], errors="coerce").fillna(0) != 0]
    if texts.empty:
        return []
    texts["_size"] = pd.to_numeric(texts["difference"], errors="coerce").abs()
    texts = texts.sort_values("_size", ascending=False, kind="stable").drop_duplicates(
        ["comparison", "dataset", "where", "item_id"])  # an item once, by its largest change
    out = []
    for _, r in texts.head(limit).iterrows():
        a = " ".join(str(r["baseline_text"]).split())[:60]
        b = " ".join(str(r["candidate_text"]).split())[:60]
        out.append(f"{r['comparison']}, {r['dataset']}/{r['item_id']} ({r['metric']} "
                   f"{float(r['baseline_value']):.4g} -> {float(r['candidate_value']):.4g}): "
                   f"\"{a}\" -> \"{b}\"")
    return out


def summary_text(rows: pd.DataFrame | None, items: pd.DataFrame | None = None) -> list[str]:
    """The "What changed" lines: :func:`~roundtrip.tables.compare.what_changed` and the items
    that flipped."""
    out = what_changed(rows) if rows is not None else []
    flips = flipped_lines(items) if items is not None else []
    if flips:
        out.append("Items that flipped or changed most (what each side read or answered): "
                   + "; ".join(flips) + ".")
    return out


def write_comparison(comparison: Comparison, tables_dir: str | Path, figures_dir: str | Path,
                     settings) -> dict[str, Path | str | None]:
    """Write the two tables (:func:`write_tables`), the differences figure and the gallery
    (:data:`DIFFERENCES`, :data:`GALLERY`; the gallery says so in its place where no item kept
    its images). Returns ``{"differences": path, "differences_caption": ..., "gallery":
    path, "gallery_caption": ...}``."""
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    write_tables(comparison, tables_dir, settings)
    diff = figures_dir / DIFFERENCES
    caption = difference_figure(comparison.rows, diff)
    gallery = figures_dir / GALLERY
    gcap = changed_gallery(comparison.gallery, gallery)
    if gcap is None:
        from roundtrip.report.style import figure, save

        fig, axes = figure(1, 1, height_in=0.6)
        axes[0, 0].axis("off")
        axes[0, 0].text(0.5, 0.5, "No compared item kept its images.", ha="center",
                        va="center")
        save(fig, gallery)
        gcap = "No compared item kept its reconstructions (run.keep_reconstructions)."
    (figures_dir / "captions.txt").write_text(f"{DIFFERENCES}\t{caption}\n{GALLERY}\t{gcap}\n")
    return {"differences": diff, "differences_caption": caption, "gallery": gallery,
            "gallery_caption": gcap}

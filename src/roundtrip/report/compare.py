"""What a person reads of a comparison of two checkpoints (:mod:`roundtrip.tables.compare`):
the tables ``compare`` and ``compare_items``, the figure of every difference with its interval
coloured by verdict, the gallery of the items that changed most (original | A | B, zoomed),
that of the OCR and VISTA items that flipped (the same strips, with what each side read or
answered) and their lines in words. The rule ``compare`` and ``roundtrip compare`` both write
them with :func:`write_comparison`; the PDF report's "What changed" section reads them back
(:func:`read_rows`)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.metrics.paired import BETTER, BINARY, EQUIVALENT, INCONCLUSIVE, WORSE
from roundtrip.tables.compare import (ITEM_COLUMNS, NOT_COMPARED, ROW_COLUMNS, Comparison,
                                      what_changed)
from roundtrip.tables.engine import write_frame

#: The colour of each verdict in the figures (Okabe & Ito 2008: blue, vermillion, green, grey).
VERDICT_COLOURS = {BETTER: "#0072B2", WORSE: "#D55E00", EQUIVALENT: "#009E73",
                   INCONCLUSIVE: "#8a8a8a"}
#: Table names and figure file names.
ROWS_TABLE, ITEMS_TABLE = "compare", "compare_items"
DIFFERENCES, GALLERY, FLIPPED = "differences.png", "changed.png", "flipped.png"
#: Panels of the differences figure at most, under its strip of every row (the rest are in the
#: table): two, side by side, so that the figure and the gallery of the items that changed most
#: share the first headline page, and the gallery of the items that flipped the second with the
#: first evaluation's figure (with four, the default report's body grew by a page).
MAX_PANELS = 2


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


def _direction(x) -> bool | None:
    """A row's ``higher_is_better`` as read back (a bool, ``True``/``False`` text, 1/0), or None
    where it is unknown (missing: a ``compare.csv`` written before the column)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, str):
        return {"true": True, "1": True, "false": False, "0": False}.get(x.strip().lower())
    if isinstance(x, (int, float, np.integer, np.floating)) and not pd.isna(x) and x in (0, 1):
        return bool(x)
    return None


#: Why a compared row is left out of the overview (:func:`standardized_differences`).
NO_DETECTABLE, NO_DIRECTION = "no detectable difference", "no direction"


def standardized_differences(rows: pd.DataFrame) -> pd.DataFrame:
    """Every compared row's difference and interval in units of its detectable difference,
    oriented so that positive means the candidate is better (the sign flipped where lower is
    better): the overview of :func:`difference_figure`.

    Returns:
        The compared rows (verdict other than ``not compared``) with ``standardized``,
        ``standardized_low``, ``standardized_high`` (``difference / detectable`` and the
        interval's ends, oriented; NaN where left out) and ``left_out`` (``""``, or
        :data:`NO_DETECTABLE`: detectable missing, 0 or not finite, or a difference that is
        not finite; :data:`NO_DIRECTION`: ``higher_is_better`` unknown), the rows shown first,
        sorted by ``standardized`` (stable), then those left out in the rows' order.
    """
    done = rows[rows["verdict"] != NOT_COMPARED].reset_index(drop=True)
    number = {c: pd.to_numeric(done[c], errors="coerce").to_numpy(float)
              for c in ("difference", "ci_low", "ci_high", "detectable")}
    higher = (done["higher_is_better"].map(_direction) if "higher_is_better" in done.columns
              else pd.Series([None] * len(done), dtype=object))
    detectable = np.abs(number["detectable"])
    usable = np.isfinite(detectable) & (detectable > 0) & np.isfinite(number["difference"])
    known = higher.notna().to_numpy()
    sign = np.where(higher.eq(False).to_numpy(bool), -1.0, 1.0)  # lower is better: flipped
    with np.errstate(invalid="ignore", divide="ignore"):
        z, lo, hi = (sign * number[c] / detectable for c in ("difference", "ci_low", "ci_high"))
    shown = usable & known
    out = done.assign(standardized=np.where(shown, z, np.nan),
                      standardized_low=np.where(shown, np.fmin(lo, hi), np.nan),
                      standardized_high=np.where(shown, np.fmax(lo, hi), np.nan),
                      left_out=np.where(~usable, NO_DETECTABLE,
                                        np.where(~known, NO_DIRECTION, "")))
    first = out[shown].sort_values("standardized", kind="stable")
    return pd.concat([first, out[~shown]]).reset_index(drop=True)


#: Height of the overview of every compared row atop the differences figure (inches).
OVERVIEW_IN = 1.45
#: Marker of each evaluation in the overview, in the rows' order (then repeated).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def _overview(ax, std: pd.DataFrame, evaluations: list[str]) -> str:
    """Draw the caterpillar of :func:`standardized_differences`'s shown rows on ``ax``: x the
    rows in sorted order, y the standardized difference with its interval, coloured by verdict,
    one marker per evaluation (``evaluations``: their order in the legend); returns the
    caption's sentence on the y scale (``""`` where linear)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    g = std[std["left_out"] == ""]
    if g.empty:
        ax.axis("off")
        ax.text(0.5, 0.5, "No compared row has a detectable difference and a direction.",
                ha="center", va="center", transform=ax.transAxes, fontsize=7.5)
        return ""
    ax.axhline(0, color="black", linewidth=0.6, zorder=1)
    x = np.arange(len(g))
    z = g["standardized"].to_numpy(float)
    lo, hi = g["standardized_low"].to_numpy(float), g["standardized_high"].to_numpy(float)
    ends = np.concatenate([z, lo, hi])
    ends = ends[np.isfinite(ends)]
    lim = max(1.5, float(np.abs(ends).max()) * 1.08)
    colours = g["verdict"].map(lambda v: VERDICT_COLOURS.get(v, "#8a8a8a")).to_numpy()
    bars = np.isfinite(lo) | np.isfinite(hi)  # an infinite end is drawn to the axis' edge
    ax.vlines(x[bars], np.nan_to_num(lo[bars], nan=z[bars], posinf=lim, neginf=-lim),
              np.nan_to_num(hi[bars], nan=z[bars], posinf=lim, neginf=-lim),
              colors=colours[bars], linewidth=0.7 if len(g) > 120 else 1.2, zorder=2)
    for ls in (-1, 1):
        ax.axhline(ls, color="#8a8a8a", linewidth=0.5, linestyle=":", zorder=1)
    evaluations = [e for e in evaluations if e in set(g["evaluation"])]
    size = 5 if len(g) > 120 else 12
    for k, ev in enumerate(evaluations):
        mine = (g["evaluation"] == ev).to_numpy()
        ax.scatter(x[mine], z[mine], c=colours[mine], s=size, linewidths=0, zorder=3,
                   marker=MARKERS[k % len(MARKERS)])
    if len(evaluations) > 1:  # the markers in black: the colours are the verdicts'
        handles = [Line2D([], [], linestyle="", marker=MARKERS[k % len(MARKERS)], color="black",
                          markersize=3, label=ev) for k, ev in enumerate(evaluations)]
        ax.legend(handles=handles, loc="upper left", ncol=min(len(evaluations), 6),
                  frameon=False, handletextpad=0.1, columnspacing=0.8, borderaxespad=0.1, fontsize=7.5)
    scale = ""
    if lim > 8:  # a few rows far out would flatten the rest: logarithmic beyond +-2
        ax.set_yscale("symlog", linthresh=2, linscale=1.5)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        scale = " Its y axis is logarithmic beyond ±2."
    room = 1.0 if len(evaluations) < 2 else (3.0 if scale else 1.35)  # for the legend
    ax.set_ylim(-lim, lim * room)
    ax.set_xlim(-1, len(g))
    ax.set_xticks([])
    # the direction in the title: a label that long would not fit beside an axis this short
    ax.set_title(f"{len(g)} compared rows, sorted: difference / "
                 "detectable (positive: candidate better)", fontsize=7.5, loc="left")
    ax.set_ylabel("difference /\ndetectable", fontsize=7.5)
    return scale


def difference_figure(rows: pd.DataFrame, path: str | Path) -> str:
    """Every compared row's difference with its interval, coloured by verdict: on top, an
    overview of every row in units of its detectable difference, oriented so that positive
    means the candidate is better (:func:`standardized_differences`, :data:`OVERVIEW_IN`
    tall); under it one panel per (evaluation, metric), one line per dataset, the equivalence
    margin shaded, at most :data:`MAX_PANELS` panels (the largest changes first). Returns the
    caption."""
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
    lines = [max(heights[i:i + cols]) for i in range(0, len(panels), cols)]
    body = max(1.4, sum(lines) * 0.15 + 0.55 * n_rows)
    std = standardized_differences(rows)
    overview = OVERVIEW_IN if (std["left_out"] == "").any() else 0.8  # 0.8: a line saying why
    fig, _ = figure(1, 1, height_in=body + overview)
    fig.clear()  # a grid of its own: tight_layout spaces a full-width axis there right
    # the axes' heights without their titles and ticks (0.55 in a row): the overview's fixed,
    # each row of panels in proportion to the lines of its tallest panel
    spare = body - 0.55 * n_rows
    grid = fig.add_gridspec(n_rows + 1, cols, height_ratios=[overview - 0.55] + [
        spare * n / sum(lines) for n in lines])
    scale = _overview(fig.add_subplot(grid[0, :]), std, list(dict.fromkeys(done["evaluation"])))
    axes = np.array([[fig.add_subplot(grid[1 + i, j]) for j in range(cols)]
                     for i in range(n_rows)])
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
    left = std["left_out"].value_counts()
    why = [f"{left[w]} without " + ("a detectable difference (missing or 0)"
                                    if w == NO_DETECTABLE else "a recorded direction")
           for w in (NO_DETECTABLE, NO_DIRECTION) if left.get(w, 0)]
    drawn = int((std["left_out"] == "").sum())
    markers = "; one marker per evaluation" if std.loc[std["left_out"] == "", "evaluation"] \
        .nunique() > 1 else ""
    top = ((f" Top: all {drawn} compared rows" if not why else
            f" Top: the {drawn} compared rows with a detectable difference and a direction")
           + ", each difference and interval divided by the row's detectable difference and "
           "signed so that positive means the candidate is better, sorted" + markers
           + "; dotted lines at ±1 detectable." + scale
           + (f" Left out of it: {' and '.join(why)}, of {len(std)} compared rows."
              if why else ""))
    if not drawn:
        top = f" Top: no row drawn: of the {len(std)} compared rows, {' and '.join(why)}."
    shown = "" if len(order) <= MAX_PANELS else (
        f" The {MAX_PANELS} panels with the largest changes are shown; every row is in the "
        "compare table.")
    return ("Candidate minus baseline, coloured by verdict: blue better, vermillion worse, "
            "green equivalent within the margin, grey inconclusive (after Holm and "
            "Benjamini-Yekutieli)." + top + " Below: per metric and dataset, the difference "
            "in the metric's units with its 95 % paired bootstrap interval, the margin as a "
            "grey band." + shown)


def _strips(chosen: list[dict], path: Path, title, labels=None, zoom: str = "difference"
            ) -> None:
    """Draw one line per gallery entry (:attr:`roundtrip.tables.compare.Comparison.gallery`):
    original | baseline | candidate, 1.35 in (1.5 in with ``labels``) a line at the printed
    width, so that the report prints three lines at full size. Each is zoomed on one window
    (:func:`roundtrip.report.gallery.detail_window`): with ``zoom="difference"``, where the
    two sides' images differ most (the whole image where they are the same); with
    ``zoom="detail"``, the original's most detailed window, where the report's reconstruction
    galleries zoom (small text on a text set). ``title(entry, j)`` is the title over panel
    ``j`` (0 original, 1 baseline, 2 candidate); ``labels(entry, j)``, where given, the text
    under it (two lines at most; CJK and Devanagari from the reconstruction galleries'
    fonts)."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    from roundtrip.core.imaging import read_image, to_uint8
    from roundtrip.report.gallery import FONT_FALLBACK, detail_window
    from roundtrip.report.style import figure, save

    fig, axes = figure(len(chosen), 3, height_in=(1.35 if labels is None else 1.5) * len(chosen))
    for i, g in enumerate(chosen):
        a = to_uint8(read_image(g["baseline_image"]))
        b = to_uint8(read_image(g["candidate_image"]))
        orig = to_uint8(read_image(g["original"])) if g.get("original") else None
        same = a.shape == b.shape
        if zoom == "detail":
            y, x, side = detail_window(orig if orig is not None and orig.shape == a.shape
                                       else a)
        else:
            diff = (np.abs(a.astype(np.int16) - b.astype(np.int16)).astype(np.uint8) if same
                    else a)
            if same and not diff.any():  # one image read twice: all of it
                y, x, side = 0, 0, None
            else:
                y, x, side = detail_window(
                    np.repeat(diff.max(axis=2, keepdims=True), 3, axis=2) if same else a)
        for j, img in enumerate((orig, a, b)):
            ax = axes[i, j]
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if img is None:
                ax.text(0.5, 0.5, "n/a", ha="center", va="center")
            else:
                crop = (img[y:y + side, x:x + side]
                        if side and img.shape[:2] == a.shape[:2] else img)
                ax.imshow(crop, interpolation="nearest")
            ax.set_title(title(g, j), fontsize=7.5)
            if labels is not None:
                text = labels(g, j)
                if text:
                    ax.set_xlabel(textwrap.fill(text, 34, max_lines=2, placeholder=" ..."),
                                  fontsize=7.5, fontfamily=FONT_FALLBACK)
    save(fig, path)


def changed_gallery(gallery: list[dict], path: str | Path, strips: int = 3) -> str | None:
    """The items that changed most, one line each: original | baseline | candidate, each
    zoomed on the window where the two reconstructions differ most (:func:`_strips`), of the
    declarations without a text (the others: :func:`flipped_gallery`): per (comparison,
    dataset, where) its first metric's items, largest change first, at most two per dataset
    and ``strips`` in all. Returns the caption, or None (no file written) where no compared
    item kept its images."""
    gallery = [g for g in gallery if not g.get("text")]
    if not gallery:
        return None
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
                or seen.get(key, 0) >= 2 or len(chosen) >= strips):
            continue
        seen[key] = seen.get(key, 0) + 1
        shown.add(item)
        chosen.append(g)
    if not chosen:
        return None

    def title(g, j):
        if j == 0:
            return f"{g['dataset']}/{g['item_id']}"
        if j == 1:
            return g["baseline"]
        return f"{g['candidate']} ({g['metric']} {g['difference']:+.{g.get('digits', 2)}f})"
    _strips(chosen, Path(path), title)
    return ("The items whose value changed most (of the kept reconstructions; per dataset, "
            "its first metric): original, baseline and candidate, zoomed on where the two "
            "differ most; the change of the item's metric beside the candidate.")


def _said(g: dict, side: str) -> str:
    """What one side of a gallery entry read or answered, with its outcome: ``wrong: "B"``
    (a right/wrong outcome) or ``CER 0.1234: "the text"``."""
    value = g[f"{side}_value"]
    if g.get("kind") == BINARY:
        head = "right" if value > 0 else "wrong"
    else:
        head = f"{g['metric']} {_cell(value, int(g.get('digits', 4)))}"
    text = " ".join(str(g.get(f"{side}_text", "")).split())
    return f'{head}: "{text}"' if text else f"{head}: (nothing)"


def flipped_items(gallery: list[dict], strips: int = 3) -> list[dict]:
    """The gallery entries :func:`flipped_gallery` shows: of the declarations with a text (an
    OCR line, an extracted answer), the answers that flipped (right -> wrong first) and the
    OCR items whose value changed most, taken in turn, at most two per (comparison, dataset,
    where) and ``strips`` in all, each item once.

    Args:
        gallery: :attr:`roundtrip.tables.compare.Comparison.gallery`.
        strips: how many entries at most.
    """
    gallery = [g for g in gallery if g.get("text") and g["difference"] != 0
               and np.isfinite(g["difference"])]
    flips = [g for g in gallery if g.get("kind") == BINARY]
    flips.sort(key=lambda g: g["difference"] > 0)  # right -> wrong first, stable
    changes = sorted((g for g in gallery if g.get("kind") != BINARY),
                     key=lambda g: -abs(g["difference"]))
    seen, chosen, shown = {}, [], set()

    def take(queue) -> bool:
        """Show the queue's next entry that may be shown; False where none is left."""
        while queue:
            g = queue.pop(0)
            key = (g["comparison"], g["dataset"], g["where"])
            item = (g["comparison"], g["dataset"], g["item_id"], g["baseline_image"],
                    g["candidate_image"])
            if item in shown or seen.get(key, 0) >= 2:  # each once, two per row of the table
                continue
            seen[key] = seen.get(key, 0) + 1
            shown.add(item)
            chosen.append(g)
            return True
        return False
    turn = 0
    while len(chosen) < strips and (flips or changes):
        first, second = (flips, changes) if turn % 2 == 0 else (changes, flips)
        if not take(first):
            take(second)
        turn += 1
    return chosen


def flipped_gallery(gallery: list[dict], path: str | Path, strips: int = 3) -> str | None:
    """The OCR and VISTA items that flipped (:func:`flipped_items`), one line each: original |
    baseline | candidate (:func:`_strips`: zoomed on the original's most detailed window, as
    the reconstruction galleries zoom), with what each side read or answered under it. Returns
    the caption, or None (no file written) where no such item kept its images."""
    chosen = flipped_items(gallery, strips)
    if not chosen:
        return None

    def title(g, j):
        if j == 0:
            where = ", ".join(v.split("=", 1)[-1] for v in g["where"].split(", ")) \
                if g["where"] else ""
            return f"{g['dataset']}/{g['item_id']}" + (f" ({where})" if where else "")
        return g["baseline"] if j == 1 else g["candidate"]

    def label(g, j):
        return "" if j == 0 else _said(g, "baseline" if j == 1 else "candidate")
    _strips(chosen, Path(path), title, label, zoom="detail")
    return ("OCR and VISTA items that flipped: the answers that went from right to wrong (or "
            "back) and the OCR readings whose error changed most between the baseline and the "
            "candidate; original, baseline and candidate, zoomed on the original's most "
            "detailed window (as the reconstruction galleries), with what each side read or "
            "answered.")


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


def _placeholder(path: Path, text: str) -> None:
    """A one-line figure that says why there is no picture (a declared output is always
    written)."""
    from roundtrip.report.style import figure, save

    fig, axes = figure(1, 1, height_in=0.6)
    axes[0, 0].axis("off")
    axes[0, 0].text(0.5, 0.5, text, ha="center", va="center")
    save(fig, path)


def write_comparison(comparison: Comparison, tables_dir: str | Path, figures_dir: str | Path,
                     settings) -> dict[str, Path | str | None]:
    """Write the two tables (:func:`write_tables`), the differences figure, the gallery of the
    items that changed most and that of the OCR and VISTA items that flipped
    (:data:`DIFFERENCES`, :data:`GALLERY`, :data:`FLIPPED`), and ``captions.txt`` (``file<TAB>
    caption`` of each figure the report shows). Where no item kept its images, the gallery
    says so in its place; where no OCR or VISTA item flipped, ``flipped.png`` says so and has
    no caption line (the report leaves it out). Returns ``{"differences": path,
    "differences_caption": ..., "gallery": path, "gallery_caption": ..., "flipped": path,
    "flipped_caption": ... or None}``."""
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    write_tables(comparison, tables_dir, settings)
    diff = figures_dir / DIFFERENCES
    caption = difference_figure(comparison.rows, diff)
    gallery = figures_dir / GALLERY
    gcap = changed_gallery(comparison.gallery, gallery)
    if gcap is None:
        _placeholder(gallery, "No compared item kept its images.")
        gcap = "No compared item kept its reconstructions (run.keep_reconstructions)."
    flipped = figures_dir / FLIPPED
    fcap = flipped_gallery(comparison.gallery, flipped)
    if fcap is None:
        _placeholder(flipped, "No OCR or VISTA item flipped (of those whose images were kept).")
    lines = [f"{DIFFERENCES}\t{caption}", f"{GALLERY}\t{gcap}"]
    lines += [f"{FLIPPED}\t{fcap}"] if fcap else []
    (figures_dir / "captions.txt").write_text("\n".join(lines) + "\n")
    return {"differences": diff, "differences_caption": caption, "gallery": gallery,
            "gallery_caption": gcap, "flipped": flipped, "flipped_caption": fcap}

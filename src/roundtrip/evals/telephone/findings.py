"""The Telephone Game on the report's first page: what the run found, in sentences generated from
its tables, and the headline figure (S(g) with the fitted SDR curves).

The three metrics are the paper's (The Telephone Game: Evaluating Semantic Drift in Unified
Models):

- MCD (Sec. 3.1, Eq. 2): the mean over generations of ``S_delta(g)``, the mean similarity of the
  items' generation-``g`` outputs to their inputs (Eq. 1); ``MCD_avg`` averages it over the
  paper's four mappings. Higher means less drift. Its CI and the paired comparison of the best
  and runner-up pair come from the per-item similarity files
  (``results/telephone/{pair}/{set}/similarity.csv``).
- SDR (Sec. 3.2, Table 3): the power law ``alpha g^(-beta) + gamma`` fitted to ``S_delta(g)``,
  each parameter averaged over the mappings of a chain order; ``beta`` is the decay rate (lower:
  slower drift, the paper's reading of Fig. 7), ``gamma`` the asymptote the chain collapses to.
- MGG (Sec. 3.3, Fig. 8): the accuracy on GenEval's prompts per generation (the released MGG
  rules' verdicts) averaged over the generations; the headline ``overall_prompts`` weighs every
  prompt equally (the convention of Fig. 8's cells), ``overall_tasks`` averages the six task
  accuracies.

Rows are the pairs (``telephone.pairs``) and chain sets; with several chain-input sets a row is
named ``pair (set)``.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.evals.telephone.tables import ARROWS, SDR_PARAMS, experiment_label
from roundtrip.metrics.drift import SDRFit

#: The chain orders, in Table 3's order.
CHAINS = ("text-first", "image-first")
#: What the "(all experiments)" parameters and MCD column are, said once.
ALL_EXPERIMENTS = ("every experiment measured (roundtrip's average; the paper's four mappings "
                   "were not all measured)")
PAPER_MAPPINGS = "the paper's four mappings"
#: Per-item file name the findings read for MCD's CI and paired comparison.
SIMILARITY_FILE = "similarity.csv"
DIGITS = 3


def findings_inputs(plan) -> list[str]:
    """The per-item similarity files of every (pair, chain-input set) of the run (written by rule
    ``telephone_chains``), for MCD's CIs and the paired comparison.

    Args:
        plan: the run's :class:`roundtrip.workflow.plan.Plan`.
    """
    from roundtrip.evals.telephone.plan import TelephonePlan

    view = plan.view("telephone", TelephonePlan)
    return [view.files(m, d)["similarity"] for m, d in view.keys]


def findings(results) -> list[str]:
    """Two to four sentences: MCD_avg best and worst pair with 95 % CIs and the paired best
    against runner-up (two), SDR per chain order (one), MGG prompt- against task-weighted (one).

    Args:
        results: :class:`roundtrip.report.findings.RunResults` with the tables
            ``telephone_mcd``, ``telephone_sdr``, ``telephone_sdr_fits``, ``telephone_mgg`` and
            the per-item similarity files of :func:`findings_inputs`.
    """
    return [*mcd_sentences(results), sdr_sentence(results), mgg_sentence(results)]


# --- row names ---------------------------------------------------------------------------------

def row_labels(frame: pd.DataFrame) -> list[str]:
    """``pair`` per row, or ``pair (set)`` where the table holds more than one chain-input set."""
    many = "dataset" in frame.columns and frame["dataset"].nunique() > 1
    return [f"{m} ({d})" if many else str(m)
            for m, d in zip(frame["model"], frame.get("dataset", [""] * len(frame)))]


def _names(labels) -> str:
    labels = list(labels)
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


# --- MCD ---------------------------------------------------------------------------------------

def mcd_column(mcd: pd.DataFrame) -> tuple[str | None, list[str]]:
    """Which MCD the findings rank on, and its experiment columns.

    The paper's ``MCD_avg`` (Sec. 3.1: the mean of ``MCD_delta`` over its four mappings) where a
    row has it; else roundtrip's ``MCD_avg_all_experiments``.

    Returns:
        ``(column, experiments)``: the column name (None when the table has neither with a
        value) and the experiment labels it averages (the table's columns of that experiment;
        empty when the experiments cannot be told from the header).
    """
    cols = list(mcd.columns)
    if "MCD_avg" in cols and mcd["MCD_avg"].notna().any():
        # the table puts the paper's four mappings between the labels and MCD_avg
        return "MCD_avg", cols[cols.index("dataset") + 1:cols.index("MCD_avg")] \
            if "dataset" in cols else []
    if "MCD_avg_all_experiments" in cols and mcd["MCD_avg_all_experiments"].notna().any():
        skip = {"model", "dataset", "MCD_avg", "MCD_avg_all_experiments", "generations"}
        return "MCD_avg_all_experiments", [c for c in cols if c not in skip]
    return None, []


def item_mcd(similarity: pd.DataFrame, experiments: list[str] | None = None) -> pd.Series:
    """Each item's MCD: per experiment the mean over generations of its Eq. 1 value, then the
    mean over the experiments (so that the mean over items is the table's MCD_avg when every
    item has every value).

    Args:
        similarity: a per-item similarity file (columns ``item_id, chain, direction, backbone,
            generation, similarity, status``); ``status`` ``ok`` counts its similarity, ``failed``
            (no output at g) counts 0 as in Eq. 1, other statuses are left out.
        experiments: experiment labels (:func:`~roundtrip.evals.telephone.tables
            .experiment_label`) to keep; None or empty: all.

    Returns:
        item_id -> MCD (similarity units, the backbone's: cosine or 1 - CER).
    """
    df = similarity[similarity["direction"].isin(list(ARROWS))]
    df = df.assign(label=[experiment_label(c, d, b) for c, d, b in
                          zip(df["chain"], df["direction"], df["backbone"])])
    if experiments:
        df = df[df["label"].isin(experiments)]
    value = pd.to_numeric(df["similarity"], errors="coerce").where(df["status"] == "ok")
    value = value.mask(df["status"] == "failed", 0.0)
    df = df.assign(value=value).dropna(subset=["value"])
    per_experiment = df.groupby(["item_id", "label"])["value"].mean()
    return per_experiment.groupby(level="item_id").mean()


def _similarity_files(results) -> dict[tuple[str, str], Path]:
    """``(pair, set) -> path`` of the declared per-item similarity files
    (``.../{pair}/{set}/similarity.csv``)."""
    out = {}
    for p in map(Path, results.files):
        if p.name == SIMILARITY_FILE and len(p.parts) >= 3 and p.is_file():
            out[(p.parts[-3], p.parts[-2])] = p
    return out


def _read_similarity(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"item_id": str, "reason": str}, keep_default_na=False,
                       na_values={"similarity": [""]})


def mcd_per_item(results, rows: pd.DataFrame, experiments: list[str]) -> pd.DataFrame | None:
    """``model, item_id, value`` (model: the row's label) for every row of the MCD table that
    is ranked, from the per-item files; None when a row has no file or no value (the table's
    values are then ranked without CIs)."""
    files = _similarity_files(results)
    parts = []
    for label, model, dataset in zip(rows["label"], rows["model"], rows["dataset"]):
        path = files.get((str(model), str(dataset)))
        if path is None:
            return None
        per_item = item_mcd(_read_similarity(path), experiments)
        if per_item.empty:
            return None
        parts.append(pd.DataFrame({"model": label, "item_id": per_item.index,
                                   "value": per_item.to_numpy(float)}))
    return pd.concat(parts, ignore_index=True)


def mcd_sentences(results) -> list[str]:
    """MCD_avg (Sec. 3.1, Eq. 2; higher = less drift): the best and worst pair with bootstrap
    CIs over items and the best against the runner-up as a paired difference over their shared
    items (:func:`roundtrip.report.findings.rank`); without per-item files, the table's values
    alone. Uses the paper's ``MCD_avg`` where measured, else ``MCD_avg_all_experiments``."""
    from roundtrip.report.findings import rank

    mcd = results.table("telephone_mcd")
    if mcd is None or mcd.empty:
        return ["MCD was not computed: the run wrote no telephone_mcd rows (no chain was scored)."]
    column, experiments = mcd_column(mcd)
    if column is None:
        return ["MCD could not be computed: telephone_mcd has no MCD_avg value for any pair "
                "(every experiment is n/a; see the table's notes)."]
    rows = mcd.assign(label=row_labels(mcd))
    missing = rows.loc[rows[column].isna(), "label"].tolist()
    rows = rows[rows[column].notna()]
    metric = ("MCD_avg (Eq. 2: S(g) averaged over generations and the paper's four mappings; "
              "higher = less drift)" if column == "MCD_avg" else
              "MCD over every measured experiment (roundtrip's MCD_avg_all_experiments, as the "
              "paper's four mappings were not all measured; higher = less drift)")
    tail = f" {_names(missing)} {'has' if len(missing) == 1 else 'have'} no value." \
        if missing else ""
    per_item = mcd_per_item(results, rows, experiments)
    if per_item is not None:
        out = rank(results, per_item, metric, higher_is_better=True,
                   noun="pair").sentences(DIGITS)
        return [out[0] + tail, *out[1:]]
    return _mcd_from_table(rows, column, metric) + ([tail.strip()] if tail else [])


def _mcd_from_table(rows: pd.DataFrame, column: str, metric: str) -> list[str]:
    """Best and worst pair from the table alone (no CI: the per-item files were not read)."""
    order = rows.sort_values([column, "label"], ascending=[False, True])
    best, worst = order.iloc[0], order.iloc[-1]
    if len(order) == 1:
        return [f"{best['label']} is the only pair with {metric}: "
                f"{best[column]:.{DIGITS}f} (no CI: the per-item similarity files were not read)."]
    return [f"On {metric}, {best['label']} is best ({best[column]:.{DIGITS}f}) and "
            f"{worst['label']} worst ({worst[column]:.{DIGITS}f}), of {len(order)} pairs; "
            "no CI or paired comparison: the per-item similarity files "
            "(results/telephone/{pair}/{set}/similarity.csv) were not read."]


# --- SDR ---------------------------------------------------------------------------------------

def sdr_parameters(sdr: pd.DataFrame, chain: str) -> tuple[pd.DataFrame, str]:
    """The SDR parameters of every row for one chain order (Table 3, Sec. 3.2).

    The paper's columns (``text-first α`` ..., averaged over the chain's paper mappings) where
    any row has them, else roundtrip's ``... (all experiments)`` columns; one source per chain
    so that the rows compare.

    Returns:
        ``(frame, source)``: columns ``label, model, dataset, alpha, beta, gamma`` (rows without
        a fit have NaN) and ``"paper"``, ``"all"`` or ``""`` (no parameters at all).
    """
    for suffix, source in (("", "paper"), (" (all experiments)", "all")):
        cols = [f"{chain} {p}{suffix}" for p in SDR_PARAMS]
        if all(c in sdr.columns for c in cols) and sdr[cols].notna().all(axis=1).any():
            frame = sdr[cols].astype(float).set_axis(["alpha", "beta", "gamma"], axis=1)
            frame.insert(0, "label", row_labels(sdr))
            frame.insert(1, "model", sdr["model"].to_numpy())
            frame.insert(2, "dataset", sdr["dataset"].to_numpy() if "dataset" in sdr else "")
            return frame.reset_index(drop=True), source
    return pd.DataFrame(columns=["label", "model", "dataset", "alpha", "beta", "gamma"]), ""


def _fmt(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.{DIGITS}f}"


def _triple(r) -> str:
    return f"α, β, γ = {r['alpha']:.{DIGITS}f}, {r['beta']:.{DIGITS}f}, {r['gamma']:.{DIGITS}f}"


def _chain_clause(params: pd.DataFrame, chain: str) -> str:
    """``on text-first chains X drifts least (...) and Y has the highest β (...)``: lowest beta
    first (the paper's reading of Fig. 7: a lower decay rate is a slower drift),
    ties on beta (equal at the printed digits) broken by the higher asymptote gamma."""
    fitted = params.dropna(subset=["beta", "gamma"])
    if fitted.empty:
        return f"on {chain} chains no pair has a fit"
    fitted = fitted.assign(b=fitted["beta"].round(DIGITS), g=-fitted["gamma"])
    order = fitted.sort_values(["b", "g", "label"]).reset_index(drop=True)
    least = order.iloc[0]
    if len(order) == 1:
        return f"on {chain} chains only {least['label']} has a fit ({_triple(least)})"
    clause = f"on {chain} chains {least['label']} drifts least ({_triple(least)}"
    tied = order[(order["b"] == least["b"]) & (order.index > 0)]["label"].tolist()
    if tied:
        clause += f"; tied on β with {_names(tied)}, the higher γ decides"
    steepest = order.iloc[-1]
    clause += f") and {steepest['label']} has the highest β ({_triple(steepest)})"
    unfit = params.loc[params["beta"].isna(), "label"].tolist()
    return clause + (f", no fit for {_names(unfit)}" if unfit else "")


def fit_points(fits: pd.DataFrame | None) -> int | None:
    """The most generations any successful power-law fit of ``telephone_sdr_fits`` had, when
    that is no more than its 3 parameters (the fit then identifies nothing); else None."""
    if fits is None or fits.empty or not {"form", "status", "n"} <= set(fits.columns):
        return None
    power = fits[fits["form"].astype(str).str.startswith("alpha") & (fits["status"] == "ok")]
    n = pd.to_numeric(power["n"], errors="coerce").dropna()
    return None if n.empty or n.max() > 3 else int(n.max())


def _few_points(fits: pd.DataFrame | None) -> str:
    n = fit_points(fits)
    return "" if n is None else (
        f"; every power-law fit in telephone_sdr_fits has {n} generations for 3 parameters, so "
        "the parameters are not identified")


def sdr_sentence(results) -> str:
    """SDR per chain order (Sec. 3.2, Table 3): the pair that drifts least (lowest decay rate
    ``beta``) and the one with the highest ``beta``, each with ``alpha, beta, gamma``; says where the parameters come from
    and when the fits are on too few generations."""
    sdr = results.table("telephone_sdr")
    if sdr is None or sdr.empty:
        return "SDR was not computed: the run wrote no telephone_sdr rows."
    clauses, sources = [], {}
    for chain in CHAINS:
        params, source = sdr_parameters(sdr, chain)
        sources[chain] = source
        if source:
            clauses.append(_chain_clause(params, chain))
    if not clauses:
        return ("SDR could not be computed: telephone_sdr has no fitted parameters for either "
                "chain order (every power-law fit failed or had nothing to fit).")
    used = set(s for s in sources.values() if s)
    where = (f"averaged over {PAPER_MAPPINGS if used == {'paper'} else ALL_EXPERIMENTS}"
             if len(used) == 1 else
             "averaged over " + " and ".join(
                 f"{PAPER_MAPPINGS if s == 'paper' else 'every experiment'} for {c}"
                 for c, s in sources.items() if s))
    missing = [c for c, s in sources.items() if not s]
    tail = f"; no {' or '.join(missing)} fit" if missing else ""
    return ("SDR, the power law α g^(-β) + γ fitted to S(g) (Sec. 3.2, Table 3; β the decay "
            f"rate, γ the asymptote), parameters {where}: " + "; ".join(clauses) + tail
            + _few_points(results.table("telephone_sdr_fits")) + ".")


# --- MGG ---------------------------------------------------------------------------------------

def mgg_scores(mgg: pd.DataFrame) -> pd.DataFrame:
    """The MGG rows (generation ``MGG``: the mean over generations, Sec. 3.3) of
    ``telephone_mgg`` with a ``label`` column; columns ``overall_prompts`` and
    ``overall_tasks`` as floats in [0, 1]."""
    rows = mgg[mgg["generation"].astype(str) == "MGG"]
    rows = rows.assign(label=row_labels(rows)) if len(rows) else rows.assign(label=[])
    for c in ("overall_prompts", "overall_tasks"):
        rows = rows.assign(**{c: pd.to_numeric(rows.get(c, np.nan), errors="coerce")})
    return rows.reset_index(drop=True)


def mgg_sentence(results) -> str:
    """MGG (Sec. 3.3): best and worst pair on the prompt-weighted ``overall_prompts`` (Fig. 8's
    convention), and how the task-averaged ``overall_tasks`` scores and ranks them."""
    mgg = results.table("telephone_mgg")
    if mgg is None or mgg.empty or "generation" not in mgg:
        return ("MGG was not computed: telephone_mgg has no rows (no GenEval prompt set, a "
                "dataset of type geneval, was chained and scored in this run).")
    scores = mgg_scores(mgg)
    have = scores.dropna(subset=["overall_prompts"])
    if have.empty:
        return "MGG could not be computed: telephone_mgg has no MGG row with an overall_prompts."
    order = have.sort_values(["overall_prompts", "label"], ascending=[False, True])
    best, worst = order.iloc[0], order.iloc[-1]
    d = DIGITS
    if len(order) == 1:
        head = (f"{best['label']} is the only pair with MGG (Sec. 3.3, the mean accuracy on "
                f"GenEval's prompts over generations): {best['overall_prompts']:.{d}f} "
                "prompt-weighted (overall_prompts, Fig. 8's convention)")
        return head + f" against {_fmt(best['overall_tasks'])} averaged over the six tasks " \
            "(overall_tasks)."
    head = (f"On MGG (Sec. 3.3, the mean accuracy on GenEval's prompts over generations), "
            f"prompt-weighted as Fig. 8 (overall_prompts), {best['label']} is best "
            f"({best['overall_prompts']:.{d}f}) and {worst['label']} worst "
            f"({worst['overall_prompts']:.{d}f}) of {len(order)} pairs")
    tasks = have.dropna(subset=["overall_tasks"])
    if tasks.empty:
        return head + "; no pair has the task-averaged overall_tasks."
    t_best = tasks.sort_values(["overall_tasks", "label"], ascending=[False, True]).iloc[0]
    same = t_best["label"] == best["label"]
    return (head + f"; averaged over the six tasks (overall_tasks) they score "
            f"{_fmt(best['overall_tasks'])} and {_fmt(worst['overall_tasks'])}, and "
            + (f"{best['label']} still ranks first." if same else
               f"{t_best['label']} ranks first ({t_best['overall_tasks']:.{d}f})."))


# --- headline figure ---------------------------------------------------------------------------

def _chain_experiments(mcd: pd.DataFrame | None, chain: str, source: str) -> list[str]:
    """The experiment labels the chain's parameters average: the paper's mappings of the chain
    (the MCD table's columns before ``MCD_avg``) or all (empty list)."""
    if source != "paper" or mcd is None:
        return []
    column, experiments = mcd_column(mcd)
    return [e for e in experiments if e.startswith(chain)] if column == "MCD_avg" else []


def _mean_curve(similarity: pd.DataFrame, model: str, dataset: str, chain: str,
                experiments: list[str]) -> pd.Series:
    """Mean ``S(g)`` over the chain's experiments at each generation (the points of Fig. 7)."""
    rows = similarity[(similarity["model"].astype(str) == str(model))
                      & (similarity["dataset"].astype(str) == str(dataset))
                      & (similarity["chain"] == chain)]
    if experiments:
        labels = [experiment_label(c, d, b) if d in ARROWS else "" for c, d, b in
                  zip(rows["chain"], rows["direction"], rows["backbone"])]
        rows = rows[[lab in experiments for lab in labels]]
    return rows.groupby("generation")["s"].mean().dropna().sort_index()


def _curve(alpha: float, beta: float, gamma: float, g) -> np.ndarray:
    """The power law with these parameters, evaluated by the fit's own predict (Sec. 3.2)."""
    params = dict(zip(("alpha", "beta", "gamma"), (alpha, beta, gamma)))
    return SDRFit("power", params, dict.fromkeys(params, math.nan), math.nan, 0, True).predict(g)


def headline_figure(results, path) -> str | None:
    """S(g) against generation per pair (points: the mean over the chain's experiments of
    ``telephone_similarity``'s ``s``, Eq. 1) with the power law of ``telephone_sdr`` (lines,
    Sec. 3.2, Fig. 7), one panel per chain order, one colour per pair.

    Returns:
        The caption, or None when ``telephone_similarity`` is missing or empty.
    """
    from matplotlib.ticker import MaxNLocator

    from roundtrip.report import style

    sim = results.table("telephone_similarity")
    if sim is None or sim.empty:
        return None
    sdr = results.table("telephone_sdr")
    mcd = results.table("telephone_mcd")
    keys = sdr if sdr is not None and not sdr.empty else \
        sim[["model", "dataset"]].drop_duplicates()
    labels = row_labels(keys)
    colours = style.colours(labels)
    # a second row holds each panel's legend, one line per pair (the β differ per chain
    # order); its height follows the number of pairs so the curves keep theirs
    legend_in = 0.17 * len(labels) + 0.2
    fig, axes = style.figure(2, len(CHAINS), height_in=2.4 + legend_in)
    axes[0, 0].get_gridspec().set_height_ratios([2.4, legend_in])
    sources, drawn = {}, 0
    for ax, key_ax, chain in zip(axes[0], axes[1], CHAINS):
        params, source = sdr_parameters(sdr, chain) if sdr is not None and not sdr.empty \
            else (pd.DataFrame(), "")
        sources[chain] = source
        by_label = {r["label"]: r for _, r in params.iterrows()}
        experiments = _chain_experiments(mcd, chain, source)
        for label, model, dataset in zip(labels, keys["model"], keys["dataset"]):
            points = _mean_curve(sim, model, dataset, chain, experiments)
            if points.empty:
                continue
            drawn += 1
            colour = colours[label]
            ax.scatter(points.index, points.to_numpy(), s=12, color=colour, zorder=3)
            r = by_label.get(label)
            if r is not None and not math.isnan(r["beta"]):
                # over the measured generations only: text-first text values start at g = 2 and
                # the power law runs off the similarity range towards g = 1
                lo, hi = float(points.index.min()), float(points.index.max())
                g = np.linspace(lo, max(hi, lo + 1), 100)
                ax.plot(g, _curve(r["alpha"], r["beta"], r["gamma"], g), color=colour,
                        label=f"{label} (β={r['beta']:.2f})")
            else:
                ax.plot(points.index, points.to_numpy(), color=colour, ls=":",
                        label=f"{label} (no fit)")
        ax.set_title(f"{chain} chains")
        ax.set_xlabel("generation g")
        ax.set_ylabel("S(g): similarity to input")
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        key_ax.axis("off")
        if ax.get_legend_handles_labels()[0]:
            key_ax.legend(*ax.get_legend_handles_labels(), loc="upper center", frameon=False)
    if not drawn:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return None
    style.save(fig, path)
    return _caption(sources, results.table("telephone_sdr_fits"))


def _caption(sources: dict[str, str], fits: pd.DataFrame | None) -> str:
    used = {s for s in sources.values() if s}
    over = (PAPER_MAPPINGS + " of the chain" if used == {"paper"} else
            "every experiment of the chain (roundtrip's; the paper's four mappings were not "
            "all measured)" if used == {"all"} else
            "the paper's mappings where measured, else every experiment")
    n = fit_points(fits)
    few = "" if n is None else (f". Every fit has {n} generations for its 3 parameters, so the "
                                "parameters are not identified")
    return ("Points: S(g), the mean similarity of generation g's outputs to the chain's input "
            f"(Eq. 1), averaged over {over}; lines: the power law α g^(-β) + γ with the averaged "
            "parameters of telephone_sdr (Sec. 3.2, Fig. 7; lower β = slower drift), one panel "
            "per chain order; dotted: no fit" + few + ".")


def table3_cells(results) -> pd.DataFrame | None:
    """The run's rows of the Telephone Game's Table 3 in the published cells' layout
    (:mod:`roundtrip.tables.published`): α, β, γ of the power law averaged over the paper's
    mappings of each chain order (Sec. 3.2), to four decimals as printed, for the pairs
    chained on a set marked as the paper's data (``datasets.<name>.paper_data``). None where
    no such pair has them."""
    from roundtrip.report.findings import number, paper_datasets

    sdr = results.table("telephone_sdr")
    mine = paper_datasets(results)
    if sdr is None or sdr.empty or not mine:
        return None
    rows = []
    for _, r in sdr[sdr["dataset"].isin(mine)].iterrows():
        label = r["model"] if sdr["dataset"].nunique() == 1 else f"{r['model']} ({r['dataset']})"
        for chain, group in (("text-first", "Text-First"), ("image-first", "Image-First")):
            for name in ("α", "β", "γ"):
                value = pd.to_numeric(r.get(f"{chain} {name}"), errors="coerce")
                if pd.notna(value):
                    rows.append({"table": "Table 3", "row_group": "This run", "row": label,
                                 "column_group": group, "column": name,
                                 "printed": number(float(value), 4)})
    return pd.DataFrame(rows) if rows else None

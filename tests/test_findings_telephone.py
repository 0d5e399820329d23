"""The Telephone Game's findings and headline figure, from small tables and per-item similarity
files with known numbers: MCD_avg with CIs and the paired best-vs-runner-up, SDR read per chain
order (lowest beta drifts least), MGG prompt- against task-weighted, what is said when a table
is missing, and the figure at print width."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from roundtrip.evals.telephone import findings as tf
from roundtrip.evals.telephone.plan import TelephonePlan
from roundtrip.evals.telephone.spec import EVALUATION as TELEPHONE
from roundtrip.metrics.stats import bootstrap_mean
from roundtrip.report import style
from roundtrip.report.findings import RunResults

PAIRS = ("alpha_pair", "beta_pair", "gamma_pair")
SET = "caps"
ITEMS = [f"c{i}" for i in range(5)]
#: (chain, direction, backbone, generations, table label)
EXPERIMENTS = [("text-first", "text_text", "cer", (2, 4, 6), "text-first text→text (cer)"),
               ("image-first", "image_text", "clip", (1, 3, 5), "image-first image→text (clip)")]
#: per pair, the level its similarities sit around (alpha best, beta close, gamma far)
LEVEL = {"alpha_pair": 0.9, "beta_pair": 0.7, "gamma_pair": 0.3}


def per_item_rows(pair: str) -> pd.DataFrame:
    """Known per-item similarities; gamma_pair's item c4 fails at its last text generation."""
    rng = np.random.default_rng(sum(map(ord, pair)))
    rows = []
    for chain, direction, backbone, gens, _ in EXPERIMENTS:
        for k, g in enumerate(gens):
            for item in ITEMS:
                s = LEVEL[pair] - 0.1 * k + rng.uniform(-0.05, 0.05)
                failed = pair == "gamma_pair" and item == "c4" and g == 4
                rows.append({"item_id": item, "chain": chain, "direction": direction,
                             "backbone": backbone, "generation": g,
                             "similarity": np.nan if failed else s,
                             "status": "failed" if failed else "ok", "reason": ""})
    return pd.DataFrame(rows)


def eq1(df: pd.DataFrame) -> pd.Series:
    """Eq. 1 values: a failed item counts 0."""
    return df["similarity"].where(df["status"] == "ok", 0.0)


def expected_mcd(df: pd.DataFrame, labels=None) -> dict[str, float]:
    """MCD per experiment label: mean over generations of the mean over items (Eq. 1, 2)."""
    out = {}
    for chain, direction, backbone, gens, label in EXPERIMENTS:
        if labels and label not in labels:
            continue
        e = df[(df["chain"] == chain) & (df["direction"] == direction)]
        out[label] = float(np.mean([eq1(e[e["generation"] == g]).mean() for g in gens]))
    return out


def expected_items(df: pd.DataFrame, labels=None) -> pd.Series:
    """Each item's MCD, computed the long way: per experiment over generations, then over
    experiments."""
    per = {}
    for chain, direction, backbone, gens, label in EXPERIMENTS:
        if labels and label not in labels:
            continue
        e = df[(df["chain"] == chain) & (df["direction"] == direction)]
        per[label] = e.assign(v=eq1(e)).groupby("item_id")["v"].mean()
    return pd.DataFrame(per).mean(axis=1)


def sdr_frame(paper: bool) -> pd.DataFrame:
    """Table 3's layout: beta_pair has the lowest text-first beta, alpha_pair the lowest
    image-first beta; with ``paper`` False the paper's columns are empty."""
    params = {"alpha_pair": {"text-first": (0.5, 0.30, 0.40), "image-first": (0.4, 0.05, 0.50)},
              "beta_pair": {"text-first": (0.3, 0.10, 0.35), "image-first": (0.6, 0.20, 0.10)},
              "gamma_pair": {"text-first": (0.9, 0.80, 0.02), "image-first": (0.8, 0.90, 0.00)}}
    rows = []
    for pair, by_chain in params.items():
        row = {"model": pair, "dataset": SET}
        for chain, values in by_chain.items():
            for name, v in zip(("α", "β", "γ"), values):
                row[f"{chain} {name}"] = v if paper else np.nan
        for chain, values in by_chain.items():
            for name, v in zip(("α", "β", "γ"), values):
                row[f"{chain} {name} (all experiments)"] = v + (0 if paper else 0.001)
        rows.append(row)
    return pd.DataFrame(rows)


def similarity_table(per_item: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    for pair, df in per_item.items():
        for chain, direction, backbone, gens, _ in EXPERIMENTS:
            e = df[(df["chain"] == chain) & (df["direction"] == direction)]
            for g in gens:
                v = eq1(e[e["generation"] == g])
                rows.append({"model": pair, "dataset": SET, "chain": chain,
                             "direction": direction, "backbone": backbone, "generation": g,
                             "s": v.mean(), "ci_low": v.min(), "ci_high": v.max(), "n": len(v),
                             "s_survivors": v.mean(), "n_failed": 0, "n_items": len(v),
                             "note": ""})
    return pd.DataFrame(rows)


def mgg_frame() -> pd.DataFrame:
    """Two generations and the MGG row per pair: gamma_pair is best prompt-weighted, beta_pair
    best on the task mean."""
    overall = {"alpha_pair": (0.50, 0.40), "beta_pair": (0.55, 0.70), "gamma_pair": (0.60, 0.45)}
    rows = []
    for pair, (prompts, tasks) in overall.items():
        for g in (1, 2):
            rows.append({"model": pair, "dataset": SET, "generation": str(g),
                         "overall_prompts": prompts + 0.01 * (1.5 - g),
                         "overall_tasks": tasks + 0.01 * (1.5 - g), "n": "4/4"})
        rows.append({"model": pair, "dataset": SET, "generation": "MGG",
                     "overall_prompts": prompts, "overall_tasks": tasks,
                     "n": "mean of 2 generations"})
    return pd.DataFrame(rows)


def fits_frame(n: int) -> pd.DataFrame:
    return pd.DataFrame([{"model": p, "dataset": SET, "chain": c, "direction": "text→text",
                          "backbone": "cer", "form": "alpha * g^(-beta) + gamma", "p1": 0.5,
                          "p2": 0.1, "p3": 0.1, "r2": 0.9, "n": n, "status": "ok"}
                         for p in PAIRS for c in tf.CHAINS])


def mcd_table(per_item: dict[str, pd.DataFrame], paper_labels=None) -> pd.DataFrame:
    """The wide MCD table; with ``paper_labels``, those experiments sit before MCD_avg and
    MCD_avg is their mean (the paper's), else MCD_avg is empty."""
    labels = [e[4] for e in EXPERIMENTS]
    first = [lab for lab in labels if paper_labels and lab in paper_labels]
    rest = [lab for lab in labels if lab not in first]
    rows = []
    for pair, df in per_item.items():
        m = expected_mcd(df)
        rows.append({"model": pair, "dataset": SET, **{lab: m[lab] for lab in first},
                     "MCD_avg": np.mean([m[lab] for lab in first]) if first else np.nan,
                     **{lab: m[lab] for lab in rest},
                     "MCD_avg_all_experiments": np.mean(list(m.values())), "generations": 6})
    return pd.DataFrame(rows)


@pytest.fixture
def run(tmp_path):
    """A run's tables and per-item files; ``run.results(**changes)`` writes them and returns a
    RunResults (a table set to None is left out)."""
    per_item = {p: per_item_rows(p) for p in PAIRS}
    files = []
    for pair, df in per_item.items():
        path = tmp_path / "results/telephone" / pair / SET / "similarity.csv"
        path.parent.mkdir(parents=True)
        df.to_csv(path, index=False)
        files.append(path)
    tables = {"telephone_mcd": mcd_table(per_item), "telephone_sdr": sdr_frame(paper=False),
              "telephone_sdr_fits": fits_frame(3), "telephone_mgg": mgg_frame(),
              "telephone_similarity": similarity_table(per_item)}

    def results(files=files, **changes) -> RunResults:
        out = {}
        for name, frame in (tables | changes).items():
            if frame is None:
                continue
            path = tmp_path / "tables" / f"{name}.csv"
            path.parent.mkdir(exist_ok=True)
            frame.to_csv(path, index=False)
            out[name] = path
        return RunResults(out, files=list(files), models=list(PAIRS),
                          bootstrap={"samples": 500, "seed": 0})

    return SimpleNamespace(per_item=per_item, tables=tables, files=files, results=results,
                           tmp=tmp_path)


# -- MCD ------------------------------------------------------------------------------------------
def test_mcd_ranks_pairs_with_cis_and_a_paired_difference(run):
    r = run.results()
    first, second = tf.mcd_sentences(r)
    items = {p: expected_items(run.per_item[p]) for p in PAIRS}
    means = {p: float(v.mean()) for p, v in items.items()}
    # the per-item MCDs average back to the table's MCD_avg_all_experiments
    table = run.tables["telephone_mcd"].set_index("model")["MCD_avg_all_experiments"]
    for p in PAIRS:
        assert means[p] == pytest.approx(table[p], abs=1e-12)
    best = bootstrap_mean(items["alpha_pair"].to_numpy(), n_boot=500, seed=0)
    worst = bootstrap_mean(items["gamma_pair"].to_numpy(), n_boot=500, seed=0)
    assert "MCD over every measured experiment" in first
    assert (f"alpha_pair is best ({best.mean:.3f} [{best.ci_low:.3f}, {best.ci_high:.3f}])"
            in first)
    assert (f"gamma_pair worst ({worst.mean:.3f} [{worst.ci_low:.3f}, {worst.ci_high:.3f}])"
            in first)
    assert "of 3 pairs." in first
    diff = float((items["alpha_pair"] - items["beta_pair"]).mean())
    assert "runner-up beta_pair" in second and f"+{diff:.3f}" in second
    # five items: Wilcoxon's test cannot reach 0.05 (its smallest p is 2/32), so no "beats"
    assert "their 5 shared items" in second and "beats" not in second
    assert "Wilcoxon's test gives p = 0.062" in second


def test_a_failed_generation_counts_zero_in_the_item_mcd(run):
    df = run.per_item["gamma_pair"]
    got = tf.item_mcd(df)
    want = expected_items(df)
    assert got.to_dict() == pytest.approx(want.to_dict(), abs=1e-12)
    # c4 failed at g = 4 of the text-first experiment: 0 there, not left out
    text = df[(df["item_id"] == "c4") & (df["chain"] == "text-first")]
    image = df[(df["item_id"] == "c4") & (df["chain"] == "image-first")]
    kept = text.loc[text["generation"] != 4, "similarity"]
    assert got["c4"] == pytest.approx((kept.sum() / 3 + image["similarity"].mean()) / 2)


def test_the_papers_mcd_avg_averages_only_its_mappings(run):
    paper = ["image-first image→text (clip)"]
    r = run.results(telephone_mcd=mcd_table(run.per_item, paper_labels=paper))
    first, _ = tf.mcd_sentences(r)
    items = expected_items(run.per_item["alpha_pair"], labels=paper)
    assert first.startswith("On MCD_avg (Eq. 2")
    assert f"alpha_pair is best ({items.mean():.3f} [" in first
    everything = expected_items(run.per_item["alpha_pair"]).mean()
    assert f"({everything:.3f} [" not in first


def test_without_per_item_files_the_table_values_are_ranked(run):
    r = run.results(files=[])
    (sentence,) = tf.mcd_sentences(r)
    table = run.tables["telephone_mcd"].set_index("model")["MCD_avg_all_experiments"]
    assert f"alpha_pair is best ({table['alpha_pair']:.3f})" in sentence
    assert f"gamma_pair worst ({table['gamma_pair']:.3f})" in sentence
    assert "were not read" in sentence
    changed = run.tables["telephone_mcd"].copy()
    changed.loc[changed["model"] == "gamma_pair", "MCD_avg_all_experiments"] = 0.987
    (sentence,) = tf.mcd_sentences(run.results(files=[], telephone_mcd=changed))
    assert "gamma_pair is best (0.987)" in sentence and "beta_pair worst" in sentence


def test_a_pair_without_mcd_is_named_and_left_out(run):
    changed = run.tables["telephone_mcd"].copy()
    changed.loc[changed["model"] == "beta_pair", "MCD_avg_all_experiments"] = np.nan
    first, second = tf.mcd_sentences(run.results(telephone_mcd=changed))
    assert "of 2 pairs." in first and "beta_pair has no value." in first
    assert "runner-up gamma_pair" in second


# -- SDR ------------------------------------------------------------------------------------------
def test_sdr_names_the_lowest_beta_per_chain_order(run):
    s = tf.sdr_sentence(run.results())
    sdr = run.tables["telephone_sdr"].set_index("model")
    b = sdr.loc["beta_pair"]
    assert ("on text-first chains beta_pair drifts least (α, β, γ = "
            f"{b['text-first α (all experiments)']:.3f}, {b['text-first β (all experiments)']:.3f}"
            f", {b['text-first γ (all experiments)']:.3f})") in s
    assert "on image-first chains alpha_pair drifts least" in s
    assert "gamma_pair has the highest β" in s
    assert "every experiment measured" in s  # the paper's columns are empty here
    assert "3 generations for 3 parameters" in s


def test_sdr_follows_a_changed_table_and_the_papers_columns(run):
    changed = sdr_frame(paper=True)
    changed.loc[changed["model"] == "gamma_pair", "text-first β"] = 0.01
    s = tf.sdr_sentence(run.results(telephone_sdr=changed, telephone_sdr_fits=fits_frame(10)))
    assert "on text-first chains gamma_pair drifts least (α, β, γ = 0.900, 0.010, 0.020)" in s
    assert "averaged over the paper's four mappings" in s
    assert "not identified" not in s


def test_sdr_ties_on_beta_go_to_the_higher_asymptote(run):
    changed = sdr_frame(paper=True)
    changed.loc[changed["model"] == "alpha_pair", "text-first β"] = 0.10
    s = tf.sdr_sentence(run.results(telephone_sdr=changed))
    # alpha and beta share beta = 0.100; alpha's gamma 0.40 beats beta's 0.35
    assert "on text-first chains alpha_pair drifts least" in s
    assert "tied on β with beta_pair" in s


# -- MGG ------------------------------------------------------------------------------------------
def test_mgg_prompt_weighted_against_task_mean(run):
    s = tf.mgg_sentence(run.results())
    assert "gamma_pair is best (0.600) and alpha_pair worst (0.500) of 3 pairs" in s
    assert "they score 0.450 and 0.400" in s
    assert "beta_pair ranks first (0.700)" in s
    changed = mgg_frame()
    changed.loc[(changed["model"] == "gamma_pair") & (changed["generation"] == "MGG"),
                "overall_tasks"] = 0.75
    s = tf.mgg_sentence(run.results(telephone_mgg=changed))
    assert "they score 0.750 and 0.400, and gamma_pair still ranks first." in s


# -- missing and empty ----------------------------------------------------------------------------
def test_missing_or_empty_tables_give_a_sentence_each(run):
    r = run.results(telephone_mcd=None, telephone_sdr=None, telephone_sdr_fits=None,
                    telephone_mgg=pd.DataFrame(columns=["model", "dataset", "generation",
                                                        "overall_prompts", "overall_tasks"]))
    s = TELEPHONE.findings(r)
    assert len(s) == 3
    assert s[0].startswith("MCD was not computed")
    assert s[1].startswith("SDR was not computed")
    assert s[2].startswith("MGG was not computed")
    nan_mcd = run.tables["telephone_mcd"].assign(MCD_avg=np.nan, MCD_avg_all_experiments=np.nan)
    nan_sdr = sdr_frame(paper=False)
    nan_sdr.loc[:, [c for c in nan_sdr.columns if c not in ("model", "dataset")]] = np.nan
    s = TELEPHONE.findings(run.results(telephone_mcd=nan_mcd, telephone_sdr=nan_sdr))
    assert s[0].startswith("MCD could not be computed")
    assert s[1].startswith("SDR could not be computed")


def test_the_spec_gives_two_to_four_sentences(run):
    s = TELEPHONE.findings(run.results())
    assert 2 <= len(s) <= 4 and all(x.endswith(".") for x in s)


# -- figure ---------------------------------------------------------------------------------------
def test_headline_figure_at_print_width(run, tmp_path):
    path = tmp_path / "headline.png"
    caption = TELEPHONE.headline_figure(run.results(), path)
    assert caption and "α g^(-β) + γ" in caption and "not identified" in caption
    width, _ = Image.open(path).size
    assert abs(width - style.FIGURE_WIDTH_IN * 200) <= 3


def test_headline_figure_none_without_similarity(run, tmp_path):
    assert TELEPHONE.headline_figure(run.results(telephone_similarity=None),
                                     tmp_path / "a.png") is None
    empty = run.tables["telephone_similarity"].iloc[:0]
    assert TELEPHONE.headline_figure(run.results(telephone_similarity=empty),
                                     tmp_path / "b.png") is None
    assert not (tmp_path / "a.png").exists() and not (tmp_path / "b.png").exists()


def test_the_fitted_curve_is_the_power_law(run):
    g = np.array([1.0, 2.0, 5.0])
    assert tf._curve(0.5, 0.3, 0.1, g) == pytest.approx(0.5 * g ** -0.3 + 0.1)


# -- spec -----------------------------------------------------------------------------------------
def test_findings_inputs_are_the_per_item_similarity_files():
    view = SimpleNamespace(keys=[("p1", "caps"), ("p2", "caps")], files=TelephonePlan.files)
    plan = SimpleNamespace(view=lambda key, cls: view)
    assert TELEPHONE.findings_inputs(plan) == ["results/telephone/p1/caps/similarity.csv",
                                               "results/telephone/p2/caps/similarity.csv"]


def test_report_tables_in_the_papers_order_and_table3_stacks_by_chain_order(tmp_path):
    """Table 3's Markdown heads each parameter "chain order: α", so the report prints one row
    per pair and chain order (the paper's mappings, then roundtrip's every-experiment average),
    then the released code's exponential a, b, c over the four mappings, narrow enough for the
    page; the CSV keeps its column names."""
    from roundtrip.evals.telephone.tables import sdr_table
    from roundtrip.report.document import fit_table
    from roundtrip.report.tables import read_markdown

    assert TELEPHONE.report_tables == ("telephone_sdr", "telephone_mcd", "telephone_mgg",
                                       "telephone_mgg_grid")
    assert "telephone_sdr" not in TELEPHONE.report_columns
    from roundtrip.evals.telephone.tables import curves

    sim = {(p, SET): per_item_rows(p) for p in PAIRS}
    sdr_table(curves(sim, {"samples": 200, "seed": 0}), tmp_path)
    md = read_markdown(tmp_path / "telephone_sdr.md")
    assert "text-first: α" in md.header and "image-first (all experiments): γ" in md.header
    table, labels, starts, parts, _ = fit_table(md, style.TEXT_WIDTH_PT - 15)
    assert len(parts) == 1 and table.header[labels:] == ["α", "β", "γ", "a", "b", "c"]
    assert [r[labels - 1] for r in table.rows[::len(PAIRS)]] == [
        "text-first", "image-first", "text-first (all experiments)",
        "image-first (all experiments)", "exponential, four mappings (released code)"]
    csv = pd.read_csv(tmp_path / "telephone_sdr.csv")
    assert "text-first α" in csv.columns and "image-first γ (all experiments)" in csv.columns


def test_real_tables_of_the_default_layout_read(tmp_path):
    """The tables module's own frames go through the findings (column names agree)."""
    from roundtrip.evals.telephone.tables import curves, mcd_frame, sdr_frame as real_sdr

    sim = {(p, SET): per_item_rows(p) for p in PAIRS}
    curve = curves(sim, {"samples": 200, "seed": 0})
    mcd, _, _ = mcd_frame(curve)
    sdr, _, _ = real_sdr(curve)
    tables = {}
    for name, frame in (("telephone_mcd", mcd), ("telephone_sdr", sdr),
                        ("telephone_similarity", curve)):
        tables[name] = tmp_path / f"{name}.csv"
        frame.to_csv(tables[name], index=False)
    r = RunResults(tables)
    (first,) = tf.mcd_sentences(r)
    assert f"({expected_items(per_item_rows('alpha_pair')).mean():.3f})" in first
    assert "drifts least" in tf.sdr_sentence(r)
    assert tf.headline_figure(r, tmp_path / "f.png") is not None
    assert Path(tmp_path / "f.png").is_file()


def test_table3_rows_beside_the_published_ones_on_the_papers_data(tmp_path):
    """A pair chained on a set marked paper_data is printed in Table 3 above the published
    models, with the paper's precision; without the mark Table 3 is a reference."""
    from roundtrip.report.assemble import published_of

    sdr = tmp_path / "telephone_sdr.csv"
    pd.DataFrame({"model": ["my_pair"], "dataset": ["nd400"], "text-first α": [0.61234],
                  "text-first β": [0.05], "text-first γ": [0.0],
                  "image-first α": [float("nan")], "image-first β": [float("nan")],
                  "image-first γ": [float("nan")]}).to_csv(sdr, index=False)
    marked = {"datasets": {"nd400": {"type": "captions", "paper_data": True}}}
    (table,) = published_of(TELEPHONE, RunResults({"telephone_sdr": sdr}, config=marked))
    first = dict(zip(table.header, table.rows[0]))
    assert first["row"] == "my_pair" and first["Text-First: α"] == "0.6123"
    assert first["Image-First: α"] == "–"  # not fitted: left empty, not invented
    assert table.marked == set(range(1, len(table.rows)))
    assert any(r[1] == "Bagel (published)" for r in table.rows)
    plain = {"datasets": {"nd400": {"type": "captions"}}}
    (reference,) = published_of(TELEPHONE, RunResults({"telephone_sdr": sdr}, config=plain))
    # other data and no published model in the run: the table is named, its models counted
    assert reference.title == "Table 3" and reference.rows == []
    assert reference.notes == ["7 models"]

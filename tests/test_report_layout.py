"""The report written for readers: paired comparisons, the sentences of the front page, wide
tables stacked by column group instead of cut into fragments, published tables laid out as
printed (this run's rows beside them), and a PDF whose page 1 holds the findings, page 2 the
headline figures and whose appendix holds every table the body shortens."""
import math
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from roundtrip.core.evaluation import Evaluation
from roundtrip.report.assemble import (findings_of, headline_of, published_of, same_model,
                                       summary_rst)
from roundtrip.report.document import ReportInputs, build_report
from roundtrip.report.findings import RunResults, rank
from roundtrip.report.sections import Section
from roundtrip.report.style import FIGURE_WIDTH_IN, colours, figure, save
from roundtrip.report.tables import (MdTable, keep_columns, published_table, read_markdown,
                                     stack_groups)
from roundtrip.tables.published import read_published

requires_poppler = pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils missing")


# -- ranking sentences ----------------------------------------------------------------------------
def _per_item(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "item_id": f"i{k}", "value": v}
                         for m, vs in values.items() for k, v in enumerate(vs)])


def test_ranking_names_best_worst_and_the_paired_difference():
    results = RunResults({}, bootstrap={"samples": 500, "seed": 0})
    values = {"a": [30.0, 31.0, 29.0, 33.0, 30.5, 32.0, 28.0, 31.5],
              "b": [28.0, 29.5, 27.0, 31.0, 28.0, 30.2, 26.1, 29.4],
              "c": [20.0, 21.0, 19.0, 22.0, 20.5, 21.0, 18.0, 22.5]}
    r = rank(results, _per_item(values), "PSNR (dB)", higher_is_better=True)
    assert [m for m, _ in r.order] == ["a", "b", "c"]
    first, second = r.sentences()
    assert f"a is best ({np.mean(values['a']):.2f} [" in first
    assert f"c worst ({np.mean(values['c']):.2f} [" in first
    diff = np.mean(np.subtract(values["a"], values["b"]))
    assert f"a beats the runner-up b by +{diff:.2f} [" in second and "8 shared items" in second
    # lower is better reverses the order
    assert [m for m, _ in rank(results, _per_item(values), "CER", False).order] == ["c", "b", "a"]


def test_ranking_says_indistinguishable_when_the_interval_spans_zero():
    results = RunResults({}, bootstrap={"samples": 500, "seed": 0})
    values = {"a": [30.0, 20.0, 31.0, 19.0], "b": [20.0, 30.0, 19.0, 31.0]}
    values["a"][0] += 0.1
    _, second = rank(results, _per_item(values), "PSNR", True).sentences()
    assert "indistinguishable" in second and "spans 0" in second


def test_a_copy_below_the_printed_precision_never_beats_the_runner_up():
    """An fp16 copy of a model: every item 0.001 dB above the original, a difference the
    interval and the test resolve, but that prints as +0.00: the sentence says the two are
    equivalent within the printed precision, not that one "beats" the other by +0.00
    [0.00, 0.00]; lower-is-better metrics follow the same rule."""
    results = RunResults({}, bootstrap={"samples": 500, "seed": 0})
    rng = np.random.default_rng(3)
    base = rng.normal(30, 2, 12)
    values = {"fp32": list(base), "fp16": list(base + 0.001 + rng.normal(0, 1e-4, 12))}
    r = rank(results, _per_item(values), "PSNR (dB)", higher_is_better=True)
    assert r.order[0][0] == "fp16" and r.diff.ci_low > 0 and r.diff.p < 0.01
    _, second = r.sentences(2)
    assert "beats" not in second and "+0.00 [0.00, 0.00]" in second
    assert "fp16 and the runner-up fp32 are equivalent within ±0.01" in second
    # at four decimals the same 0.001 is visible: then it beats
    _, second = r.sentences(4)
    assert "fp16 beats the runner-up fp32 by +0.0010 [" in second
    cer = {"fp32": [0.1 + 0.00001 * k for k in range(12)], "fp16": [0.1 + 0.00001 * k - 0.00002
                                                                  for k in range(12)]}
    _, second = rank(results, _per_item(cer), "CER", higher_is_better=False).sentences(4)
    assert "beats" not in second and "equivalent within ±0.0001" in second


def test_a_changed_table_changes_the_sentence(tmp_path):
    """Findings are read from the files, not remembered: edit the file, the sentence follows."""
    csv = tmp_path / "t.csv"
    pd.DataFrame({"model": ["a", "b"], "score": [0.9, 0.5]}).to_csv(csv, index=False)

    class Toy(Evaluation):
        key = "toy"

        def findings(self, results):
            t = results.table("t")
            best = t.loc[t["score"].idxmax()]
            return [f"{best['model']} scores highest ({best['score']:.2f})."]

    assert findings_of(Toy(), RunResults({"t": csv})) == ["a scores highest (0.90)."]
    pd.DataFrame({"model": ["a", "b"], "score": [0.9, 0.95]}).to_csv(csv, index=False)
    assert findings_of(Toy(), RunResults({"t": csv})) == ["b scores highest (0.95)."]


def test_a_failing_evaluation_costs_only_its_own_findings_and_figure(tmp_path):
    class Broken(Evaluation):
        key = "broken"

        def findings(self, results):
            raise KeyError("psnr")

        def headline_figure(self, results, path):
            return None

    assert findings_of(Broken(), RunResults({})) == [
        "The findings could not be computed: KeyError: 'psnr'"]
    png = tmp_path / "h" / "broken.png"
    caption = headline_of(Broken(), RunResults({}), png)
    assert png.is_file() and caption.startswith("No headline figure: this run's tables")
    assert Broken().has_headline_figure() and not Evaluation().has_headline_figure()


# -- layout --------------------------------------------------------------------------------------
def _grouped() -> MdTable:
    header = ["model", "Params", "natural: PSNR", "natural: SSIM", "text: PSNR", "text: CER"]
    rows = [["a", "10", "30.1", "0.91", "25.0", "0.10"], ["b", "20", "28.2", "0.88", "24.0", "0.20"]]
    return MdTable("t", header, rows, ["[1] a note"])


def test_stacking_puts_each_group_in_a_block_and_keeps_every_cell_once():
    stacked, labels, starts = stack_groups(_grouped())
    assert stacked.header == ["model", "Params", "group", "PSNR", "SSIM", "CER"]
    assert labels == 3 and starts == [0, 2]
    assert stacked.rows == [["a", "10", "natural", "30.1", "0.91", "–"],
                            ["b", "20", "natural", "28.2", "0.88", "–"],
                            ["a", "10", "text", "25.0", "–", "0.10"],
                            ["b", "20", "text", "24.0", "–", "0.20"]]
    assert stacked.notes == ["[1] a note"]
    assert stack_groups(MdTable("t", ["model", "x: a"], [["m", "1"]])) is None  # one group


def test_keeping_columns_keeps_labels_ungrouped_columns_and_the_notes_still_needed():
    table = _grouped()
    table.rows[0][5] = "0.10 [2]"
    table.notes = ["Cells: means.", "[1] a note", "[2] on a CER cell"]
    table.rows[1][2] = "28.2 [1]"
    kept = keep_columns(table, ("PSNR",))
    assert kept.header == ["model", "Params", "natural: PSNR", "text: PSNR"]
    assert kept.rows[1] == ["b", "20", "28.2 [1]", "24.0"]
    assert kept.notes == ["Cells: means.", "[1] a note"]  # [2] marks a CER cell, left out


def test_published_table_as_printed_with_this_runs_rows_first():
    cells = read_published("roundtrip.evals.telephone")
    table = published_table(cells, "Table 3")
    assert table.header[0] == "row" and "Text-First: α" in table.header
    bagel = next(r for r in table.rows if r[0] == "Bagel")
    cell = cells[(cells["row"] == "Bagel") & (cells["column_group"] == "Text-First")
                 & (cells["column"] == "α")]
    assert bagel[table.header.index("Text-First: α")] == cell["printed"].iat[0]
    assert len(table.rows) == cells["row"].nunique() and not table.marked
    mine = pd.DataFrame([{"table": "Table 3", "row_group": "", "row": "my pair",
                          "column_group": "Text-First", "column": "α", "printed": "0.5000"}])
    merged = published_table(cells, "Table 3", mine)
    assert merged.rows[0][:2] == ["my pair", "0.5000"]
    assert merged.rows[1][0] == "Bagel (published)" and merged.marked == set(
        range(1, len(merged.rows)))


def test_published_tables_follow_the_config_switch():
    class Tel(Evaluation):
        key = "telephone"

    Tel.__module__ = "roundtrip.evals.telephone.spec"
    shown = published_of(Tel(), RunResults({}, models=["bagel"], published=True))
    assert len(shown) == 1 and shown[0].title.startswith("Published results, other data")
    assert published_of(Tel(), RunResults({}, models=["bagel"], published=False)) == []


def _spec(name):
    """A bare spec of a built-in evaluation's package (its published tables, nothing else)."""
    spec = type(f"Spec_{name}", (Evaluation,), {"key": name})
    spec.__module__ = f"roundtrip.evals.{name}.spec"
    return spec()


def _vtbench():
    return _spec("vtbench")


def test_published_rows_on_other_data_are_only_the_runs_models(tmp_path):
    """A user's run (their own models on their own photos) gets no page of the paper's rows;
    a run of a model the paper has gets that model's rows, in every table that has it."""
    mine = published_of(_vtbench(), RunResults({}, models=["identity", "jpeg_q10", "my_vq"]))
    assert [(t.title, t.rows, t.notes) for t in mine] == [
        ("Table 1", [], ["24 models"]), ("Table 2", [], ["24 models"]),
        ("Table 3", [], ["21 models"]), ("Table 5", [], ["24 models"])]
    # a row averaged over models has no model: not counted (MediBench Table 1: 8 and Average)
    assert published_of(_spec("medibench"), RunResults({}, models=["m"]))[0].notes == ["8 models"]
    preset = published_of(_vtbench(), RunResults({}, models=["identity", "sd35l", "flux1_dev"]))
    assert [t.title.split(" of the paper")[0] for t in preset] == \
        ["Published results, other data: Table " + n for n in "1235"]
    assert all([r[0] for r in t.rows] == ["SD3.5L", "FLUX.1-dev"] for t in preset)
    # the published numbers themselves, as printed: Table 1's PSNR of SD3.5L on ImageNet
    cells = read_published("roundtrip.evals.vtbench", table="Table 1")
    cell = cells[(cells["model"] == "SD3.5L") & (cells["column_group"] == "ImageNet")
                 & (cells["column"] == "PSNR")]["printed"].iat[0]
    assert preset[0].rows[0][preset[0].header.index("ImageNet: PSNR")] == cell
    # a name of the run's tables' rows counts too (readers, model pairs: not config models)
    rows = tmp_path / "t.csv"
    pd.DataFrame({"pair": ["Bagel"], "x": [1.0]}).to_csv(rows, index=False)

    [table] = published_of(_spec("telephone"), RunResults({"t": rows}, models=[]))
    assert [r[0] for r in table.rows] == ["Bagel"]


@pytest.mark.parametrize("published,ran", [("SD3.5L", "sd35l"), ("FLUX.1-dev", "flux1_dev"),
                                           ("SDXL", "sdxl_vae"), ("Bagel", "bagel"),
                                           ("Qwen2.5-VL-7B", "Qwen/Qwen2.5-VL-7B-Instruct")])
def test_same_model_across_spellings(published, ran):
    assert same_model(published, ran)


@pytest.mark.parametrize("published,ran", [("SD3.5L", "sd"), ("VAR", "variant"),
                                           ("LlamaGen ds8", "identity"), ("GPT-4o", ""),
                                           ("", "identity")])
def test_different_models_do_not_match(published, ran):
    assert not same_model(published, ran)


def test_figures_are_drawn_at_print_width_with_one_colour_per_model(tmp_path):
    from PIL import Image

    assert colours(["a", "b", "a", "c"]) == {"a": "#0072B2", "b": "#E69F00", "c": "#009E73"}
    fig, axes = figure(1, 2)
    axes[0, 0].plot([0, 1], [0, 1])
    save(fig, tmp_path / "f.png")
    width = Image.open(tmp_path / "f.png").size[0]
    assert abs(width - FIGURE_WIDTH_IN * 200) <= 2


def _md(path, title, header, rows):
    text = [f"### {title}", "", "| " + " | ".join(header) + " |",
            "|" + "|".join("---" for _ in header) + "|"]
    text += ["| " + " | ".join(r) + " |" for r in rows]
    path.write_text("\n".join(text) + "\n")
    return path


@requires_poppler
def test_report_front_page_headlines_body_and_appendix(tmp_path):
    groups = [f"set{k}" for k in range(12)]
    header = ["model"] + [f"{g}: {m}" for g in groups for m in ("PSNR", "SSIM", "CER")]
    rows = [[m] + [f"{k + 0.125:.4f} [{k:.4f}, {k + 1:.4f}]" for k in range(36)]
            for m in ("alpha", "beta")]
    wide = _md(tmp_path / "ev_wide.md", "A wide table", header, rows)
    listing = _md(tmp_path / "ev_listing.md", "A long listing", ["model", "x"],
                  [[f"m{k}", f"{k}.5"] for k in range(40)])
    fig, axes = figure(1, 2)
    axes[0, 0].bar(["alpha", "beta"], [1, 2])
    save(fig, tmp_path / "headline.png")
    cells = read_published("roundtrip.evals.telephone")
    inputs = ReportInputs(
        tables={"ev_wide": wide, "ev_listing": listing}, figures=[], galleries={},
        sections=[Section("ev", "Toy evaluation", "a paper", ("ev_wide",), name="Toy",
                          columns={"ev_wide": ("PSNR", "CER")},
                          all_tables=("ev_wide", "ev_listing"))],
        cover={"title": "test report", "ran": [("Toy", "2 models")],
               "not_ran": [("Other", "not configured")], "models": ["alpha", "beta"]},
        appendix={"packages": {"numpy": "2"}, "config": "a: 1\n"},
        findings={"ev": ["alpha is best (1.00 [0.50, 1.50]) and beta worst."]},
        headlines=[("ev", tmp_path / "headline.png", "The toy's headline figure.")],
        published={"ev": [published_table(cells, "Published results, other data: Table 3")]})
    pages = build_report(tmp_path / "r.pdf", inputs)
    assert pages == pages.body + pages.appendix and pages.appendix >= 1

    def page(k):
        return subprocess.run(["pdftotext", "-f", str(k), "-l", str(k), str(tmp_path / "r.pdf"),
                               "-"], capture_output=True, text=True, check=True).stdout

    assert "Findings" in page(1) and "alpha is best (1.00 [0.50, 1.50])" in page(1)
    assert "Other: not configured" in page(1)
    assert "Headline figures" in page(2) and "The toy's headline figure." in page(2)
    body = "".join(page(k) for k in range(3, pages.body + 1))
    appendix = "".join(page(k) for k in range(pages.body + 1, pages + 1))
    assert "One block of rows per column group" in body and "part 2 of" not in body
    assert "set11" in body and "SSIM" not in body.split("A wide table")[1].split("appendix")[1]
    assert "Appendix A: tables in full" in appendix and "m39" in appendix
    assert "SSIM" in appendix and "11.1250" in appendix  # every column of the wide table
    assert "Appendix B: published results, other data" in appendix and "Bagel" in appendix
    assert "published numbers on its own data are in appendix B" in body
    rst = summary_rst(inputs)
    assert "**Toy** (2 models)" in rst and "- alpha is best (1.00 [0.50, 1.50]) and beta worst." \
        in rst and "- Other: not configured" in rst


def test_markdown_tables_of_a_real_run_stack(tmp_path):
    t = read_markdown(_md(tmp_path / "x.md", "x", ["Reader", "arithmetic: VT", "arithmetic: Text",
                                                   "Overall: VT", "Overall: Text"],
                          [["r1", "0.5", "0.6", "0.55", "0.65"]]))
    stacked, labels, starts = stack_groups(t)
    assert [r[1] for r in stacked.rows] == ["arithmetic", "Overall"] and labels == 2


def test_per_item_metric_reads_the_declared_files_and_keeps_ok_rows(tmp_path):
    from roundtrip.report.findings import per_item_metric

    files = []
    for model, values in (("a", [30.0, 31.0]), ("b", [20.0, float("nan")])):
        f = tmp_path / "results/metrics" / model / "natural" / "image_quality.csv"
        f.parent.mkdir(parents=True)
        pd.DataFrame({"item_id": ["x", "y"], "psnr": values,
                      "status": ["ok", "ok" if model == "a" else "error"]}).to_csv(f, index=False)
        files.append(f)
    other = tmp_path / "results/metrics/a/textures/image_quality.csv"
    other.parent.mkdir(parents=True)
    pd.DataFrame({"item_id": ["z"], "psnr": [9.0]}).to_csv(other, index=False)
    df = per_item_metric(files + [other, tmp_path / "missing.csv"], "image_quality.csv", "psnr",
                         datasets=["natural"])
    assert df.values.tolist() == [["a", "natural", "x", 30.0], ["a", "natural", "y", 31.0],
                                  ["b", "natural", "x", 20.0]]
    assert len(per_item_metric(files + [other], "image_quality.csv", "psnr", leave_out=["b"])) == 3
    assert per_item_metric(files, "image_quality.csv", "ssim").empty  # no such column


def test_long_cells_wrap_before_a_table_is_split():
    """A table of few columns with long cells (a reason, a caption) is wrapped to the page,
    each column keeping its longest word; a table of many numbers is still split."""
    from roundtrip.report.document import fit_table

    reason = "n/a: no GenEval prompt set (type: geneval) is configured in this run at all"
    header = ["model", "dataset", "overall_prompts", "overall_tasks", "note"]
    t = MdTable("t", header, [["render_small_vq", "telephone_captions", "0.5000", "0.4000",
                               reason]] * 3)
    _, _, _, parts, widths = fit_table(t, 360)
    assert len(parts) == 1 and sum(widths) <= 360 + 1e-6
    longest_word = max(len(w) for w in reason.split())
    assert widths[4] >= longest_word * 6.5 * 0.55  # the note's longest word is not broken
    many = MdTable("t", ["model"] + [f"m{j:02d}" for j in range(40)],
                   [["a"] + ["12.3456"] * 40])
    assert len(fit_table(many, 360)[3]) > 1


def test_summary_table_cells_are_read_with_their_intervals_and_ranked():
    from roundtrip.report.findings import rank_table, table_summary

    table = pd.DataFrame({"model": ["a", "b", "c"], "s.psnr": [30.0, 32.5, None],
                          "s.psnr.ci_low": [29.0, 31.0, None], "s.psnr.ci_high": [31.0, 34.0, None],
                          "s.psnr.n": [8, 8, 0]})
    s = table_summary(table.iloc[1], "s.psnr")
    assert (s.mean, s.ci_low, s.ci_high, s.n) == (32.5, 31.0, 34.0, 8)
    assert math.isnan(table_summary(table.iloc[0], "s.ssim").mean)  # a column it lacks
    ranked = rank_table(table, "model", "s.psnr", higher_is_better=True)
    assert [m for m, _ in ranked] == ["b", "a", "c"]  # the empty row last
    assert [m for m, _ in rank_table(table, "model", "s.psnr", False)] == ["a", "b", "c"]


@requires_poppler
def test_appendix_b_names_the_tables_it_leaves_out(tmp_path):
    """A run whose models are none of the paper's: one line in appendix B instead of the
    paper's tables (4 pages of VTBench rows in a user's report before), and the section does
    not send the reader there."""
    table = _md(tmp_path / "ev_t.md", "A table", ["model", "x"], [["mine", "1.0"]])
    published = published_of(_vtbench(), RunResults({}, models=["mine"]))
    inputs = ReportInputs(
        tables={"ev_t": table}, figures=[], galleries={},
        sections=[Section("vtbench", "VTBench section", "a paper", ("ev_t",), name="VT",
                          all_tables=("ev_t",))],
        cover={"title": "test report", "ran": [("VT", "1 model")], "models": ["mine"]},
        appendix={"packages": {"numpy": "2"}, "config": "a: 1\n"},
        published={"vtbench": published})
    pages = build_report(tmp_path / "r.pdf", inputs)
    text = " ".join(subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"],
                                   capture_output=True, text=True, check=True).stdout.split())
    assert "Appendix B: published results, other data" in text
    assert ("VTBench section: not printed, as none of their models ran here: Table 1 (24 "
            "models), Table 2 (24 models), Table 3 (21 models), Table 5 (24 models). Every "
            "published number is in docs/published-results.md") in text
    assert "SD3.5L" not in text and "LlamaGen" not in text
    assert "are in appendix B" not in text
    assert pages.appendix == 2  # appendix B in a few lines, then E (provenance) on its page

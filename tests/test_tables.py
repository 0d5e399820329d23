"""Tables: numbers, CIs and footnotes written three ways and read back."""
import math

import numpy as np
import pandas as pd
import pytest

from roundtrip.metrics.stats import bootstrap_mean
from roundtrip.tables import Column, build_table, tex_escape, write_table


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    out = {}
    for model in ("m_a", "m_b"):
        per_item = pd.DataFrame({
            "item_id": [f"i{k}" for k in range(6)],
            "status": ["ok"] * 5 + ["unsupported"],
            "reason": [""] * 5 + ["m accepts only 256x256; got 300x451"],
            "psnr": list(rng.normal(30, 2, 5)) + [math.nan],
        })
        p = tmp_path / f"{model}.csv"
        per_item.to_csv(p, index=False)
        out[(model, "ds1", "item")] = str(p)
    return out


def test_cells_footnotes_and_missing(files, tmp_path):
    cols = [Column("ds1", "psnr", "PSNR", 2), Column("ds2", "psnr", "PSNR", 2)]
    table = build_table("t", "Test table", ["m_a", "m_b"], cols, files,
                        {"samples": 500, "seed": 1})
    csv_path, md_path, tex_path = write_table(table, tmp_path / "tables")

    df = pd.read_csv(csv_path).set_index("model")
    per_item = pd.read_csv(files[("m_a", "ds1", "item")])
    expected = bootstrap_mean(per_item["psnr"], n_boot=500, seed=1)
    assert df.loc["m_a", "ds1.psnr"] == pytest.approx(per_item["psnr"].mean(), abs=1e-12)
    assert df.loc["m_a", "ds1.psnr.ci_low"] == pytest.approx(expected.ci_low)
    assert df.loc["m_a", "ds1.psnr.n"] == 5
    assert math.isnan(df.loc["m_a", "ds2.psnr"])
    assert "5 of 6 items scored" in df.loc["m_a", "notes"]

    md = md_path.read_text()
    assert f"{expected.mean:.2f} [{expected.ci_low:.2f}, {expected.ci_high:.2f}] [1]" in md
    assert "n/a [2]" in md  # ds2 not computed, never blank
    assert "[1] ds1: 5 of 6 items scored; not scored: unsupported: m accepts only 256x256" in md
    # the same note for both models is one footnote
    assert md.count("5 of 6 items scored") == 1

    tex = tex_path.read_text()
    assert r"\multicolumn{1}{c}{ds1}" in tex and r"\toprule" in tex and "$^{1}$" in tex


def test_inf_cells_and_escape(tmp_path):
    p = tmp_path / "i.csv"
    pd.DataFrame({"item_id": ["a", "b"], "status": ["ok", "ok"], "reason": ["", ""],
                  "psnr": [math.inf, math.inf]}).to_csv(p, index=False)
    table = build_table("t", "T", ["identity"], [Column("d", "psnr", "PSNR", 2)],
                        {("identity", "d", "item"): str(p)})
    _, md, _ = write_table(table, tmp_path)
    assert "| identity | inf [inf, inf] [1] |" in md.read_text()  # an inf cell has a footnote
    assert "[1] d: 2 of 2 items reconstructed exactly (PSNR = inf)" in md.read_text()
    assert tex_escape("a_b & 50%") == r"a\_b \& 50\%"


def test_a_mean_made_infinite_by_one_exact_item_says_so(tmp_path):
    """A blank page reconstructed exactly by a lossy codec: the mean reads inf, and the footnote
    counts the exact items and gives the mean of the others."""
    p = tmp_path / "i.csv"
    pd.DataFrame({"item_id": ["blank", "b", "c"], "status": ["ok", "ok", "error"],
                  "reason": ["", "", "broken"], "psnr": [math.inf, 28.4, math.nan]}).to_csv(p, index=False)
    table = build_table("t", "T", ["jpeg"], [Column("d", "psnr", "PSNR", 2)],
                        {("jpeg", "d", "item"): str(p)})
    _, md, _ = write_table(table, tmp_path)
    text = md.read_text()
    assert "| jpeg | inf [28.40, inf] [1][2] |" in text
    assert "1 of 2 items reconstructed exactly (PSNR = inf); mean of the other 1: 28.40 dB" in text


def test_all_unsupported_is_a_dash_with_reason(tmp_path):
    p, q = tmp_path / "i.csv", tmp_path / "s.csv"
    pd.DataFrame({"item_id": ["a", "b"], "status": ["unsupported"] * 2,
                  "reason": ["fixed-size model (accepts 256x256); input is 300x451"] * 2,
                  "psnr": [math.nan, math.nan]}).to_csv(p, index=False)
    pd.DataFrame({"metric": ["psnr_pooled"], "value": [math.nan], "n": [0]}).to_csv(q, index=False)
    cols = [Column("d", "psnr", "PSNR", 2), Column("d", "psnr_pooled", "PSNR (pooled)", 2, "set")]
    table = build_table("t", "T", ["titok"], cols,
                        {("titok", "d", "item"): str(p), ("titok", "d", "set"): str(q)})
    _, md, _ = write_table(table, tmp_path)
    text = md.read_text()
    assert "| titok | – [1] | – [1] |" in text
    assert "[1] d: 0 of 2 items scored; not scored: unsupported: fixed-size model" in text


def test_table_notes_are_printed_under_the_table_and_kept_in_the_csv():
    from roundtrip.metrics.stats import Summary
    from roundtrip.tables import Cell, Column, Table, to_csv_frame, to_latex, to_markdown

    t = Table("t", "T", ["m"], [Column("d", "psnr", "PSNR", 2)],
              cells={("m", 0): Cell(Summary(30.0, 29.0, 31.0, 4))},
              notes=["LPIPS not shown, n/a: weights missing"])
    assert "Note: LPIPS not shown, n/a: weights missing" in to_markdown(t)
    assert r"\par\footnotesize Note: LPIPS not shown, n/a: weights missing" in to_latex(t)
    assert to_csv_frame(t).loc[0, "notes"] == "table: LPIPS not shown, n/a: weights missing"
    t.notes = []
    assert "Note:" not in to_markdown(t) and to_csv_frame(t).loc[0, "notes"] == ""


def test_a_table_without_rows_keeps_its_header(tmp_path):
    """An optional table with no row (e.g. a tokenizer axis that is off) is written with the
    columns a row would have, so that its readers see its columns and no row."""
    from roundtrip.tables import Column, Table

    t = Table("t", "T", [], [Column("d", "psnr", "PSNR", 2, source="item"),
                             Column("d", "fid", "FID", 2, source="set")])
    write_table(t, tmp_path)
    frame = pd.read_csv(tmp_path / "t.csv")
    assert frame.empty
    assert list(frame.columns) == ["model", "d.psnr", "d.psnr.ci_low", "d.psnr.ci_high",
                                   "d.psnr.n", "d.fid", "d.fid.n", "notes"]

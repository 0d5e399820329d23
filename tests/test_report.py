"""The PDF report's parts: Markdown tables read back, column splitting that never cuts, the
fonts that put CJK and Devanagari into the text layer, and provenance records."""
import shutil
import subprocess

import pytest

from roundtrip.report.document import ReportInputs, build_report
from roundtrip.report.sections import Section
from roundtrip.report.tables import label_columns, read_markdown, split_columns
from roundtrip.tables.provenance import canonical_hash, provenance, seeds_in

requires_poppler = pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils missing")


def _wide_md(path, columns=30):
    header = ["model", "dataset"] + [f"metric{j:02d}" for j in range(columns)]
    rows = [["alpha", "set1"] + [f"{j + 0.5:.4f}" for j in range(columns)],
            ["beta", "set1"] + [f"{j + 0.25:.4f} [1]" for j in range(columns)]]
    text = ["### A table far too wide for a page", "",
            "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    text += ["| " + " | ".join(r) + " |" for r in rows]
    text += ["", "[1] a note on beta"]
    path.write_text("\n".join(text) + "\n")
    return path


def test_markdown_tables_read_back(tmp_path):
    t = read_markdown(_wide_md(tmp_path / "w.md", 5))
    assert t.title == "A table far too wide for a page"
    assert t.header[:3] == ["model", "dataset", "metric00"] and len(t.rows) == 2
    assert t.rows[1][2] == "0.2500 [1]" and t.notes == ["[1] a note on beta"]
    assert label_columns(t.header) == 2
    with pytest.raises(ValueError, match="no table"):
        read_markdown(_write(tmp_path / "x.md", "### title only\n"))


def _write(path, text):
    path.write_text(text)
    return path


def test_split_columns_keeps_every_column_once_with_the_labels():
    widths = [40, 40] + [50] * 20
    parts = split_columns(widths, 2, 300)
    assert all(p[:2] == [0, 1] for p in parts)
    body = [j for p in parts for j in p[2:]]
    assert body == list(range(2, 22))  # every column, once, in order
    assert all(sum(widths[j] for j in p) <= 300 for p in parts)
    assert split_columns([40, 50], 1, 1000) == [[0, 1]]


@requires_poppler
def test_report_splits_wide_tables_and_sets_cjk_and_devanagari(tmp_path):
    md = _wide_md(tmp_path / "wide.md")
    inputs = ReportInputs(
        tables={"vista_wide": md}, figures=[], galleries={},
        sections=[Section("vista", "VISTA-Bench", "a paper", ("vista_",))],
        cover={"title": "test report", "ran": [("VISTA-Bench", "1 reader")], "not_ran": []},
        appendix={"packages": {"numpy": "2"}, "seeds": {"t: bootstrap.seed": 0},
                  "checksums": [("vista_wide", 3, "abc")], "config": "a: 1\n"},
        notes=["视觉分词器 and हिन्दी भाषा in a note"])
    pages = build_report(tmp_path / "r.pdf", inputs)
    text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert pages >= 2
    assert "A table far too wide for a page" in text
    assert "metric29" in text and "29.5000" in text  # the last column is there
    assert "part 2 of" in text and text.count("alpha") >= 2  # split, labels repeated
    assert "视觉分词器" in text and "हिन्दी भाषा" in text
    out = subprocess.run(["pdftoppm", "-r", "20", "-png", str(tmp_path / "r.pdf"),
                          str(tmp_path / "p")], capture_output=True, text=True)
    assert out.returncode == 0 and not out.stderr.strip()
    assert len(list(tmp_path.glob("p-*.png"))) == pages


def test_provenance_records_inputs_params_and_seeds(tmp_path):
    import hashlib

    a = tmp_path / "a.csv"
    a.write_text("x\n1\n")
    params = {"bootstrap": {"samples": 100, "seed": 3}, "keys": [{"seed": 7}]}
    rec = provenance("t", "rule_t", [str(a)], params)
    assert rec["inputs"] == {str(a): hashlib.sha256(b"x\n1\n").hexdigest()}
    assert rec["seeds"] == {"bootstrap.seed": 3, "keys[0].seed": 7}
    assert rec["params_sha256"] == canonical_hash(params)
    assert rec["command"] == "snakemake --cores 1 results/tables/t.csv"
    assert rec["packages"]["numpy"] != "not installed"
    assert set(rec) == {"table", "rule", "command", "params_sha256", "seeds", "inputs",
                        "packages", "reproducibility", "cpu_capability", "threads",
                        "promise"}  # no timestamp, no host
    assert (rec["reproducibility"], rec["cpu_capability"], rec["threads"]) == ("portable",
                                                                               "AVX2", 1)
    assert rec == provenance("t", "rule_t", [str(a)], params)  # deterministic
    assert seeds_in({"seed": 1, "a": {"b_seed": 2}}) == {"seed": 1, "a.b_seed": 2}
    keyed = {("small_vq", "natural"): "not run", "s": {1, 2}}  # plan params keyed by pairs
    assert canonical_hash(keyed) == canonical_hash({"('small_vq', 'natural')": "not run",
                                                    "s": [1, 2]})

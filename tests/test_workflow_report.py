"""The PDF report of a small run, checked as a reader would: pdftotext finds every
table's title and a number of each CSV, the Chinese and Hindi ground truth are in the text layer,
pdftoppm renders every page; every table has its provenance record; deleting one table's CSV
regenerates it and the report, nothing else; two runs from scratch write byte-identical CSVs,
provenance records and report."""
import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract

from roundtrip.core.hashing import sha256_file

pytestmark = [pytest.mark.workflow, requires_tesseract]

CONFIG = {
    "datasets": {
        "photos": {"type": "skimage", "images": ["astronaut", "coffee"]},
        "zh": {"type": "abstracts", "language": "zh", "lang": "chi_sim", "count": 1,
               "font_size_pt": 14, "text_eval": True, "canvas": 512},
        "hi": {"type": "abstracts", "language": "hi", "lang": "hin", "count": 1,
               "font_size_pt": 14, "text_eval": True, "canvas": 512},
        "caps": {"type": "captions", "count": 2}},
    "models": {"identity": {"type": "identity"}, "jpeg_q10": {"type": "jpeg", "quality": 10},
               "bicubic_x4": {"type": "resample", "factor": 4}},
    "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                "tokens": {"reference": None}, "missing_weights": "n/a"},
    "ocr": {"engines": {"tesseract": {"type": "tesseract"}}},
    "telephone": {"generations": 4, "backbones": {"cer": {"type": "cer"}},
                  "pairs": {"r_id": {"type": "render_ocr"},
                            "r_bic": {"type": "render_ocr", "tokenizer": "bicubic_x4"}}},
    "tables": {"bootstrap": {"samples": 200}},
}


def smk(work, *args):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", *args],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("report_wf")
    (work / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    smk(work)
    tables = {p.name: p.read_bytes() for p in (work / "results/tables").glob("*.csv")}
    others = {str(p.relative_to(work)): p.read_bytes() for p in
              [*(work / "results/tables").glob("*.provenance.json"), work / "results/report.pdf"]}
    text = subprocess.run(["pdftotext", "results/report.pdf", "-"], cwd=work, check=True,
                          capture_output=True, text=True).stdout
    return {"work": work, "tables": tables, "others": others, "text": text}


def _first_number(csv):
    df = pd.read_csv(csv)
    for col in df.columns:
        values = pd.to_numeric(df[col], errors="coerce")
        for v in values:
            if pd.notna(v) and abs(v) not in (float("inf"),) and v != int(v):
                return float(v)
    return None


def test_every_table_title_and_a_number_of_each_csv_are_in_the_text(run):
    work, text = run["work"], " ".join(run["text"].split())
    names = [p.stem for p in (work / "results/tables").glob("*.csv")]
    assert len(names) >= 9
    for name in names:
        title = (work / f"results/tables/{name}.md").read_text().splitlines()[0].removeprefix("### ")
        assert " ".join(title.split())[:40] in text, name
        x = _first_number(work / f"results/tables/{name}.csv")
        if x is not None:
            assert any(f"{x:.{d}f}" in text for d in (1, 2, 3, 4)), (name, x)


def test_cjk_and_devanagari_ground_truth_in_the_text_layer(run):
    work, text = run["work"], run["text"]
    for dataset in ("zh", "hi"):
        truth = pd.read_csv(work / f"results/datasets/{dataset}/manifest.csv")["text"].iloc[0]
        snippet = "".join(truth.split())[:12]
        assert snippet in "".join(text.split()), dataset


def test_every_page_renders(run):
    work = run["work"]
    info = subprocess.run(["pdfinfo", "results/report.pdf"], cwd=work, capture_output=True,
                          text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    out = subprocess.run(["pdftoppm", "-r", "30", "-png", "results/report.pdf", "page"], cwd=work,
                         capture_output=True, text=True)
    assert out.returncode == 0 and not out.stderr.strip(), out.stderr
    assert len(list(work.glob("page-*.png"))) == pages >= 8


def test_every_table_has_its_provenance(run):
    work = run["work"]
    for csv in (work / "results/tables").glob("*.csv"):
        rec = json.loads(csv.with_suffix(".provenance.json").read_text())
        assert rec["table"] == csv.stem and len(rec["params_sha256"]) == 64
        for path, digest in list(rec["inputs"].items())[:3]:  # model_card reads no file
            if digest != "(folder)":
                assert sha256_file(work / path) == digest
        assert rec["packages"]["snakemake"] != "not installed"


def test_deleting_a_table_regenerates_it_and_the_report_only(run):
    """By the default target and by the report's own (`snakemake results/report.pdf`), which
    Snakemake alone answers with "Nothing to be done": the report is newer than its other
    inputs, and a missing file is remade only for a job that runs anyway."""
    work = run["work"]
    table = work / "results/tables/telephone_mcd.csv"
    for target, planned in (((), {"all": "1", "total": "3"}),
                            (("results/report.pdf",), {"total": "2"})):
        table.unlink()
        dry = smk(work, *target, "-n", "--quiet", "rules")
        jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, re.M))
        assert jobs == {"telephone_tables": "1", "report_pdf": "1", **planned}, dry.stdout
        smk(work, *target)
        assert table.read_bytes() == run["tables"]["telephone_mcd.csv"]
        assert "Nothing to be done" in smk(work, *target, "-n").stdout


def test_two_runs_from_scratch_write_identical_tables(run):
    """CSV tables, provenance records and the PDF report: the same bytes (no date, no time)."""
    work = run["work"]
    subprocess.run(["rm", "-rf", "results", ".snakemake"], cwd=work, check=True)
    smk(work)
    again = {p.name: p.read_bytes() for p in (work / "results/tables").glob("*.csv")}
    assert again == run["tables"]
    for path, content in run["others"].items():
        assert (work / path).read_bytes() == content, path

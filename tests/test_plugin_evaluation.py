"""A user's own evaluation, in its own package outside roundtrip, joins the DAG, the tables and
the report with no edit of roundtrip: docs/evaluations/writing-an-evaluation.md, run as a user
follows it.

The package is the page's code blocks (read by ``doc_examples.evaluation_page``, so the page and
this test are one source), written as the page shows them into a temporary plugins folder. It
measures the brightness shift of a reconstruction, ``mean(reconstruction) - mean(original)`` on
[0, 1] values, per item inside the (model, dataset) job, and tabulates it per model and dataset.
The config is the page's registration block (``evaluations.plugins``, ``evaluations.paths``, the
section ``brightness`` checked by the evaluation's own schema) added to a config of two
photographs and two models, run with ``--configfile my.yaml``.
"""
import re
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract
from doc_examples import evaluation_page

pytestmark = [pytest.mark.workflow, requires_tesseract]

#: Where the page's config puts the plugins folder.
PAGE_PLUGINS = "/home/me/plugins"


def _smk(work, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--cores", "2", *args, "--configfile", "my.yaml"],
                          cwd=work, capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _config(plugins_dir, **brightness):
    """The page's registration block, its plugins folder ``plugins_dir``, in a small config;
    ``brightness`` overrides keys of the page's ``brightness`` section."""
    page = yaml.safe_load(evaluation_page().config.replace(PAGE_PLUGINS, str(plugins_dir)))
    page["brightness"].update(brightness)
    return {"datasets": {"natural": {"type": "skimage", "images": ["camera", "coins"]}},
            "models": {"identity": {"type": "identity"},
                       "bicubic_x4": {"type": "resample", "factor": 4}},
            "metrics": {"missing_weights": "n/a"},
            "tables": {"bootstrap": {"samples": 200}}, **page}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("plugin")
    plugins = evaluation_page().write(work / "plugins")
    (work / "my.yaml").write_text(yaml.safe_dump(_config(plugins)))
    plan = _smk(work, "-n").stdout
    _smk(work, "--quiet")
    text = subprocess.run(["pdftotext", str(work / "results/report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    return work, plugins, plan, " ".join(text.split())


def test_the_plugin_is_planned(run):
    _, _, plan, _ = run
    assert "rule brightness_table:" in plan
    # its scorer runs inside the two (model, natural) reconstruction jobs, no job of its own
    assert plan.count("results/metrics/identity/natural/brightness.csv") >= 1
    assert "results/metrics/bicubic_x4/natural/brightness.csv" in plan


def test_its_table_numbers_provenance_and_report_section(run):
    work, _, _, text = run
    table = pd.read_csv(work / "results/tables/brightness.csv").set_index("model")
    assert list(table.columns) == ["dataset", "brightness_shift"]  # as the page's table.py
    assert table.loc["identity", "brightness_shift"] == pytest.approx(0.0, abs=1e-12)
    # bicubic x4 down and up again: a shift, small against the [0, 1] range, never exactly 0
    shift = table.loc["bicubic_x4", "brightness_shift"]
    assert 0 < abs(shift) < 0.02
    per_item = pd.read_csv(work / "results/metrics/bicubic_x4/natural/brightness.csv")
    assert list(per_item["item_id"]) == ["camera", "coins"]
    assert np.isclose(per_item["brightness_shift"].mean(), shift)
    record = yaml.safe_load((work / "results/tables/brightness.provenance.json").read_text())
    assert record["table"] == "brightness" and record["rule"] == "brightness_table"
    assert any(k.endswith("bicubic_x4/natural/brightness.csv") for k in record["inputs"])
    assert "Brightness shift of reconstructions" in text  # its section and its table
    assert "Brightness (on natural)" in text  # the first page's line of what ran (summary)


def test_its_findings_and_headline_figure_as_the_page_writes_them(run):
    """The page's findings and figure read the columns its table.py writes (they once read a
    column no table had, and the report printed the KeyError in their place)."""
    work, _, _, text = run
    assert "identity shifts brightness least (+0.0000 on natural)." in text
    assert "Brightness shift per model, mean over its datasets." in text
    # what the report prints where they fail (roundtrip.report.assemble)
    assert "The findings could not be computed" not in text
    assert "Brightness: no headline figure" not in text and "KeyError" not in text
    assert (work / "results/figures/headline/brightness.png").stat().st_size > 5000


def test_snakemake_report_shows_its_table_with_the_pages_caption(run, tmp_path):
    """`snakemake --report` reads the caption rules.smk names (caption.rst, on the page)."""
    work, _, _, _ = run
    _smk(work, "--report", str(tmp_path / "report.zip"))
    archive = zipfile.ZipFile(tmp_path / "report.zip")
    assert any(n.endswith("/brightness.csv") for n in archive.namelist())
    html = archive.read(next(n for n in archive.namelist() if n.endswith("report.html")))
    assert "Brightness shift of each model" in html.decode()


def test_its_config_section_is_checked_by_its_own_schema_and_checks(run, tmp_path):
    _, plugins, _, _ = run
    for section, message in (({"datasets": "natural"},
                               "brightness.datasets: 'natural' is not of type 'array'"),
                             ({"datasets": ["nope"]}, "brightness.datasets: unknown datasets")):
        (tmp_path / "my.yaml").write_text(yaml.safe_dump(_config(plugins, **section)))
        proc = _smk(tmp_path, "-n", check=False)
        assert proc.returncode != 0 and message in proc.stdout + proc.stderr


def test_removing_it_removes_its_jobs(run):
    work, _, _, _ = run
    before = (work / "my.yaml").read_text()
    config = yaml.safe_load(before)
    del config["evaluations"], config["brightness"]
    (work / "my.yaml").write_text(yaml.safe_dump(config))
    try:
        plan = _smk(work, "-n").stdout
    finally:
        (work / "my.yaml").write_text(before)
    # no table job, no scorer output; the reconstruction jobs rerun because their scorers changed
    # (the dry run prints the old parameters, which name brightness.csv, as the reason)
    outputs = " ".join(re.findall(r"^\s*output: (.*)$", plan, re.M))
    assert "rule brightness_table" not in plan and "brightness.csv" not in outputs
    assert "results/metrics/identity/natural/image_quality.csv" in outputs
    assert "Params have changed" in plan

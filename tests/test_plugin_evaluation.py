"""A user's own evaluation, in its own package outside roundtrip, joins the DAG, the tables and
the report with no edit of roundtrip: the steps of docs/evaluations/writing-an-evaluation.md.

The package (written by the test into a temporary folder) measures the brightness shift of a
reconstruction, ``mean(reconstruction) - mean(original)`` on [0, 1] values, per item inside the
(model, dataset) job, and tabulates it per model. The config names it (``evaluations.plugins``,
``evaluations.paths``) and gives it a section of its own (``brightness``), checked by the
evaluation's own schema.
"""
import re
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract

pytestmark = [pytest.mark.workflow, requires_tesseract]

SPEC = '''
"""Brightness shift: a user's own evaluation."""
from pathlib import Path

from roundtrip.core.config import ConfigError
from roundtrip.core.evaluation import Evaluation


class Brightness(Evaluation):
    key = "brightness"
    name = "Brightness"
    title = "Brightness shift of reconstructions"
    paper = "a user's own evaluation"
    rules = Path(__file__).with_name("rules.smk")
    config_section = "brightness"
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"datasets": {"type": "array", "items": {"type": "string"},
                                          "default": []},
                             "digits": {"type": "integer", "minimum": 1, "default": 4}}}
    recon_scorers = {"brightness": "brightness_eval.scorer:BrightnessScorer"}
    report_tables = ("brightness",)
    definitions = (("Brightness shift", "mean of the reconstruction minus mean of the original "
                    "on [0, 1] values", "this package"),)

    def datasets(self, plan):
        return plan.config["brightness"]["datasets"] or plan.recon_datasets

    def active(self, plan):
        return bool(self.datasets(plan))

    def summary(self, plan):
        return "on " + ", ".join(self.datasets(plan))

    def tables(self, plan):
        return ["brightness"]

    def scorers_for(self, plan, dataset):
        return {"brightness": {}} if dataset in self.datasets(plan) else {}

    def check(self, plan):
        unknown = [d for d in plan.config["brightness"]["datasets"]
                   if d not in plan.config["datasets"]]
        if unknown:
            raise ConfigError(f"brightness.datasets: unknown datasets {unknown}")


EVALUATION = Brightness()
'''

SCORER = '''
import numpy as np
import pandas as pd

from roundtrip.core.imaging import to_unit
from roundtrip.core.scoring import ReconScorer


class BrightnessScorer(ReconScorer):
    def score(self, items):
        return [float(to_unit(item.read_reconstruction()).mean()
                      - to_unit(item.read_reference()).mean())
                if item.status == "ok" else np.nan for item in items]

    def finish(self, items, records):
        return {"brightness": pd.DataFrame({
            "item_id": [item.item_id for item in items],
            "status": [item.status for item in items],
            "reason": [item.reason for item in items],
            "brightness_shift": records})}
'''

RULES = '''
from brightness_eval.spec import EVALUATION as BRIGHTNESS

BRIGHTNESS_SETS = BRIGHTNESS.datasets(PLAN)


rule brightness_table:
    input:
        PLAN.model_dataset_files("results/metrics/{model}/{dataset}/brightness.csv", BRIGHTNESS_SETS),
    output:
        report_table("brightness", "Brightness", caption_file=str(Path(workflow.current_basedir) / "caption.rst")),
    params:
        jobs=PLAN.model_datasets(BRIGHTNESS_SETS),
        digits=config["brightness"]["digits"],
    log:
        "logs/tables/brightness.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "table.py"
'''

TABLE = '''
from pathlib import Path

import pandas as pd

from roundtrip.tables import write_frame
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821
rows = []
for (model, dataset), path in zip(smk.params.jobs, smk.input):
    frame = pd.read_csv(path)
    rows.append({"model": model, "dataset": dataset,
                 "brightness_shift": float(frame["brightness_shift"].mean()), "n": len(frame)})
write_frame(pd.DataFrame(rows), "brightness", "Brightness shift of reconstructions", [],
            Path(smk.output[0]).parent, digits={"brightness_shift": smk.params.digits})
write_provenance(smk)
'''


def _write_package(root):
    pkg = root / "brightness_eval"
    pkg.mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("spec.py", SPEC), ("scorer.py", SCORER),
                       ("rules.smk", RULES), ("table.py", TABLE),
                       ("caption.rst", "Brightness shift per model and dataset.\n")):
        (pkg / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _smk(work, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", *args],
                          cwd=work, capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _config(plugins_dir, **brightness):
    return {"datasets": {"photos": {"type": "skimage", "images": ["camera", "coins"]}},
            "models": {"identity": {"type": "identity"},
                       "bicubic_x4": {"type": "resample", "factor": 4}},
            "metrics": {"missing_weights": "n/a"},
            "tables": {"bootstrap": {"samples": 200}},
            "evaluations": {"plugins": ["brightness_eval.spec"], "paths": [str(plugins_dir)]},
            "brightness": brightness}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("plugin")
    plugins = _write_package(work / "plugins")
    (work / "config.yaml").write_text(yaml.safe_dump(_config(plugins)))
    plan = _smk(work, "-n").stdout
    _smk(work, "--quiet")
    return work, plugins, plan


def test_the_plugin_is_planned(run):
    _, _, plan = run
    assert "rule brightness_table:" in plan
    # its scorer runs inside the two (model, photos) reconstruction jobs, no job of its own
    assert plan.count("results/metrics/identity/photos/brightness.csv") >= 1
    assert "results/metrics/bicubic_x4/photos/brightness.csv" in plan


def test_its_table_numbers_provenance_and_report_section(run):
    work, _, _ = run
    table = pd.read_csv(work / "results/tables/brightness.csv").set_index("model")
    assert table.loc["identity", "brightness_shift"] == pytest.approx(0.0, abs=1e-12)
    # bicubic x4 down and up again: a shift, small against the [0, 1] range, never exactly 0
    shift = table.loc["bicubic_x4", "brightness_shift"]
    assert 0 < abs(shift) < 0.02
    per_item = pd.read_csv(work / "results/metrics/bicubic_x4/photos/brightness.csv")
    assert list(per_item["item_id"]) == ["camera", "coins"]
    assert np.isclose(per_item["brightness_shift"].mean(), shift)
    record = yaml.safe_load((work / "results/tables/brightness.provenance.json").read_text())
    assert record["table"] == "brightness" and record["rule"] == "brightness_table"
    assert any(k.endswith("bicubic_x4/photos/brightness.csv") for k in record["inputs"])
    text = subprocess.run(["pdftotext", str(work / "results/report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "Brightness shift of reconstructions" in text  # its section and its table
    assert "on photos" in text  # the cover's line of what ran


def test_its_config_section_is_checked_by_its_own_schema_and_checks(run, tmp_path):
    _, plugins, _ = run
    for section, message in (({"digits": 0}, "brightness.digits: 0 is less than the minimum"),
                             ({"datasets": ["nope"]}, "brightness.datasets: unknown datasets")):
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(_config(plugins, **section)))
        proc = _smk(tmp_path, "-n", check=False)
        assert proc.returncode != 0 and message in proc.stdout + proc.stderr


def test_removing_it_removes_its_jobs(run, tmp_path):
    work, _, _ = run
    config = yaml.safe_load((work / "config.yaml").read_text())
    del config["evaluations"], config["brightness"]
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    plan = _smk(work, "-n").stdout
    # no table job, no scorer output; the reconstruction jobs rerun because their scorers changed
    # (the dry run prints the old parameters, which name brightness.csv, as the reason)
    outputs = " ".join(re.findall(r"^\s*output: (.*)$", plan, re.M))
    assert "rule brightness_table" not in plan and "brightness.csv" not in outputs
    assert "results/metrics/identity/photos/image_quality.csv" in outputs
    assert "Params have changed" in plan

"""``roundtrip verify`` on a small run made with ``--configfile my.yaml`` in a folder whose
``config.yaml`` is another config: verify re-makes with the config the run recorded and says
so; every table and the report are made again with the same bytes, the results folder is left
as it was, and an altered table is reported as different."""
import json
import os
import subprocess
import sys

import pytest
import yaml
from conftest import REPO

pytestmark = pytest.mark.workflow

CONFIG = {
    "datasets": {"photos": {"type": "skimage", "images": ["astronaut", "coffee"]}},
    "models": {"identity": {"type": "identity"}, "jpeg_q10": {"type": "jpeg", "quality": 10}},
    "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                "tokens": {"reference": None}, "missing_weights": "n/a"},
    "tables": {"bootstrap": {"samples": 200}},
}
#: The folder's config.yaml, which the run did not read: a model whose results are not there.
OTHER = {**CONFIG, "models": {"identity": {"type": "identity"},
                              "jpeg_q75": {"type": "jpeg", "quality": 75}}}


def roundtrip(*args, cwd):
    return subprocess.run([sys.executable, "-m", "roundtrip.cli", *args], cwd=cwd,
                          capture_output=True, text=True)


def state(folder):
    """``path -> (bytes, mtime)`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("verify_wf")
    (work / "my.yaml").write_text(yaml.safe_dump(CONFIG))
    (work / "config.yaml").write_text(yaml.safe_dump(OTHER))  # a checkout's showcase, say
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--cores", "2", "--configfile", "my.yaml"], cwd=work,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work


def test_verify_remakes_every_artifact_identically_and_leaves_the_folder_alone(run):
    before = state(run / "results")
    proc = roundtrip("verify", str(run), "--snakefile", str(REPO / "Snakefile"), cwd=run)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    tables = sorted(p.name for p in (run / "results/tables").glob("*.csv"))
    assert len(tables) >= 3
    for name in tables:
        assert f"identical  results/tables/{name}" in lines
        assert f"identical  results/tables/{name[:-4]}.provenance.json" in lines
    assert "identical  results/report.pdf" in lines
    assert lines[-1] == f"verify: {len(lines) - 1} identical"
    assert state(run / "results") == before  # nothing written, not even a touch
    # the config the run recorded, not the folder's config.yaml (which fails: its jpeg_q75
    # has no results here), and it says which
    assert json.loads((run / "results/run.provenance.json").read_text()) == \
        {"configfiles": ["my.yaml"]}
    assert "verify: config my.yaml (recorded in results/run.provenance.json)" in proc.stderr


def test_a_config_given_to_verify_wins_over_the_recorded_one(run):
    proc = roundtrip("verify", str(run), "--configfile", str(run / "config.yaml"),
                     "--snakefile", str(REPO / "Snakefile"), cwd=run)
    assert "verify: config config.yaml (given with --configfile)" in proc.stderr
    assert proc.returncode == 2 and "MissingInputException" in proc.stderr


def test_verify_reports_an_altered_table(run):
    table = run / "results/tables/reconstruction_native.csv"
    altered = table.read_text().replace("photos", "photoz", 1)
    assert altered != table.read_text()
    table.write_text(altered)
    proc = roundtrip("verify", str(run), "--snakefile", str(REPO / "Snakefile"), cwd=run)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "different  results/tables/reconstruction_native.csv" in proc.stdout.splitlines()
    assert "identical  results/tables/reconstruction_native.md" in proc.stdout.splitlines()
    assert table.read_text() == altered  # the folder's file is the reader's; verify reports only


def test_verify_names_a_missing_input(run, tmp_path):
    os.symlink(run / "config.yaml", tmp_path / "config.yaml")
    (tmp_path / "results/tables").mkdir(parents=True)
    record = (run / "results/tables/detail_statistics.provenance.json").read_text()
    (tmp_path / "results/tables/detail_statistics.provenance.json").write_text(record)
    proc = roundtrip("verify", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert "recorded inputs are not in" in proc.stderr and "manifest.csv" in proc.stderr

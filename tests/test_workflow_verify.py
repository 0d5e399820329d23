"""``roundtrip verify`` on a small run: every table and the report are made again with the same
bytes, the results folder is left as it was, and an altered table is reported as different."""
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
    (work / "config.yaml").write_text(yaml.safe_dump(CONFIG))  # read as a plain run reads it
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--cores", "2"], cwd=work, capture_output=True, text=True)
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

"""A run over 40+ hostile images and 20+ hostile volumes goes to the end: exit 0,
every table written, every bad item recorded with its reason, no ``inf`` cell without a
footnote; and a run killed with SIGKILL resumes without recomputing a finished job."""
import os
import re
from base64 import urlsafe_b64decode
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract
from hostile import write_images, write_volumes

from roundtrip.workflow.plan import Plan
from roundtrip.workflow.checks import validate_config

pytestmark = [pytest.mark.workflow, requires_tesseract]


def smk_cmd(*args):
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
            "--configfile", "config.yaml", "--cores", "2", *args]


def smk(workdir, *args):
    proc = subprocess.run(smk_cmd(*args), cwd=workdir, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile_wf")
    images = write_images(work / "images")
    volumes = write_volumes(work / "volumes")
    config = {
        "datasets": {
            "mess": {"type": "folder", "path": str(work / "images")},
            "vols": {"type": "nifti", "path": str(work / "volumes"), "modality": "MRI (hostile)",
                     "models": ["identity", "bicubic_x4"]},
        },
        "models": {"identity": {"type": "identity"},
                   "jpeg_q75": {"type": "jpeg", "quality": 75},
                   "bicubic_x4": {"type": "resample", "factor": 4}},
        "metrics": {"missing_weights": "n/a"},
        "tables": {"bootstrap": {"samples": 100}},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    out = smk(work)
    return work, config, images, volumes, out


def test_the_run_ends_with_every_table(hostile_run):
    work, config, *_ = hostile_run
    config = yaml.safe_load((work / "config.yaml").read_text())
    validate_config(config, str(REPO / "config.schema.yaml"))  # the defaults the run had
    plan = Plan(config)
    assert len(plan.tables) >= 10
    for name in plan.tables:
        for ext in ("csv", "md", "tex"):
            assert (work / f"results/tables/{name}.{ext}").stat().st_size > 0, name
    # the MediBench tables are written though no volume set has labels
    assert (work / "results/tables/medibench_3d_fidelity.csv").exists()
    assert "no labeled dataset" in (work / "results/tables/medibench_3d_latent.md").read_text()


def test_every_bad_item_is_recorded_in_the_manifest(hostile_run):
    work, _, images, volumes, _ = hostile_run
    for name, kinds in (("mess", images), ("vols", volumes)):
        m = pd.read_csv(work / f"results/datasets/{name}/manifest.csv", keep_default_na=False)
        m = m.set_index("item_id")
        for kind, expect in kinds.items():
            for item_id in expect.item_ids:
                assert m.loc[item_id, "status"] == expect.status, (kind, m.loc[item_id, "reason"])
                assert expect.text in m.loc[item_id, expect.column], kind


def test_bad_items_carry_their_reason_into_the_tables(hostile_run):
    work = hostile_run[0]
    md = (work / "results/tables/reconstruction_native.md").read_text()
    assert "items scored" in md and "declares 30000 x 30000 pixels" in md
    status = pd.read_csv(work / "results/recon/jpeg_q75/mess/status.csv", keep_default_na=False)
    assert (status.set_index("item_id").loc["bomb8", "status"]) == "error"


def test_no_inf_cell_without_a_footnote(hostile_run):
    """A blank page reconstructed exactly by JPEG makes a lossy model's mean PSNR inf: the cell
    has a footnote counting the exact items, and the pooled PSNR beside it is finite."""
    work = hostile_run[0]
    checked = 0
    for md in sorted((work / "results/tables").glob("*.md")):
        for line in md.read_text().splitlines():
            if not line.startswith("|") or set(line) <= set("|-: "):
                continue
            for cell in line.strip("|").split("|")[1:]:
                if re.search(r"(?<![a-z])inf(?![a-z])", cell):
                    checked += 1
                    assert re.search(r"inf.*\[\d+\]$", cell.strip()), f"{md.name}: {cell!r}"
    assert checked >= 3
    rec = pd.read_csv(work / "results/tables/reconstruction_native.csv").set_index("model")
    assert rec.loc["jpeg_q75", "mess.psnr"] == float("inf")
    assert 10 < rec.loc["jpeg_q75", "mess.psnr_pooled"] < 60
    md = (work / "results/tables/reconstruction_native.md").read_text()
    assert re.search(r"\d+ of \d+ items reconstructed exactly \(PSNR = inf\); mean of the other "
                     r"\d+: [\d.]+ dB", md)
    fid = (work / "results/tables/medibench_3d_fidelity.md").read_text()
    assert "constant volume(s), all zeros after intensity scaling" in fid


def test_killed_run_resumes_without_recomputing(tmp_path):
    """SIGKILL the whole run once a few reconstructions are done; the rerun recomputes none of
    the finished jobs and its tables equal those of an uninterrupted run."""
    config = {
        "datasets": {f"set{k}": {"type": "skimage", "images": ["astronaut", "coffee", "chelsea"]}
                     for k in range(3)},
        "models": {"identity": {"type": "identity"}, "jpeg_q50": {"type": "jpeg", "quality": 50},
                   "webp_q50": {"type": "webp", "quality": 50},
                   "bicubic_x4": {"type": "resample", "factor": 4}},
        "metrics": {"missing_weights": "n/a"},
        "tables": {"bootstrap": {"samples": 100}},
    }
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    for d in (whole, killed):
        d.mkdir()
        (d / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    smk(whole, "--cores", "1")
    proc = subprocess.Popen(smk_cmd("--cores", "1"), cwd=killed, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(list(killed.glob("results/recon/*/*/status.csv"))) < 4:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and its running job, no clean-up
    proc.wait()
    # finished jobs: outputs Snakemake does not mark incomplete (the job running at the kill
    # may have written its status.csv already)
    running = {urlsafe_b64decode(p.name).decode()
               for p in (killed / ".snakemake/incomplete").rglob("*") if p.is_file()
               and p.name != "migration_underway"}
    done = {p: p.stat().st_mtime_ns for p in killed.glob("results/recon/*/*/status.csv")
            if str(p.relative_to(killed)) not in running}
    assert 3 <= len(done) < 12, "the kill came too late to test a resume"
    assert not (killed / "results/tables/reconstruction_native.csv").exists()
    smk(killed, "--cores", "1", "--unlock")
    out = smk(killed, "--cores", "1")
    for p, mtime in done.items():
        assert p.stat().st_mtime_ns == mtime, f"{p} was recomputed"
    assert "reconstruct" in out
    for table in sorted((whole / "results/tables").glob("*.csv")):
        assert (killed / "results/tables" / table.name).read_bytes() == table.read_bytes(), table.name

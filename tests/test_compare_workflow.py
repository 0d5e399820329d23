"""Checkpoint B against checkpoint A, both ways in, on one small run shared by every test here:
two checkpoints of one tiny model, B worse on one dataset only (``at96``), the other (``at64``)
reconstructed identically. The config's ``compare:`` entry (rule ``compare``) and
``roundtrip compare`` on two results folders give the same rows; B is "worse" on ``at96`` and
"equivalent" on ``at64``; a dataset whose items changed between the runs is named and left out,
and so is a metric whose recorded definition differs;
``--fail-on-regression`` exits 1 naming the rows; page 1 of the PDF and ``summary.rst`` say what
changed, and the report shows the differences figure and the gallery."""
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import skimage.data
import torch
import yaml
from conftest import REPO
from doc_examples import fenced_blocks, yaml_after
from PIL import Image

from roundtrip.cli import main as cli

pytestmark = pytest.mark.workflow

COMPARING = REPO / "docs/comparing.md"
#: Two checkpoints of one model: the identity plus a fixed pattern, scaled by ``strength[0]``
#: everywhere and by ``strength[1]`` more on inputs of height ``size`` (one dataset's).
MODULE = '''
import torch


class Tok(torch.nn.Module):
    def __init__(self, size: int = 96):
        super().__init__()
        self.size = size
        self.strength = torch.nn.Parameter(torch.zeros(2))

    def encode(self, x):
        return x

    def decode(self, z):
        g = torch.Generator().manual_seed(0)
        pattern = torch.rand(z.shape[-2:], generator=g) * 2 - 1
        s = self.strength[0] + (self.strength[1] if z.shape[-2] == self.size else 0.0)
        return (z + s * pattern).clamp(-1, 1)
'''
ITEMS = 10


def _crops(folder, side: int, seed: int) -> None:
    """``ITEMS`` crops of scikit-image's photographs, ``side`` x ``side``."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    photos = [skimage.data.astronaut(), skimage.data.coffee(), skimage.data.chelsea()]
    for k in range(ITEMS):
        img = photos[k % 3]
        y = rng.integers(0, img.shape[0] - side)
        x = rng.integers(0, img.shape[1] - side)
        Image.fromarray(img[y:y + side, x:x + side]).save(folder / f"i{k:02d}.png")


def _cli(*args) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "roundtrip.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The one run: ``tok_day1`` and ``tok_day2`` on ``at64`` and ``at96``, ``compare:`` naming
    them as docs/comparing.md's example does."""
    work = tmp_path_factory.mktemp("compare_run")
    code = work / "code"
    code.mkdir()
    (code / "tok.py").write_text(MODULE)
    sys.path.insert(0, str(code))
    try:
        import tok
        for name, strength in (("tok_day1", [0.02, 0.0]), ("tok_day2", [0.02, 0.08])):
            model = tok.Tok()
            model.strength.data = torch.tensor(strength)
            torch.save(model.state_dict(), work / f"{name}.pt")
    finally:
        sys.path.remove(str(code))
        sys.modules.pop("tok", None)
    _crops(work / "at64", 64, 0)
    _crops(work / "at96", 96, 1)
    spec = {"type": "state_dict", "import_path": "tok:Tok", "pythonpath": str(code),
            "family": "continuous", "downsample": 1}
    config = {
        "run": {"probe_models": False},
        "datasets": {"at64": {"type": "folder", "path": str(work / "at64")},
                     "at96": {"type": "folder", "path": str(work / "at96")}},
        "models": {"tok_day1": {**spec, "state_dict": str(work / "tok_day1.pt")},
                   "tok_day2": {**spec, "state_dict": str(work / "tok_day2.pt")}},
        "metrics": {"missing_weights": "n/a"},
        # the page's example, as written
        "compare": yaml_after(COMPARING, "### In a run")["compare"],
    }
    (work / "my.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "my.yaml", "--cores", "2"], cwd=work,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return work


def _rows(path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def test_b_is_worse_where_it_changed_and_equivalent_elsewhere(run):
    rows = _rows(run / "results/tables/compare.csv").set_index(["dataset", "metric"])
    assert set(rows["comparison"]) == {"tok_day2 vs tok_day1"}
    for metric in ("PSNR", "SSIM", "PSNR (VTBench eval.)"):
        worse = rows.loc[("at96", metric)]
        assert worse["verdict"] == "worse", (metric, worse.to_dict())
        assert worse["difference"] < 0 and worse["ci_high"] < 0 and worse["n_paired"] == ITEMS
        same = rows.loc[("at64", metric)]
        assert same["verdict"] == "equivalent" and same["difference"] == 0.0
    # the per-item rows hold the numbers the row summarizes
    psnr = rows.loc[("at96", "PSNR")]
    a = pd.read_csv(run / "results/metrics/tok_day1/at96/image_quality.csv")["psnr"]
    b = pd.read_csv(run / "results/metrics/tok_day2/at96/image_quality.csv")["psnr"]
    assert psnr["difference"] == pytest.approx((b - a).mean())
    assert psnr["baseline_value"] == pytest.approx(a.mean())
    assert psnr["margin"] == 0.05 and psnr["test"] == "Wilcoxon signed-rank"
    assert psnr["p"] == pytest.approx(2 / 2 ** ITEMS)  # every item worse: the exact p
    items = _rows(run / "results/tables/compare_items.csv")
    at96 = items[(items["dataset"] == "at96") & (items["metric"] == "PSNR")]
    assert len(at96) == ITEMS and (at96["difference"] < 0).all()
    assert (run / "results/tables/compare.provenance.json").is_file()


def test_the_report_says_what_changed_on_page_one(run):
    page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(run / "results/report.pdf"),
                            "-"], capture_output=True, text=True, check=True).stdout
    page1 = " ".join(page1.split())
    assert "What changed" in page1
    assert "tok_day2 vs tok_day1, VTBench: of 6 rows, 0 better, 3 worse, 3 equivalent" in page1
    summary = (run / "results/summary.rst").read_text()
    assert "**What changed**" in summary and "3 worse" in summary
    for figure in ("differences.png", "changed.png"):
        assert (run / "results/figures/compare" / figure).stat().st_size > 10_000
    # no OCR or VISTA item here: the flipped items' figure says so and the report leaves it out
    assert (run / "results/figures/compare/flipped.png").is_file()
    captions = (run / "results/figures/compare/captions.txt").read_text()
    assert "changed.png\t" in captions and "flipped.png" not in captions
    text = subprocess.run(["pdftotext", str(run / "results/report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "What changed: every compared row" in text  # the table whole, in the appendix


def test_the_command_gives_the_same_rows_names_a_changed_dataset_and_fails(run, tmp_path):
    """Between two results folders (copies of the run, the candidate's ``at64`` items changed in
    the second): the rows of the unchanged pair equal the config's; ``at64`` is named and left
    out; ``--fail-on-regression`` exits 1 naming the rows that got worse."""
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        shutil.copytree(run / "results", folder / "results")
    out = tmp_path / "same"
    assert cli(["compare", str(a), str(b), "--baseline", "tok_day1", "--candidate", "tok_day2",
                "--out", str(out), "--margin", "psnr=0.05"]) == 0
    cols = ["dataset", "metric", "n_paired", "difference", "ci_low", "ci_high", "p", "p_holm",
            "p_by", "verdict"]
    in_run = _rows(run / "results/tables/compare.csv")[cols]
    between = _rows(out / "compare.csv")[cols]
    pd.testing.assert_frame_equal(in_run, between)
    assert (out / "differences.png").is_file() and (out / "what_changed.md").is_file()
    # the candidate's run built at64 from other files: its manifest's items differ
    manifest = b / "results/datasets/at64/manifest.csv"
    m = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    m.loc[0, "sha256"] = "0" * 64
    m.to_csv(manifest, index=False)
    code, stdout, stderr = _cli("compare", a, b, "--baseline", "tok_day1", "--candidate", "tok_day2",
                                "--out", tmp_path / "changed", "--fail-on-regression")
    assert code == 1, stdout + stderr
    rows = _rows(tmp_path / "changed/compare.csv")
    left = rows[rows["dataset"] == "at64"]
    assert len(left) and (left["verdict"] == "not compared").all()
    assert left["note"].str.contains("dataset at64 changed between the runs").all()
    assert left["difference"].isna().all()
    assert "regression: 3 row(s) worse after correction" in stderr
    assert "PSNR on at96: -" in stderr and "at64" not in stderr
    assert "not compared (dataset at64 changed between the runs" in stdout


def test_a_metric_defined_otherwise_in_the_other_run_is_named_and_left_out(run, tmp_path):
    """The run's table provenance records hold the definitions of the metrics compared there
    (with the run's settings); between two copies of the run, SSIM recorded under a bumped
    version in the second (a roundtrip that computes it otherwise) is named with both
    definitions and left out, while PSNR, defined alike, compares as in the run."""
    import json

    records = sorted((run / "results/tables").glob("reconstruction_*.provenance.json"))
    assert records
    for path in records:
        defined = json.loads(path.read_text())["definitions"]["vtbench"]
        assert defined["ssim"].endswith(", v1")
        assert defined["lpips"].startswith("LPIPS per item: alex backbone")
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        shutil.copytree(run / "results", folder / "results")
    for path in (b / "results/tables").glob("*.provenance.json"):
        record = json.loads(path.read_text())
        ssim = record.get("definitions", {}).get("vtbench", {}).get("ssim")
        if ssim:
            record["definitions"]["vtbench"]["ssim"] = ssim.replace(", v1", ", v2")
            path.write_text(json.dumps(record))
    out = tmp_path / "out"
    assert cli(["compare", str(a), str(b), "--baseline", "tok_day1", "--candidate", "tok_day2",
                "--out", str(out), "--margin", "psnr=0.05"]) == 0
    rows = _rows(out / "compare.csv")
    ssim = rows[rows["metric"] == "SSIM"]
    assert set(ssim["dataset"]) == {"at64", "at96"} and (ssim["verdict"] == "not compared").all()
    assert ssim["note"].str.startswith("the definition of ssim differs between the runs (A: "
                                       "SSIM per item").all()
    assert ssim["note"].str.contains(", v1; B: SSIM per item").all()
    cols = ["dataset", "metric", "n_paired", "difference", "ci_low", "ci_high", "p", "verdict"]
    in_run = _rows(run / "results/tables/compare.csv")
    psnr = rows[rows["metric"] == "PSNR"][cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(psnr, in_run[in_run["metric"] == "PSNR"][cols]
                                  .reset_index(drop=True), check_dtype=False)  # NaN: floats


def test_a_bad_compare_entry_fails_before_any_work(run, tmp_path):
    from roundtrip.workflow.checks import config_problem

    config = yaml.safe_load((run / "my.yaml").read_text())
    config["compare"]["pairs"].append({"baseline": "tok_day1", "candidate": "tok_day3"})
    problem = config_problem(config, str(REPO / "config.schema.yaml"), "my.yaml")
    assert problem.startswith("compare.pairs[1].candidate: unknown name 'tok_day3'"), problem


def test_the_pages_command_compares_a_run_with_its_rerun(run, tmp_path):
    """docs/comparing.md's command, on a run and a copy of it (a rerun in portable mode writes
    the same bytes): every name both hold, each with itself, and every row equivalent."""
    command = next(b for lang, b in fenced_blocks(COMPARING.read_text()) if lang == "bash"
                   and b.startswith("roundtrip compare"))
    args = command.split()[1:]
    for folder in ("monday", "tuesday"):
        shutil.copytree(run / "results", tmp_path / "runs" / folder / "results")
    args = [str(tmp_path / a) if a.startswith(("runs/", "noise/")) else a for a in args]
    assert cli(args) == 0
    rows = _rows(tmp_path / "noise/compare.csv")
    assert set(rows["comparison"]) == {"tok_day1 vs tok_day1", "tok_day2 vs tok_day2"}
    assert (rows["verdict"] == "equivalent").all() and (rows["difference"] == 0).all()

"""Failed items are shown where a user looks: a model whose reconstructions come back at the
wrong size (the probe turned off, as a user might) fails items, and the end of the run, the
findings' front page (``results/summary.rst``) and page 1 of the PDF name the model, the set,
the count and the key to fix."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tiny_models
import yaml
from conftest import REPO
from PIL import Image
from test_output_checks import ZOO, zoo_spec
from test_probe import MODULE

LINE = ("my_vq on mine: 2 of 3 items failed: model returned 168x256 for 172x256: check "
        "models.my_vq.downsample (4); model returned 176x200 for 180x200: check "
        "models.my_vq.downsample (4)")


#: The zoo's flaws (tests/test_output_checks.py) strike inputs of height 184: the 180 x 200
#: photograph, padded to a multiple of 8. Each model's line, as the end of the run prints it.
ZOO_LINES = {
    "bad_nan": "bad_nan on mine: 1 of 3 items failed: models.bad_nan: the reconstruction holds "
               "110,400 NaN values (of 110,400): the model's forward pass is not finite for this "
               "input",
    "bad_inf": "bad_inf on mine: 1 of 3 items failed: models.bad_inf: the reconstruction holds 12 "
               "infinite values (of 110,400): the model's forward pass is not finite for this "
               "input",
    "bad_scale255": "bad_scale255 on mine: 1 of 3 items failed: models.bad_scale255: outputs span [",
    "bad_one_channel": "bad_one_channel on mine: 1 of 3 items failed: models.bad_one_channel: "
                       "outputs have 1 channel for 3-channel inputs: return [B, 3, H, W] (repeat "
                       "a grayscale output to every channel)",
    "bad_ids": "bad_ids on mine: 1 of 3 items failed: models.bad_ids: token ids span [",
    "bad_crash": "bad_crash on mine: 1 of 3 items failed: RuntimeError: kernel failed at 184x200",
}


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    """One run of a user's models with failures, shared by the tests below: ``my_vq`` with a
    wrong ``downsample`` (the probe turned off, as a user might: it would stop the run before any
    job) and the zoo of flawed models, each flawed at one input size."""
    tmp_path = tmp_path_factory.mktemp("failed_run")
    code = tiny_models.user_model_files(tmp_path, "my_vq", MODULE) / "code"
    (code / "zoo.py").write_text(ZOO)
    photos = tmp_path / "photos"
    photos.mkdir()
    rng = np.random.default_rng(0)
    # 176 is a multiple of 8: the only item the 8x model gives back at its size
    for k, (h, w) in enumerate([(172, 256), (176, 256), (180, 200)]):
        Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8)).save(photos / f"p{k}.png")
    models = {"my_vq": {"type": "state_dict", "import_path": "my_vq:TinyVQ",
                        "pythonpath": str(code), "state_dict": str(tmp_path / "tiny_vq.pt"),
                        "family": "VQ", "downsample": 4, "codebook_size": 64}}
    for name in ZOO_LINES:
        models[name] = {**zoo_spec(tmp_path, name.removeprefix("bad_"), at=184),
                        "pythonpath": str(code)}
    config = {"run": {"probe_models": False},
              "datasets": {"mine": {"type": "folder", "path": str(photos)}},
              "models": models, "metrics": {"missing_weights": "n/a"}}
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "my.yaml", "--cores", "2"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1",  # poppler-utils (make setup)
                            str(tmp_path / "results/report.pdf"), "-"],
                           capture_output=True, text=True, check=True).stdout
    return tmp_path, proc.stderr, " ".join(page1.split())


@pytest.mark.workflow
def test_failed_items_are_named_at_the_end_in_the_summary_and_on_page_one(failed_run):
    tmp_path, stderr, page1 = failed_run
    assert f"  {LINE}" in stderr.splitlines()
    summary = (tmp_path / "results/summary.rst").read_text()
    assert "**Items that failed**" in summary and LINE.replace("_", "\\_") in summary
    assert "Items that failed" in page1
    assert "my_vq on mine: 2 of 3 items failed" in page1


@pytest.mark.workflow
def test_each_flawed_output_is_an_error_named_where_failures_are(failed_run):
    """NaN, infinite pixels, a [0, 255] output, one channel, ids beyond the codebook and a crash, each at one
    input size: that item is an error with the defect and the fix, on the console, in
    summary.rst and on page 1."""
    tmp_path, stderr, page1 = failed_run
    console = [line.strip() for line in stderr.splitlines()]
    summary = " ".join((tmp_path / "results/summary.rst").read_text().replace("\\", "").split())
    for name, line in ZOO_LINES.items():
        assert any(c.startswith(line) for c in console), (name, stderr[-3000:])
        assert line in summary, name
        assert f"{name} on mine: 1 of 3 items failed" in page1, name
        status = pd.read_csv(tmp_path / f"results/recon/{name}/mine/status.csv",
                             keep_default_na=False).set_index("item_id")
        assert list(status["status"]) == ["ok", "ok", "error"], name


@pytest.mark.workflow
def test_no_cell_is_computed_from_a_failed_item(failed_run):
    """The failed item has no PSNR/SSIM of its own; the set's cell is the mean of the two others
    with a footnote that counts 2 of 3 and names the defect."""
    tmp_path, _, _ = failed_run
    table = pd.read_csv(tmp_path / "results/tables/reconstruction_native.csv",
                        keep_default_na=False).set_index("model")
    for name in ZOO_LINES:
        per_item = pd.read_csv(tmp_path / f"results/metrics/{name}/mine/image_quality.csv"
                               ).set_index("item_id")
        assert np.isnan(per_item.loc["p2", "psnr"]) and np.isnan(per_item.loc["p2", "ssim"])
        assert np.isfinite(per_item.loc[["p0", "p1"], "psnr"]).all()
        row = table.loc[name]
        assert float(row["mine.psnr"]) == pytest.approx(per_item.loc[["p0", "p1"], "psnr"].mean(),
                                                        abs=1e-9)
        assert int(row["mine.psnr.n"]) == 2 and int(row["mine.psnr_vtbench.n"]) == 2
        reason = ZOO_LINES[name].split(" items failed: ", 1)[1]
        assert f"mine.psnr: 2 of 3 items scored; not scored: error: {reason}" in row["notes"]

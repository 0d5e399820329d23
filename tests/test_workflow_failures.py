"""Failed items are shown where a user looks: a model whose reconstructions come back at the
wrong size (the probe turned off, as a user might) fails items, and the end of the run, the
findings' front page (``results/summary.rst``) and page 1 of the PDF name the model, the set,
the count and the key to fix. The same for plausible but wrong outputs at one size (in [0, 1],
flipped, shifted: tests/test_diagnosis.py's zoo), an item stopped by its time limit, and a model
far slower at one size; the controls (JPEG at quality 10, a blurring autoencoder) are not named."""
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tiny_models
import torch
import yaml
from conftest import REPO
from PIL import Image
from test_diagnosis import AE_MODULE, ae_spec, photo
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
#: tests/test_diagnosis.py's autoencoder, wrong at inputs of height 180 (the 180 x 200
#: photograph): the start of each model's line.
DIAGNOSED_LINES = {
    "ae_unit": "ae_unit on mine: 1 of 3 items failed: models.ae_unit: outputs look like [0, 1] "
               "(PSNR ",
    "ae_vflip": "ae_vflip on mine: 1 of 3 items failed: models.ae_vflip: outputs look flipped "
                "vertically (PSNR ",
    "ae_shift1": "ae_shift1 on mine: 1 of 3 items failed: models.ae_shift1: outputs look shifted "
                 "by 1 px right (PSNR ",
    "ae_timeout": "ae_timeout on mine: 1 of 3 items failed: models.ae_timeout.item_timeout_s: the "
                  "forward pass at 180x200 ran longer than 1 s and was stopped",
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
    (code / "ae.py").write_text(AE_MODULE)
    torch.save({"pool.weight": torch.full((3, 1, 2, 2), 0.25)}, tmp_path / "ae2.pt")
    torch.save({"pool.weight": torch.full((3, 1, 4, 4), 1 / 16)}, tmp_path / "ae4.pt")
    # 176 is a multiple of 8: the only item the 8x model gives back at its size
    for k, (name, h, w) in enumerate([("astronaut", 172, 256), ("coffee", 176, 256),
                                      ("chelsea", 180, 200)]):
        Image.fromarray(photo(name, h, w)).save(photos / f"p{k}.png")
    models = {"my_vq": {"type": "state_dict", "import_path": "my_vq:TinyVQ",
                        "pythonpath": str(code), "state_dict": str(tmp_path / "tiny_vq.pt"),
                        "family": "VQ", "downsample": 4, "codebook_size": 64}}
    for name in ZOO_LINES:
        models[name] = {**zoo_spec(tmp_path, name.removeprefix("bad_"), at=184),
                        "pythonpath": str(code)}
    for flaw in ("unit", "vflip", "shift1"):
        models[f"ae_{flaw}"] = ae_spec(tmp_path, flaw)
    models["ae_timeout"] = ae_spec(tmp_path, "slow", kwargs={"seconds": 60.0}, item_timeout_s=1)
    models["ae_slow"] = ae_spec(tmp_path, "slow", kwargs={"seconds": 2.5})
    models["ae_blurred"] = ae_spec(tmp_path, at=None, factor=4)  # the controls
    models["jpeg_q10"] = {"type": "jpeg", "quality": 10}
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
    assert "my_vq on mine: 2 of 3 items failed" in page1 and LINE in page1


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
        assert line in page1, name  # the defect and the fix, not only the count
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


@pytest.mark.workflow
def test_plausible_but_wrong_items_are_flagged_and_the_controls_are_not(failed_run):
    """Outputs in [0, 1], flipped or shifted by a pixel at one input size, and an item stopped by
    its time limit: the item is an error with the defect and the fix, named on the console, in
    summary.rst and on page 1, with no PSNR of its own (so no ranking counts it); JPEG at
    quality 10 and a blurring autoencoder are lossy, not wrong, and named nowhere."""
    tmp_path, stderr, page1 = failed_run
    console = [line.strip() for line in stderr.splitlines()]
    summary = " ".join((tmp_path / "results/summary.rst").read_text().replace("\\", "").split())
    for name, line in DIAGNOSED_LINES.items():
        assert any(c.startswith(line) for c in console), (name, stderr[-3000:])
        assert line in summary, name
        assert f"{name} on mine: 1 of 3 items failed" in page1, name
        assert line in page1, name  # the defect, not only the count
        per_item = pd.read_csv(tmp_path / f"results/metrics/{name}/mine/image_quality.csv"
                               ).set_index("item_id")
        assert np.isnan(per_item.loc["p2", "psnr"]) and np.isfinite(per_item.loc["p0", "psnr"])
    for control in ("ae_blurred", "jpeg_q10", "ae_slow"):
        # a flagged item's line, as the end of the run, summary.rst and page 1 print it (not a
        # progress line "[roundtrip] reconstruct ae_blurred on mine: ...", which names it too)
        failed = re.compile(rf"(?<![\w.]){control} on mine: \d+ of \d+ items failed")
        assert not any(failed.match(c) for c in console), (control, stderr[-3000:])
        assert not failed.search(summary) and not failed.search(page1), control
        if control != "ae_slow":  # the slow one is named, under "Items far slower", below
            slow = re.compile(rf"(?<![\w.]){control} on mine: \d+ items? of \d+x\d+ took")
            assert not any(slow.match(c) for c in console), (control, stderr[-3000:])
            assert not slow.search(summary) and not slow.search(page1), control
        status = pd.read_csv(tmp_path / f"results/recon/{control}/mine/status.csv")
        assert list(status["status"]) == ["ok"] * 3, control


@pytest.mark.workflow
def test_a_model_far_slower_at_one_size_is_named_with_its_seconds(failed_run):
    """``ae_slow`` sleeps 2.5 s at inputs of height 180: status.csv has every item's seconds and
    size, and the end of the run, summary.rst and page 1 name the slow size."""
    tmp_path, stderr, page1 = failed_run
    status = pd.read_csv(tmp_path / "results/recon/ae_slow/mine/status.csv").set_index("item_id")
    assert list(status["size"]) == ["172x256", "176x256", "180x200"]
    assert status.loc["p2", "seconds"] >= 2.5 > 10 * status.loc["p0", "seconds"]
    start = "ae_slow on mine: 1 item of 180x200 took 2."
    console = [line.strip() for line in stderr.splitlines()]
    assert "Items far slower at one input size (seconds per item in status.csv):" in console
    assert any(c.startswith(start) and c.endswith("models.ae_slow.item_timeout_s sets a limit")
               for c in console), stderr[-2000:]
    summary = (tmp_path / "results/summary.rst").read_text().replace("\\", "")
    assert "**Items far slower at one size**" in summary and start in summary
    assert "Items far slower at one size" in page1 and start in page1

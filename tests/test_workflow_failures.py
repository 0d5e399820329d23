"""Failed items are shown where a user looks: a model whose reconstructions come back at the
wrong size (the probe turned off, as a user might) fails items, and the end of the run, the
findings' front page (``results/summary.rst``) and page 1 of the PDF name the model, the set,
the count and the key to fix."""
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO
from PIL import Image
from test_probe import MODULE

LINE = ("my_vq on mine: 2 of 3 items failed: model returned 168x256 for 172x256: check "
        "models.my_vq.downsample (4); model returned 176x200 for 180x200: check "
        "models.my_vq.downsample (4)")


@pytest.mark.workflow
def test_failed_items_are_named_at_the_end_in_the_summary_and_on_page_one(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "my_vq.py").write_text(MODULE)
    sys.path.insert(0, str(code))
    try:
        import my_vq
        torch.manual_seed(0)
        torch.save(my_vq.TinyVQ().state_dict(), tmp_path / "tiny_vq.pt")
    finally:
        sys.path.remove(str(code))
        sys.modules.pop("my_vq", None)
    photos = tmp_path / "photos"
    photos.mkdir()
    rng = np.random.default_rng(0)
    # 176 is a multiple of 8: the only item the 8x model gives back at its size
    for k, (h, w) in enumerate([(172, 256), (176, 256), (180, 200)]):
        Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8)).save(photos / f"p{k}.png")
    config = {"run": {"probe_models": False},  # the probe would stop the run before any job
              "datasets": {"mine": {"type": "folder", "path": str(photos)}},
              "models": {"my_vq": {"type": "state_dict", "import_path": "my_vq:TinyVQ",
                                   "pythonpath": str(code),
                                   "state_dict": str(tmp_path / "tiny_vq.pt"),
                                   "family": "VQ", "downsample": 4, "codebook_size": 64}},
              "metrics": {"missing_weights": "n/a"}}
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "my.yaml", "--cores", "2"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"  {LINE}" in proc.stderr.splitlines()
    summary = (tmp_path / "results/summary.rst").read_text()
    assert "**Items that failed**" in summary and LINE.replace("_", "\\_") in summary
    page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1",  # poppler-utils (make setup)
                            str(tmp_path / "results/report.pdf"), "-"],
                           capture_output=True, text=True, check=True).stdout
    assert "Items that failed" in page1
    assert "my_vq on mine: 2 of 3 items failed" in " ".join(page1.split())

"""The MediBench branch end to end on bundled data: 2D and 3D sets, a 3D MONAI model built by the
test, bad volumes recorded per item, identity exact (PSNR inf, SSIM 1, SegSim 1, Dice 1) and a
degraded model strictly worse in every pillar's table, resumed without recomputation."""
import math
import subprocess
import sys

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import REPO

pytestmark = pytest.mark.workflow


def smk(workdir, *args):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", *args],
                          cwd=workdir, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from monai.networks.nets import AutoencoderKL

    work = tmp_path_factory.mktemp("medical_wf")
    vols = work / "vols"
    vols.mkdir()
    rng = np.random.default_rng(0)
    good = (rng.random((24, 24, 16)) * 800).astype(np.int16)
    nib.save(nib.Nifti1Image(good, np.diag([1.0, 1.0, 2.5, 1.0])), vols / "aniso.nii.gz")
    bad = rng.random((24, 24, 16)).astype(np.float64)
    bad[3, 3, 3] = np.inf
    nib.save(nib.Nifti1Image(bad, np.eye(4)), vols / "inf.nii.gz")
    (vols / "cut.nii.gz").write_bytes((vols / "aniso.nii.gz").read_bytes()[:300])
    net = {"spatial_dims": 3, "in_channels": 1, "out_channels": 1, "channels": [8, 8],
           "latent_channels": 2, "num_res_blocks": 1, "attention_levels": [False, False],
           "norm_num_groups": 4}
    torch.manual_seed(0)
    torch.save(AutoencoderKL(**net).state_dict(), work / "kl3d.pt")
    models3 = ["identity", "bicubic_x4", "kl3d"]
    config = {
        "datasets": {
            "med2d": {"type": "skimage_medical", "protocol": "model_size", "size": 128,
                      "images": ["immunohistochemistry", "retina", "cell"], "patch": 32,
                      "models": ["identity", "jpeg_q30", "bicubic_x4"]},
            "mri": {"type": "nifti", "bundled": ["anatomical.nii"], "path": str(vols),
                    "intensity": {"mode": "percentiles"}, "modality": "MRI", "models": models3},
            "synth": {"type": "synthetic_volumes", "count": 8, "volume_size": 24,
                      "modality": "Synthetic", "models": models3},
        },
        "models": {"identity": {"type": "identity"}, "jpeg_q30": {"type": "jpeg", "quality": 30},
                   "bicubic_x4": {"type": "resample", "factor": 4},
                   "kl3d": {"type": "monai_kl", "checkpoint": str(work / "kl3d.pt"), "network": net}},
        "medical": {"roi_size": 16, "latent_utility": {"size": 128, "folds": 2, "cnn_3d": "SEResNet50"}},
        "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False}},
        "tables": {"bootstrap": {"samples": 200}},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    smk(work)
    second = smk(work, "-n")
    return work, second


def table(work, name):
    return pd.read_csv(work / f"results/tables/{name}.csv")


def md(work, name):
    return (work / f"results/tables/{name}.md").read_text()


def test_fidelity_identity_exact_and_degraded_worse(run):
    work, _ = run
    t2 = table(work, "medibench_2d_fidelity").set_index("Dataset")
    # one dataset whose items carry three modalities: one row per (dataset, modality)
    assert set(t2.index) == {"med2d (histology)", "med2d (fundus)", "med2d (microscopy)", "Average"}
    assert (t2["identity.psnr"] == math.inf).all() and (t2["identity.ssim"] == 1).all()
    assert (t2["bicubic_x4.ssim"] < 1).all() and (t2["jpeg_q30.psnr"] < 60).all()
    assert "inf/1.000" in md(work, "medibench_2d_fidelity")
    t3 = table(work, "medibench_3d_fidelity").set_index("Dataset")
    mri = "mri (MRI)"
    assert t3.loc[mri, "identity.psnr"] == math.inf and t3.loc[mri, "identity.ssim"] == 1
    for model in ("bicubic_x4", "kl3d"):
        assert t3.loc[mri, f"{model}.psnr"] < 60 and t3.loc[mri, f"{model}.ssim"] < 1


def test_structure_pillar(run):
    work, _ = run
    t = table(work, "medibench_3d_structure").set_index("Dataset")
    rows = ["mri (MRI)", "synth (Synthetic)"]
    assert (t.loc[rows, "identity.segsim"] == 1).all()
    assert (t.loc[rows, "identity.dice"] == 1).all()
    assert (t.loc[rows, "bicubic_x4.segsim"] < 1).all()
    assert t.loc["mri (MRI)", "identity.gmm_conf"] > 0.5  # the gmm segmenter's confidence
    assert "GMM-conf" in md(work, "medibench_3d_structure")
    per_item = pd.read_csv(work / "results/metrics/identity/mri/structure.csv").set_index("item_id")
    assert per_item.loc["anatomical", "hd95_mean"] == 0
    assert "segmenter: type=gmm" in md(work, "medibench_3d_structure").lower() or \
        "Segmenter: type=gmm" in md(work, "medibench_3d_structure")


def test_bad_volumes_are_recorded_and_the_rest_scored(run):
    work, _ = run
    m = pd.read_csv(work / "results/datasets/mri/manifest.csv", keep_default_na=False).set_index("item_id")
    assert m.loc["aniso", "status"] == "ok" and "anisotropic" in m.loc["aniso", "notes"]
    assert "NaN/Inf" in m.loc["inf", "reason"] and "cannot read" in m.loc["cut", "reason"]
    q = pd.read_csv(work / "results/metrics/kl3d/mri/image_quality.csv").set_index("item_id")
    assert q.loc["anatomical", "psnr"] > 0 and q.loc["aniso", "psnr"] > 0
    assert q.loc["inf", "status"] == "error"
    text = md(work, "medibench_3d_fidelity")
    assert "2 of 4 items scored" in text and "NaN/Inf" in text  # the footnote says why


def test_latent_utility_tables(run):
    work, _ = run
    c = table(work, "medibench_classifiers")
    ok = c[c["status"] == "ok"]
    assert {"identity", "bicubic_x4", "pixels", "ResNet-18 (random init)"} <= set(ok["features"])
    assert ok["Macro-AUC"].between(0, 1).all() and ok["Acc"].between(0, 1).all()
    jpeg = c[(c["dataset"] == "med2d") & (c["features"] == "jpeg_q30")]
    assert (jpeg["status"] == "unavailable").all() and jpeg["reason"].str.contains("not a tensor").all()
    resnet = c[c["features"] == "ResNet-18 (ImageNet)"]
    assert resnet["reason"].str.contains("roundtrip weights fetch").all()  # n/a with the fix
    assert set(c[c["dataset"] == "synth"]["features"]) >= {"kl3d", "SEResNet50 (random init)"}
    lat = table(work, "medibench_2d_latent")
    assert 0 <= lat.loc[0, "bicubic_x4.auc"] <= 1
    shapes = table(work, "medibench_latent_shapes").set_index("model")
    assert shapes.loc["bicubic_x4", "ratio_256"] == pytest.approx(3 * 64 * 64 / (3 * 256 * 256))


def test_panels_and_no_rerun(run):
    work, second = run
    for d in ("med2d", "mri", "synth"):
        assert (work / f"results/figures/medical/{d}.png").stat().st_size > 10_000
    assert "Nothing to be done" in second.stdout + second.stderr


def test_small_volume_sets_run_in_one_job_per_model(run):
    """The synthetic set (no path) went through each model's batched volume job; the set read
    from a folder through a job of its own per model."""
    work, _ = run
    for model in ("identity", "bicubic_x4", "kl3d"):
        batched = (work / f"logs/reconstruct_volume_sets/{model}.log").read_text()
        assert "volume set synth" in batched and "volume set mri" not in batched
        assert (work / f"logs/reconstruct_volumes/{model}/mri.log").is_file()
        assert not (work / f"logs/reconstruct_volumes/{model}/synth.log").exists()
    # the segmenter on the originals likewise: one job for the small sets, one for the folder
    segmented = (work / "logs/segment_original_sets/gmm.log").read_text()
    assert "synth: status counts" in segmented and "mri:" not in segmented
    assert (work / "logs/segment_original/gmm/mri.log").is_file()
    assert not (work / "logs/segment_original/gmm/synth.log").exists()

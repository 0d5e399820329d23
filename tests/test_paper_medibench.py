"""MediBench (paper 004) as the paper defines it: one test per finding, worked from the paper's
sections and tables, and the paper preset (configs/papers/medibench.yaml) planned with
``snakemake -n`` on stand-in files."""
import math
import os
import stat
import subprocess
import sys

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from PIL import Image

from roundtrip.core.manifest import read_manifest
from roundtrip.evals.medibench import latent_features as lu
from roundtrip.evals.medibench import tables as mt


def _fidelity_files(root, dataset, modality, psnr, ssim):
    """A manifest and an image_quality.csv for ``dataset`` with per-item PSNR/SSIM."""
    (root / f"results/datasets/{dataset}").mkdir(parents=True)
    ids = [f"{dataset}_{i}" for i in range(len(psnr))]
    pd.DataFrame({"item_id": ids, "path": [f"{i}.png" for i in ids], "status": "ok",
                  "reason": "", "modality": modality}).to_csv(
        root / f"results/datasets/{dataset}/manifest.csv", index=False)
    for model, shift in (("kl", 0.0), ("vq", -1.0)):
        (root / f"results/metrics/{model}/{dataset}").mkdir(parents=True)
        pd.DataFrame({"item_id": ids, "status": "ok", "reason": "",
                      "psnr": np.add(psnr, shift), "ssim": np.add(ssim, shift / 10)}).to_csv(
            root / f"results/metrics/{model}/{dataset}/image_quality.csv", index=False)


SPECS = {"kl": {"type": "small", "family": "continuous"}, "vq": {"type": "small", "family": "VQ"}}


def _fidelity_inputs(datasets):
    """The files :func:`_fidelity_files` wrote, keyed as the medical_tables rule passes them."""
    return {"manifests": {d: f"results/datasets/{d}/manifest.csv" for d in datasets},
            "quality": {(m, d): f"results/metrics/{m}/{d}/image_quality.csv"
                        for d in datasets for m in ("kl", "vq")}}


# -- 1. Rows of Table 1 are datasets ----------------------------------------------------------
def test_rows_are_datasets_not_pooled_modalities(tmp_path, monkeypatch):
    """Sec. 4.2, Tables 1 and 7: each row is one dataset. MedVAE's histopathology cell
    20.6/0.840 is PathMNIST (Table 7) while PCam reads 21.6/0.898; pooling both by item count
    (1 PathMNIST item per 4.56 PCam items, 7,180 : 32,768) would print one row of about
    21.4/0.888. Here: PathMNIST 2 items (mean 20.6/0.840), PCam 9 items (21.6/0.898): two rows
    with those means; the labelled pooled row only with pool_modalities, at the item-weighted
    (2 * 20.6 + 9 * 21.6) / 11 = 21.418 dB."""
    monkeypatch.chdir(tmp_path)
    _fidelity_files(tmp_path, "pathmnist", "Histopathology", [20.1, 21.1], [0.830, 0.850])
    _fidelity_files(tmp_path, "pcam", "Histopathology", [21.6] * 9, [0.898] * 9)
    inputs = _fidelity_inputs(["pathmnist", "pcam"])
    rows, cells = mt.fidelity_cells(["pathmnist", "pcam"], ["kl", "vq"],
                                    {"pathmnist": "Histopathology", "pcam": "Histopathology"}, {},
                                    **inputs)
    assert [k for k, _ in rows] == ["pathmnist", "pcam"]
    assert cells[("pathmnist", "kl")][0] == pytest.approx((20.6, 0.840))
    assert cells[("pcam", "kl")][0] == pytest.approx((21.6, 0.898))
    rows, cells = mt.fidelity_cells(["pathmnist", "pcam"], ["kl", "vq"],
                                    {"pathmnist": "Histopathology", "pcam": "Histopathology"}, {},
                                    pool_modalities=True, **inputs)
    pooled = "Pooled: Histopathology"
    assert dict(rows)[pooled].startswith("Pooled: Histopathology (2 datasets")
    assert cells[(pooled, "kl")][0][0] == pytest.approx((2 * 20.6 + 9 * 21.6) / 11)
    paths = mt.write_fidelity("fid", "t", ["pathmnist", "pcam"], ["kl", "vq"], SPECS,
                              {"pathmnist": "Histopathology", "pcam": "Histopathology"}, {},
                              tmp_path / "out", pool_modalities=True, **inputs)
    csv = pd.read_csv(paths[0]).set_index("Dataset")
    # the Average row averages the dataset rows only (the pooled row repeats their items)
    assert csv.loc["Average", "kl.psnr"] == pytest.approx((20.6 + 21.6) / 2)


# -- 2. 2D input sizes -------------------------------------------------------------------------
def test_2d_sets_run_at_the_papers_fixed_sizes():
    """App. A: "images are resized to 256x256 and 512x512" for every model (Tables 7, 8). An
    SDXL-class VAE declares a native size of 1024 (its sample_size): protocol model_size would
    feed it 1024x1024; protocol fixed feeds the dataset's size. A square 224x224 MedMNIST image
    is resized without a crop (the reference equals the plain resize); a 96x128 image is
    center-cropped to 96x96 first."""
    from roundtrip.core.protocols import prepare, resize
    from roundtrip.models.base import ModelInfo

    sdxl_like = ModelInfo(family="continuous", native_sizes=[(1024, 1024)], downsample=8)
    img = (np.random.default_rng(0).random((224, 224, 3)) * 255).astype(np.uint8)
    assert prepare(img, "model_size", sdxl_like, 256).x.shape[:2] == (1024, 1024)
    for size in (256, 512):
        prep = prepare(img, "fixed", sdxl_like, size)
        assert prep.x.shape[:2] == (size, size) and prep.reference.shape[:2] == (size, size)
        plain = np.clip(np.round(resize(img / 255.0, (size, size)) * 255), 0, 255)
        assert np.abs(prep.reference.astype(float) - plain).max() <= 1
    wide = np.zeros((96, 128, 3), np.uint8)
    wide[:, 16:112] = 200  # the centre 96 columns: the crop keeps only these
    assert prepare(wide, "fixed", sdxl_like, 256).reference.min() >= 199
    preset = yaml.safe_load((REPO / "configs/papers/medibench.yaml").read_text())
    sizes = {d["size"] for d in preset["datasets"].values() if d.get("protocol") == "fixed"}
    assert sizes == {256, 512}


# -- 3. SegQC with SynthSeg --------------------------------------------------------------------
FAKE_SYNTHSEG = '''#!{python}
"""Stand-in for mri_synthseg: labels on a 1 mm isotropic grid (label 1 where world x >= 4 mm),
QC scores 0.80 and 0.90."""
import sys
import nibabel as nib
import numpy as np
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
img = nib.load(args["--i"])
extent = np.array(img.shape) * np.abs(np.diag(img.affine)[:3])
shape = tuple(int(np.ceil(e)) for e in extent)
x = np.arange(shape[0])[:, None, None] + np.zeros(shape)
nib.save(nib.Nifti1Image((x >= 4).astype(np.int16), np.eye(4)), args["--o"])
open(args["--qc"], "w").write("subject,total,cortex\\nvol,0.80,0.90\\n")
'''


def test_synthseg_labels_resampled_to_the_input_grid(tmp_path):
    """Sec. 3.2 Pillar 2 (SegQC = SynthSeg's QC score averaged over regions; SegSim, Eq. 4,
    compares voxel labels). SynthSeg writes labels at 1 mm isotropic; on a 0.8 x 0.8 x 2 mm
    volume (10 x 10 x 4 voxels) the labels come back on the input grid by nearest neighbour:
    voxel i lies at x = 0.8 i mm, nearest 1 mm voxel round(0.8 i), label 1 from 4 mm on, so
    i >= 5 (0.8 * 5 = 4.0; 0.8 * 4 = 3.2 -> 3). SegQC = (0.80 + 0.90) / 2 = 0.85. The gmm
    segmenter's score is named GMM-conf in the table, SynthSeg's SegQC."""
    from roundtrip.evals.medibench.segment import build_segmenter

    exe = tmp_path / "mri_synthseg"
    exe.write_text(FAKE_SYNTHSEG.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    vol = np.random.default_rng(0).random((10, 10, 4)).astype(np.float32)
    path = tmp_path / "vol.nii.gz"
    nib.save(nib.Nifti1Image(vol, np.diag([0.8, 0.8, 2.0, 1.0])), path)
    seg = build_segmenter({"type": "synthseg", "command": str(exe)})
    labels, qc = seg.segment(vol, {}, path)
    assert labels.shape == (10, 10, 4)
    expected = (np.arange(10) >= 5).astype(np.int16)
    assert (labels == expected[:, None, None]).all()
    assert qc == pytest.approx(0.85)
    assert mt.qc_name({"type": "synthseg"}) == "SegQC"
    assert mt.qc_name({"type": "gmm", "classes": 3}) == "GMM-conf"


# -- 4. Units and layout -----------------------------------------------------------------------
def test_units_and_layout_follow_the_paper(tmp_path, monkeypatch):
    """Table 4 prints SegQC/SegSim x100 (MediTok on T1 MRI: 84.1/99.2, Sec. 4.2); Tables 1-3
    print PSNR with one decimal and SSIM with three, the per-column best in bold, model columns
    grouped as continuous VAEs, then VQ VAEs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/metrics/vq/t1").mkdir(parents=True)
    (tmp_path / "results/metrics/kl/t1").mkdir(parents=True)
    for model, (qc, sim) in {"vq": (0.841, 0.992), "kl": (0.845, 0.914)}.items():
        pd.DataFrame({"item_id": ["a"], "status": "ok", "reason": "", "segqc": qc,
                      "segsim": sim, "dice_mean": sim}).to_csv(
            tmp_path / f"results/metrics/{model}/t1/structure.csv", index=False)
    paths = mt.write_structure("s", "t", ["t1"], ["vq", "kl"], SPECS, {"t1": "MRI (Parkinson)"},
                               {}, {"type": "synthseg"}, "QC", tmp_path / "out",
                               structure={(m, "t1"): f"results/metrics/{m}/t1/structure.csv"
                                          for m in ("vq", "kl")})
    md = paths[1].read_text()
    assert "84.1/99.2/99.2" in md and "84.5/91.4/91.4" in md
    header = [line for line in md.splitlines() if line.startswith("| **Dataset**")][0]
    assert header.index("**kl**") < header.index("**vq**")  # Continuous before Discrete
    assert "| Continuous | Discrete |" in md
    assert pd.read_csv(paths[0]).loc[0, "vq.segsim"] == pytest.approx(0.992)  # CSV in [0, 1]
    _fidelity_files(tmp_path, "derma", "Dermatoscopy", [37.24, 37.16], [0.905, 0.905])
    _fidelity_files(tmp_path, "fundus", "Fundus", [41.04, 40.96], [0.964, 0.964])
    md = mt.write_fidelity("f", "t", ["derma", "fundus"], ["kl", "vq"], SPECS, {}, {},
                           tmp_path / "out", **_fidelity_inputs(["derma", "fundus"]))[1].read_text()
    assert "| derma (Dermatoscopy) | 37.2/0.905 |" in md
    assert "**41.0/0.964**" in md and "**40.0/0.864**" in md  # best SSIM per column
    tex = (tmp_path / "out/f.tex").read_text()
    assert r"\textbf{41.0/0.964}" in tex and r"\multicolumn{1}{c}{Continuous}" in tex


def test_section_citations_exist():
    """The paper has Sec. 3.1 (preliminaries) and 3.2 (pipeline, Eqs. 3-4, Pillars 1-3); no
    Sec. 3.3. No MediBench file cites it."""
    files = list((REPO / "src/roundtrip/evals/medibench").glob("*.py")) + [
        REPO / "scripts/latent_baselines.py", *(REPO / "report").glob("medibench_*.rst")]
    assert not [f.name for f in files if "Sec. 3.3" in f.read_text()]
    # Shared layers cite it by name (metric sources, the report's definitions).
    shared = [*(REPO / "src/roundtrip").rglob("*.py"), *(REPO / "docs").rglob("*.md")]
    assert not [str(f) for f in shared if "MediBench Sec. 3.3" in f.read_text()]


# -- 5. Splits ---------------------------------------------------------------------------------
def test_split_follows_the_papers_rule():
    """Sec. 4.1 and Tables 11-12: without an official split, one subject-wise held-out part
    (80/20; ds005892 fMRI: 6 of 55 subjects held out); 10-fold CV only for the T1w set; an
    official split is used as it is. Two items per subject: no subject on both sides."""
    groups = [f"sub-{i:02d}" for i in range(55) for _ in range(2)]
    y = np.array([i % 3 for i in range(55) for _ in range(2)])
    folds, text = lu.make_split(y, groups, None, {"held_out_subjects": 6})
    (train, test), = folds
    held = {groups[i] for i in test}
    assert len(held) == 6 and not held & {groups[i] for i in train}
    assert set(y[test]) == {0, 1, 2} and text == "subject-wise hold-out: 6 of 55 subjects"
    folds, text = lu.make_split(y[:20], groups[:20], None, {})  # 10 subjects, 80/20
    assert len(folds) == 1 and len({groups[i] for i in folds[0][1]}) == 2
    folds, text = lu.make_split(y, groups, None, {"split": "cv", "folds": 10})
    assert len(folds) == 10 and text.startswith("10-fold subject-wise CV")
    assert sorted(np.concatenate([t for _, t in folds])) == list(range(110))
    folds, text = lu.make_split(y[:4], groups[:4], ["train", "train", "test", "test"], {})
    assert list(folds[0][1]) == [2, 3] and text.startswith("official split")
    with pytest.raises(ValueError, match="unknown"):
        lu.make_split(y, groups, None, {"split": "kfold"})


# -- 6. One block per input size ---------------------------------------------------------------
def test_2d_tables_print_one_block_per_size(tmp_path, monkeypatch):
    """Table 1 is at 256x256 only, Table 8 at 512x512; the preset runs every 2D set at both
    (``pathmnist_256``, ``pathmnist_512``). Worked case, SDXL's PathMNIST and DermaMNIST cells of
    Tables 7 and 8: 26.0/0.740 and 37.2/0.905 at 256, 32.2/0.911 and 40.3/0.962 at 512. One
    Average row over all four rows read 33.9/0.880 (a mix of sizes, in no table of the paper)
    and bolded only the 512 rows; now each size has its own Average, 31.6/0.823 at 256 (Table
    1's layout) and 36.2/0.937 at 512, and its own bold cell. No Average cell carries a
    footnote: each used to read "not computed"."""
    monkeypatch.chdir(tmp_path)
    cells = {"pathmnist_256": (26.0, 0.740), "dermamnist_256": (37.2, 0.905),
             "pathmnist_512": (32.2, 0.911), "dermamnist_512": (40.3, 0.962)}
    for d, (psnr, ssim) in cells.items():
        _fidelity_files(tmp_path, d, d.split("_")[0], [psnr] * 2, [ssim] * 2)
    order = ["pathmnist_256", "pathmnist_512", "dermamnist_256", "dermamnist_512"]
    sizes = {d: int(d.rsplit("_", 1)[1]) for d in order}
    inputs = _fidelity_inputs(order)
    before = pd.read_csv(mt.write_fidelity("old", "t", order, ["kl", "vq"], SPECS, {}, {},
                                           tmp_path / "out", **inputs)[0]).set_index("Dataset")
    assert before.loc["Average", "kl.psnr"] == pytest.approx(33.925)
    paths = mt.write_fidelity("fid", "t", order, ["kl", "vq"], SPECS, {}, {}, tmp_path / "out",
                              blocks=mt.size_blocks(order, sizes), **inputs)
    csv = pd.read_csv(paths[0])
    assert list(csv["Size"]) == ["256x256"] * 3 + ["512x512"] * 3
    assert list(csv["Dataset"]) == ["pathmnist_256 (pathmnist)", "dermamnist_256 (dermamnist)",
                                    "Average (256x256)", "pathmnist_512 (pathmnist)",
                                    "dermamnist_512 (dermamnist)", "Average (512x512)"]
    avg = csv.set_index("Dataset")
    assert avg.loc["Average (256x256)", ["kl.psnr", "kl.ssim"]].tolist() == \
        pytest.approx([31.6, 0.8225])
    assert avg.loc["Average (512x512)", ["kl.psnr", "kl.ssim"]].tolist() == \
        pytest.approx([36.25, 0.9365])
    md = paths[1].read_text()
    assert "| *256x256* |" in md and "| *512x512* |" in md
    assert "**37.2/0.905**" in md and "**40.3/0.962**" in md  # best SSIM within each size
    assert "| Average (256x256) | 31.6/0.823 |" in md  # no footnote mark on the average
    assert not [line for line in md.splitlines() if line.startswith("[") and "] Average" in line]
    assert "not computed" not in md
    # the report's findings read the 256x256 block's Average row (Table 1)
    from roundtrip.evals.medibench.findings import column_means
    from roundtrip.report.findings import RunResults

    means = column_means(RunResults(tables={"medibench_2d_fidelity": paths[0]}),
                         "medibench_2d_fidelity", "psnr")
    assert means == pytest.approx({"kl": 31.6, "vq": 30.6})


def test_a_single_size_keeps_one_table(tmp_path, monkeypatch):
    """The default run's 2D sets are all at 256: one block, labelled ``Average``, no Size
    column; a cell that is not computed still says so, the Average row does not."""
    monkeypatch.chdir(tmp_path)
    _fidelity_files(tmp_path, "a", "x", [30.0], [0.9])
    inputs = _fidelity_inputs(["a"])
    del inputs["quality"][("vq", "a")]
    with pytest.raises(KeyError):  # a (model, dataset) that runs needs its file
        mt.write_fidelity("f", "t", ["a"], ["kl", "vq"], SPECS, {}, {}, tmp_path / "o", **inputs)
    paths = mt.write_fidelity("f", "t", ["a"], ["kl", "vq"], SPECS, {}, {("vq", "a"): "not run"},
                              tmp_path / "o", blocks={"a": "256x256"}, **inputs)
    csv = pd.read_csv(paths[0])
    assert "Size" not in csv and list(csv["Dataset"]) == ["a (x)", "Average"]
    md = paths[1].read_text()
    assert "a (x), vq: not run" in md and "Average, " not in md


# -- 7. Fidelity on the held-out part --------------------------------------------------------
def _split_set(root, dataset, splits, psnr, ssim, subjects=None, labels=None):
    """A manifest with split/subject/label columns and one model's image_quality.csv."""
    (root / f"results/datasets/{dataset}").mkdir(parents=True)
    ids = [f"i{k}" for k in range(len(psnr))]
    pd.DataFrame({"item_id": ids, "path": [f"{i}.png" for i in ids], "status": "ok",
                  "reason": "", "modality": "m", "split": splits,
                  "subject": subjects or ids, "label": labels or ["a"] * len(ids)}).to_csv(
        root / f"results/datasets/{dataset}/manifest.csv", index=False)
    (root / f"results/metrics/kl/{dataset}").mkdir(parents=True)
    pd.DataFrame({"item_id": ids, "status": "ok", "reason": "", "psnr": psnr, "ssim": ssim}
                 ).to_csv(root / f"results/metrics/kl/{dataset}/image_quality.csv", index=False)
    return ({dataset: f"results/datasets/{dataset}/manifest.csv"},
            {("kl", dataset): f"results/metrics/kl/{dataset}/image_quality.csv"})


def test_fidelity_is_scored_on_the_held_out_part(tmp_path, monkeypatch):
    """MediBench reports fidelity "on held-out data" (Sec. 1), on "the official test set" where
    there is one (Sec. 4.1). Worked case: two train items at 30 dB / 0.950 and two test items
    at 20 dB / 0.800: the test split reads 20.0/0.800, the mean over all four items 25.0/0.875.
    Without an official split, the held-out subjects of the classifiers' split are scored (every
    item of theirs): 4 subjects, one held out (test_fraction 0.2 rounds to 1)."""
    from roundtrip.evals.medibench.splits import held_out_items

    monkeypatch.chdir(tmp_path)
    manifests, quality = _split_set(tmp_path, "path", ["train", "train", "test", "test"],
                                    [30.0, 30.0, 20.0, 20.0], [0.95, 0.95, 0.80, 0.80])
    _, cells = mt.fidelity_cells(["path"], ["kl"], {}, {}, manifests=manifests, quality=quality)
    assert cells[("path", "kl")][0] == pytest.approx((25.0, 0.875))  # every item
    held = mt.held_out_parts(["path"], {"path": {}}, manifests=manifests)
    assert held["path"] == ({"i2", "i3"}, "official test split (2 of 4 items)")
    _, cells = mt.fidelity_cells(["path"], ["kl"], {}, {}, manifests=manifests, quality=quality,
                                 held_out={"path": held["path"][0]})
    assert cells[("path", "kl")][0] == pytest.approx((20.0, 0.800))
    md = mt.write_fidelity("f", "t", ["path"], ["kl"], SPECS, {}, {}, tmp_path / "o",
                           manifests=manifests, quality=quality, held_out=held)[1].read_text()
    assert "| path (m) | 20.0/0.800 |" in md and "path: official test split (2 of 4 items)" in md
    # no official split: the classifiers' held-out subjects, all their items
    manifests, quality = _split_set(tmp_path, "derm", [""] * 8, [30.0] * 8, [0.9] * 8,
                                    subjects=[f"p{k // 2}" for k in range(8)],
                                    labels=["a", "a", "b", "b"] * 2)
    manifest = read_manifest(manifests["derm"])
    ids, text = held_out_items(manifest, {"split": "holdout", "test_fraction": 0.2, "seed": 0})
    y = np.array([0, 0, 1, 1] * 2)
    (_, test), = lu.make_split(y, [f"p{k // 2}" for k in range(8)], None, {})[0]
    assert ids == {f"i{k}" for k in test} and len(ids) == 2
    assert text == "held-out subjects (1 of 4; 2 of 8 items)"
    # cv and sets without labels: every item is held out once, or there is no split
    assert held_out_items(manifest, {"split": "cv", "folds": 4}) == \
        (None, "all 8 items (4-fold CV: every item is held out once)")
    assert held_out_items(manifest, None) == (None, "all 8 items (no labels: no split)")


# -- 8. Official splits: the train part trains -------------------------------------------------
def test_official_split_trains_on_the_train_part_only():
    """Table 11 counts the official train parts (PCam 262,144 of 327,680; PathMNIST 89,996 of
    107,180): the validation part is not trained on. Worked case, PCam's official parts
    (262,144 train, 32,768 valid, 32,768 test): the classifiers train on 262,144 items (before:
    294,912, train and valid together) and test on 32,768."""
    splits = ["train"] * 262_144 + ["valid"] * 32_768 + ["test"] * 32_768
    y = np.zeros(len(splits), int)
    groups = [str(i) for i in range(len(splits))]
    (train, test), = lu.make_folds(y, groups, splits)
    assert len(train) == 262_144 and len(test) == 32_768
    assert train.max() == 262_143 and test.min() == 294_912
    folds, text = lu.make_split(y, groups, splits, {})
    assert text == ("official split: 262144 train / 32768 test items; valid (32768 items) not "
                    "used")
    folds, text = lu.make_split(y[:6], groups[:6], ["train", "val", "train", "test", "val", ""], {})
    assert list(folds[0][0]) == [0, 2] and list(folds[0][1]) == [3]
    assert text.endswith("val (2 items) not used; (none) (1 items) not used")
    with pytest.raises(ValueError, match="train and test"):
        lu.make_folds(y[:3], groups[:3], ["val", "test", "test"])


def test_coltea_volumes_carry_phase_labels_and_ten_subjects_are_held_out(tmp_path):
    """Table 12: Coltea-Lung-CT-100W, contrast phase classification (non-contrast, venous,
    arterial), "10 subjects held out". A nifti set with a labels CSV (path, label = phase,
    subject = patient) carries the labels, so latent utility runs on it (before, the preset's
    Coltea set had no labels and Table 5's CT row was never produced); the split holds out 10
    whole patients, every phase of each: here 30 patients x 3 phases, 10 held out, 30 volumes
    tested."""
    from roundtrip.datasets import build_dataset
    from roundtrip.evals.medibench.latent_utility import samples_3d
    from roundtrip.evals.medibench.splits import held_out_items

    root = tmp_path / "coltea"
    rows = []
    rng = np.random.default_rng(0)
    for k in range(30):
        for phase in ("NATIVE", "ARTERIAL", "VENOUS"):
            _nifti(root / f"patient{k:03d}" / f"{phase}.nii.gz", (4, 4, 2))
            rows.append({"path": f"patient{k:03d}/{phase}.nii.gz", "label": phase,
                         "subject": f"patient{k:03d}"})
    rng.shuffle(rows)
    pd.DataFrame(rows).to_csv(root / "labels.csv", index=False)
    spec = {"type": "nifti", "path": str(root), "labels_csv": str(root / "labels.csv"),
            "intensity": {"mode": "window", "window": [-1000, 1000]}, "modality": "CT (Coltea)"}
    manifest = build_dataset("coltea", spec, tmp_path / "built")
    assert (manifest["status"] == "ok").all() and len(manifest) == 90
    assert manifest.loc[manifest["item_id"] == "patient007__VENOUS", "label"].item() == "VENOUS"
    assert manifest.loc[manifest["item_id"] == "patient007__VENOUS", "subject"].item() == \
        "patient007"
    vols, labels, groups, splits, skipped = samples_3d(tmp_path / "built/manifest.csv")
    y, classes, _ = lu.encode_labels(labels)
    assert classes == ["ARTERIAL", "NATIVE", "VENOUS"] and splits is None and skipped == 0
    folds, text = lu.make_split(y, groups, None, {"held_out_subjects": 10})
    assert text == "subject-wise hold-out: 10 of 30 subjects"
    test_subjects = {groups[i] for i in folds[0][1]}
    assert len(folds[0][1]) == 30 and not test_subjects & {groups[i] for i in folds[0][0]}
    ids, _ = held_out_items(read_manifest(tmp_path / "built/manifest.csv"),
                            {"held_out_subjects": 10})
    assert len(ids) == 30  # fidelity: the same 10 patients' 30 volumes
    preset = yaml.safe_load((REPO / "configs/papers/medibench.yaml").read_text())
    coltea = preset["datasets"]["coltea"]
    assert coltea["labels_csv"] == "coltea/labels.csv"
    assert coltea["latent_utility"] == {"held_out_subjects": 10}
    with pytest.raises(ValueError, match="not NIfTI files"):
        from roundtrip.datasets.medical import nifti_sources
        nifti_sources(root, labels=pd.DataFrame({"path": ["missing.nii.gz"], "label": ["x"]}))


# -- 9. The preset plans on stand-in files -----------------------------------------------------
def _png(path, size=8):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size, size, 3), 120, np.uint8)).save(path)


def _nifti(path, shape=(8, 8, 6)):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(0).random(shape).astype(np.float32)
    nib.save(nib.Nifti1Image(data, np.eye(4)), path)


def _stand_ins(root):
    """Tiny files at every path the preset names (under data_root)."""
    rng = np.random.default_rng(0)
    (root / "medmnist").mkdir(parents=True)
    for name in ("pathmnist", "dermamnist", "retinamnist"):
        np.savez(root / f"medmnist/{name}_224.npz",
                 **{f"{s}_images": rng.integers(0, 255, (4, 8, 8, 3), dtype=np.uint8)
                    for s in ("train", "val", "test")},
                 **{f"{s}_labels": np.array([[0], [1], [0], [1]]) for s in ("train", "val", "test")})
    for folder in ("pcam", "derm12345", "ddr", "chexpert_plus", "slake"):
        for i in range(4):
            _png(root / folder / f"{i}.png")
        pd.DataFrame({"path": [f"{i}.png" for i in range(4)], "label": ["a", "b", "a", "b"],
                      "subject": [f"p{i}" for i in range(4)]}).to_csv(root / folder / "labels.csv",
                                                                      index=False)
    for ds, column in (("ds005892", "group"), ("ds005700", "emotion")):
        (root / ds).mkdir(parents=True)
        pd.DataFrame({"participant_id": ["sub-01", "sub-02"], column: ["HC", "PD"]}).to_csv(
            root / ds / "participants.tsv", sep="\t", index=False)
        for sub in ("sub-01", "sub-02"):
            _nifti(root / ds / sub / "func" / f"{sub}_task-rest_bold.nii.gz", (8, 8, 6, 2))
            _nifti(root / ds / sub / "anat" / f"{sub}_T1w.nii.gz")
    case = "BraTS-GLI-00000-000"
    _nifti(root / "brats2023" / case / f"{case}-t1n.nii.gz")
    _nifti(root / "brats2023" / case / f"{case}-seg.nii.gz")
    for patient in ("p001", "p002"):
        for phase in ("NATIVE", "ARTERIAL", "VENOUS"):
            _nifti(root / "coltea" / patient / f"{phase}.nii.gz")
    pd.DataFrame({"path": [f"{p}/{ph}.nii.gz" for p in ("p001", "p002")
                           for ph in ("NATIVE", "ARTERIAL", "VENOUS")],
                  "label": ["NATIVE", "ARTERIAL", "VENOUS"] * 2,
                  "subject": ["p001"] * 3 + ["p002"] * 3}).to_csv(root / "coltea/labels.csv",
                                                                 index=False)


def _tiny_vaes(root):
    """Random tiny diffusers AutoencoderKL and VQModel folders (stand-ins for the weights)."""
    from diffusers import AutoencoderKL, VQModel

    common = {"block_out_channels": (8,), "down_block_types": ("DownEncoderBlock2D",),
              "up_block_types": ("UpDecoderBlock2D",), "layers_per_block": 1,
              "norm_num_groups": 4, "latent_channels": 4, "sample_size": 1024}
    AutoencoderKL(**common).save_pretrained(root / "sdxl_vae")
    VQModel(**common, num_vq_embeddings=16).save_pretrained(root / "vqgan")


@pytest.mark.workflow
def test_paper_preset_plans_on_stand_in_files(tmp_path):
    """configs/papers/medibench.yaml with data_root, the VAEs and mri_synthseg pointed at
    stand-ins: ``snakemake -n`` plans every (model, dataset) at 256 and 512 and the tables."""
    data = tmp_path / "data"
    _stand_ins(data)
    _tiny_vaes(tmp_path / "weights")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "mri_synthseg"
    exe.write_text(FAKE_SYNTHSEG.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    preset = yaml.safe_load((REPO / "configs/papers/medibench.yaml").read_text())
    preset["data_root"] = str(data)
    for name in ("sdxl_vae", "vqgan"):
        preset["models"][name]["weights"] = str(tmp_path / "weights" / name)
    (tmp_path / "work").mkdir()
    preset.setdefault("run", {})["probe_models"] = False  # stand-in weight files do not load
    (tmp_path / "work/preset.yaml").write_text(yaml.safe_dump(preset))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "preset.yaml", "-n", "--cores", "1"],
                          cwd=tmp_path / "work", capture_output=True, text=True,
                          env=dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "rule medical_tables:" in out and "rule reconstruct_volumes" in out
    for d in ("pathmnist_256", "pathmnist_512", "pcam_512", "ds005892_t1w", "coltea"):
        assert f"dataset={d}" in out or f"datasets/{d}/" in out
    # Table 5's CT row: Coltea carries labels, so its latent utility is planned
    assert "results/metrics/original/coltea/latent_utility.csv" in out
    assert "results/metrics/sdxl_vae/coltea/latent_utility.csv" in out
    total = [line for line in out.splitlines() if line.startswith("total")]
    print("planned:", total)
    assert total and int(total[0].split()[-1]) > 40

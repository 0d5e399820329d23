"""Structure pillar: SegSim (MediBench Eq. 4), Dice and HD95 against direct computations and
MONAI, the offline segmenters, SynthSeg's QC CSV through a stand-in program, and a MONAI bundle
built by the test."""
import json
import stat
import sys

import nibabel as nib
import numpy as np
import pytest
import torch

from roundtrip.datasets.medical import read_volume
from roundtrip.datasets.volumes import bundled_nifti, load_volume, to_unit_range
from roundtrip.evals.medibench.segment import (
    GmmSegmenter,
    MonaiBundleSegmenter,
    OtsuSegmenter,
    SegmenterUnavailable,
    SynthSegSegmenter,
    build_segmenter,
    parse_synthseg_qc,
)
from roundtrip.metrics.segmentation import segsim, structure_metrics


@pytest.fixture(scope="module")
def mri():
    return to_unit_range(load_volume(bundled_nifti("anatomical.nii")).data, "percentiles")


def test_segsim_and_dice_by_hand():
    a = np.zeros((10, 10, 10), np.int16)
    a[:5] = 4  # a FreeSurfer-like id: remapped to a contiguous label internally
    a[5:, :5] = 17
    b = a.copy()
    b[0] = 17  # 100 voxels of label 4 read as 17
    m = structure_metrics(a, b)
    assert m["segsim"] == pytest.approx(0.9)
    assert m["dice_4"] == pytest.approx(2 * 400 / (500 + 400))
    assert m["dice_17"] == pytest.approx(2 * 250 / (250 + 350))
    assert m["dice_mean"] == pytest.approx((m["dice_4"] + m["dice_17"]) / 2)
    same = structure_metrics(a, a, (2.0, 2.0, 2.0))
    assert same["segsim"] == 1 and same["dice_mean"] == 1 and same["hd95_mean"] == 0
    with pytest.raises(ValueError, match="shape"):
        segsim(a, a[:5])


def test_hd95_matches_monai_in_mm():
    from monai.metrics import compute_hausdorff_distance

    a = np.zeros((20, 20, 20), np.int16)
    a[5:15, 5:15, 5:15] = 1
    b = np.roll(a, 3, axis=0)
    m = structure_metrics(a, b, (2.0, 1.0, 1.0))
    ref = compute_hausdorff_distance(torch.from_numpy(b == 1)[None, None].float(),
                                     torch.from_numpy(a == 1)[None, None].float(),
                                     percentile=95, spacing=[2.0, 1.0, 1.0])
    assert m["hd95_mean"] == pytest.approx(float(ref), rel=1e-5) and m["hd95_mean"] >= 6.0


def test_label_missing_in_the_reconstruction_scores_zero():
    a = np.zeros((12, 12, 12), np.int16)
    a[2:6, 2:6, 2:6], a[7:10, 7:10, 7:10] = 1, 2
    b = np.where(a == 2, 0, a).astype(np.int16)
    m = structure_metrics(a, b)
    assert m["dice_2"] == 0 and m["dice_1"] == 1 and m["dice_mean"] == 0.5


def test_gmm_segmenter_on_bundled_mri(mri):
    seg = GmmSegmenter(classes=3)
    params = json.loads(json.dumps(seg.fit(mri)))  # parameters survive the JSON file
    labels, qc = seg.segment(mri, params)
    assert set(np.unique(labels)) == {0, 1, 2, 3} and 0.5 < qc <= 1
    means = [mri[labels == k].mean() for k in (1, 2, 3)]
    assert means == sorted(means)  # labels ordered by intensity
    again, qc2 = seg.segment(mri.copy(), params)
    assert np.array_equal(labels, again) and qc == qc2  # the same volume: SegSim = Dice = 1
    noisy = np.clip(mri + np.random.default_rng(0).normal(0, 0.1, mri.shape), 0, 1).astype(np.float32)
    worse = structure_metrics(labels, seg.segment(noisy, params)[0])
    assert worse["segsim"] < 0.95 and worse["dice_mean"] < 0.95


def test_otsu_segmenter(mri):
    seg = OtsuSegmenter(classes=3)
    labels, qc = seg.segment(mri, seg.fit(mri))
    assert set(np.unique(labels)) == {0, 1, 2, 3} and np.isnan(qc)


def test_synthseg_through_a_stand_in_program(tmp_path, mri):
    """A script with SynthSeg's command line writes labels and a QC CSV; we parse both."""
    prog = tmp_path / "fake_synthseg"
    prog.write_text(f"""#!{sys.executable}
import sys, numpy as np, nibabel as nib
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
img = nib.load(a["--i"])
x = np.asarray(img.dataobj)
nib.save(nib.Nifti1Image((x > 0.5).astype(np.int16) * 2 + (x > 0.2), img.affine), a["--o"])
open(a["--qc"], "w").write("subject,general white matter,general grey matter,cerebellum\\n"
                           "s,0.9,0.8,0.7\\n")
""")
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    path = tmp_path / "v.nii.gz"
    nib.save(nib.Nifti1Image(mri, np.eye(4)), path)
    seg = build_segmenter({"type": "synthseg", "command": str(prog), "robust": False})
    labels, qc = seg.segment(read_volume(path), {}, path)
    assert qc == pytest.approx(0.8) and set(np.unique(labels)) <= {0, 1, 2, 3}
    assert parse_synthseg_qc(_qc(tmp_path)) == pytest.approx(0.5)
    with pytest.raises(SegmenterUnavailable, match="mri_synthseg"):
        SynthSegSegmenter("mri_synthseg_not_installed").check()


def _qc(tmp_path):
    p = tmp_path / "qc.csv"
    p.write_text("subject,a,b\nx,0.4,0.6\n")
    return p


def test_monai_bundle_from_a_local_directory(tmp_path, mri):
    from monai.networks.nets import UNet

    bundle = tmp_path / "bundle"
    (bundle / "configs").mkdir(parents=True)
    (bundle / "models").mkdir()
    net_def = {"_target_": "monai.networks.nets.UNet", "spatial_dims": 3, "in_channels": 1,
               "out_channels": 3, "channels": [4, 8], "strides": [2], "num_res_units": 0}
    (bundle / "configs/inference.json").write_text(json.dumps({"network_def": net_def}))
    torch.manual_seed(0)
    kwargs = {k: v for k, v in net_def.items() if k != "_target_"}
    torch.save(UNet(**kwargs).state_dict(), bundle / "models/model.pt")
    seg = MonaiBundleSegmenter(str(bundle), roi_size=16)
    labels, qc = seg.segment(mri, {})
    assert labels.shape == mri.shape and labels.max() <= 2 and np.isnan(qc)
    assert np.array_equal(labels, seg.segment(mri, {})[0])  # deterministic
    with pytest.raises(SegmenterUnavailable, match="models/model.pt"):
        MonaiBundleSegmenter(str(tmp_path / "nothing")).check()

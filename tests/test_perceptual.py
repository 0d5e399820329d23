"""LPIPS and FID/KID against the reference packages, with networks built in the test.

The ImageNet backbones and the FID Inception cannot be downloaded here, so the tests save
randomly initialised networks of the exact architectures into a temporary weights cache and
load them through the production path; lpips's shipped linear layers are real.
"""
import math

import lpips
import numpy as np
import pytest
import torch
import torchvision

from roundtrip.core.weights import WeightsMissing
from roundtrip.metrics.distribution import InceptionFeatures, fid, kid
from roundtrip.metrics.perceptual import LPIPS


@pytest.fixture(scope="module")
def alex_cache(tmp_path_factory):
    """A cache holding a random AlexNet under torchvision's file name; also a torch hub dir."""
    root = tmp_path_factory.mktemp("weights")
    torch.manual_seed(0)
    sd = torchvision.models.alexnet().state_dict()
    torch.save(sd, root / "alexnet-owt-7be5be79.pth")
    (root / "hub" / "checkpoints").mkdir(parents=True)
    torch.save(sd, root / "hub" / "checkpoints" / "alexnet-owt-7be5be79.pth")
    return root


def _batch(photos, names, size=(128, 160)):
    out = []
    for n in names:
        img = photos[n][: size[0], : size[1]]
        out.append(torch.from_numpy(img).permute(2, 0, 1).float() / 255)
    return torch.stack(out)


def test_lpips_equals_lpips_package(photos, degraded_pairs, alex_cache, monkeypatch):
    ours = LPIPS("alex", cache=alex_cache)
    # the reference: lpips's own constructor, which loads the backbone through torch hub
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(alex_cache / "hub"))
    ref = lpips.LPIPS(net="alex", verbose=False).eval()
    for name, x, y in degraded_pairs[:6]:
        x, y = x[:96, :128], y[:96, :128]
        a = ours(torch.from_numpy(x).permute(2, 0, 1)[None] / 255.0,
                 torch.from_numpy(y).permute(2, 0, 1)[None] / 255.0)
        with torch.no_grad():  # lpips.im2tensor maps uint8 to [-1, 1] itself
            b = ref(lpips.im2tensor(x), lpips.im2tensor(y)).flatten()
        assert a.shape == (1,)
        assert abs(float(a[0]) - float(b[0])) < 1e-5, name


def test_lpips_range_convention_matters(photos, alex_cache):
    """Feeding [0, 1] to the net (VTBench's bug) gives a different number than [-1, 1]."""
    m = LPIPS("alex", cache=alex_cache)
    x = _batch(photos, ["astronaut"])
    y = (x + 0.1 * torch.randn_like(x)).clamp(0, 1)
    right = float(m(x, y)[0])
    with torch.no_grad():
        wrong = float(m.model(x, y).flatten()[0])
    assert abs(right - wrong) > 1e-3
    assert float(m(x, x)[0]) == pytest.approx(0.0, abs=1e-7)


def test_lpips_missing_backbone_says_how_to_fetch(tmp_path):
    with pytest.raises(WeightsMissing, match="roundtrip weights fetch lpips-alex"):
        LPIPS("alex", cache=tmp_path)
    with pytest.raises(ValueError, match="net must be one of"):
        LPIPS("squeezenet", cache=tmp_path)


@pytest.fixture(scope="module")
def inception_path(tmp_path_factory):
    """torch-fidelity's Inception architecture with random weights, saved as a state dict."""
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

    class Unloaded(FeatureExtractorInceptionV3):
        def load_state_dict(self, *args, **kwargs):  # keep the random initialisation
            return None

    root = tmp_path_factory.mktemp("inception")
    torch.save({}, root / "empty.pth")
    torch.manual_seed(0)
    net = Unloaded("inception-v3-compat", ["2048"], feature_extractor_weights_path=str(root / "empty.pth"))
    path = root / "weights-inception-2015-12-05-6726825d.pth"
    torch.save(net.state_dict(), path)
    return path


def test_fid_kid_match_torchmetrics(photos, inception_path):
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3
    from torchmetrics.image.fid import FrechetInceptionDistance
    from torchmetrics.image.kid import KernelInceptionDistance

    feats = InceptionFeatures(inception_path)
    rng = np.random.default_rng(0)
    real, fake = [], []
    for img in photos.values():
        for k in range(3):  # 12 images per set from 4 photographs
            crop = img[k * 40: k * 40 + 200, k * 50: k * 50 + 220]
            noisy = np.clip(crop + rng.normal(0, 20, crop.shape), 0, 255).astype(np.uint8)
            real.append(torch.from_numpy(np.ascontiguousarray(crop)).permute(2, 0, 1))
            fake.append(torch.from_numpy(noisy).permute(2, 0, 1))
    fr = torch.cat([feats(r[None]) for r in real]).numpy()
    ff = torch.cat([feats(f[None]) for f in fake]).numpy()
    assert fr.shape == (12, 2048)

    net = FeatureExtractorInceptionV3("inception-v3-compat", ["2048"],
                                      feature_extractor_weights_path=str(inception_path))

    class Wrapped(torch.nn.Module):
        num_features = 2048

        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)[0]

    tm_fid = FrechetInceptionDistance(feature=Wrapped())
    tm_kid = KernelInceptionDistance(feature=Wrapped(), subset_size=12, subsets=3)
    for metric in (tm_fid, tm_kid):
        for r in real:
            metric.update(r[None], real=True)
        for f in fake:
            metric.update(f[None], real=False)
    assert fid(fr, ff) == pytest.approx(float(tm_fid.compute()), rel=1e-3)
    # subset size = set size: every subset is the whole set, so the estimates coincide
    assert kid(fr, ff, subset_size=12, subsets=3)[0] == pytest.approx(
        float(tm_kid.compute()[0]), rel=1e-4)
    assert fid(fr, fr) == pytest.approx(0.0, abs=1e-6)
    assert fid(fr, ff) > 0 and kid(fr, ff)[0] > kid(fr, fr)[0]


def test_fid_kid_need_two_samples():
    x = np.zeros((1, 8))
    assert math.isnan(fid(x, x))
    assert all(math.isnan(v) for v in kid(x, x))


def test_kid_spread_uses_subsets_smaller_than_the_set():
    """VTBench-sized sets: subsets as large as the set give std 0 always; the rows use half."""
    from roundtrip.evals.vtbench.perceptual import distribution_rows

    rng = np.random.default_rng(0)
    real, fake = rng.normal(size=(8, 16)), rng.normal(0.3, 1.0, size=(8, 16))
    assert kid(real, fake, subset_size=8, subsets=20)[1] < 1e-12  # the old behaviour: no spread
    rows = distribution_rows(real, fake, kid_subset_size=1000, kid_subsets=20).set_index("metric")
    assert rows.loc["kid_std", "value"] > 1e-3
    mean, std = kid(real, fake, subset_size=4, subsets=20)
    assert (rows.loc["kid", "value"], rows.loc["kid_std", "value"]) == (mean, std)
    assert "20 random subsets of 4 of the 8 images (half the set" in rows.loc["kid", "note"]
    assert rows.loc["fid", "note"] == ""
    small = distribution_rows(real, fake, kid_subset_size=3, kid_subsets=20).set_index("metric")
    assert small.loc["kid", "value"] == kid(real, fake, subset_size=3, subsets=20)[0]
    assert "subsets of 3 of the 8 images" in small.loc["kid", "note"]
    assert "half" not in small.loc["kid", "note"]


def test_released_lpips_and_fid_score_the_256_px_copies(photos, alex_cache):
    """The released evaluator's LPIPS and FID inputs are the 256 x 256 copies of both images
    (``lpips_vtbench``, ``fid``); roundtrip's LPIPS and FID (Image Size) score the images as
    they are; a pair already at 256 px is not passed through Inception twice."""
    from roundtrip.evals.vtbench.perceptual import _feature_pair, _lpips_pair
    from roundtrip.evals.vtbench.released import evaluated_view

    m = LPIPS("alex", cache=alex_cache)
    ref = photos["chelsea"]  # 300 x 451
    rec = np.clip(ref.astype(int) + 20, 0, 255).astype(np.uint8)

    def unit(a):
        return torch.from_numpy(a).permute(2, 0, 1)[None].float() / 255

    lp, lp_vtbench = _lpips_pair(m, ref, rec)
    assert lp == pytest.approx(float(m(unit(ref), unit(rec))[0]))
    expected = m(unit(evaluated_view(rec)), unit(evaluated_view(ref)), input_range="as_signed")
    assert lp_vtbench == pytest.approx(float(expected[0]))

    calls = []

    def features(batch):  # a stand-in for Inception: the mean of each channel
        calls.append(tuple(batch.shape[-2:]))
        return batch.float().mean(dim=(2, 3)).repeat(1, 683)[:, :2048]

    real, fake, real_256, fake_256 = _feature_pair(features, ref, rec)
    assert calls == [(300, 451), (300, 451), (256, 256), (256, 256)]
    assert np.allclose(real_256[:3], evaluated_view(ref).reshape(-1, 3).mean(axis=0), atol=1e-3)
    calls.clear()
    small = ref[:256, :256].copy()
    out = _feature_pair(features, small, small)
    assert calls == [(256, 256), (256, 256)] and np.array_equal(out[0], out[2])

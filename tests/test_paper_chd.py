"""CHD and CMMS against "Evaluating Generative Models via One-Dimensional Code Distributions":
one test per point where the paper's protocol is followed (held-out CMMS training, fragment
swapping, CHD-2D of 1D tokenizers), and the paper's preset (configs/papers/chd.yaml) planned with
``snakemake -n`` on stand-in files."""
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO
from PIL import Image

from roundtrip.core.config import ConfigError
from roundtrip.evals.chd import cmms as C
from roundtrip.evals.chd.training import ALLOW_KEY, image_keys, training_overlap
from roundtrip.metrics.tokens import CHD_2D_SEQUENCE_REASON, TokenHistogram, chd
from roundtrip.models.base import Adapter, ModelInfo
from roundtrip.evals.chd.plan import CMMS_TRAINING, training_datasets
from roundtrip.evals.chd.spec import CHD
from roundtrip.workflow.plan import Plan
from roundtrip.workflow.checks import validate_config


def _check_cmms_held_out(config):
    """CHD/CMMS's own config check (its spec), which refuses training on scored images."""
    CHD().check(Plan(config))

SCHEMA = str(REPO / "config.schema.yaml")


def _config(edit=None) -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    if edit:
        edit(config)
    validate_config(config, SCHEMA)  # schema defaults, as the workflow sees them
    return config


# -- 1. CMMS is trained on a set disjoint from every scored set --------------------------------
def test_cmms_training_set_is_disjoint_from_scored_sets(tmp_path):
    """Sec. 4.2, 5.1: CMMS is trained once (ImageNet) and applied without fine-tuning to other
    sets. The shipped config trains it on ``cmms_train`` and ``cmms_photos``, whose images share
    nothing with the scored sets (natural, natural_256, textures; sensitivity on natural); those
    sets are built, not reconstructed. Training on a scored set, or on a set sharing one image with it, is refused
    with a message naming the key that allows it."""
    config = _config()
    train = training_datasets(config)
    assert train == ["cmms_train", "cmms_photos"]  # not the reference tokenizer's sets
    plan = Plan(config)
    scored = CHD.view(plan).datasets + [CHD.view(plan).sensitivity_dataset]
    assert scored == ["natural", "natural_256", "textures", "natural"]
    assert training_overlap(train, scored, config["datasets"]) == []
    _check_cmms_held_out(config)  # no error
    for name in train:
        assert plan.roles[name] == CMMS_TRAINING
        assert name not in plan.recon_datasets + plan.image_datasets + plan.general_datasets

    def by_name(c):
        c["metrics"]["tokens"]["cmms"]["datasets"] = ["natural", "textures"]
    with pytest.raises(ConfigError, match=ALLOW_KEY) as err:
        _check_cmms_held_out(_config(by_name))
    assert "natural (scored set)" in str(err.value) and "textures (scored set)" in str(err.value)

    def by_image(c):
        c["datasets"]["cmms_train"]["images"] = ["moon", "astronaut"]
    with pytest.raises(ConfigError, match="cmms_train and natural share skimage:astronaut"):
        _check_cmms_held_out(_config(by_image))
    # packaged photographs are keyed by name, like scikit-image's
    assert image_keys("p", {"type": "package_photos", "images": ["china"]}) == {"package_photos:china"}
    # Folder sets: the reader recurses, so a folder inside the other's shares its images.
    nested = {"train": {"type": "folder", "path": str(tmp_path / "imagenet")},
              "val": {"type": "folder", "path": str(tmp_path / "imagenet/val")},
              "other": {"type": "folder", "path": str(tmp_path / "imagenet_v2")}}
    assert training_overlap(["train"], ["val", "other"], nested) == [
        f"train and val share the folder {tmp_path / 'imagenet/val'}"]

    def allowed(c):
        by_name(c)
        c["metrics"]["tokens"]["cmms"]["allow_overlap"] = True
    config = _config(allowed)
    _check_cmms_held_out(config)  # allowed explicitly: no error
    assert Plan(config).roles["natural"] != CMMS_TRAINING  # scored as asked, in-sample
    # the training images are read as crops are drawn (ImageNet-1K need not fit in memory)
    from roundtrip.core.manifest import write_manifest
    from roundtrip.evals.chd.training import ImageFiles

    arrays = [np.full((20, 30, 3), v, np.uint8) for v in (10, 200)]
    for i, arr in enumerate(arrays):
        Image.fromarray(arr).save(tmp_path / f"{i}.png")
    write_manifest([{"item_id": str(i), "path": f"{i}.png", "status": "ok", "reason": ""}
                    for i in range(2)] + [{"item_id": "x", "path": "", "status": "error",
                                           "reason": "unreadable"}], tmp_path)
    files = ImageFiles([tmp_path / "manifest.csv"])
    assert len(files) == 2 and all(np.array_equal(files[i], arrays[i]) for i in range(2))


# -- 2. Fragment swapping exchanges blocks; within an image they do not overlap ---------------
def _offsets(before: np.ndarray, after: np.ndarray):
    """For a grid of distinct ids: moved positions and, per moved position, where its new
    token came from (offset in rows, columns)."""
    h, w = before.shape
    moved = np.argwhere(after != before)
    src = np.array([divmod(int(after[y, x]), w) for y, x in moved])
    return moved, src - moved


def test_fragment_swap_exchanges_blocks_and_within_image_regions_do_not_overlap():
    """Sec. 4.2: "exchange spatially contiguous token blocks between images or between distant
    regions of the same image". Between two images, each receives the other's block (same
    size, p = block share of the grid). Within one image two blocks trade places: the moved
    positions are two equal rectangles related by one offset (d and -d) with no shared token.
    The old one-way copy filled a 9x9 block at (3, 3) of a 16x16 grid from (4, 4): offset (1, 1),
    64 of the 81 source tokens inside the target."""
    h = w = 16
    grid = np.arange(h * w).reshape(h, w)
    other = grid + h * w  # ids of the second image: 256..511
    for seed in range(200):
        rng = np.random.default_rng(seed)
        p = float(rng.uniform(0.02, C.P_MAX))
        a, b, share = C.swap_fragment(grid, other, p, rng)
        into_a, into_b = a[a >= h * w], b[b < h * w]
        assert len(into_a) == len(into_b) == round(share * h * w) > 0  # exchanged, both ways
        assert set(into_a.tolist()) == set(other.ravel()) - set(b[b >= h * w].tolist())
        assert set(into_b.tolist()) == set(grid.ravel()) - set(a[a < h * w].tolist())
        assert abs(share - p) < 0.1
        # within one image
        c, none, share = C.swap_fragment(grid, None, p, rng)
        assert none is None and sorted(c.ravel()) == list(range(h * w))  # a permutation
        moved, off = _offsets(grid, c)
        assert len(moved) == round(share * h * w)
        offsets = {tuple(o) for o in off}
        assert len(offsets) == 2
        d = next(iter(offsets))
        assert offsets == {d, (-d[0], -d[1])}
        block = moved[(off == d).all(axis=1)]
        bh, bw = np.ptp(block[:, 0]) + 1, np.ptp(block[:, 1]) + 1
        assert len(block) == bh * bw  # a rectangle
        assert abs(d[0]) >= bh or abs(d[1]) >= bw, (seed, d, bh, bw)  # no overlap
    # a 1D sequence (TiTok's [n]): two disjoint runs trade places
    seq = np.arange(128)
    s, _, share = C.swap_fragment(seq, None, 0.3, np.random.default_rng(0))
    moved = np.flatnonzero(s != seq)
    assert sorted(s) == list(range(128)) and len(moved) == round(share * 128) >= 30
    shift = {int(s[i]) - int(i) for i in moved}
    assert len(shift) == 2 and abs(next(iter(shift))) >= len(moved) // 2


# -- 3. CHD-2D of a 1D tokenizer: n/a, unless it declares a 2D layout -------------------------
class _Sequences(Adapter):
    """A stand-in 1D tokenizer: the given [B, n] ids, whatever the images."""

    name = "seq"

    def __init__(self, ids):
        self.ids = torch.as_tensor(ids)

    def encode(self, x):
        return self.ids[: x.shape[0]]

    def decode(self, latent):
        raise NotImplementedError("tokens only")

    def tokens(self, latent):
        return latent

    def info(self):
        return ModelInfo(family="VQ")


def test_one_dimensional_tokenizer_gets_chd_1d_and_chd_2d_is_na():
    """Sec. 4.1: CHD-2D (Eq. 10-13) counts right/down neighbours on a 2D grid; adjacency along a
    1D sequence is "an artificial order" the paper rejects. Sequences a = [0, 1, 2, 3] and
    b = [0, 1, 3, 3] (V = 4): unigrams (1/4, 1/4, 1/4, 1/4) and (1/4, 1/4, 0, 1/2), so Eq. 9
    gives CHD-1D = sqrt(((1/2)^2 + (1/2 - sqrt(1/2))^2) / 2) = 0.38268; CHD-2D and CHD (Eq. 14)
    are n/a. (Scored as 1 x 4 grids, CHD-2D was the successor-pair statistic: sqrt(2/3) =
    0.81650, CHD 0.59959.) With a declared 2 x 2 layout, Eq. 10-13 on [[0, 1], [2, 3]] and
    [[0, 1], [3, 3]]: each set has 8 symmetrized cells of 1/8 (b: (3, 3) holds 1/4); the sets
    share (0, 1), (1, 0), (1, 3), (3, 1), the rest differ by 1/2 on each side, so
    CHD-2D = sqrt(1/2) = 0.70711 and CHD = 0.54490."""
    a, b = np.array([0, 1, 2, 3]), np.array([0, 1, 3, 3])
    ha, hb = TokenHistogram(4), TokenHistogram(4)
    ha.add(a)
    hb.add(b)
    got = chd(ha, hb)
    expected_1d = math.sqrt((0.25 + (0.5 - math.sqrt(0.5)) ** 2) / 2)
    assert got["chd_1d"] == pytest.approx(expected_1d) == pytest.approx(0.38268, abs=1e-5)
    assert math.isnan(got["chd_2d"]) and math.isnan(got["chd"])
    assert CHD_2D_SEQUENCE_REASON.startswith("n/a:") and "metrics.tokens.layout" in \
        CHD_2D_SEQUENCE_REASON
    # tokenize keeps [B, n]; a declared layout lays the sequence out in raster order
    tok = _Sequences(np.stack([a, b]))
    images = np.zeros((2, 8, 8, 3), np.uint8)
    assert C.tokenize(tok, images).shape == (2, 4)
    grids = C.tokenize(tok, images, layout=(2, 2))
    np.testing.assert_array_equal(grids, [[[0, 1], [2, 3]], [[0, 1], [3, 3]]])
    with pytest.raises(ValueError, match="layout 3 x 2"):
        C.tokenize(tok, images, layout=(3, 2))
    ga, gb = TokenHistogram(4), TokenHistogram(4)
    ga.add(grids[0])
    gb.add(grids[1])

    def co(g):  # Eq. 10-12: right and down pairs, each normalized, symmetrized, averaged
        out = np.zeros((4, 4))
        for pairs in ((g[:, :-1], g[:, 1:]), (g[:-1, :], g[1:, :])):
            m = np.zeros((4, 4))
            np.add.at(m, (pairs[0].ravel(), pairs[1].ravel()), 1)
            m /= m.sum()
            out += (m + m.T) / 2 / 2
        return out
    d2 = np.linalg.norm(np.sqrt(co(grids[0])) - np.sqrt(co(grids[1]))) / math.sqrt(2)
    got = chd(ga, gb)
    assert got["chd_2d"] == pytest.approx(d2) and got["chd"] == pytest.approx((expected_1d + d2) / 2)
    assert d2 == pytest.approx(math.sqrt(0.5)) and got["chd"] == pytest.approx(0.54490, abs=1e-5)


# -- 4. CMMS epochs: every training image once, fresh pixel distortions -----------------------
class _PatchCodes(Adapter):
    """A stand-in 2D tokenizer: the mean grey level of each 8 x 8 patch, in 16 codes."""

    name = "patches"

    def encode(self, x):
        return torch.nn.functional.avg_pool2d(x.mean(1, keepdim=True), 8)[:, 0]

    def decode(self, latent):
        raise NotImplementedError("tokens only")

    def tokens(self, latent):
        return ((latent + 1) / 2 * 15.999).long().clamp(0, 15)

    def info(self):
        return ModelInfo(family="VQ", codebook_size=16, downsample=8)


def _training_images(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.integers(0, 256, (40 + k % 3, 48, 3), dtype=np.uint8) for k in range(n)]


def test_cmms_epoch_visits_every_training_image_once():
    """Sec. 5.2: 200 epochs on ImageNet-1K; the preset's "one crop per ImageNet training image".
    Worked case, 50 training images and 50 crops per epoch: drawn with replacement (the former
    rule, image index ``rng.integers(50)`` per crop, seed 0) they come from 30 distinct images;
    ImageNet-sized, 63.2 % of the 1,281,167 images (1 - 1/e). An epoch now visits the images in
    a random order: 50 of 50, each once; 120 crops of 50 images visit each 2 or 3 times."""
    old = np.random.default_rng(0).integers(50, size=50)
    assert len(set(old.tolist())) == 30
    order = C.epoch_images(50, 50, np.random.default_rng(0))
    assert sorted(order.tolist()) == list(range(50))
    counts = np.bincount(C.epoch_images(50, 120, np.random.default_rng(0)), minlength=50)
    assert counts.min() == 2 and counts.max() == 3 and counts.sum() == 120
    with pytest.raises(ValueError, match="needs images"):
        C.epoch_images(0, 5, np.random.default_rng(0))
    # batches pass over the pool: each crop once per pass, the last batch holds the remainder
    batches = C.pass_batches(10, 4, np.random.default_rng(0))
    first = [next(batches) for _ in range(3)]
    assert [len(b) for b in first] == [4, 4, 2]
    assert sorted(np.concatenate(first).tolist()) == list(range(10))


def test_cmms_epochs_draw_fresh_pixel_variants_and_use_each_crop_once(monkeypatch):
    """Each epoch draws its crops and their pixel distortions afresh from the seed
    ``[seed, epoch]`` (the former pool was drawn once and its six versions per crop served every
    epoch); the same seed and epoch give the same pool (reproducible runs). With
    ``ceil(crops / batch_size)`` steps per epoch, as the paper preset has (200 x 2,503 steps for
    1,281,167 crops of batch 512), each epoch's batches use every crop exactly once. Worked case:
    5 images, 5 crops, batch 2, 2 epochs of 3 steps: crops 0-4 once in each epoch, the second
    epoch's pool requested once."""
    tok, images = _PatchCodes(), _training_images(5)
    settings = C.TrainSettings(crops=5, pixel_variants=2, batch_size=2, seed=3, steps=6,
                               epochs=2)
    pool0 = C.build_training_tokens(tok, images, 32, settings, epoch=0)
    again = C.build_training_tokens(tok, images, 32, settings, epoch=0)
    pool1 = C.build_training_tokens(tok, images, 32, settings, epoch=1)
    np.testing.assert_array_equal(pool0[0], again[0])
    np.testing.assert_array_equal(pool0[1], again[1])
    assert pool0[0].shape == (5, 3, 4, 4) and pool0[0].dtype == np.int32
    assert not np.array_equal(pool0[1], pool1[1])  # fresh severities
    assert not np.array_equal(pool0[0][:, 1:], pool1[0][:, 1:])  # fresh pixel versions
    used, requested = [], []
    real_batch = C._training_batch

    def recording(tokens, p, vocab, crops, rng):
        used.append((id(tokens), sorted(crops.tolist())))
        return real_batch(tokens, p, vocab, crops, rng)
    monkeypatch.setattr(C, "_training_batch", recording)

    def next_pool(epoch):
        requested.append(epoch)
        return pool1
    cfg = C.CMMSConfig(vocab_size=16, d_model=16, layers=1, heads=2)
    _, history = C.train_cmms(*pool0, cfg, settings, next_pool=next_pool)
    assert len(history) == 6 and requested == [1]
    for epoch, pool in enumerate((pool0, pool1)):
        crops = [c for t, b in used[3 * epoch:3 * epoch + 3] for c in b]
        assert sorted(crops) == list(range(5)) and {t for t, _ in used[3 * epoch:3 * epoch + 3]} \
            == {id(pool[0])}
    # the whole fit is reproducible run to run, to the last bit
    options = {"d_model": 16, "layers": 1, "heads": 2, "steps": 4, "batch_size": 2, "lr": 1e-3,
               "weight_decay": 0.01, "crops": 5, "pixel_variants": 2, "seed": 0, "epochs": 2}
    monkeypatch.setattr(C, "_training_batch", real_batch)
    a, ha = C.fit_cmms(tok, images, 32, options)
    b, hb = C.fit_cmms(tok, images, 32, options)
    assert ha == hb and all(torch.equal(x, y) for x, y in
                            zip(a.state_dict().values(), b.state_dict().values()))
    preset = yaml.safe_load((REPO / "configs/papers/chd.yaml").read_text())["metrics"]["tokens"]
    cmms = preset["cmms"]
    assert cmms["crops"] == 1_281_167 and cmms["epochs"] == 200 and cmms["pixel_variants"] == 1
    assert cmms["steps"] == cmms["epochs"] * math.ceil(cmms["crops"] / cmms["batch_size"])


# -- 5. Images are resized on their shorter side and centre-cropped, not squashed ------------
def test_non_square_images_are_center_cropped_not_squashed():
    """Sec. 4.1 tokenizes 256 x 256 images: the standard resize of the shorter side and centre
    crop (torchvision ``Resize(256)`` + ``CenterCrop(256)``; the filter is Lanczos, the
    project's one resize-then-crop, ``core.protocols.resize_shorter_then_crop``). Worked case: a
    100 x 200 image, black in its middle half, white in its outer quarters, brought to 64 x 64:
    the crop is the middle half, all black (white share 0.000); squashed to 64 x 64 (the former
    ``to_square``) it kept both outer quarters (white share 0.500). On a 300 x 451 photograph
    the result equals torchvision's Lanczos resize and centre crop, byte for byte (where both
    round the longer side alike)."""
    import skimage.data
    import torchvision.transforms as T

    img = np.full((100, 200, 3), 255, np.uint8)
    img[:, 50:150] = 0
    out = C.resize_center_crop(img, 64)
    squashed = np.asarray(Image.fromarray(img).resize((64, 64), Image.BICUBIC))
    assert out.shape == (64, 64, 3) and (out > 127).mean() == 0.0
    assert (squashed > 127).mean() == pytest.approx(0.5, abs=0.02)
    chelsea = skimage.data.chelsea()  # 300 x 451: 451 * 64 / 300 = 96.2 -> 96 columns
    torchvision = T.Compose([T.Resize(64, interpolation=T.InterpolationMode.LANCZOS),
                             T.CenterCrop(64)])(Image.fromarray(chelsea))
    np.testing.assert_array_equal(C.resize_center_crop(chelsea, 64), np.asarray(torchvision))
    # at 256 the long side is 384.85 px: torchvision truncates to 384, the project rounds to 385
    assert C.resize_center_crop(chelsea, 256).shape == (256, 256, 3)
    square = np.ascontiguousarray(img[:64, :64])
    assert C.resize_center_crop(square, 64) is square  # already at the size: unchanged
    wide16 = (img.astype(np.uint16) * 257)  # 16-bit: to 8 bits first, as tokenize expects
    np.testing.assert_array_equal(C.resize_center_crop(wide16, 64), out)


# -- 6. Fig. 2's middle panel: frequency shifts of the most sensitive tokens -----------------
def test_token_frequency_shifts_follow_the_most_sensitive_tokens(tmp_path):
    """Fig. 2 (middle): "a small subset of perceptually-sensitive tokens exhibits consistent and
    predictable shifts in their distribution". Worked case, V = 4, clean grids all token 0;
    at level k of 2, noise turns k of the 4 tokens of each grid into token 3 (frequency 0.25,
    0.50; token 0 falls by the same); blur and shuffling turn k into token 1 and 2. The most
    shifted tokens of noise are 0 (-0.50) and 3 (+0.50); the figure gets a third panel."""
    from roundtrip.evals.chd.sensitivity import KINDS, plot, score_sensitivity, token_shifts

    clean = np.zeros((2, 2, 2), np.int64)
    sets = {("clean", 0): clean}
    for kind, code in zip(KINDS, (3, 1, 2)):
        for level in (1, 2):
            g = clean.copy().reshape(2, 4)
            g[:, :level] = code
            sets[(kind, level)] = g.reshape(2, 2, 2)
    shifts = token_shifts(sets, 4, top=2)
    noise = shifts[shifts["kind"] == "noise"]
    assert noise[noise["rank"] == 1]["token"].iloc[0] == 0  # ties: the lower id first
    assert noise[noise["token"] == 3].set_index("level")["frequency"].tolist() == \
        [0.0, 0.25, 0.5]
    assert noise[noise["token"] == 0].set_index("level")["shift"].tolist() == [0.0, -0.25, -0.5]
    assert set(shifts[shifts["kind"] == "blur"]["token"]) == {0, 1}
    df = score_sensitivity(sets, 4, None)
    path = tmp_path / "fig.png"
    plot(df, str(path), shifts)
    two = tmp_path / "two.png"
    plot(df, str(two))
    assert Image.open(path).size[0] > Image.open(two).size[0]  # three panels, not two


def test_definitions_cite_the_papers_equations():
    """CHD is Eq. 14, the mean of CHD-1D (Eqs. 8-9) and CHD-2D (Eqs. 10-13); CMMS is trained on
    token injection (Eq. 15), fragment swapping and pixel-space distortions (Sec. 4.2)."""
    defs = {name: (text, source) for name, text, source in CHD.definitions}
    assert defs["CHD"][1] == "CHD paper Sec. 4.1, Eq. 14"
    assert "Eqs. 8-9" in defs["CHD"][0] and "Eqs. 10-13" in defs["CHD"][0]
    assert "Eqs. 9-10" not in str(CHD.definitions)
    text = defs["CMMS"][0]
    assert "token injection (Eq. 15)" in text and "fragment swapping" in text and \
        "pixel-space distortions" in text and "exp(-20 p)" in text


# -- 7. The paper's preset plans on stand-in files ---------------------------------------------
class _TiTokStandIn(torch.nn.Module):
    """Tiny random TorchScript stand-in with TiTok's interface: 256 x 256 -> 128 ids of 4096."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3 * 16 * 32, 4096)

    @torch.jit.export
    def encode(self, x):
        patches = torch.nn.functional.unfold(x, (16, 32), stride=(16, 32))  # [B, 1536, 128]
        return self.proj(patches.transpose(1, 2)).argmax(-1)

    @torch.jit.export
    def decode(self, codes):
        return torch.zeros(codes.shape[0], 3, 256, 256)

    @torch.jit.export
    def tokens(self, codes):
        return codes

    def forward(self, x):
        return self.decode(self.encode(x))


def _stand_ins(root):
    for folder in ("imagenet/train", "imagenet/val", "imagenet/val_1k"):
        (root / folder).mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (300, 260), (40 * i, 90, 160)).save(root / folder / f"{i}.png")
    (root / "weights").mkdir()
    torch.jit.script(_TiTokStandIn().eval()).save(str(root / "weights/titok_s128_imagenet.pt"))


@pytest.mark.workflow
def test_paper_preset_plans_on_stand_in_files(tmp_path):
    """configs/papers/chd.yaml (TiTok N = 128, |V| = 4096 at 256^2; CMMS d = 512, 8 heads, AdamW
    lr 1e-4, batch 512, 200 epochs on ImageNet-1K train; Fig. 2 on 1,000 images) with data_root
    and the TiTok path pointed at stand-ins: ``snakemake -n`` plans CMMS training on the train
    set, the reconstruction of the val set only, the token table and Fig. 2."""
    preset = yaml.safe_load((REPO / "configs/papers/chd.yaml").read_text())
    tokens = preset["metrics"]["tokens"]
    assert preset["models"]["titok"]["codebook_size"] == 4096 and tokens["size"] == 256
    assert (tokens["cmms"]["d_model"], tokens["cmms"]["heads"], tokens["cmms"]["lr"],
            tokens["cmms"]["batch_size"]) == (512, 8, 1e-4, 512)
    assert tokens["cmms"]["steps"] == 200 * math.ceil(1_281_167 / 512)  # 200 epochs
    data = tmp_path / "data"
    _stand_ins(data)
    preset["data_root"] = str(data)
    preset["models"]["titok"]["path"] = str(data / "weights/titok_s128_imagenet.pt")
    (tmp_path / "work").mkdir()
    preset.setdefault("run", {})["probe_models"] = False  # stand-in weight files do not load
    (tmp_path / "work/preset.yaml").write_text(yaml.safe_dump(preset))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "preset.yaml", "-n", "--cores", "1"],
                          cwd=tmp_path / "work", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for rule in ("train_cmms", "token_table", "token_sensitivity", "build_dataset"):
        assert f"rule {rule}:" in out, rule
    assert "imagenet_train/manifest.csv" in out
    assert "titok/imagenet_train" not in out  # CMMS's training set is not reconstructed
    assert "titok/imagenet_val/" in out
    total = [line for line in out.splitlines() if line.startswith("total")]
    print("planned:", total)

"""A model that is plausible but wrong is caught (roundtrip.models.diagnosis, the probe, the
reconstruction stage): outputs in [0, 1], BGR, flipped, shifted by 1 or 3 pixels, a dropout that
stays active; refused by the probe in one line when wrong at every size, its items flagged when
wrong at one size; a lossy codec and a blurring autoencoder, the controls, never. Also: a
sampling model declared ``stochastic`` repeats its bytes, a slow size is timed and limited, two
names for one model are named, a damaged weights file is named with its size.

The zoo: ``PoolAE``, an autoencoder of a 2x2 average-pooling encoder (its weights a state dict)
and a bilinear decoder, 27 to 35 dB on photographs, with one flaw each, at inputs of height
``at`` only (None: every height)."""
import re
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml
from PIL import Image
from skimage import data
from test_output_checks import _check as check_models

from roundtrip.core.limits import TimeLimitExceeded, time_limit
from roundtrip.models import build_model, item_seed
from roundtrip.models.diagnosis import (MIN_GAIN_DB, MIN_SHIFT_GAIN_DB, diagnose,
                                        diagnose_set)
from roundtrip.stages.reconstruct import reconstruct_shard
from roundtrip.tables.failures import read_slowness

AE_MODULE = textwrap.dedent('''
    import time

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class PoolAE(nn.Module):
        """factor x factor average pooling (a grouped convolution, its weights in the state
        dict), decoded by bilinear upsampling; ``flaw`` at inputs of height ``at``."""

        def __init__(self, factor=2, flaw="none", at=None, seconds=0.0):
            super().__init__()
            self.factor, self.flaw, self.at, self.seconds, self._h = factor, flaw, at, seconds, None
            self.pool = nn.Conv2d(3, 3, factor, factor, groups=3, bias=False)

        def _hit(self):
            return self.at is None or self._h == self.at

        def encode(self, x):
            self._h = x.shape[2]
            return self.pool(x)

        def decode(self, z):
            y = F.interpolate(z, scale_factor=self.factor, mode="bilinear", align_corners=False)
            if not self._hit():
                return y
            if self.flaw == "unit":  # a [0, 1] decoder
                return (y + 1) / 2
            if self.flaw == "bgr":
                return y.flip(1)
            if self.flaw == "vflip":
                return y.flip(2)
            if self.flaw == "hflip":
                return y.flip(3)
            if self.flaw == "shift1":  # a padding off by one
                return torch.roll(y, 1, 3)
            if self.flaw == "shift3":
                return torch.roll(y, 3, 2)
            if self.flaw == "dropout":  # F.dropout's training defaults to True, whatever eval()
                return F.dropout(y, 0.1)
            if self.flaw == "slow":
                time.sleep(self.seconds)
            return y
''')
#: Each flaw and the start of the reason it gets, after ``models.<name>: ``.
FLAWS = {"unit": "outputs look like [0, 1]", "bgr": "outputs look like BGR",
         "vflip": "outputs look flipped vertically", "hflip": "outputs look flipped horizontally",
         "shift1": "outputs look shifted by 1 px right", "shift3": "outputs look shifted by 3 px down"}


def ae_files(root):
    """``root/code/ae.py`` and the weights of the 2x and 4x pooling (``ae2.pt``, ``ae4.pt``)."""
    (root / "code").mkdir(parents=True, exist_ok=True)
    (root / "code" / "ae.py").write_text(AE_MODULE)
    for f in (2, 4):
        torch.save({"pool.weight": torch.full((3, 1, f, f), 1.0 / f ** 2)}, root / f"ae{f}.pt")
    return root


def ae_spec(root, flaw: str = "none", at: int | None = 180, factor: int = 2, **changes) -> dict:
    kwargs = {"factor": factor, "flaw": flaw, "at": at, **changes.pop("kwargs", {})}
    return {"type": "state_dict", "import_path": "ae:PoolAE", "pythonpath": str(root / "code"),
            "state_dict": str(root / f"ae{factor}.pt"), "kwargs": kwargs,
            "downsample": factor, **changes}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    yield ae_files(tmp_path_factory.mktemp("ae_zoo"))
    sys.modules.pop("ae", None)


def photo(name: str, h: int, w: int) -> np.ndarray:
    """A centred ``h x w`` crop of a scikit-image photograph, uint8 RGB."""
    img = getattr(data, name)()
    top, left = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    return np.ascontiguousarray(img[top:top + h, left:left + w, :3])


def as_input(img: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)[None].float() / 127.5 - 1.0


def pool_ae(x: torch.Tensor, factor: int = 2) -> torch.Tensor:
    return F.interpolate(F.avg_pool2d(x, factor), scale_factor=factor, mode="bilinear",
                         align_corners=False)


#: Photographs of the unit tests: colour and grey, faces, fur, text and a rocket.
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "text")


# ------------------------------------------------------------------ the diagnosis itself

@pytest.mark.parametrize("flaw, defect, shift", [
    ("unit", "range_unit", (0, 0)), ("bgr", "bgr", (0, 0)), ("vflip", "flip_vertical", (0, 0)),
    ("hflip", "flip_horizontal", (0, 0)), ("rot180", "rotate_180", (0, 0)),
    ("transpose", "transpose", (0, 0)), ("shift1", "shift", (0, 1)),
    ("shift3", "shift", (-3, 2))])
def test_each_convention_mistake_is_found_on_photographs(flaw, defect, shift):
    """Each flaw of a 2x pooling autoencoder (27-35 dB as it should be) on three colour
    photographs: the fix explains the error, with its gain over the threshold."""
    for name in ("astronaut", "coffee", "chelsea"):
        x = as_input(photo(name, 160, 160))
        y = pool_ae(x)
        flawed = {"unit": (y + 1) / 2, "bgr": y.flip(1), "vflip": y.flip(2), "hflip": y.flip(3),
                  "rot180": y.flip(2, 3), "transpose": y.transpose(2, 3),
                  "shift1": torch.roll(y, 1, 3), "shift3": torch.roll(y, (-3, 2), (2, 3))}[flaw]
        finding = diagnose(x, flawed)[0]
        assert finding is not None and finding.defect == defect, (name, finding)
        assert finding.shift == shift
        needed = MIN_SHIFT_GAIN_DB if defect == "shift" else MIN_GAIN_DB
        assert finding.fixed_psnr - finding.psnr >= needed and finding.fixed_ssim > finding.ssim
        # the fixed reconstruction is the model's own: 2x pooling scores 27 to 35 dB here
        assert 26 < finding.fixed_psnr < 36, (name, finding)


def test_the_reason_names_the_defect_the_evidence_and_the_fix():
    x = as_input(photo("astronaut", 160, 160))
    y = pool_ae(x)
    unit = diagnose(x, (y + 1) / 2)[0]
    assert re.fullmatch(r"models\.m: outputs look like \[0, 1\] \(PSNR \d+\.\d -> \d+\.\d dB, "
                        r"SSIM -?\d\.\d\d -> \d\.\d\d as 2\*x - 1\): return 2\*x - 1, or set "
                        r"models\.m\.input_range: \[0, 1\]", unit.reason("m", unit_range=False))
    # an adapter that already maps [0, 1] cannot be told to; one without the key neither
    assert unit.reason("m").endswith("): return 2*x - 1")
    shifted = diagnose(x, torch.roll(y, (-3, 2), (2, 3)))[0].reason("m")
    assert "outputs look shifted by 3 px up and 2 px right (PSNR" in shifted
    assert shifted.endswith("shifted back): check the padding, cropping or stride alignment "
                            "in decode")


@pytest.mark.parametrize("name", PHOTOS + ("brick", "grass", "moon", "coins",
                                           "immunohistochemistry"))
def test_lossy_and_unrelated_outputs_are_never_flagged(name):
    """The test is "a simple fix explains most of the error", never "the error is large": JPEG
    at quality 10 and 30, WebP at 10, bicubic 8x resampling, a 4x and 8x blurring autoencoder,
    noise, and outputs unrelated to the input (a grey image, noise alone) are not flagged."""
    raw = getattr(data, name)()
    raw = np.repeat(raw[..., None], 3, 2) if raw.ndim == 2 else raw[..., :3]
    top, left = (raw.shape[0] - 128) // 2, (raw.shape[1] - 160) // 2
    img = np.ascontiguousarray(raw[top:top + 128, left:left + 160])
    x = as_input(img)
    torch.manual_seed(0)
    codecs = [build_model(f"c{i}", spec) for i, spec in enumerate([
        {"type": "jpeg", "quality": 10}, {"type": "jpeg", "quality": 30},
        {"type": "webp", "quality": 10}, {"type": "resample", "factor": 8}])]
    outputs = [c.reconstruct(x) for c in codecs] + [
        pool_ae(x, 4), pool_ae(x, 8), (x + 0.2 * torch.randn_like(x)).clamp(-1, 1),
        torch.zeros_like(x), torch.tanh(0.1 * torch.randn_like(x))]
    assert diagnose(torch.cat([x] * len(outputs)), torch.cat(outputs)) == [None] * len(outputs)


def test_a_page_reconstructed_too_dark_is_a_poor_model_not_a_range_mistake():
    """A rendered question (black text on white) reconstructed blurred and darker, as a small
    tokenizer gives it: (y + 1) / 2 brightens the page enough to gain over 3 dB and SSIM, but the
    outputs never go below -1, which outputs mapped twice would."""
    from PIL import ImageDraw

    page = Image.new("RGB", (400, 120), "white")
    draw = ImageDraw.Draw(page)
    for k in range(4):
        draw.text((10, 8 + 28 * k), "How many apples are on the table? A) 3 B) 4 C) 5",
                  fill="black", font_size=18)
    x = as_input(np.array(page))
    y = (0.6 * pool_ae(x) - 0.4).clamp(-1, 1)

    def psnr(a, b):
        return float(10 * torch.log10(4 / ((a - b) ** 2).mean()))

    assert psnr(x, (y + 1) / 2) - psnr(x, y) > MIN_GAIN_DB  # what the range test alone sees
    assert diagnose(x, y) == [None]
    assert diagnose(x, 2 * pool_ae(x) - 1)[0].defect == "range_inverse"  # mapped twice: below -1


def test_a_flat_input_is_not_judged_and_pooled_images_agree_on_one_shift():
    flat = torch.full((1, 3, 64, 64), 0.3)
    assert diagnose(flat, torch.zeros_like(flat)) == [None]
    # the probe's photographs shifted alike by a blurry (4x) model: each alone gains under the
    # per-item threshold, pooled with one shift for both they give it away
    from roundtrip.models.probe import probe_input

    x = probe_input(64, 64)
    y = torch.roll(pool_ae(x, 4), 1, 3)
    assert diagnose(x, y) == [None, None]
    finding = diagnose_set(x, y)
    assert finding is not None and (finding.defect, finding.shift) == ("shift", (0, 1))
    assert diagnose_set(x, pool_ae(x, 4)) is None


def test_a_volumes_slices_are_diagnosed_together(zoo):
    """Slices of one volume (nibabel's T1 MRI, 2D models slice by slice) are one item: a flipped
    model fails the volume with the flip; the unflawed autoencoder passes. Outputs unrelated to
    their input pass, pooled over a volume's slices or one by one at 48 px; 24 px slices (where
    the best of 80 shifts of smooth noise gains up to 1.2 dB, and a flip passes every threshold
    for 2 slices in 480) are too small to judge."""
    import nibabel as nib
    from nibabel.testing import data_path
    from scipy.ndimage import gaussian_filter

    from roundtrip.models import OutputError
    from roundtrip.stages.volumes import reconstruct_slicewise

    mri = np.asarray(nib.load(f"{data_path}/anatomical.nii").dataobj, dtype=np.float32)[:, :, 8:20]
    mri = (mri - mri.min()) / (mri.max() - mri.min())
    good = build_model("ae", ae_spec(zoo, at=None))
    good.load()
    assert reconstruct_slicewise(good, mri, 2, 16).shape == mri.shape
    flipped = build_model("flipped", ae_spec(zoo, "vflip", at=None))
    flipped.load()
    with pytest.raises(OutputError, match=r"models\.flipped: outputs look flipped vertically"):
        reconstruct_slicewise(flipped, mri, 2, 16)
    for side in (24, 48):
        for seed in range(4):
            rng = np.random.default_rng(seed)
            x, y = (torch.from_numpy(b / b.max() * 2 - 1).float()[:, None].expand(-1, 3, -1, -1)
                    for b in [gaussian_filter(rng.random((8, side, side)), 2, axes=(1, 2))
                              for _ in range(2)])
            assert diagnose(x, y) == [None] * 8 and diagnose_set(x, y) is None, (side, seed)


# ------------------------------------------------------------------ the probe refuses

def _check(tmp_path, monkeypatch, models: dict) -> str | None:
    return check_models(tmp_path, monkeypatch, models,
                        Image.fromarray(photo("astronaut", 180, 200)))


@pytest.mark.parametrize("flaw", [*FLAWS, "dropout"])
def test_a_model_wrong_at_every_size_is_refused_in_one_line(zoo, tmp_path, monkeypatch, flaw):
    problem = _check(tmp_path, monkeypatch, {"bad": ae_spec(zoo, flaw, at=None)})
    assert problem is not None and "\n" not in problem
    if flaw == "dropout":
        assert re.fullmatch(r"models\.bad: two reconstructions of the same input differ \(by up "
                            r"to [\d.]+ on \[-1, 1\], \d+ % of values\): an active dropout or "
                            r"sampling; use F\.dropout\(x, p, training=self\.training\) and the "
                            r"posterior mode, or set models\.bad\.stochastic: true to have every "
                            r"item seeded \(probe input 50x54\)", problem), problem
    else:
        assert problem.startswith(f"models.bad: {FLAWS[flaw]} (PSNR "), problem
        assert problem.endswith("(probe input 50x54, 2 photographs)"), problem


def test_the_controls_and_a_declared_stochastic_model_pass_the_probe(zoo, tmp_path,
                                                                    monkeypatch):
    models = {"ae": ae_spec(zoo, at=None), "blurred": ae_spec(zoo, at=None, factor=4),
              "sampling": ae_spec(zoo, "dropout", at=None, stochastic=True, seed=7),
              "jpeg_q10": {"type": "jpeg", "quality": 10}}
    assert _check(tmp_path, monkeypatch, models) is None


# ------------------------------------------------------------------ a run flags the items

@pytest.fixture(scope="module")
def photo_set(tmp_path_factory):
    """Three photographs: 172 x 256, 176 x 256 and 180 x 200 (where the zoo's flaws strike)."""
    from roundtrip.datasets import build_dataset
    root = tmp_path_factory.mktemp("photo_set")
    (root / "src").mkdir()
    for k, (name, h, w) in enumerate([("astronaut", 172, 256), ("coffee", 176, 256),
                                      ("chelsea", 180, 200)]):
        Image.fromarray(photo(name, h, w)).save(root / "src" / f"p{k}.png")
    build_dataset("mine", {"type": "folder", "path": str(root / "src")}, root / "set")
    return root / "set" / "manifest.csv"


def _run(spec, manifest, out, name="m"):
    model = build_model(name, spec)
    if hasattr(model, "load"):
        model.load()
    return reconstruct_shard(model, manifest, out, protocol="native", batch_size=2)


@pytest.mark.parametrize("flaw", [*FLAWS, "dropout"])
def test_a_flaw_at_one_size_flags_those_items_only(zoo, photo_set, tmp_path, flaw):
    status = _run(ae_spec(zoo, flaw), photo_set, tmp_path / "out").set_index("item_id")
    assert list(status["status"]) == ["ok", "ok", "error"]
    reason = status.loc["p2", "reason"]
    expected = FLAWS.get(flaw, "two reconstructions of the same input differ")
    assert reason.startswith(f"models.m: {expected}"), reason
    assert not (tmp_path / "out" / "p2.png").exists()


def test_the_controls_are_never_flagged_in_a_run(zoo, photo_set, tmp_path):
    for name, spec in {"jpeg_q10": {"type": "jpeg", "quality": 10},
                       "blurred": ae_spec(zoo, at=None, factor=4),
                       "ae": ae_spec(zoo, at=None)}.items():
        status = _run(spec, photo_set, tmp_path / name, name)
        assert list(status["status"]) == ["ok"] * 3, status


def test_a_stochastic_model_is_seeded_per_item_and_repeats_its_bytes(zoo, photo_set, tmp_path):
    spec = ae_spec(zoo, "dropout", at=None, stochastic=True, seed=7)
    first = _run(spec, photo_set, tmp_path / "a")
    again = _run(spec, photo_set, tmp_path / "b")
    assert list(first["status"]) == ["ok"] * 3
    assert list(first["seed"]) == [str(item_seed(7, i)) for i in ("p0", "p1", "p2")]
    for i in ("p0", "p1", "p2"):
        assert (tmp_path / "a" / f"{i}.png").read_bytes() == (tmp_path / "b" / f"{i}.png"
                                                             ).read_bytes()
    # the seed matters: another seed gives other bytes; a deterministic model records none
    other = _run({**spec, "seed": 8}, photo_set, tmp_path / "c")
    assert (tmp_path / "c" / "p0.png").read_bytes() != (tmp_path / "a" / "p0.png").read_bytes()
    assert list(other["seed"]) != list(first["seed"])
    plain = _run(ae_spec(zoo, at=None), photo_set, tmp_path / "d")
    assert plain["seed"].fillna("").eq("").all()


def test_the_model_card_says_a_model_is_stochastic(zoo, tmp_path):
    """The card of a ``stochastic: true`` model has a footnote naming its seed and where each
    item's seed is; a deterministic model's card has none."""
    from roundtrip.models.card import model_card
    from roundtrip.tables import write_frame

    sampling = build_model("sampling", ae_spec(zoo, "dropout", at=None, stochastic=True, seed=7))
    plain = build_model("ae", ae_spec(zoo, at=None))
    frame, notes = model_card([sampling, plain])
    assert list(frame["model"]) == ["sampling", "ae"]
    note = ("sampling: stochastic (models.sampling.stochastic): every item is reconstructed "
            "alone under a seed of its own, derived from models.sampling.seed (7) and its id; "
            "each item's seed is in its status.csv.")
    assert [n for n in notes if "stochastic" in n] == [note]
    write_frame(frame, "model_card", "Model card", notes, tmp_path)
    card = (tmp_path / "model_card.md").read_text().splitlines()
    assert [line for line in card if "stochastic" in line] == [
        f"[{notes.index(note) + 1}] {note}"]
    assert not any(line.startswith("[") and "] ae:" in line for line in card)


# ------------------------------------------------------------------ slow items

def test_status_has_each_items_seconds_and_size(zoo, photo_set, tmp_path):
    status = _run(ae_spec(zoo, "slow", kwargs={"seconds": 2.5}), photo_set, tmp_path / "slow")
    assert list(status.columns) == ["item_id", "status", "reason", "reference", "seconds",
                                    "size", "seed"]
    written = pd.read_csv(tmp_path / "slow/shards/0-of-1.csv").set_index("item_id")
    assert list(written["size"]) == ["172x256", "176x256", "180x200"]
    assert written.loc["p2", "seconds"] >= 2.5 > written.loc["p0", "seconds"]


def test_a_size_far_slower_per_pixel_is_named(tmp_path):
    """Medians per size, per pixel: 180 x 200 at 2.6 s against 172 x 256 at 0.02 s is named;
    the same model with every size within 10x per pixel, or slow but under 1 s, is not."""
    def status(seconds):
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.csv"
        pd.DataFrame({"item_id": ["p0", "p1", "p2", "p3"], "status": "ok", "reason": "",
                      "reference": "", "seconds": seconds,
                      "size": ["172x256", "172x256", "180x200", "180x200"], "seed": ""}
                     ).to_csv(path, index=False)
        return {("m", "mine"): path}

    slow = read_slowness(status([0.02, 0.03, 2.6, 2.4]))
    assert len(slow) == 1
    assert slow[0].line() == ("m on mine: 2 items of 180x200 took 2.5 s each (median), 122x "
                              "longer per pixel than at 172x256 (0.025 s): "
                              "models.m.item_timeout_s sets a limit")
    assert read_slowness(status([0.3, 0.3, 2.0, 2.2])) == []  # 7x the seconds, 8.6x per pixel
    assert read_slowness(status([0.002, 0.003, 0.6, 0.8])) == []  # under 1 s an item


def test_the_time_limit_fails_the_slow_items_with_a_reason(zoo, photo_set, tmp_path):
    spec = ae_spec(zoo, "slow", kwargs={"seconds": 60.0}, item_timeout_s=2)
    status = _run(spec, photo_set, tmp_path / "limited").set_index("item_id")
    assert list(status["status"]) == ["ok", "ok", "error"]
    assert status.loc["p2", "reason"] == (
        "models.m.item_timeout_s: the forward pass at 180x200 ran longer than 2 s and was "
        "stopped: raise models.m.item_timeout_s, or leave inputs of this size out")
    assert 2 <= float(status.loc["p2", "seconds"]) < 10


def test_time_limit_stops_a_block_and_restores_the_outer_timer():
    import signal
    import time

    with pytest.raises(TimeLimitExceeded, match="ran longer than 0.2 s"):
        with time_limit(0.2):
            time.sleep(5)
    with time_limit(None):
        time.sleep(0.01)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_first_progress_line_comes_before_the_first_slow_batch_ends(
        zoo, photo_set, tmp_path, monkeypatch, capsys):
    """The console line is due 30 s into a job (0.3 s here) whether or not an item finished."""
    from roundtrip.core import progress

    monkeypatch.setattr(progress, "CONSOLE_AFTER_S", 0.3)
    monkeypatch.setattr(progress, "CONSOLE_INTERVAL_S", 100.0)
    _run(ae_spec(zoo, "slow", at=None, kwargs={"seconds": 0.8}), photo_set, tmp_path / "p")
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[roundtrip]")]
    assert lines[0] == (f"[roundtrip] reconstruct {tmp_path.name} on p: 0 of 3 items (0 %), "
                        "0.00 items/s"), lines
    assert lines[-1].startswith(f"[roundtrip] reconstruct {tmp_path.name} on p: 3 of 3 items "
                                "done in ")


# ------------------------------------------------------------------ two names, one model

def test_two_names_for_one_model_are_named_by_check_config(zoo, tmp_path, monkeypatch):
    copy = tmp_path / "copy_of_ae2.pt"
    copy.write_bytes((zoo / "ae2.pt").read_bytes())
    models = {"ae": ae_spec(zoo, at=None), "ae_again": ae_spec(zoo, at=None, batch_size=4),
              "ae_copy": {**ae_spec(zoo, at=None), "state_dict": str(copy)},
              "ae_blurred": ae_spec(zoo, at=None, factor=4),
              "jpeg_a": {"type": "jpeg", "quality": 50}, "jpeg_b": {"type": "jpeg", "quality": 60}}
    problem = _check(tmp_path, monkeypatch, models)
    end = ("(same type, settings, weights and code): it would be computed twice and ranked "
           "against itself; remove one of the two names")
    assert problem.splitlines() == [f"models.ae_again: the same model as models.ae {end}",
                                    f"models.ae_copy: the same model as models.ae {end}"]


# ------------------------------------------------------------------ loading messages

@pytest.mark.parametrize("content, message", [
    (b"", r"models\.m\.state_dict: {path} is empty \(0 bytes\): copy the weights file again"),
    ("half", r"models\.m\.state_dict: {path} \([\d,]+ bytes\) is truncated or not a PyTorch file "
             r"\(\w+(: [^)]*)?\): copy it again in full, or point models\.m\.state_dict at a file "
             r"torch\.save wrote"),
    (b"name,value\n", r"models\.m\.state_dict: {path} \(11 bytes\) is truncated or not a "
                      r"PyTorch file \(.*"),
])
def test_a_damaged_weights_file_is_named_with_its_size(zoo, tmp_path, content, message):
    """Empty, cut in half, and a text file: torch's own errors for these (``EOFError``,
    ``OSError: [Errno 22] Invalid argument``, an unpickling error) name neither."""
    path = tmp_path / "w.pt"
    whole = (zoo / "ae2.pt").read_bytes()
    path.write_bytes(whole[:len(whole) // 2] if content == "half" else content)
    model = build_model("m", {**ae_spec(zoo), "state_dict": str(path)})
    with pytest.raises(ValueError) as err:
        model.load()
    assert re.fullmatch(message.format(path=re.escape(str(path))), str(err.value)), err.value


def test_a_model_object_saved_instead_of_its_state_dict_is_named(zoo, tmp_path):
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(ValueError) as err:
        build_model("m", {**ae_spec(zoo), "state_dict": str(path)}).load()
    assert str(err.value) == (f"models.m.state_dict: {path} holds more than tensors (torch.load "
                              "with weights_only refuses it): save model.state_dict() instead "
                              "of the model object")


def test_a_torchscript_module_without_exported_methods_gets_the_hint(tmp_path):
    source = tmp_path / "scripted.py"
    source.write_text(textwrap.dedent('''
        import torch

        class Plain(torch.nn.Module):
            def forward(self, x):
                return x

            def encode(self, x):
                return x

        torch.jit.save(torch.jit.script(Plain()), "plain.pt")
    '''))
    subprocess.run([sys.executable, str(source)], cwd=tmp_path, check=True,
                   capture_output=True)
    model = build_model("ts", {"type": "torchscript", "path": str(tmp_path / "plain.pt")})
    with pytest.raises(ValueError) as err:
        model.load()
    assert str(err.value) == (
        f"models.ts.path: the TorchScript module in {tmp_path / 'plain.pt'} has no encode or "
        "decode: TorchScript compiles only forward and what it calls; decorate encode and "
        "decode (and tokens) with @torch.jit.export before torch.jit.script")


def test_check_config_prints_no_library_warnings(tmp_path):
    """A TorchScript model made the documented way, through ``roundtrip check-config``: torch's
    deprecation of ``torch.jit.load`` stays out of the output."""
    source = tmp_path / "scripted.py"
    source.write_text(textwrap.dedent('''
        import torch
        import torch.nn.functional as F

        class Pool(torch.nn.Module):
            @torch.jit.export
            def encode(self, x):
                return F.avg_pool2d(x, 2)

            @torch.jit.export
            def decode(self, z):
                return F.interpolate(z, scale_factor=2.0, mode="bilinear", align_corners=False)

            def forward(self, x):
                return self.decode(self.encode(x))

        torch.jit.save(torch.jit.script(Pool()), "pool.pt")
    '''))
    subprocess.run([sys.executable, str(source)], cwd=tmp_path, check=True, capture_output=True)
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.fromarray(photo("coffee", 96, 128)).save(photos / "a.png")
    (tmp_path / "my.yaml").write_text(yaml.safe_dump({
        "datasets": {"mine": {"type": "folder", "path": str(photos)}},
        "models": {"ts": {"type": "torchscript", "path": str(tmp_path / "pool.pt"),
                          "downsample": 2}},
        "metrics": {"missing_weights": "n/a"}}))
    proc = subprocess.run([sys.executable, "-c", "import sys; from roundtrip.cli import main; "
                           "sys.exit(main(['check-config', 'my.yaml']))"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stdout + proc.stderr, proc.stderr

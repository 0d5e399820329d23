"""What a model returns is checked in the layer every model shares (roundtrip.models.outputs):
a reconstruction that is not finite, has another channel count or shape, or lies outside
[-1, 1] beyond the tolerance, and token ids beyond the codebook, are an item's error with a reason
naming the defect and the fix, never a score. A model flawed at every size is refused by the probe
(check-config) in one line; a latent grid contradicting ``downsample`` too.

The zoo: a user's 8x VQ tokenizer (tests/test_probe.py's ``TinyVQ``) with one flaw each, on inputs
of height ``at`` only (64: not the probe's 56 x 72, so a run goes ahead and only those items fail)
or at every size (``at: null``: the probe refuses it)."""
import re
import textwrap

import numpy as np
import pytest
import tiny_models
import torch
import yaml
from conftest import REPO
from PIL import Image
from test_probe import MODULE

from roundtrip.models import build_model
from roundtrip.models.outputs import (DEFAULT_TOLERANCE, MAX_OUT_OF_RANGE_SHARE, OutputError,
                                      reconstruction_defects, token_defects)
from roundtrip.stages.reconstruct import reconstruct_shard
from roundtrip.workflow.checks import check_file

#: ``TinyVQ`` with one flaw at inputs of height ``at`` (every height when None).
ZOO = MODULE + textwrap.dedent('''
    class Flawed(TinyVQ):
        def __init__(self, flaw="none", at=None, **kwargs):
            super().__init__(**kwargs)
            self.flaw, self.at, self._h = flaw, at, None

        def _hit(self):
            return self.at is None or self._h == self.at

        def encode(self, x):
            self._h = x.shape[2]
            if self.flaw == "crash" and self._hit():
                raise RuntimeError(f"kernel failed at {x.shape[2]}x{x.shape[3]}")
            return super().encode(x)

        def decode(self, latent):
            y = super().decode(latent)
            if not self._hit():
                return y
            if self.flaw == "nan":
                return y * float("nan")
            if self.flaw == "inf":
                y = y.clone()
                y[:, :, :2, :2] = float("inf")
                return y
            if self.flaw == "scale255":  # a forgotten de-normalisation
                return (y + 1) * 127.5
            if self.flaw == "one_channel":
                return y[:, :1]
            return y

        def tokens(self, latent):
            if self.flaw == "ids" and self._hit():
                return latent + 1000
            return latent
''')
FLAWS = ("nan", "inf", "scale255", "one_channel", "ids", "crash")


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """``zoo.py`` in its own folder and TinyVQ's random weights (every flaw loads them)."""
    import sys
    yield tiny_models.user_model_files(tmp_path_factory.mktemp("zoo"), "zoo", ZOO)
    sys.modules.pop("zoo", None)


def zoo_spec(root, flaw: str, at: int | None = 64, **changes) -> dict:
    return {"type": "state_dict", "import_path": "zoo:Flawed", "pythonpath": str(root / "code"),
            "state_dict": str(root / "tiny_vq.pt"), "kwargs": {"flaw": flaw, "at": at},
            "family": "VQ", "downsample": 8, "codebook_size": 64, **changes}


# ------------------------------------------------------------------ the checks themselves

def test_defects_of_each_kind_name_the_value_and_the_fix():
    x = torch.zeros(4, 3, 8, 8)
    y = torch.zeros(4, 3, 8, 8)
    y[1, 0, 0, 0] = float("nan")
    y[2, :, :2, :2] = float("inf")
    y[3] = torch.linspace(0, 255, 192).reshape(3, 8, 8)
    reasons = reconstruction_defects(x, y, "m")
    assert reasons[0] == ""
    assert reasons[1] == ("models.m: the reconstruction holds 1 NaN values (of 192): the model's "
                          "forward pass is not finite for this input")
    assert reasons[2] == ("models.m: the reconstruction holds 12 infinite values (of 192): the "
                          "model's forward pass is not finite for this input")
    beyond = int((torch.linspace(0, 255, 192) > 1 + DEFAULT_TOLERANCE).sum())
    assert reasons[3] == (f"models.m: outputs span [0, 255], {round(100 * beyond / 192)} % of "
                          "values beyond [-1, 1] by more than 0.5: return [-1, 1] (or [0, 1] with "
                          "models.m.input_range: [0, 1]; models.m.output_tolerance widens the band)")


def test_overshoot_within_the_tolerance_or_on_few_pixels_passes():
    x = torch.zeros(3, 3, 10, 10)
    y = torch.full((3, 3, 10, 10), 1.4)  # within 1 + 0.5
    y[1].view(-1)[:75] = 9.0  # 75 of 300 values = 25 % beyond: allowed (and clamped)
    y[2].view(-1)[:76] = -9.0  # 76 of 300: refused
    assert 75 / 300 <= MAX_OUT_OF_RANGE_SHARE < 76 / 300
    assert reconstruction_defects(x, y, "m")[:2] == ["", ""]
    assert reconstruction_defects(x, y, "m")[2].startswith(
        "models.m: outputs span [-9, 1.4], 25 % of values beyond [-1, 1] by more than 0.5")
    assert reconstruction_defects(x, y, "m", tolerance=8.0)[2] == ""


def test_shape_defects_are_diagnosed_as_what_they_are():
    x = torch.zeros(2, 3, 64, 64)
    one = reconstruction_defects(x, torch.zeros(2, 1, 64, 64), "m", downsample=8)
    assert one == ["models.m: outputs have 1 channel for 3-channel inputs: return [B, 3, H, W] "
                   "(repeat a grayscale output to every channel)"] * 2
    assert "downsample" not in one[0]
    assert reconstruction_defects(x, torch.zeros(2, 3, 60, 64), "m", downsample=8) == [
        "model returned 60x64 for 64x64: check models.m.downsample (8)"] * 2
    assert reconstruction_defects(x, torch.zeros(1, 3, 64, 64), "m")[0] == (
        "models.m: decode returned 1 items for 2: return one reconstruction per input item, "
        "in order")
    assert reconstruction_defects(x, np.zeros((2, 3, 64, 64)), "m")[0].startswith(
        "models.m: decode returned ndarray, not a tensor")
    assert reconstruction_defects(x, torch.zeros(2, 3, 64, 64, dtype=torch.uint8), "m")[0] == (
        "models.m: decode returned a uint8 tensor: return float values in [-1, 1]")


def test_token_ids_beyond_the_codebook_or_negative_fail_their_item():
    ids = torch.tensor([[[0, 63]], [[0, 1034]], [[-1, 3]]])
    assert token_defects(ids, 3, "m", 64) == [
        "",
        "models.m: token ids span [0, 1034], beyond the codebook of 64 (models.m.codebook_size): "
        "return ids in [0, 64) or set models.m.codebook_size to the model's codebook size",
        "models.m: token ids span [-1, 3], beyond the codebook of 64 (models.m.codebook_size): "
        "return ids in [0, 64) or set models.m.codebook_size to the model's codebook size"]
    assert token_defects(ids, 3, "m", None)[1:] == ["", "models.m: token ids span [-1, 3], "
                                                     "beyond 0: return ids >= 0"]
    assert token_defects(ids.float(), 3, "m", 64)[0].startswith(
        "models.m: tokens() returned float32 values")
    assert token_defects(ids, 2, "m", 64)[0].startswith("models.m: tokens() returned shape "
                                                        "(3, 1, 2) for 2 items")
    # a one-channel model's ids of an RGB item, channel by channel: three rows an item
    assert token_defects(ids, 1, "m", 64)[0].startswith("models.m: token ids span [-1, 1034], ")


def test_reconstruct_raises_with_one_reason_per_item():
    model = build_model("ident", {"type": "identity"})
    x = torch.zeros(2, 3, 16, 16)
    assert torch.equal(model.reconstruct(x), x)
    model.decode = lambda latent: latent * float("nan")
    with pytest.raises(OutputError) as err:
        model.reconstruct(x)
    assert len(err.value.reasons) == 2 and all("NaN" in r for r in err.value.reasons)
    assert str(err.value).endswith("(and 1 more items)")


# ------------------------------------------------------------------ the probe refuses

@pytest.mark.parametrize("flaw, expected", [
    ("nan", "models.bad: the reconstruction holds 12,096 NaN values (of 12,096): the model's "
            "forward pass is not finite for this input (probe input 56x72)"),
    ("inf", "models.bad: the reconstruction holds 12 infinite values (of 12,096)"),
    ("scale255", "models.bad: outputs span ["),
    ("one_channel", "models.bad: outputs have 1 channel for 3-channel inputs"),
    ("ids", "models.bad: token ids span ["),
    ("crash", "models.bad: forward pass at 56x72 failed: RuntimeError: kernel failed at 56x72"),
])
def test_a_model_flawed_at_every_size_is_refused_in_one_line(zoo, tmp_path, monkeypatch, flaw,
                                                             expected):
    problem = _check(tmp_path, monkeypatch, {"bad": zoo_spec(zoo, flaw, at=None)})
    assert problem is not None and problem.startswith(expected), problem
    assert "\n" not in problem and "Traceback" not in problem
    if flaw == "ids":
        assert "beyond the codebook of 64 (models.bad.codebook_size)" in problem


def test_every_flawed_model_of_a_config_is_named_at_once(zoo, tmp_path, monkeypatch):
    models = {f"bad_{f}": zoo_spec(zoo, f, at=None) for f in ("nan", "one_channel", "ids")}
    models["good"] = zoo_spec(zoo, "none")
    lines = _check(tmp_path, monkeypatch, models).splitlines()
    # in the file's order (yaml.safe_dump sorts the keys); the good model passes
    assert [line.split(":")[0] for line in lines] == ["models.bad_ids", "models.bad_nan",
                                                     "models.bad_one_channel"]


@pytest.mark.parametrize("declared, expected", [
    (16, "models.bad.downsample: 16, but the token grid is 6x10 for a 48x80 input, 8x smaller: "
         "set models.bad.downsample: 8"),
    (4, "models.bad.downsample: 4 gives 48 px for 52: the model needs a multiple of 8 "
        "(set models.bad.downsample: 8)"),
])
def test_a_downsample_the_latent_grid_contradicts_is_refused(zoo, tmp_path, monkeypatch,
                                                            declared, expected):
    problem = _check(tmp_path, monkeypatch, {"bad": zoo_spec(zoo, "none", downsample=declared)})
    assert problem == expected


def test_a_misspelt_module_under_pythonpath_is_named_as_such(zoo, tmp_path, monkeypatch):
    spec = zoo_spec(zoo, "none", import_path="zooo:Flawed")
    problem = _check(tmp_path, monkeypatch, {"bad": spec})
    assert problem == (f"models.bad.import_path: module 'zooo' is not in models.bad.pythonpath "
                       f"({zoo / 'code'}: zoo) nor on PYTHONPATH: did you mean 'zoo'? check the "
                       "module name in models.bad.import_path")


def _check(tmp_path, monkeypatch, models: dict, image=None) -> str | None:
    """``check_file`` of a config of ``models`` on a folder of one image (default: 80 x 64 of
    one colour), in ``tmp_path``."""
    photos = tmp_path / "photos"
    photos.mkdir(exist_ok=True)
    (image or Image.new("RGB", (80, 64), (90, 120, 200))).save(photos / "a.png")
    config = {"datasets": {"mine": {"type": "folder", "path": str(photos)}}, "models": models,
              "metrics": {"missing_weights": "n/a"}}
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    return check_file(str(path), str(REPO / "config.schema.yaml"))


# ------------------------------------------------------------------ a job fails only the items

@pytest.fixture(scope="module")
def photo_set(tmp_path_factory):
    """A manifest of 3 photographs: 64 x 80 (where the zoo's flaws strike), 72 x 96, 80 x 64."""
    from roundtrip.datasets import build_dataset
    root = tmp_path_factory.mktemp("set")
    (root / "src").mkdir()
    rng = np.random.default_rng(0)
    for k, (h, w) in enumerate([(64, 80), (72, 96), (80, 64)]):
        Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8)).save(
            root / "src" / f"p{k}.png")
    build_dataset("mine", {"type": "folder", "path": str(root / "src")}, root / "set")
    return root / "set" / "manifest.csv"


@pytest.mark.parametrize("flaw, reason", [
    ("nan", "models.{m}: the reconstruction holds 15,360 NaN values (of 15,360): the model's "
            "forward pass is not finite for this input"),
    ("inf", "models.{m}: the reconstruction holds 12 infinite values (of 15,360): the model's "
            "forward pass is not finite for this input"),
    ("scale255", "models.{m}: outputs span ["),
    ("one_channel", "models.{m}: outputs have 1 channel for 3-channel inputs: return "
                    "[B, 3, H, W] (repeat a grayscale output to every channel)"),
    ("ids", "models.{m}: token ids span ["),
    ("crash", "RuntimeError: kernel failed at 64x80"),
])
def test_a_flaw_at_one_size_fails_those_items_only(zoo, photo_set, tmp_path, flaw, reason):
    name = f"bad_{flaw}"
    model = build_model(name, zoo_spec(zoo, flaw))
    model.load()
    seen = []
    status = reconstruct_shard(model, photo_set, tmp_path / "out", protocol="native",
                               sink=seen.extend)
    rows = status.set_index("item_id")
    assert rows.loc["p0", "status"] == "error"
    assert rows.loc["p0", "reason"].startswith(reason.format(m=name)), rows.loc["p0", "reason"]
    assert list(rows.loc[["p1", "p2"], "status"]) == ["ok", "ok"]
    # the failed item reaches the scorers as an error, with no image to score
    failed = [item for item in seen if item.item_id == "p0"][0]
    assert failed.status == "error" and failed.reconstruction_image is None
    assert not (tmp_path / "out" / "p0.png").exists()
    assert (tmp_path / "out" / "p1.png").exists()


def test_token_extraction_refuses_ids_beyond_the_codebook(zoo, photo_set, tmp_path):
    from roundtrip.stages.codes import extract_codes
    model = build_model("bad_ids", zoo_spec(zoo, "ids"))
    model.load()
    codes = extract_codes(model, photo_set, tmp_path).set_index("item_id")
    assert codes.loc["p0", "status"] == "error"
    low, high = re.match(r"models\.bad_ids: token ids span \[(\d+), (\d+)\], beyond the codebook "
                         r"of 64 ", codes.loc["p0", "reason"]).groups()
    assert 1000 <= int(low) <= int(high) < 1064
    assert list(codes.loc[["p1", "p2"], "status"]) == ["ok", "ok"]
    with np.load(tmp_path / "tokens.npz") as saved:
        assert sorted(saved.files) == ["p1", "p2"]
        assert all(int(saved[k].max()) < 64 for k in saved.files)

"""Every model probed before any job (roundtrip.models.probe, roundtrip.workflow.probes): a user's
own model that cannot be imported, built, loaded or that returns another size fails
``check-config`` with one line naming the key and the fix; the probe is cached by the model's
fingerprint; the latent it observes fills the model card."""
import json
import textwrap

import pytest
import tiny_models
import torch
import yaml
from conftest import REPO

from roundtrip.models import build_model
from roundtrip.models.card import model_card
from roundtrip.models.probe import ProbeError, padding_size, probe_input, probe_model
from roundtrip.workflow.checks import check_file
from roundtrip.workflow.probes import probe_cached, probe_config

#: A user's tokenizer: 8x down (three stride-2 convolutions), a 64-code codebook, token ids as
#: the latent, a float latent under ``latent: float``.
MODULE = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class TinyVQ(nn.Module):
        def __init__(self, width=16, codes=64, latent="ids"):
            super().__init__()
            self.latent = latent
            self.enc = nn.Sequential(nn.Conv2d(3, width, 4, 2, 1), nn.ReLU(),
                                     nn.Conv2d(width, width, 4, 2, 1), nn.ReLU(),
                                     nn.Conv2d(width, 16, 4, 2, 1))
            self.codebook = nn.Parameter(torch.randn(codes, 16))
            self.dec = nn.Sequential(nn.ConvTranspose2d(16, width, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(width, width, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(width, 3, 4, 2, 1), nn.Tanh())

        def encode(self, x):
            z = self.enc(x)
            if self.latent == "float":
                return z
            flat = z.permute(0, 2, 3, 1).reshape(-1, 16)
            return torch.cdist(flat, self.codebook).argmin(1).reshape(z.shape[0], *z.shape[2:])

        def decode(self, latent):
            q = latent if latent.is_floating_point() else self.codebook[latent].permute(0, 3, 1, 2)
            return self.dec(q)

        def tokens(self, latent):
            return latent
''')


@pytest.fixture
def user_model(tmp_path, monkeypatch):
    """``my_vq.py`` in its own folder (not on ``sys.path``) and its random weights; the module
    is forgotten afterwards (each test imports its own copy)."""
    import sys
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "my_vq", raising=False)
    yield tiny_models.user_model_files(tmp_path, "my_vq", MODULE)
    sys.modules.pop("my_vq", None)


def vq_spec(root, **changes) -> dict:
    spec = {"type": "state_dict", "import_path": "my_vq:TinyVQ", "pythonpath": str(root / "code"),
            "state_dict": str(root / "tiny_vq.pt"), "family": "VQ", "downsample": 8,
            "codebook_size": 64}
    spec.update(changes)
    return {k: v for k, v in spec.items() if v is not None}


def write_config(root, **changes) -> str:
    photos = root / "photos"
    photos.mkdir(exist_ok=True)
    from PIL import Image
    Image.new("RGB", (172, 256), (90, 120, 200)).save(photos / "a.png")
    config = {"datasets": {"mine": {"type": "folder", "path": str(photos)}},
              "models": {"my_vq": vq_spec(root, **changes)},
              "metrics": {"missing_weights": "n/a"}}
    path = root / "my.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def check(path, monkeypatch, cwd) -> str | None:
    monkeypatch.chdir(cwd)
    return check_file(path, str(REPO / "config.schema.yaml"))


# ------------------------------------------------------------------ the user's mistakes

def test_a_good_model_passes_and_is_probed_at_the_padding_size(user_model, monkeypatch):
    assert check(write_config(user_model), monkeypatch, user_model) is None
    stored = json.loads((user_model / ".snakemake/roundtrip/probes/my_vq.json").read_text())
    h, w = padding_size(8)
    assert (h, w) == (56, 72)  # odd multiples of 8, at least 48 a side
    assert stored["result"]["latent_shapes"] == {f"{h}x{w}": [h // 8, w // 8]}
    assert stored["result"]["token_shapes"] == {f"{h}x{w}": [h // 8, w // 8]}


@pytest.mark.parametrize("changes, expected", [
    ({"pythonpath": None},
     "models.my_vq.import_path: module 'my_vq' not found: add its folder to PYTHONPATH or set "
     "models.my_vq.pythonpath"),
    ({"import_path": "my_vq:TinyVQQ"},
     "models.my_vq.import_path: module 'my_vq' has no 'TinyVQQ' (classes there: TinyVQ)"),
    ({"kwargs": {"depth": 3}},
     "models.my_vq.kwargs: TinyVQ(**{'depth': 3}) failed: TypeError: "),
    ({"kwargs": {"width": 32}},
     "models.my_vq.state_dict: "),
    ({"downsample": 4},
     "models.my_vq.downsample: 4 gives 48 px for 52: the model needs a multiple of 8 "
     "(set models.my_vq.downsample: 8)"),
])
def test_each_mistake_is_one_line_naming_the_key(user_model, monkeypatch, changes, expected):
    problem = check(write_config(user_model, **changes), monkeypatch, user_model)
    assert problem is not None and problem.startswith(expected), problem
    assert "\n" not in problem and "Traceback" not in problem


def test_wrong_kwargs_name_the_mismatch_and_the_key_to_check(user_model, monkeypatch):
    problem = check(write_config(user_model, kwargs={"width": 32}), monkeypatch, user_model)
    assert "does not fit TinyVQ(**{'width': 32}): size mismatch for enc.0.weight" in problem
    assert "check models.my_vq.kwargs" in problem


def test_missing_weights_name_the_file(user_model, monkeypatch):
    problem = check(write_config(user_model, state_dict=str(user_model / "nope.pt")),
                    monkeypatch, user_model)
    assert problem.startswith("models.my_vq") and "nope.pt" in problem


def test_a_discrete_family_needs_tokens(user_model, monkeypatch):
    (user_model / "code" / "my_vq.py").write_text(MODULE.replace("def tokens", "def _tokens"))
    problem = check(write_config(user_model), monkeypatch, user_model)
    assert problem.startswith("models.my_vq.family: VQ is discrete, but the model gives no token "
                              "ids"), problem


def test_the_chd_reference_fails_the_same_way(user_model, monkeypatch):
    """The model CHD scores in gets the probe's line too, not a traceback from the
    evaluation's check (which loads it to read its family)."""
    path = write_config(user_model, kwargs={"width": 32})
    config = yaml.safe_load(open(path))
    config["metrics"]["tokens"] = {"reference": "my_vq", "datasets": ["mine"]}
    open(path, "w").write(yaml.safe_dump(config))
    problem = check(path, monkeypatch, user_model)
    assert problem.startswith("models.my_vq.state_dict: ") and "\n" not in problem


def test_every_failing_model_is_listed_at_once(user_model, monkeypatch):
    path = write_config(user_model, downsample=4)
    config = yaml.safe_load(open(path))
    config["models"]["other"] = vq_spec(user_model, import_path="my_vq:Nope")
    open(path, "w").write(yaml.safe_dump(config))
    lines = check(path, monkeypatch, user_model).splitlines()
    assert [line.split(":")[0] for line in lines] == ["models.my_vq.downsample",
                                                      "models.other.import_path"]


# ------------------------------------------------------------------ sizes and cache

def test_protocol_sizes_are_probed_padded(user_model):
    config = {"models": {"my_vq": vq_spec(user_model)},
              "datasets": {"a": {"type": "folder", "path": "x", "protocol": "model_size",
                                 "size": 100},
                           "b": {"type": "folder", "path": "x", "protocol": "fixed_1024"},
                           "c": {"type": "folder", "path": "x"}}}
    result = probe_config(config, cache=None)["my_vq"]
    assert list(result.latent_shapes) == ["104x104", "1024x1024", "56x72"]
    assert result.latent_shapes["104x104"] == (13, 13)


def test_the_cache_skips_a_second_probe_until_a_file_changes(user_model, monkeypatch):
    config = {"models": {"my_vq": vq_spec(user_model)},
              "datasets": {"c": {"type": "folder", "path": "x"}}}
    calls = []
    import roundtrip.workflow.probes as probes

    real = probes.probe_model
    monkeypatch.setattr(probes, "probe_model", lambda *a: calls.append(1) or real(*a))
    cache = user_model / "cache"
    first = probe_cached("my_vq", config["models"]["my_vq"], config, cache)
    second = probe_cached("my_vq", config["models"]["my_vq"], config, cache)
    assert len(calls) == 1 and first.latent_shapes == second.latent_shapes
    torch.save(torch.load(user_model / "tiny_vq.pt"), user_model / "tiny_vq.pt")  # new mtime
    import os
    os.utime(user_model / "tiny_vq.pt", ns=(1, 1))
    probe_cached("my_vq", config["models"]["my_vq"], config, cache)
    assert len(calls) == 2


def test_trained_codec_and_api_models_are_not_probed():
    config = {"models": {"small": {"type": "small", "family": "VQ"},
                         "jpeg": {"type": "jpeg", "quality": 75},
                         "gpt": {"type": "api_image", "endpoint": "openai"}},
              "datasets": {}}
    assert probe_config(config, cache=None) == {}


def test_probe_input_is_the_photographs_cropped_and_resized():
    """scikit-image's astronaut and coffee, centre-cropped to the aspect ratio and resized."""
    from skimage import data
    from skimage.transform import resize

    x = probe_input(48, 80)
    assert x.shape == (2, 3, 48, 80) and x.dtype == torch.float32
    assert float(x.min()) >= -1.0 and float(x.max()) <= 1.0
    assert torch.equal(x, probe_input(48, 80))
    coffee = data.coffee()  # 400 x 600: the crop is 360 x 600, rows 20 to 380
    expected = resize(coffee[20:380] / 127.5 - 1.0, (48, 80), order=1, anti_aliasing=True)
    got = x[1].permute(1, 2, 0).numpy()
    assert abs(got - expected).mean() < 0.02  # two antialiasing filters, one picture
    assert abs(got - expected[::-1]).mean() > 0.2  # a flip of it is another picture


def test_a_forward_error_names_the_model_and_size(user_model):
    model = build_model("my_vq", vq_spec(user_model))
    model.load()
    model.module.encode = lambda x: (_ for _ in ()).throw(RuntimeError("boom\nsecond line"))
    with pytest.raises(ProbeError, match=r"^models\.my_vq: forward pass at 56x72 failed: "
                                         r"RuntimeError: boom$"):
        probe_model(model, [(56, 72)])


# ------------------------------------------------------------------ the model card

def test_the_card_shows_a_user_models_latent(user_model):
    ids = build_model("my_vq", vq_spec(user_model))
    floats = build_model("my_vqf", vq_spec(user_model, kwargs={"latent": "float"}))
    jpeg = build_model("jpeg", {"type": "jpeg", "quality": 75})
    frame, notes = model_card([ids, floats, jpeg])
    rows = frame.set_index("model")
    assert rows.loc["my_vq", "latent_256"] == "32x32" and rows.loc["my_vq", "latent_512"] == "64x64"
    assert rows.loc["my_vqf", "latent_256"] == "16x32x32"
    assert rows.loc["my_vqf", "ratio_256"] == pytest.approx(16 * 32 * 32 / (3 * 256 * 256))
    assert rows.loc["jpeg", "latent_256"] == "–"
    assert [n for n in notes if "bitstream" in n] == [
        "jpeg: the latent is a variable-length bitstream, not a tensor; no fixed compression "
        "ratio."]


def test_the_module_under_pythonpath_wins_over_one_of_its_name_imported_before(user_model,
                                                                               tmp_path):
    """Two configs checked in one process (a notebook, a test session) may each bring a
    ``my_vq.py``: the second model's ``pythonpath`` gets its own module, not the first one's
    from ``sys.modules``."""
    import sys

    first = build_model("my_vq", vq_spec(user_model))
    assert type(first.module).__name__ == "TinyVQ" and "my_vq" in sys.modules
    other = tmp_path / "other"
    other.mkdir()
    (other / "my_vq.py").write_text(MODULE.replace("class TinyVQ", "class OtherVQ"))
    second = build_model("my_vq", vq_spec(user_model, import_path="my_vq:OtherVQ",
                                          pythonpath=str(other)))
    assert type(second.module).__name__ == "OtherVQ"
    assert sys.modules["my_vq"].__file__ == str(other / "my_vq.py")

"""The harness: per-item outcomes, failure isolation, resume after a crash, stale-output guard."""
import numpy as np
import pandas as pd
import pytest

from roundtrip.core.imaging import read_image
from roundtrip.core.manifest import merge_status, read_manifest
from roundtrip.datasets import build_dataset
from roundtrip.models import build_model
from roundtrip.models.base import Adapter, ModelInfo
from roundtrip.stages.reconstruct import reconstruct_shard, shard_rows


@pytest.fixture()
def dataset(tmp_path):
    build_dataset("d", {"type": "skimage", "images": ["astronaut", "coins", "chelsea", "camera"]},
                  tmp_path / "ds")
    m = read_manifest(tmp_path / "ds" / "manifest.csv")
    m.loc[len(m)] = {**m.iloc[0].to_dict(), "item_id": "lost", "path": "", "status": "error",
                     "reason": "cannot decode lost.png"}
    m.to_csv(tmp_path / "ds" / "manifest.csv", index=False)
    return tmp_path / "ds" / "manifest.csv"


class Flaky(Adapter):
    """Fails on 303-pixel-high images (coins), counts calls; 512x512 only if ``fixed``."""

    def __init__(self, fixed=False):
        self.calls, self.fixed = 0, fixed

    def encode(self, x):
        self.calls += x.shape[0]
        if x.shape[-2] == 303:
            raise RuntimeError("decoder exploded")
        return x

    def decode(self, z):
        return z * 0.5

    def info(self):
        return ModelInfo(family="continuous", native_sizes=[(512, 512)], fixed_size=self.fixed)


def test_outcomes_are_recorded_per_item(dataset, tmp_path):
    model = Flaky(fixed=False)
    model.name = "flaky"
    st = reconstruct_shard(model, dataset, tmp_path / "r").set_index("item_id")
    assert st.loc["coins", "status"] == "error" and "decoder exploded" in st.loc["coins", "reason"]
    assert st.loc["lost", "status"] == "error" and st.loc["lost", "reason"].startswith("dataset:")
    for ok in ("astronaut", "chelsea", "camera"):
        assert st.loc[ok, "status"] == "ok"
        assert (tmp_path / "r" / f"{ok}.png").exists()
    # decode halves [-1, 1] values: pixel 0 -> 0.25 -> 64 (uint8)
    out = read_image(tmp_path / "r" / "camera.png")
    src = read_image(dataset.parent / "images" / "camera.png")
    expected = np.rint(((src / 255.0 * 2 - 1) * 0.5 + 1) / 2 * 255)
    assert np.abs(out.astype(int) - expected).max() <= 1


def test_fixed_size_models_mark_unsupported(dataset, tmp_path):
    model = Flaky(fixed=True)
    model.name = "fixed"
    st = reconstruct_shard(model, dataset, tmp_path / "r").set_index("item_id")
    assert st.loc["astronaut", "status"] == "ok"
    assert st.loc["chelsea", "status"] == "unsupported"
    assert "accepts 512x512); input is 300x451" in st.loc["chelsea", "reason"]


def test_resume_skips_finished_items_and_fingerprint_guards(dataset, tmp_path):
    model = build_model("jpeg", {"type": "jpeg", "quality": 50})
    out = tmp_path / "r"
    reconstruct_shard(model, dataset, out, fingerprint={"q": 50})
    journal = out / "shards" / "0-of-1.journal.csv"
    # simulate a crash after two items: keep the journal header and two rows
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:4]) + "\n")
    kept_ok = sum(",ok," in line for line in lines[1:4])
    assert kept_ok == 2  # the dataset error is journaled first, then two images
    calls = []
    original = model.encode
    model.encode = lambda x: calls.append(x.shape[0]) or original(x)
    st = reconstruct_shard(model, dataset, out, fingerprint={"q": 50})
    assert (st["status"] == "ok").sum() == 4
    assert sum(calls) == 2  # only the two items missing from the journal were recomputed
    # a changed model spec must not reuse the old images
    calls.clear()
    reconstruct_shard(model, dataset, out, fingerprint={"q": 10})
    assert sum(calls) == 4


def test_shards_partition_the_manifest(dataset, tmp_path):
    m = pd.read_csv(dataset)
    parts = [shard_rows(m, k, 2)["item_id"].tolist() for k in range(2)]
    assert sorted(parts[0] + parts[1]) == sorted(m["item_id"]) and not set(parts[0]) & set(parts[1])
    model = build_model("identity", {"type": "identity"})
    files = []
    for k in range(2):
        reconstruct_shard(model, dataset, tmp_path / "r", shard=k, n_shards=2)
        files.append(tmp_path / "r" / "shards" / f"{k}-of-2.csv")
    merged = merge_status(files, tmp_path / "r" / "status.csv")
    assert sorted(merged["item_id"]) == sorted(m["item_id"])
    with pytest.raises(ValueError):
        shard_rows(m, 2, 2)


def test_wrong_output_shape_is_an_error(dataset, tmp_path):
    class Cropper(Flaky):
        def decode(self, z):
            return z[..., :-1]
    model = Cropper()
    model.name = "cropper"
    st = reconstruct_shard(model, dataset, tmp_path / "r").set_index("item_id")
    assert st.loc["astronaut", "status"] == "error" and "shape" in st.loc["astronaut", "reason"]

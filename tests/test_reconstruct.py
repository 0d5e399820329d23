"""The harness: per-item outcomes, failure isolation, resume after a crash, stale-output guard."""
from pathlib import Path

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
    assert st.loc["astronaut", "status"] == "error"
    assert "returned 512x511 for 512x512" in st.loc["astronaut", "reason"]


def _streamed(rows, root, batch_size, max_pending_bytes=1 << 30):
    """The batches of :func:`prepared_batches` over ``rows`` and the rows read before each."""
    from roundtrip.stages import reconstruct as R

    read = []

    def counting():  # a manifest frame that records how far it has been read
        for i, r in rows.iterrows():
            read.append(r["item_id"])
            yield i, r

    frame = rows.copy()
    frame.iterrows = counting
    out = []
    for batch in R.prepared_batches(build_model("identity", {"type": "identity"}), frame,
                                    Path(root), lambda *a: None, "native", None, batch_size,
                                    max_pending_bytes):
        out.append(([item_id for item_id, _, _ in batch], len(read)))
    return out


def test_batches_stream_and_equal_the_grouped_set(tmp_path):
    """Items of one size run as soon as a batch is full, the rest at the end; the batches are
    those of grouping the whole set by size and cutting each group in manifest order."""
    images = ["astronaut", "camera", "coins", "chelsea", "coffee", "moon", "page", "text"]
    build_dataset("s", {"type": "skimage", "images": images}, tmp_path)
    m = read_manifest(tmp_path / "manifest.csv")
    sizes = {r["item_id"]: (r["height"], r["width"]) for _, r in m.iterrows()}
    expected = {}
    for item in m["item_id"]:
        expected.setdefault(sizes[item], []).append(item)
    want = sorted(group[k:k + 2] for group in expected.values() for k in range(0, len(group), 2))
    got = _streamed(m, tmp_path, batch_size=2)
    assert sorted(batch for batch, _ in got) == want
    # astronaut and camera are both 512 x 512: their batch runs after two rows are read, not
    # after the whole manifest
    assert got[0] == (["astronaut", "camera"], 2)
    # a tiny budget runs every item at once: nothing waits, memory holds one item
    tight = _streamed(m, tmp_path, batch_size=8, max_pending_bytes=1)
    assert [n for _, n in tight] == list(range(1, len(m) + 1))
    assert sorted(i for batch, _ in tight for i in batch) == sorted(m["item_id"])


def test_code_extraction_streams_and_keeps_manifest_order(dataset, tmp_path):
    """extract_codes batches by input size (astronaut and camera together, coins alone) but
    writes codes.csv and latents.npz in manifest order, the error item included."""
    from roundtrip.stages.codes import extract_codes

    df = extract_codes(build_model("identity", {"type": "identity"}), dataset, tmp_path / "c",
                       batch_size=2)
    assert list(df["item_id"]) == list(read_manifest(dataset)["item_id"])
    assert df.set_index("item_id").loc["lost", "status"] == "error"
    assert df.set_index("item_id").loc["coins", "latent_shape"] == "3x303x384"
    latents = np.load(tmp_path / "c" / "latents.npz")
    assert list(latents) == ["astronaut", "coins", "chelsea", "camera"]
    assert latents["camera"].shape == (3, 512, 512)

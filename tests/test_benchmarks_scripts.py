"""The parts of the benchmark scripts that can be checked without running them: scale.py's
images and shards, and gpu.py's refusal on a machine without CUDA."""
import hashlib
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def scale():
    spec = importlib.util.spec_from_file_location("scale_bench", REPO / "benchmarks/scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_images_are_seeded_distinct_rgb(scale):
    imgs = [scale.make_image(i) for i in range(40)]
    for img in imgs:
        assert img.shape == (256, 256, 3) and img.dtype == np.uint8
        assert img.std() > 10  # not flat: a codec has something to lose
    assert len({hashlib.sha256(img.tobytes()).hexdigest() for img in imgs}) == 40
    assert np.array_equal(scale.make_image(7), imgs[7])  # seeded: the same bytes again
    assert not np.array_equal(scale.make_image(7, seed=1), imgs[7])
    assert scale.make_image(3, side=64).shape == (64, 64, 3)


def test_shards_read_back_with_the_webdataset_builder(scale, tmp_path):
    from roundtrip.datasets.webdataset_shards import build

    shards = scale.write_shards(tmp_path / "shards", 25, per_shard=10, side=32)
    assert [p.name for p in shards] == ["scale-000000.tar", "scale-000001.tar",
                                        "scale-000002.tar"]
    items = list(build("scale", {"path": str(tmp_path / "shards")}, tmp_path / "out"))
    assert [it.item_id for it in items] == [f"{i:06d}" for i in range(25)]
    assert all(it.reason in (None, "") for it in items)
    for i in (0, 13, 24):  # PNG members: lossless
        assert np.array_equal(items[i].image, scale.make_image(i, side=32))
    again = scale.write_shards(tmp_path / "again", 25, per_shard=10, side=32)
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in shards]


def test_scale_config_is_valid(scale, tmp_path):
    from roundtrip.workflow.checks import schema_problem

    config = scale.scale_config(tmp_path / "shards", tmp_path / "small.pt", jobs=2)
    assert schema_problem(config, str(REPO / "config.schema.yaml")) in (None, "")
    assert config["datasets"]["scale"]["shards"] == 2
    assert set(config["models"]) == set(scale.MODELS)


def test_small_model_loads_through_the_state_dict_type(scale, tmp_path):
    """The config's ``small`` entry builds, loads the random weights and reconstructs."""
    import torch

    from roundtrip.models import build_model

    config = scale.scale_config(tmp_path, tmp_path / "small.pt", jobs=1)
    from scale_small import save_random  # on sys.path: scale.py put its folder there

    save_random(tmp_path / "small.pt", config["models"]["small"]["kwargs"])
    model = build_model("small", config["models"]["small"]).to("cpu")
    model.load()
    x = torch.rand(2, 3, 32, 32) * 2 - 1
    assert model.reconstruct(x).shape == x.shape
    assert model.tokens(model.encode(x)).shape == (2, 8, 8)
    assert model.info().family == "VQ" and model.info().codebook_size == 1024


def test_gpu_benchmark_refuses_without_cuda(tmp_path):
    out = tmp_path / "gpu.json"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no device, also on a machine with one
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/gpu.py"), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        "no CUDA device: benchmarks/gpu.py needs a GPU; nothing written")
    assert not out.exists() and list(tmp_path.iterdir()) == []

"""Shared fixtures: real images bundled with scikit-image, degraded in known ways."""
import io
import shutil
from pathlib import Path

import numpy as np
import pytest
import skimage.data
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
#: Per-file durations of the last recorded runs (benchmarks/test_durations.py).
DURATIONS = REPO / "benchmarks" / "results" / "test_durations.json"


def pytest_configure(config):
    """In a test process of ``make test`` (pytest-xdist: ``PYTEST_XDIST_WORKER`` is set), PyTorch
    computes on one thread: two processes each on every core would share the cores four ways,
    and a network test slows down several times over. A test that sets its threads still does;
    the jobs of a workflow test set their own."""
    import os
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch
        torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Run the files longest first, as recorded in :data:`DURATIONS` (a file not recorded yet
    counts as one of a second): with test processes (pytest-xdist, ``--dist loadfile``) each
    file goes whole to the next free process in this order, so the long workflow files start
    at once instead of last, and the short ones fill the gaps at the end. Within a file the
    order is the file's own."""
    import json
    try:
        seconds = json.loads(DURATIONS.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return
    order = {}
    for item in items:
        order.setdefault(item.nodeid.split("::")[0], len(order))
    items.sort(key=lambda item: (-float(seconds.get(item.nodeid.split("::")[0], {})
                                        .get("median_s", 1.0)),
                                 order[item.nodeid.split("::")[0]]))


def default_prompts() -> dict[str, str]:
    """The prompt templates every config gets unless it names its own (``api.prompts``: their
    defaults in config.schema.yaml)."""
    import yaml
    schema = yaml.safe_load((REPO / "config.schema.yaml").read_text())
    prompts = schema["properties"]["api"]["properties"]["prompts"]["properties"]
    return {name: entry["default"] for name, entry in prompts.items()}


@pytest.fixture(scope="session")
def photos():
    """Bundled RGB photographs at native sizes, uint8 (H, W, 3)."""
    return {n: getattr(skimage.data, n)() for n in ("astronaut", "chelsea", "coffee", "rocket")}


def jpeg_roundtrip(img: np.ndarray, quality: int) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


@pytest.fixture(scope="session")
def degraded_pairs(photos):
    """(name, original, degraded) uint8 pairs: JPEG q10/q50 and additive noise."""
    rng = np.random.default_rng(0)
    pairs = []
    for name, img in photos.items():
        pairs.append((f"{name}-jpeg10", img, jpeg_roundtrip(img, 10)))
        pairs.append((f"{name}-jpeg50", img, jpeg_roundtrip(img, 50)))
        noisy = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
        pairs.append((f"{name}-noise", img, noisy))
    return pairs


def tesseract_available() -> bool:
    return shutil.which("tesseract") is not None


requires_tesseract = pytest.mark.skipif(
    not tesseract_available(),
    reason="tesseract not installed (apt-get install tesseract-ocr tesseract-ocr-eng)")

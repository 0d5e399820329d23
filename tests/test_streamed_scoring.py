"""Streamed scoring in the reconstruction job (roundtrip.core.scoring, roundtrip.workflow.
recon_job): scorers get every item in manifest order from memory, only the first
``keep_reconstructions`` are written, a crash loses no scored item, shards are scored in their
own jobs and finished together with the same bytes as one job, and file-based scorers still
read the files."""
from __future__ import annotations

import filecmp

import numpy as np
import pandas as pd
import pytest
from conftest import requires_tesseract

from roundtrip.core.imaging import read_image
from roundtrip.core.manifest import read_manifest
from roundtrip.core.scoring import ReconScorer, read_score_journal, scorer_key
from roundtrip.datasets import build_dataset
from roundtrip.stages import reconstruct
from roundtrip.workflow import recon_job

IMAGES = ["astronaut", "coins", "chelsea", "camera", "coffee", "moon", "page", "text"]
JPEG = {"type": "jpeg", "quality": 40}
QUALITY = {"image_quality": "roundtrip.evals.vtbench.image_quality:ImageQualityScorer"}


class Recorder(ReconScorer):
    """Keeps what it was given (the test reads ``SEEN``): item ids in delivery order, and the
    sum of each reconstruction's pixels."""

    SEEN: list = []

    def score(self, items):
        Recorder.SEEN.append([i.item_id for i in items])
        return [int(i.read_reconstruction().sum()) if i.status == "ok" else i.reason
                for i in items]

    def finish(self, items, records):
        return {"recorder": pd.DataFrame({"item_id": [i.item_id for i in items],
                                          "record": records})}


class Exploding(ReconScorer):
    """Fails on its second delivery (a crash in the middle of a set)."""

    calls = 0

    def score(self, items):
        Exploding.calls += 1
        if Exploding.calls == 2:
            raise RuntimeError("scorer crashed")
        return [None] * len(items)

    def finish(self, items, records):
        return {}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("streamed")
    build_dataset("d", {"type": "skimage", "images": IMAGES}, root / "ds")
    m = read_manifest(root / "ds" / "manifest.csv")
    # an item the dataset could not read: it reaches the scorers with its reason, in its place
    m.loc[len(m)] = {**m.iloc[0].to_dict(), "item_id": "lost", "path": "", "status": "error",
                     "reason": "cannot decode lost.png"}
    m = pd.concat([m.iloc[[0, 1, len(m) - 1]], m.iloc[2:len(m) - 1]], ignore_index=True)
    m.to_csv(root / "ds" / "manifest.csv", index=False)
    return root / "ds" / "manifest.csv"


def _outputs(root):
    (root / "m").mkdir(parents=True, exist_ok=True)
    return {"status": str(root / "r" / "status.csv"), "recorder": str(root / "m" / "rec.csv"),
            "image_quality": str(root / "m" / "iq.csv"), "set": str(root / "m" / "set.csv")}


def _run(root, dataset, keep=None, scorers=("recorder", "image_quality"), n_shards=1,
         batch_size=3):
    targets = {"recorder": f"{__name__}:Recorder", **QUALITY}
    return recon_job.run_recon_job("jpeg", JPEG, dataset, _outputs(root),
                                   {s: {} for s in scorers}, {s: targets[s] for s in scorers},
                                   device="cpu", n_shards=n_shards, keep=keep,
                                   batch_size=batch_size, protocol="native", size=None)


def test_scorers_get_every_item_once_from_memory_and_finish_in_manifest_order(dataset,
                                                                             tmp_path):
    Recorder.SEEN = []
    _run(tmp_path, dataset, keep=2)
    order = list(read_manifest(dataset)["item_id"])
    # each item once, as batches (by input size) finish, at most SINK_CHUNK at a time
    seen = [i for chunk in Recorder.SEEN for i in chunk]
    assert sorted(seen) == sorted(order) and seen != order
    assert max(len(chunk) for chunk in Recorder.SEEN) <= reconstruct.SINK_CHUNK
    # only the first two items the dataset holds are files ("lost" is the third row, but the
    # dataset could not read it); the scorers had the others in memory
    assert order[:3] == ["astronaut", "coins", "lost"]
    assert sorted(p.stem for p in (tmp_path / "r").glob("*.png")) == ["astronaut", "coins"]
    rec = pd.read_csv(tmp_path / "m" / "rec.csv", dtype={"record": str}).set_index("item_id")
    kept = read_image(tmp_path / "r" / f"{order[0]}.png")
    assert int(rec.loc[order[0], "record"]) == int(kept.sum())
    assert rec.loc["lost", "record"] == "dataset: cannot decode lost.png"
    assert (rec.index == order).all()  # finish: manifest order


def test_kept_or_not_the_metrics_are_those_read_from_the_files(dataset, tmp_path):
    _run(tmp_path / "few", dataset, keep=0)
    _run(tmp_path / "all", dataset, keep=None)
    for name in ("iq.csv", "set.csv", "rec.csv"):
        assert filecmp.cmp(tmp_path / "few/m" / name, tmp_path / "all/m" / name, shallow=False)
    assert not list((tmp_path / "few/r").glob("*.png"))
    # the file-based reading of the kept files gives the same per-item numbers
    from roundtrip.evals.vtbench.image_quality import score_image_quality

    from_files = score_image_quality(dataset, tmp_path / "all/r/status.csv", tmp_path / "all/r")
    assert from_files.to_csv(index=False) == (tmp_path / "all/m/iq.csv").read_text()
    quality = from_files[from_files["status"] == "ok"]
    assert len(quality) == len(IMAGES) and quality["psnr"].between(20, 60).all()


def test_a_crash_loses_no_scored_item(dataset, tmp_path, monkeypatch):
    """The scorer dies on its second delivery: the items of the first are journaled with their
    records, and the rerun reconstructs and scores only the others; the frames equal an
    uninterrupted run's."""
    monkeypatch.setattr(reconstruct, "SINK_CHUNK", 3)
    Exploding.calls = 0
    targets = {"boom": f"{__name__}:Exploding", "recorder": f"{__name__}:Recorder"}
    scorers = {"recorder": {}, "boom": {}}
    outputs = _outputs(tmp_path)
    with pytest.raises(RuntimeError, match="scorer crashed"):
        recon_job.run_recon_job("jpeg", JPEG, dataset, outputs, scorers, targets, device="cpu",
                                keep=0, batch_size=3, protocol="native", size=None)
    journal = read_score_journal(tmp_path / "r/shards/0-of-1.scores.pkl")
    held = {key.split(":")[0]: {i for i, _ in pairs} for key, pairs in journal[:2]}
    first = held["recorder"] & held["boom"]  # the first delivery: both scorers have it
    assert 3 <= len(first) < len(IMAGES)
    Recorder.SEEN = []
    recon_job.run_recon_job("jpeg", JPEG, dataset, outputs, scorers, targets, device="cpu",
                            keep=0, batch_size=3, protocol="native", size=None)
    redone = {i for chunk in Recorder.SEEN for i in chunk}
    assert redone == set(read_manifest(dataset)["item_id"]) - first
    Recorder.SEEN = []
    _run(tmp_path / "once", dataset, keep=0, scorers=("recorder",))
    assert filecmp.cmp(tmp_path / "m/rec.csv", tmp_path / "once/m/rec.csv", shallow=False)


def test_changed_options_or_inputs_make_records_stale(tmp_path):
    f = tmp_path / "ocr.csv"
    f.write_text("a")
    key = scorer_key("text", "m:T", {"ocr_original": {"tesseract": str(f)}})
    assert key == scorer_key("text", "m:T", {"ocr_original": {"tesseract": str(f)}})
    assert key != scorer_key("text", "m:T", {"ocr_original": {"tesseract": str(f)}, "x": 1})
    f.write_text("ab")  # the OCR of the originals was redone
    assert key != scorer_key("text", "m:T", {"ocr_original": {"tesseract": str(f)}})


def test_shards_scored_in_their_jobs_finish_to_the_bytes_of_one_job(dataset, tmp_path):
    _run(tmp_path / "one", dataset, keep=1)
    root = tmp_path / "sharded"
    targets = {"recorder": f"{__name__}:Recorder", **QUALITY}
    for k in range(3):
        recon_job.run_shard_job("jpeg", JPEG, dataset, root / "r", k, 3,
                                {"recorder": {}, "image_quality": {}}, targets, device="cpu",
                                keep=1, batch_size=3, protocol="native", size=None)
    # the job of the whole set loads no model: it finishes the shards' records
    calls = []
    original = reconstruct.load_model
    try:
        reconstruct.load_model = lambda *a, **k: calls.append(a) or original(*a, **k)
        _run(root, dataset, keep=1, n_shards=3)
    finally:
        reconstruct.load_model = original
    assert not calls
    for name in ("iq.csv", "set.csv", "rec.csv"):
        assert filecmp.cmp(tmp_path / "one/m" / name, root / "m" / name, shallow=False), name
    assert [p.name for p in (root / "r").glob("*.png")] == \
        [f"{read_manifest(dataset)['item_id'][0]}.png"]


def score_files(ctx, options):
    """A file-based scorer: reads every reconstruction file after the job."""
    rows = [{"item_id": i.item_id, "mean": float(read_image(i.reconstruction).mean())
             if i.status == "ok" else np.nan} for i in ctx.recon_items()]
    return {"recorder": pd.DataFrame(rows)}


def test_a_file_based_scorer_reads_every_file_then_they_are_pruned(dataset, tmp_path):
    outputs = _outputs(tmp_path)
    recon_job.run_recon_job("jpeg", JPEG, dataset, outputs, {"files": {}},
                            {"files": f"{__name__}:score_files"}, device="cpu", keep=2,
                            batch_size=3, protocol="native", size=None)
    means = pd.read_csv(outputs["recorder"])
    assert means["mean"].notna().sum() == len(IMAGES)
    assert len(list((tmp_path / "r").glob("*.png"))) == 2


def _text_options_counting_reads(manifest, psm, tmp_path, monkeypatch):
    """The text scorer's options for one Tesseract engine, with the originals' OCR file
    written to ``tmp_path/orig.csv``; then every Tesseract run of the test is counted (images
    per run) in the list returned beside them (a single-image ``read`` returns "")."""
    from roundtrip.readers import TesseractOCR, build_ocr
    from roundtrip.stages.ocr import ocr_dataset

    engine = {"type": "tesseract", "psm": psm, "oem": 1}
    ocr_dataset(build_ocr("tesseract", engine), manifest, "eng").to_csv(
        tmp_path / "orig.csv", index=False)
    options = {"text": {"engines": {"tesseract": engine},
                        "ocr_original": {"tesseract": str(tmp_path / "orig.csv")},
                        "lang": "eng", "normalization": {}}}
    reads = []
    real = TesseractOCR.read_many
    monkeypatch.setattr(TesseractOCR, "read_many",
                        lambda self, images, lang="eng": reads.append(len(images))
                        or real(self, images, lang))
    monkeypatch.setattr(TesseractOCR, "read", lambda *a, **k: reads.append(1) or "")
    return options, reads


@requires_tesseract
def test_a_lossless_reconstruction_is_not_read_again(tmp_path, monkeypatch):
    """OCR of an identity reconstruction is the original's reading, without a Tesseract run;
    a lossy model's reconstructions are read."""
    build_dataset("t", {"type": "skimage", "images": ["page", "text"]}, tmp_path / "ds")
    manifest = tmp_path / "ds" / "manifest.csv"
    options, reads = _text_options_counting_reads(manifest, 3, tmp_path, monkeypatch)
    targets = {"text": "roundtrip.evals.vtbench.text:TextScorer"}
    for model, spec in (("identity", {"type": "identity"}), ("jpeg", JPEG)):
        out = tmp_path / model
        (out / "m").mkdir(parents=True)
        outputs = {"status": str(out / "r/status.csv"), "ocr_tesseract": str(out / "ocr.csv"),
                   "text_tesseract": str(out / "m/text.csv")}
        recon_job.run_recon_job(model, spec, manifest, outputs, options, targets,
                                device="cpu", keep=0, protocol="native", size=None)
        if model == "identity":
            assert reads == []  # nothing read: the original's OCR file holds the readings
            assert (out / "ocr.csv").read_text() == (tmp_path / "orig.csv").read_text()
            text = pd.read_csv(out / "m/text.csv").set_index("item_id")
            assert text.loc["page", "cer"] == 0  # the handwriting reads as nothing: no CER
    assert sum(reads) == 2  # JPEG's two reconstructions are read


@requires_tesseract
def test_a_protocol_copy_of_the_original_is_not_read_again_a_resized_one_is(tmp_path,
                                                                              monkeypatch):
    """Under ``model_size`` at the images' own size identity's reconstructions are the
    original's readings (and no reference copy is saved). Under a protocol that resizes,
    identity reproduces the resized reference, not the original that ocr_original read, so
    Tesseract reads them."""
    import skimage.data
    from PIL import Image

    folder = tmp_path / "pages"
    folder.mkdir()
    for name in ("page", "text"):
        Image.fromarray(getattr(skimage.data, name)()[:160, :160]).convert("RGB").save(
            folder / f"{name}.png")
    build_dataset("sq", {"type": "folder", "path": str(folder)}, tmp_path / "ds")
    manifest = tmp_path / "ds" / "manifest.csv"
    options, reads = _text_options_counting_reads(manifest, 6, tmp_path, monkeypatch)
    for protocol, size, expected_reads in (("model_size", 160, 0), ("fixed", 96, 2)):
        out = tmp_path / protocol
        (out / "m").mkdir(parents=True)
        outputs = {"status": str(out / "r/status.csv"), "ocr_tesseract": str(out / "ocr.csv"),
                   "text_tesseract": str(out / "m/text.csv")}
        reads.clear()
        recon_job.run_recon_job("identity", {"type": "identity"}, manifest, outputs, options,
                                {"text": "roundtrip.evals.vtbench.text:TextScorer"},
                                device="cpu", keep=2, protocol=protocol, size=size)
        refs = sorted(p.name for p in (out / "r" / "ref").glob("*.png"))
        assert refs == ([] if protocol == "model_size" else ["page.png", "text.png"])
        assert sum(reads) == expected_reads, protocol
        if not expected_reads:
            assert (out / "ocr.csv").read_text() == (tmp_path / "orig.csv").read_text()
    # a reference saved as a copy (a status file of an earlier version, a user's protocol):
    # the dataset's file decides, not the reference's path
    from types import SimpleNamespace

    from roundtrip.core.recon_items import ReconItem
    from roundtrip.evals.vtbench.text import TextScorer

    scorer = TextScorer(SimpleNamespace(manifest=manifest), options["text"])
    page = read_image(folder / "page.png")
    copy = tmp_path / "copy.png"
    copy.write_bytes((folder / "page.png").read_bytes())
    item = ReconItem("page", "ok", "", copy, None, page, page.copy(), {"path": "images/page.png"})
    assert (tmp_path / "ds" / "images" / "page.png").exists()
    assert scorer._is_original(item)
    other = page.copy()
    other[0, 0, 0] ^= 1
    assert not scorer._is_original(ReconItem("page", "ok", "", copy, None, other, other,
                                             {"path": "images/page.png"}))


def test_the_reader_and_finisher_threads_change_nothing(dataset, tmp_path):
    """With the model's forward pass overlapped by the reader and finisher threads (a GPU job,
    or one with several threads), the sink gets the same items with the same images, and the
    same files are written, as in one thread."""
    from roundtrip.models import build_model

    seen = {}
    for overlap in (False, True):
        got = seen[overlap] = []
        out = tmp_path / str(overlap)
        reconstruct.reconstruct_shard(
            build_model("jpeg", JPEG), dataset, out, keep=3, batch_size=3, overlap=overlap,
            sink=lambda items, got=got: got.extend(
                (i.item_id, i.status, None if i.reconstruction_image is None
                 else int(i.reconstruction_image.sum())) for i in items))
    # the same items, images and outcomes (the reader may report the unreadable item sooner)
    assert sorted(seen[True]) == sorted(seen[False]) and len(seen[True]) == len(IMAGES) + 1
    files = sorted(p.name for p in (tmp_path / "True").glob("*.png"))
    assert files == sorted(p.name for p in (tmp_path / "False").glob("*.png")) and len(files) == 3
    for name in files:
        assert filecmp.cmp(tmp_path / "True" / name, tmp_path / "False" / name, shallow=False)


def test_a_scorer_error_in_the_finisher_thread_stops_the_job(dataset, tmp_path):
    from roundtrip.models import build_model

    def sink(items):
        raise RuntimeError("finisher failed")

    with pytest.raises(RuntimeError, match="finisher failed"):
        reconstruct.reconstruct_shard(build_model("jpeg", JPEG), dataset, tmp_path, keep=0,
                                      batch_size=3, overlap=True, sink=sink)


def test_a_torn_journal_entry_is_cut_off_before_new_records(tmp_path):
    """A crash while writing leaves a torn entry; the next job's records are appended after
    the last whole one, so every later reading sees them."""
    from roundtrip.core.scoring import ScoreJournal

    path = tmp_path / "0-of-1.scores.pkl"
    first = ScoreJournal(path, {"k": lambda r: True})
    first.append("k", [("a", 1)])
    first.close()
    with open(path, "ab") as fh:
        fh.write(b"\x80\x05\x95torn")  # the start of a pickle, cut short
    again = ScoreJournal(path, {"k": lambda r: True})
    assert again.records["k"] == {"a": 1}
    again.append("k", [("b", 2), ("c", 3)])
    again.close()
    assert ScoreJournal(path, {"k": lambda r: True}).records["k"] == {"a": 1, "b": 2, "c": 3}


class Flaky(ReconScorer):
    """Fails on 'coins' on its first run (a timed-out request): the record is not final."""

    runs = 0

    def score(self, items):
        return [f"failed: {i.item_id}" if i.item_id == "coins" and Flaky.runs == 0 else "ok"
                for i in items]

    def complete(self, record):
        return not record.startswith("failed")

    def finish(self, items, records):
        Flaky.runs += 1
        return {"recorder": pd.DataFrame({"item_id": [i.item_id for i in items],
                                          "record": records})}


def test_a_failed_record_is_scored_again_when_the_job_runs_again(dataset, tmp_path):
    Flaky.runs = 0
    targets = {"flaky": f"{__name__}:Flaky"}
    outputs = _outputs(tmp_path)
    for _ in range(2):
        recon_job.run_recon_job("jpeg", JPEG, dataset, outputs, {"flaky": {}}, targets,
                                device="cpu", keep=0, batch_size=3, protocol="native",
                                size=None)
    records = pd.read_csv(outputs["recorder"]).set_index("item_id")["record"]
    assert (records == "ok").all()

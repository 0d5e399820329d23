"""The streamed large-set types: WebDataset tar shards and Hugging Face datasets (saved folders,
parquet), on shards and files written here from scikit-image's photographs, hostile ones
included; the streaming write path; the config check and the fingerprint of their sources."""
import gzip
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import skimage.data
import webdataset as wds
import yaml
from conftest import REPO
from datasets import ClassLabel, Dataset, DatasetDict, Features, Image, Value, disable_progress_bars
from PIL import Image as PILImage

from roundtrip.core.imaging import read_image
from roundtrip.core.manifest import Item, read_manifest, unique_ids, write_dataset
from roundtrip.datasets import DATASET_TYPES, IMAGES, build_dataset, dataset_fingerprint, role_of
from roundtrip.datasets import hf_dataset, webdataset_shards

disable_progress_bars()  # the sets written here are tiny; their bars would only be noise


def _rgb(a: np.ndarray) -> np.ndarray:
    return np.repeat(a[..., None], 3, axis=-1) if a.ndim == 2 else a


#: Small crops of scikit-image's photographs, RGB uint8: key -> (image, caption, label).
PHOTOS = {
    "s000": (skimage.data.astronaut()[40:88, 180:244], "an astronaut", "0"),
    "s001": (_rgb(skimage.data.camera()[100:140, 200:250]), "a cameraman", "1"),
    "s002": (skimage.data.coffee()[100:156, 200:264], "a cup of coffee", "2"),
    "s003": (skimage.data.chelsea()[60:100, 100:148], "a cat", "3"),
    "s004": (skimage.data.rocket()[200:232, 150:190], "a rocket", "4"),
}


def encode(image: np.ndarray, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(image).save(buf, format=fmt)
    return buf.getvalue()


def sample(key: str, image_ext: str = "png") -> dict:
    image, caption, label = PHOTOS[key]
    return {"__key__": key, image_ext: encode(image, "JPEG" if image_ext == "jpg" else "PNG"),
            "txt": caption, "cls": int(label)}


def write_shard(path: Path, samples: list[dict]) -> Path:
    with wds.TarWriter(str(path)) as writer:
        for s in samples:
            writer.write(s)
    return path


@pytest.fixture
def shards(tmp_path) -> Path:
    """Three shards: PNG samples with .txt/.cls, one JPEG sample labelled by .json, and one
    sample whose .png member is not an image."""
    root = tmp_path / "shards"
    root.mkdir()
    write_shard(root / "shard-000000.tar", [sample("s000"), sample("s001")])
    coffee = {"__key__": "s002", "jpg": encode(PHOTOS["s002"][0], "JPEG"),
              "json": {"caption": "a cup of coffee", "label": "drink"}}
    broken = sample("s003") | {"png": b"these bytes are not an image"}
    write_shard(root / "shard-000001.tar", [coffee, broken])
    write_shard(root / "shard-000002.tar", [sample("s004")])
    (root / "README.txt").write_text("not a shard")
    return root


def build(tmp_path, name="w", **spec):
    return build_dataset(name, spec, tmp_path / f"out_{name}")


# -- webdataset --------------------------------------------------------------------------------

def test_webdataset_samples_become_items_with_captions_labels_and_one_error(tmp_path, shards):
    df = build(tmp_path, type="webdataset", path=str(shards))
    m = read_manifest(tmp_path / "out_w" / "manifest.csv").set_index("item_id")
    assert list(m.index) == ["s000", "s001", "s002", "s003", "s004"]
    assert list(m["status"]) == ["ok", "ok", "ok", "error", "ok"]
    assert m.loc["s003", "reason"] == ("cannot decode s003.png: not a recognised image format "
                                       "(PNG, JPEG, TIFF, BMP, WebP, GIF)")
    assert m.loc["s003", "source"] == "webdataset:shard-000001.tar:s003"
    for key in ("s000", "s001", "s004"):  # PNG members: the very pixels written
        image, caption, label = PHOTOS[key]
        assert np.array_equal(read_image(tmp_path / "out_w" / m.loc[key, "path"]), image), key
        assert (m.loc[key, "text"], m.loc[key, "label"]) == (caption, label)
    coffee = read_image(tmp_path / "out_w" / m.loc["s002", "path"])
    assert coffee.shape == PHOTOS["s002"][0].shape  # a JPEG member: its decoded pixels
    assert np.abs(coffee.astype(int) - PHOTOS["s002"][0]).mean() < 4
    assert (m.loc["s002", "text"], m.loc["s002", "label"]) == ("a cup of coffee", "drink")
    assert len(df) == 5 and DATASET_TYPES["webdataset"].role == IMAGES
    assert role_of({"type": "webdataset", "path": str(shards)}) == IMAGES


def test_a_brace_pattern_a_single_shard_and_a_folder_name_the_same_samples(tmp_path, shards):
    by_folder = build(tmp_path, "a", type="webdataset", path=str(shards))
    pattern = str(shards / "shard-{000000..000002}.tar")
    by_pattern = build(tmp_path, "b", type="webdataset", path=pattern)
    assert list(by_pattern["item_id"]) == list(by_folder["item_id"])
    assert list(by_pattern["sha256"]) == list(by_folder["sha256"])
    by_glob = build(tmp_path, "g", type="webdataset", path=str(shards / "shard-*.tar"))
    assert list(by_glob["item_id"]) == list(by_folder["item_id"])
    two = build(tmp_path, "c", type="webdataset", path=str(shards / "shard-{000001,000000}.tar"))
    assert list(two["item_id"]) == ["s002", "s003", "s000", "s001"]  # the order written
    one = build(tmp_path, "d", type="webdataset", path=str(shards / "shard-000002.tar"))
    assert list(one["item_id"]) == ["s004"]
    gz = tmp_path / "shard.tar.gz"  # a compressed shard, named explicitly
    gz.write_bytes(gzip.compress((shards / "shard-000000.tar").read_bytes()))
    packed = build(tmp_path, "e", type="webdataset", path=str(gz))
    assert list(packed["item_id"]) == ["s000", "s001"] and set(packed["status"]) == {"ok"}


def test_missing_shards_name_the_key_and_the_path(tmp_path, shards):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match=rf"^datasets\.w\.path: {missing} does not exist"):
        build(tmp_path, type="webdataset", path=str(missing))
    with pytest.raises(FileNotFoundError, match=r"^datasets\.w\.path: .*names 1 shard\(s\) that "
                                                r"do not exist: .*shard-000003\.tar$"):
        build(tmp_path, type="webdataset", path=str(shards / "shard-{000000..000003}.tar"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"^datasets\.w\.path: .*empty holds no \.tar"):
        build(tmp_path, type="webdataset", path=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match=r"^datasets\.w\.path: Unbalanced braces"):
        build(tmp_path, type="webdataset", path=str(shards / "shard-{000000..000002.tar"))


def test_limit_reads_the_first_items_and_opens_no_later_shard(tmp_path, shards):
    (shards / "shard-000003.tar").write_bytes(b"not a tar archive at all" * 50)
    full = build(tmp_path, "full", type="webdataset", path=str(shards))
    assert list(full["item_id"])[-1] == "shard-000003__damaged"  # read without a limit
    assert "damaged tar archive (ReadError: " in full["reason"].iloc[-1]
    first = build(tmp_path, "first", type="webdataset", path=str(shards), limit=3)
    assert list(first["item_id"]) == ["s000", "s001", "s002"]
    five = build(tmp_path, "five", type="webdataset", path=str(shards), limit=5)
    assert list(five["item_id"]) == ["s000", "s001", "s002", "s003", "s004"]


def test_a_truncated_shard_keeps_the_samples_read_before_the_damage(tmp_path):
    root = tmp_path / "cut"
    root.mkdir()
    whole = write_shard(tmp_path / "whole.tar", [sample(k) for k in ("s000", "s001", "s002")])
    data = whole.read_bytes()
    members = {t.name: t for t in tarfile.open(whole)}
    mid_png = members["s002.png"].offset_data + members["s002.png"].size // 2
    (root / "shard-000000.tar").write_bytes(data[:mid_png])  # cut inside s002.png
    write_shard(root / "shard-000001.tar", [sample("s003")])
    df = build(tmp_path, type="webdataset", path=str(root)).set_index("item_id")
    assert list(df.index) == ["s000", "s001", "s002", "shard-000000__damaged", "s003"]
    assert list(df["status"]) == ["ok", "ok", "error", "error", "ok"]
    for key in ("s000", "s001", "s003"):
        assert np.array_equal(read_image(tmp_path / "out_w" / df.loc[key, "path"]),
                              PHOTOS[key][0])
    assert df.loc["s002", "reason"] == (
        "s002: no image member (bmp, gif, jpeg, jpg, png, tif, tiff, webp); it has .cls; the "
        "shard is damaged right after it")
    assert df.loc["shard-000000__damaged", "reason"] == (
        "shard-000000.tar: damaged tar archive (ReadError: unexpected end of data) after 3 "
        "samples; the rest of the shard is not read")


def test_a_shard_cut_between_members_is_reported(tmp_path):
    """Python's tarfile ends a stream cut at a member boundary without an error; the missing
    end-of-archive marker tells."""
    whole = write_shard(tmp_path / "whole.tar", [sample("s000"), sample("s001")])
    members = {t.name: t for t in tarfile.open(whole)}
    (tmp_path / "cut.tar").write_bytes(whole.read_bytes()[:members["s001.cls"].offset])
    df = build(tmp_path, type="webdataset", path=str(tmp_path / "cut.tar"))
    assert list(df["item_id"]) == ["s000", "cut__damaged"]
    assert df["reason"].iloc[1] == ("cut.tar: tar archive cut short (no end-of-archive marker) "
                                    "after 1 samples; the rest of the shard is not read")


def test_hostile_samples_cost_one_item_each(tmp_path):
    path = tmp_path / "hostile.tar"
    with tarfile.open(path, "w") as tar:
        def add(name: str, data: bytes):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("a.png", encode(PHOTOS["s000"][0]))
        add("a.txt", "caf\u00e9".encode())
        add("b.txt", b"only a caption")
        add("b.cls", b"7")
        add("c.png", encode(PHOTOS["s001"][0]))
        add("c.txt", b"\xff\xfe not utf-8")
        add("d.png", encode(PHOTOS["s003"][0]))
        add("d.json", b"{not json")
        add("e.png", encode(PHOTOS["s003"][0]))
        add("e.png", encode(PHOTOS["s004"][0]))
        add("dir/f.PNG", encode(PHOTOS["s004"][0]))
        add("dir/f.json", b'{"text": "a rocket", "label": [1, 2]}')
    df = build(tmp_path, type="webdataset", path=str(path)).set_index("item_id")
    assert list(df.index) == ["a", "b", "c", "d", "e", "dir__f"]
    assert list(df["status"]) == ["ok", "error", "error", "error", "error", "ok"]
    assert df.loc["a", "text"] == "caf\u00e9"
    assert df.loc["b", "reason"].endswith("it has .txt, .cls")
    assert df.loc["c", "reason"] == "c.txt: not UTF-8 text (invalid start byte at byte 0)"
    assert df.loc["d", "reason"].startswith("d.json: not valid JSON (")
    assert df.loc["e", "reason"] == ("e: two members named e.png; which one belongs to the "
                                     "sample is ambiguous")
    assert (df.loc["dir__f", "text"], df.loc["dir__f", "label"]) == ("a rocket", "[1,2]")
    assert np.array_equal(read_image(tmp_path / "out_w" / df.loc["dir__f", "path"]),
                          PHOTOS["s004"][0])


def test_repeated_keys_across_shards_are_renamed_while_streaming(tmp_path):
    root = tmp_path / "dup"
    root.mkdir()
    write_shard(root / "a.tar", [sample("s000")])
    write_shard(root / "b.tar", [sample("s000") | {"txt": "the second s000"}])
    df = build(tmp_path, type="webdataset", path=str(root))
    assert list(df["item_id"]) == ["s000", "s000__2"]
    assert df["notes"].iloc[1] == ("item id 's000' already taken by another source; "
                                   "renamed 's000__2'")
    assert df["text"].iloc[1] == "the second s000"


# -- streaming ---------------------------------------------------------------------------------

def test_builders_return_lazy_iterators(tmp_path, shards):
    items = webdataset_shards.build("w", {"type": "webdataset", "path": str(shards)}, tmp_path)
    assert isinstance(items, Iterator) and not isinstance(items, list)
    first = next(items)
    assert first.item_id == "s000" and np.array_equal(first.image, PHOTOS["s000"][0])
    saved = tmp_path / "saved"
    hf_set().save_to_disk(str(saved))
    rows = hf_dataset.build("h", {"type": "hf_dataset", "path": str(saved), "image_column": "img"},
                            tmp_path)
    assert isinstance(rows, Iterator) and next(rows).item_id == "000000"


def test_build_dataset_hands_the_stream_on_unread(tmp_path, shards, monkeypatch):
    """build_dataset adds the set's language without reading the builder's items first."""
    import roundtrip.core.manifest as manifest

    write, handed = manifest.write_dataset, []

    def spy(items, out_dir):
        handed.append(type(items))
        assert not isinstance(items, (list, tuple))
        return write(items, out_dir)

    monkeypatch.setattr(manifest, "write_dataset", spy)
    df = build(tmp_path, type="webdataset", path=str(shards), lang="eng", limit=2)
    assert len(handed) == 1 and list(df["lang"]) == ["eng", "eng"]


def test_write_dataset_writes_each_item_before_it_pulls_the_next(tmp_path):
    images = tmp_path / "out" / "images"
    written_when_pulled = []

    def stream():
        for key in PHOTOS:
            written_when_pulled.append(len(list(images.glob("*.png"))) if images.exists() else 0)
            yield Item(key, f"test:{key}", image=PHOTOS[key][0])

    df = write_dataset(stream(), tmp_path / "out")
    assert written_when_pulled == [0, 1, 2, 3, 4]  # a list() of the stream would read 0,0,0...
    assert list(df["item_id"]) == list(PHOTOS)
    again = write_dataset([Item(k, f"test:{k}", image=PHOTOS[k][0]) for k in PHOTOS],
                          tmp_path / "from_list")
    assert ((tmp_path / "out" / "manifest.csv").read_bytes()
            == (tmp_path / "from_list" / "manifest.csv").read_bytes())


def test_a_stream_cannot_reserve_later_ids_a_list_can():
    """A list's renames skip the ids later items bring (unique_ids); a stream's cannot see
    them, so the later item is renamed in turn. Every item keeps its row either way."""
    img = np.zeros((4, 4, 3), np.uint8)

    def items():
        return [Item("a", "1", image=img), Item("a", "2", image=img), Item("a__2", "3", image=img)]

    listed = items()
    unique_ids(listed)
    assert [it.item_id for it in listed] == ["a", "a__3", "a__2"]
    from roundtrip.core.manifest import UniqueIds

    ids, streamed = UniqueIds(), items()
    notes = [ids.claim(it) for it in iter(streamed)]
    assert [it.item_id for it in streamed] == ["a", "a__2", "a__2__2"]
    assert notes[2] == "item id 'a__2' already taken by another source; renamed 'a__2__2'"


# -- hf_dataset --------------------------------------------------------------------------------

HF_KEYS = ["s000", "s001", "s002", "s004"]
CLASSES = ["person", "cameraman", "drink", "cat", "vehicle"]


def hf_set(broken_row: int | None = 2) -> Dataset:
    """Rows of PNG photographs (an ``Image`` feature), captions (one null) and ClassLabel labels;
    ``broken_row`` holds bytes that are not an image."""
    images = [{"bytes": encode(PHOTOS[k][0]), "path": None} for k in HF_KEYS]
    if broken_row is not None:
        images[broken_row] = {"bytes": b"not an image either", "path": None}
    features = Features({"img": Image(), "caption": Value("string"),
                         "label": ClassLabel(names=CLASSES), "other": Value("int64")})
    return Dataset.from_dict({"img": images,
                              "caption": [PHOTOS[k][1] for k in HF_KEYS[:3]] + [None],
                              "label": [0, 1, 2, 4], "other": [7, 8, 9, 10]}, features=features)


HF_SPEC = {"type": "hf_dataset", "image_column": "img", "text_column": "caption",
           "label_column": "label"}


def check_hf_manifest(df, out: Path, source_prefix: str):
    m = df.set_index("item_id")
    assert list(m.index) == ["000000", "000001", "000002", "000003"]
    assert list(m["status"]) == ["ok", "ok", "error", "ok"]
    assert m.loc["000002", "reason"] == ("cannot decode row 2 img: not a recognised image format "
                                         "(PNG, JPEG, TIFF, BMP, WebP, GIF)")
    for item_id, key in (("000000", "s000"), ("000001", "s001"), ("000003", "s004")):
        assert np.array_equal(read_image(out / m.loc[item_id, "path"]), PHOTOS[key][0]), key
    manifest = read_manifest(out / "manifest.csv").set_index("item_id")
    assert list(manifest["text"]) == ["an astronaut", "a cameraman", "", ""]
    assert list(manifest["label"]) == ["person", "cameraman", "", "vehicle"]
    assert m.loc["000001", "source"] == f"{source_prefix}#1"
    assert "other" not in manifest.columns


def test_hf_save_to_disk_folder(tmp_path):
    hf_set().save_to_disk(str(tmp_path / "saved"))
    df = build(tmp_path, "h", **HF_SPEC, path=str(tmp_path / "saved"))
    check_hf_manifest(df, tmp_path / "out_h", "hf_dataset:saved")
    assert DATASET_TYPES["hf_dataset"].role == IMAGES


def test_hf_parquet_file_and_pattern(tmp_path):
    hf_set().to_parquet(str(tmp_path / "rows.parquet"))
    df = build(tmp_path, "p", **HF_SPEC, path=str(tmp_path / "rows.parquet"))
    check_hf_manifest(df, tmp_path / "out_p", "hf_dataset:rows.parquet")
    parts = tmp_path / "parts"
    parts.mkdir()
    full = hf_set(broken_row=None)
    full.select([0, 1]).to_parquet(str(parts / "train-0.parquet"))
    full.select([2, 3]).to_parquet(str(parts / "train-1.parquet"))
    df = build(tmp_path, "g", **HF_SPEC, path=str(parts / "train-*.parquet"), limit=3)
    assert list(df["item_id"]) == ["000000", "000001", "000002"]
    assert list(df["source"]) == ["hf_dataset:train-0.parquet#0", "hf_dataset:train-0.parquet#1",
                                  "hf_dataset:train-1.parquet#0"]
    assert np.array_equal(read_image(tmp_path / "out_g" / df["path"].iloc[2]), PHOTOS["s002"][0])


def test_a_damaged_parquet_file_costs_its_own_rows(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    full = hf_set(broken_row=None)
    for k in range(3):
        full.select([k]).to_parquet(str(parts / f"part-{k}.parquet"))
    damaged = parts / "part-1.parquet"
    damaged.write_bytes(damaged.read_bytes()[:-20])  # the footer is gone
    df = build(tmp_path, "d", **HF_SPEC, path=str(parts))
    assert list(df["item_id"]) == ["000000", "part-1__unread", "000001"]
    assert list(df["status"]) == ["ok", "error", "ok"]
    assert df["reason"].iloc[1].startswith("part-1.parquet: unreadable after 0 rows (ArrowInvalid:")
    assert np.array_equal(read_image(tmp_path / "out_d" / df["path"].iloc[2]), PHOTOS["s002"][0])


def test_hf_splits_bytes_and_paths(tmp_path):
    DatasetDict({"train": hf_set(), "test": hf_set(broken_row=None).select([3])}).save_to_disk(
        str(tmp_path / "dd"))
    df = build(tmp_path, "t", **HF_SPEC, path=str(tmp_path / "dd"), split="test")
    assert list(df["status"]) == ["ok"] and df["source"].iloc[0] == "hf_dataset:test#0"
    with pytest.raises(ValueError, match=r"^datasets\.t\.split: .*holds the splits "
                                         r"\['train', 'test'\]; set split to one of them"):
        build(tmp_path, "t", **HF_SPEC, path=str(tmp_path / "dd"))
    with pytest.raises(ValueError, match=r"^datasets\.t\.split: .*has no split 'val'"):
        build(tmp_path, "t", **HF_SPEC, path=str(tmp_path / "dd"), split="val")
    # raw bytes and paths relative to the dataset's folder
    (tmp_path / "raw" / "pics").mkdir(parents=True)
    PILImage.fromarray(PHOTOS["s003"][0]).save(tmp_path / "raw" / "pics" / "cat.png")
    Dataset.from_dict({"image": [encode(PHOTOS["s001"][0]), None],
                       "file": ["pics/cat.png", "pics/missing.png"]}).to_parquet(
        str(tmp_path / "raw" / "rows.parquet"))
    raw = build(tmp_path, "r", type="hf_dataset", path=str(tmp_path / "raw" / "rows.parquet"))
    assert list(raw["status"]) == ["ok", "error"]
    assert raw["reason"].iloc[1] == "row 1 image: no image (null)"
    assert np.array_equal(read_image(tmp_path / "out_r" / raw["path"].iloc[0]), PHOTOS["s001"][0])
    paths = build(tmp_path, "f", type="hf_dataset", path=str(tmp_path / "raw" / "rows.parquet"),
                  image_column="file")
    assert list(paths["status"]) == ["ok", "error"]
    assert paths["reason"].iloc[1].startswith("row 1 file: cannot read pics/missing.png: ")
    assert np.array_equal(read_image(tmp_path / "out_f" / paths["path"].iloc[0]),
                          PHOTOS["s003"][0])


def test_hf_errors_name_the_key(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match=rf"^datasets\.h\.path: {missing} does not exist"):
        build(tmp_path, "h", type="hf_dataset", path=str(missing))
    hf_set().save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(ValueError, match=r"^datasets\.h\.text_column: the set has no column "
                                         r"'text'; its columns are \['img', 'caption'"):
        build(tmp_path, "h", type="hf_dataset", path=str(tmp_path / "saved"),
              image_column="img", text_column="text")
    with pytest.raises(ValueError, match=r"^datasets\.h\.split: .*has no splits"):
        build(tmp_path, "h", **HF_SPEC, path=str(tmp_path / "saved"), split="train")
    with pytest.raises(FileNotFoundError, match=r"^datasets\.h\.path: .*names no \.parquet file"):
        build(tmp_path, "h", type="hf_dataset", path=str(tmp_path / "*.parquet"))


# -- the workflow's view: fingerprints and the config check -----------------------------------

def test_fingerprints_follow_the_source_files_through_the_registry(tmp_path, shards):
    spec = {"type": "webdataset", "path": str(shards)}
    pattern = {"type": "webdataset", "path": str(shards / "shard-{000000..000002}.tar")}
    before, before_pattern = dataset_fingerprint(spec), dataset_fingerprint(pattern)
    assert before != "missing" and before_pattern != "missing"
    (shards / "README.txt").write_text("edited, but not a shard")
    assert dataset_fingerprint(spec) == before
    write_shard(shards / "shard-000002.tar", [sample("s004"), sample("s000")])
    assert dataset_fingerprint(spec) != before
    assert dataset_fingerprint(pattern) != before_pattern
    assert dataset_fingerprint({**spec, "path": str(tmp_path / "nowhere")}) == "missing"
    hf_set().to_parquet(str(tmp_path / "rows.parquet"))
    hf = {"type": "hf_dataset", "path": str(tmp_path / "rows.parquet")}
    before = dataset_fingerprint(hf)
    hf_set(broken_row=None).to_parquet(str(tmp_path / "rows.parquet"))
    assert dataset_fingerprint(hf) != before


def test_check_config_accepts_patterns_and_names_what_is_missing(tmp_path, shards, capsys):
    from roundtrip.cli import main

    def check(datasets: dict) -> tuple[int, str]:
        config = {"datasets": datasets, "models": {"identity": {"type": "identity"}},
                  "metrics": {"missing_weights": "n/a"}}
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
        return main(["check-config", str(tmp_path / "c.yaml")]), capsys.readouterr().err.strip()

    hf_set().save_to_disk(str(tmp_path / "saved"))
    ok = {"w": {"type": "webdataset", "path": str(shards / "shard-{000000..000002}.tar"),
                "limit": 10, "shards": 2},
          "h": {"type": "hf_dataset", "path": str(tmp_path / "saved"), "image_column": "img",
                "text_column": "caption", "label_column": "label", "limit": 2}}
    assert check(ok) == (0, "")
    code, err = check({"w": {"type": "webdataset",
                             "path": str(shards / "shard-{000000..000004}.tar")}})
    assert code == 1 and err.startswith("datasets.w.path: ") and "shard-000003.tar" in err
    code, err = check({"h": {"type": "hf_dataset", "path": str(tmp_path / "saved"),
                             "split": "train"}})
    assert code == 1 and err.startswith("datasets.h.split: ")
    code, err = check({"w": {"type": "webdataset", "path": str(tmp_path / "gone-{0..1}.tar")}})
    assert code == 1 and err == f"datasets.w.path: {tmp_path / 'gone-{0..1}.tar'} does not exist"


def test_a_large_set_is_planned_like_a_folder(tmp_path, shards):
    """Role images, cut into reconstruction jobs by ``shards``; its reader keys are part of
    what the set is built from, ``shards`` is not."""
    from roundtrip.workflow.checks import validate_config

    from roundtrip.workflow.plan import Plan

    config = {"datasets": {
        "w": {"type": "webdataset", "path": str(shards), "shards": 2, "limit": 3},
        "h": {"type": "hf_dataset", "path": str(tmp_path / "rows.parquet"), "image_column": "img",
              "text_column": "caption"}},
        "models": {"identity": {"type": "identity"}}}
    validate_config(config, str(REPO / "config.schema.yaml"))
    plan = Plan(config)
    assert plan.recon_datasets == ["w", "h"]
    assert plan.shard_files("identity", "w") == ["results/recon/identity/w/shards/0-of-2.csv",
                                                 "results/recon/identity/w/shards/1-of-2.csv"]
    assert plan.builds.spec("w")["limit"] == 3 and "shards" not in plan.builds.spec("w")
    assert {k: plan.builds.spec("h")[k] for k in ("image_column", "text_column")} == {
        "image_column": "img", "text_column": "caption"}
    assert plan.builds.fingerprint("w") == dataset_fingerprint(config["datasets"]["w"])
    assert plan.builds.fingerprint("h") == "missing"

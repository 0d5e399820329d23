"""The readability of the OCR references (evals/vtbench/readability.py): how well an engine
reads the originals a CER/WER column scores against, computed from the OCR files of the
originals, and the footnotes it puts on the cells scored against an unreadable one."""
import math
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from conftest import REPO

from roundtrip.evals.vtbench import readability as rd
from roundtrip.evals.vtbench.ocr_robustness import robustness_columns
from roundtrip.evals.vtbench.spec import VTBench
from roundtrip.evals.vtbench.tables import text_columns
from roundtrip.metrics.text import Normalization
from roundtrip.tables import build_table, to_markdown

NORM = Normalization()
T = rd.Thresholds()


def manifest(items):
    """``[(item_id, ground truth, lang)]`` -> a manifest frame (status ok)."""
    return pd.DataFrame({"item_id": [i for i, _, _ in items], "path": [f"{i}.png" for i, _, _
                                                                       in items],
                         "status": "ok", "text": [t for _, t, _ in items],
                         "lang": [lang for _, _, lang in items]})


def readings(rows):
    """``[(item_id, text, status)]`` -> an OCR file's frame."""
    return pd.DataFrame({"item_id": [i for i, _, _ in rows], "text": [t for _, t, _ in rows],
                         "status": [s for _, _, s in rows],
                         "reason": ["" if s == "ok" else "timeout" for _, _, s in rows]})


def test_cer_against_the_ground_truth_is_the_mean_of_the_normalized_item_cers():
    m = manifest([("a", "hello world", "eng"), ("b", "abcd", "eng"), ("c", "中文字", "chi_sim")])
    # a: layout only (normalized away) -> 0; b: 1 substitution of 4 -> 0.25; c: Tesseract's
    # spaces between CJK characters are removed (chi_sim) -> 0
    read = readings([("a", "hello\n  world\n", "ok"), ("b", "abce", "ok"),
                     ("c", "中 文 字", "ok")])
    r = rd.reference_readability(read, m, "eng", NORM)
    assert r == {"items": 3, "read": 3, "gt_items": 3, "cer_gt": pytest.approx(0.25 / 3),
                 "empty": 0, "empty_share": 0.0, "failed": ""}


def test_empty_readings_and_failed_readings_are_counted_apart():
    m = manifest([("a", "hello", "eng"), ("b", "world", "eng"), ("c", "", "eng"),
                  ("d", "text", "eng")])
    # a read as whitespace only (empty), b read right, c has no ground truth, d failed
    r = rd.reference_readability(readings([("a", " \n", "ok"), ("b", "world", "ok"),
                                           ("c", "", "ok"), ("d", "", "error")]), m, "eng", NORM)
    assert r["read"] == 3 and r["gt_items"] == 2
    assert r["cer_gt"] == pytest.approx((1.0 + 0.0) / 2)
    assert r["empty_share"] == pytest.approx(2 / 3) and r["failed"] == "timeout"


def test_a_set_without_ground_truth_has_only_the_share_of_empty_readings():
    m = manifest([("page", "", "eng"), ("text", "", "eng")]).drop(columns="text")
    r = rd.reference_readability(readings([("page", "Some words", "ok"), ("text", "", "ok")]),
                                 m, "eng", NORM)
    assert math.isnan(r["cer_gt"]) and r["gt_items"] == 0 and r["empty_share"] == 0.5


def test_verdict_flags_strictly_above_each_threshold_and_names_the_figure():
    fig = {"read": 4, "cer_gt": 0.5, "empty": 2, "empty_share": 0.5, "failed": ""}
    assert rd.verdict(fig, "tesseract", "vtbench", T) == ("yes", [], "")
    readable, over, why = rd.verdict(fig | {"cer_gt": 0.8734, "empty": 3, "empty_share": 0.75},
                                     "tesseract", "vtbench", T)
    assert readable == "no" and over == ["cer", "empty"]
    assert why == ("tesseract reads the originals at 256 -> 1024 px (VTBench eval.) with CER "
                   "0.8734 against the ground truth (above ocr.readability.max_cer 0.5); 3 of 4 "
                   "of tesseract's readings of the originals at 256 -> 1024 px (VTBench eval.) "
                   "are empty (share 0.75, above ocr.readability.max_empty 0.5)")
    assert rd.verdict(fig | {"read": 0, "failed": "timeout"}, "gemma", "full", T) == (
        "n/a", [], "no reading of the originals by gemma at full size (timeout)")
    strict = rd.Thresholds(max_cer=0.1, max_empty=0.0)
    zero = {"cer_gt": 0.2, "empty": 0, "empty_share": 0.0}
    assert rd.verdict(fig | zero, "t", "full", strict)[1] == ["cer"]


def test_thresholds_default_to_the_schema_and_read_the_config():
    schema = yaml.safe_load((REPO / "config.schema.yaml").read_text())
    keys = schema["properties"]["ocr"]["properties"]["readability"]["properties"]
    assert (T.max_cer, T.max_empty) == (keys["max_cer"]["default"], keys["max_empty"]["default"])
    assert rd.Thresholds.from_config({"max_cer": 0.3}) == rd.Thresholds(0.3, 0.5)
    assert rd.Thresholds.from_config(None) == T


def test_references_name_the_files_the_ocr_jobs_write():
    refs = rd.references(["posters", "questions"], {"posters": ["tesseract", "rapidocr"],
                                                    "questions": ["tesseract"]}, {"posters"})
    assert [(r["dataset"], r["engine"], r["view"], r["path"]) for r in refs] == [
        ("posters", "tesseract", "full", "results/ocr/tesseract/original/posters.csv"),
        ("posters", "tesseract", "vtbench", "results/ocr/tesseract/original/posters.vtbench.csv"),
        ("posters", "rapidocr", "full", "results/ocr/rapidocr/original/posters.csv"),
        ("posters", "rapidocr", "vtbench", "results/ocr/rapidocr/original/posters.vtbench.csv"),
        ("questions", "tesseract", "full", "results/ocr/tesseract/original/questions.csv")]
    # the spec's paths are the ones its scorer reads (scorers_for: ocr_original, _vtbench)
    plan = SimpleNamespace(
        text_datasets=["posters", "questions"],
        engines_for=lambda d: ["tesseract", "rapidocr"] if d == "posters" else ["tesseract"],
        config={"datasets": {"posters": {"type": "posters"},
                             "questions": {"type": "vista_questions"}}})
    assert VTBench.references(plan) == refs
    assert [r["path"] for r in VTBench.references(plan, "tesseract")] == [
        r["path"] for r in refs if r["engine"] == "tesseract"]
    assert "ocr_readability" in VTBench().tables(SimpleNamespace(
        text_datasets=["posters"], recon_datasets=[], config={"datasets": {}},
        trained_models=[]))


@pytest.fixture
def run(tmp_path):
    """A run's files: an abstracts set read well at full size and badly at 256 -> 1024 px, and
    a scanned set without ground truth whose released readings are all empty."""
    (tmp_path / "abstracts").mkdir()
    (tmp_path / "scanned").mkdir()
    manifest([("a0", "The cat sat on the mat", "eng"),
              ("a1", "Tokens lose text", "eng")]).to_csv(tmp_path / "abstracts/manifest.csv",
                                                         index=False)
    manifest([("page", "", "eng"), ("text", "", "eng")]).drop(columns="text").to_csv(
        tmp_path / "scanned/manifest.csv", index=False)
    files = {
        ("abstracts", "full"): [("a0", "The cat sat on the mat", "ok"),
                                ("a1", "Tokens lose text", "ok")],
        ("abstracts", "vtbench"): [("a0", "Tne", "ok"), ("a1", "", "ok")],
        ("scanned", "full"): [("page", "words", "ok"), ("text", "", "ok")],
        ("scanned", "vtbench"): [("page", "", "ok"), ("text", "", "ok")]}
    refs = []
    for (d, view), rows in files.items():
        path = tmp_path / f"{d}.{view}.csv"
        readings(rows).to_csv(path, index=False)
        refs.append({"dataset": d, "engine": "tesseract", "view": view, "path": str(path)})
    frame = rd.readability_table(refs, {d: tmp_path / d / "manifest.csv" for d in
                                        ("abstracts", "scanned")}, {"abstracts": "eng",
                                                                    "scanned": "eng"},
                                 NORM, T, table_engine="tesseract")
    return SimpleNamespace(frame=frame, refs=refs)


#: a0 read as "Tne": 19 deletions over 22 characters (T, n of "on", e of "the" kept); a1 read
#: as nothing: 1.0
CER_A = (19 / 22 + 1.0) / 2


def test_readability_table_from_the_ocr_files(run):
    f = run.frame.set_index(["dataset", "view"])
    assert list(run.frame.columns) == rd.COLUMNS
    assert f.loc[("abstracts", "full"), "cer_gt"] == 0.0
    assert f.loc[("abstracts", "full"), "readable"] == "yes"
    assert f.loc[("abstracts", "vtbench"), "cer_gt"] == pytest.approx(CER_A)
    assert f.loc[("abstracts", "vtbench"), ["readable", "over"]].tolist() == ["no", "cer"]
    assert f.loc[("abstracts", "vtbench"), "empty_share"] == 0.5  # not above 0.5
    assert f.loc[("scanned", "full"), ["readable", "empty_share"]].tolist() == ["yes", 0.5]
    assert f.loc[("scanned", "vtbench"), ["readable", "over"]].tolist() == ["no", "empty"]
    assert math.isnan(f.loc[("scanned", "vtbench"), "cer_gt"])
    # the table engine's rows name text_preservation; the released view is what tau ranks by
    assert f.loc[("abstracts", "vtbench"), "tables"] == (
        "text_preservation, ocr_robustness, ocr_rank_agreement")
    assert f.loc[("abstracts", "full"), "tables"] == "text_preservation, ocr_robustness"
    shown = rd.display_frame(run.frame)
    assert shown["readable"].tolist() == ["yes", "no (CER)", "yes", "no (empty)"]
    assert shown["originals read"].tolist() == ["2 of 2"] * 4
    assert shown["view"].tolist() == ["full size", "256 -> 1024 px (VTBench eval.)"] * 2


def test_unreadable_notes_name_the_reference_and_its_figure(run):
    notes = rd.unreadable(run.frame)
    assert notes == {
        ("abstracts", "tesseract", "vtbench"):
            f"reference unreadable: tesseract reads the originals at 256 -> 1024 px (VTBench "
            f"eval.) with CER {CER_A:.4f} against the ground truth (above "
            f"ocr.readability.max_cer 0.5); table ocr_readability",
        ("scanned", "tesseract", "vtbench"):
            "reference unreadable: 2 of 2 of tesseract's readings of the originals at 256 -> "
            "1024 px (VTBench eval.) are empty (share 1.00, above ocr.readability.max_empty "
            "0.5); table ocr_readability"}
    # read back from the CSV the same
    path = run.refs[0]["path"] + ".table.csv"
    run.frame.to_csv(path, index=False)
    assert rd.unreadable(pd.read_csv(path)) == notes


def _text_set_file(path, cer):
    pd.DataFrame([{"metric": m, "value": cer, "n": 2, "note": ""}
                  for m in ("cer_vtbench", "wer_vtbench", "wer_words_vtbench")]).to_csv(
        path, index=False)


def _per_item_file(path):
    pd.DataFrame({"item_id": ["a0", "a1"], "status": "ok", "reason": "",
                  "cer": [0.1, 0.2], "wer": [0.2, 0.3], "cer_norm": [0.1, 0.2],
                  "wer_norm": [0.2, 0.3], "cer_gt": [0.1, 0.2], "wer_gt": [0.2, 0.3],
                  "cer_gt_norm": [0.1, 0.2], "wer_gt_norm": [0.2, 0.3]}).to_csv(path, index=False)


def test_flagged_cells_of_text_preservation_carry_the_footnote(run, tmp_path):
    files = {}
    for m in ("identity", "jpeg"):
        _text_set_file(tmp_path / f"{m}.set.csv", 0.6)
        _per_item_file(tmp_path / f"{m}.item.csv")
        files[(m, "abstracts", "text_set")] = str(tmp_path / f"{m}.set.csv")
        files[(m, "abstracts", "item")] = str(tmp_path / f"{m}.item.csv")
    cols = [c for c in text_columns({"ArXiv": ["abstracts"]}, {"abstracts": True})
            if c.file_kind in ("item", "text_set")]
    table = build_table("text_preservation", "t", ["identity", "jpeg"], cols, files)
    notes = rd.unreadable(run.frame)
    assert rd.flag_cells(table, notes, lambda col: (col.dataset, "tesseract")) == 3
    flagged = [c.metric for j, c in enumerate(table.columns)
               if notes[("abstracts", "tesseract", "vtbench")] in table.cells[("jpeg", j)].notes]
    assert flagged == ["cer_vtbench", "wer_vtbench", "wer_words_vtbench"]
    md = to_markdown(table)
    assert md.count("[1] abstracts: reference unreadable: tesseract reads the originals") == 1
    assert "| jpeg | 0.6000 [1] | 0.6000 [1] | 0.6000 [1] | 0.1500" in md
    # values stay: the flag is a footnote, not a removal
    assert table.cells[("jpeg", 0)].summary.mean == 0.6
    # flagging twice adds nothing
    rd.flag_cells(table, notes, lambda col: (col.dataset, "tesseract"))
    assert table.cells[("jpeg", 0)].notes.count(notes[("abstracts", "tesseract",
                                                       "vtbench")]) == 1


def test_flagged_cells_of_ocr_robustness_and_rank_agreement(run, tmp_path):
    files = {}
    for m in ("identity", "jpeg"):
        _text_set_file(tmp_path / f"{m}.set.csv", 0.6)
        _per_item_file(tmp_path / f"{m}.item.csv")
        for d in ("abstracts", "scanned"):
            files[(m, f"{d}/tesseract", "text_set")] = str(tmp_path / f"{m}.set.csv")
            files[(m, f"{d}/tesseract", "item")] = str(tmp_path / f"{m}.item.csv")
    cols = robustness_columns(["abstracts", "scanned"], ["tesseract"], set())
    table = build_table("ocr_robustness", "t", ["identity", "jpeg"], cols, files)
    notes = rd.unreadable(run.frame)
    assert rd.flag_cells(table, notes, lambda col: tuple(col.dataset.rsplit("/", 1))) == 4
    marked = [(c.dataset, c.metric) for j, c in enumerate(table.columns)
              if table.cells[("identity", j)].notes]
    assert marked == [("abstracts/tesseract", "cer_vtbench"), ("abstracts/tesseract",
                                                              "wer_vtbench"),
                      ("scanned/tesseract", "cer_vtbench"), ("scanned/tesseract",
                                                            "wer_vtbench")]
    agreement = pd.DataFrame({"dataset": ["abstracts", "abstracts", "other"],
                              "engine_a": ["rapidocr", "rapidocr", "rapidocr"],
                              "engine_b": ["tesseract", "tesseract", "tesseract"],
                              "metric": ["CER", "WER", "CER"], "kendall_tau": [1.0, 0.5, 1.0],
                              "note": ["", "", ""]})
    out = rd.flag_agreement(agreement, notes, {"abstracts"})
    assert out["note"].tolist() == [notes[("abstracts", "tesseract", "vtbench")]] * 2 + [""]
    assert out["kendall_tau"].tolist() == [1.0, 0.5, 1.0]
    # a set without the released reading is ranked by the per-item means: full-size view
    assert rd.flag_agreement(agreement, notes, set())["note"].tolist() == ["", "", ""]

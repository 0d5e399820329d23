"""Synthetic text datasets: Tesseract read-back bounds, manifests, posters, questions, audit."""
import json

import numpy as np
import pandas as pd
import pytest
from conftest import requires_tesseract

from roundtrip.core.manifest import Item, read_manifest
from roundtrip.datasets import build_dataset
from roundtrip.datasets.rendered.abstracts import AbstractsSpec, build_abstracts, load_corpus
from roundtrip.datasets.rendered.audit import JUDGES, AuditSettings, audit_items, build_judge
from roundtrip.datasets.rendered.posters import GENRES, PostersSpec, build_posters
from roundtrip.datasets.rendered.questions import (
    QuestionsSpec,
    build_questions,
    load_questions,
    pairs,
)
from roundtrip.metrics.text import Normalization
from roundtrip.readers.vlm import JudgeVerdict
from roundtrip.render import RenderSettings

pytestmark = requires_tesseract
SETTINGS = RenderSettings()
AUDIT = AuditSettings()


def mean_cer(items, settings=AUDIT):
    audit = audit_items(items, settings)
    assert (audit["status"] == "ok").all(), audit[["item_id", "reason"]]
    return float(audit["cer"].mean())


def test_english_abstracts_read_back_within_bound():
    (item,) = build_abstracts(AbstractsSpec(language="en", count=1), SETTINGS)
    assert item.image.shape == (1024, 1024, 3)
    assert len(item.extra["text"]) > 4000  # dense: thousands of characters on the canvas
    assert mean_cer([item]) <= 0.05


@pytest.mark.parametrize("language", ["zh", "ja", "ko", "hi"])
def test_each_script_reads_back_within_bound(language):
    (item,) = build_abstracts(AbstractsSpec(language=language, count=1, size_pt=14), SETTINGS)
    assert item.image.shape == (1024, 1024, 3) and item.extra["text"]
    _, sentences = load_corpus(language)
    assert any(s in item.extra["text"] for s in sentences)  # the corpus, verbatim
    assert mean_cer([item]) <= 0.15


def test_16pt_questions_read_back_within_bound():
    spec = QuestionsSpec(styles=("arial", "times", "cambria"), sizes=(16,), limit=4)
    items = build_questions(spec, SETTINGS)
    # each question also gets its Table 1 render (Table 5's distribution; 9 pt for most of 4)
    assert sum(it.extra["table1"] == "1" for it in items) == 4
    items = [it for it in items if (it.extra["font"], it.extra["font_size_pt"]) in pairs(spec)]
    assert len(items) == 12 and all(it.image is not None for it in items)
    assert {it.image.shape[1] for it in items} == {800}
    assert mean_cer(items) <= 0.05


def test_abstracts_are_deterministic_and_fit_the_canvas():
    a = build_abstracts(AbstractsSpec(count=1, seed=3, canvas_px=512, size_pt=10), SETTINGS)
    b = build_abstracts(AbstractsSpec(count=1, seed=3, canvas_px=512, size_pt=10), SETTINGS)
    assert np.array_equal(a[0].image, b[0].image) and a[0].extra == b[0].extra
    c = build_abstracts(AbstractsSpec(count=1, seed=4, canvas_px=512, size_pt=10), SETTINGS)
    assert c[0].extra["text"] != a[0].extra["text"]
    # Filled: the last text row is in the lower part of the canvas.
    rows = np.flatnonzero((a[0].image[..., 0] < 128).any(axis=1))
    assert rows[-1] > 0.8 * 512


def test_posters_have_boxes_around_their_text():
    items = build_posters(PostersSpec(count=len(GENRES), size_px=768), SETTINGS)
    genres = set()
    for it in items:
        assert it.image.shape == (768, 768, 3), it.reason
        e = it.extra
        genres.add(e["genre"])
        assert set(e["text"].split("\n")) == {e["title"], e["slogan"]}
        for name in ("title_box", "slogan_box"):
            x0, y0, x1, y1 = map(int, e[name].split())
            assert 0 <= x0 < x1 <= 768 and 0 <= y0 < y1 <= 768
        # Boxes do not overlap; the title box is taller (larger type).
        t, s = (list(map(int, e[k].split())) for k in ("title_box", "slogan_box"))
        assert t[3] <= s[1] or s[3] <= t[1]
        assert (t[3] - t[1]) > (s[3] - s[1]) * 1.2
    assert genres == set(GENRES)
    audit = audit_items(items, AUDIT)
    assert (audit["cer"] <= 0.1).sum() >= len(items) // 2  # readable on most backgrounds


def test_question_grid_and_manifest_columns(tmp_path):
    spec = QuestionsSpec()
    assert pairs(spec) == [("arial", 9), ("arial", 16), ("arial", 32), ("arial", 48),
                           ("arial", 64), ("times", 16), ("cambria", 16), ("brush", 16)]
    assert len(pairs(QuestionsSpec(grid="full"))) == 20
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text("\n".join([
        json.dumps({"id": "ok1", "question": "Which planet is closest to the Sun?",
                    "options": {"A": "Mercury", "B": "Venus"}, "answer": "A"}),
        "{not json",
        json.dumps({"id": "noopt", "question": "Missing options"}),
        json.dumps({"id": "bad", "question": "Formula $x^{2$", "options": ["1", "2"]}),
    ]) + "\n")
    df = build_dataset("qs", {"type": "vista_questions", "questions": str(jsonl),
                              "styles": ["arial"], "sizes": [16], "render": {},
                              "audit": {"max_cer": 0.1}}, tmp_path / "ds")
    rows = df.set_index("item_id")
    assert rows.loc["ok1__arial_16pt", "status"] == "ok"
    assert rows.loc["ok1__arial_16pt", "question_text"] == ("Which planet is closest to the Sun?"
                                                        "\nA. Mercury\nB. Venus")
    assert rows.loc["ok1__arial_16pt", "font"] == "arial"
    assert rows.loc["ok1__arial_16pt", "font_size_pt"] == 16
    assert rows.loc["ok1__arial_16pt", "width"] == 800
    assert "line 2" in rows.loc["line0002__arial_16pt", "reason"]
    assert "open question (no options) needs its answer" in rows.loc["line0003__arial_16pt", "reason"]
    assert "unbalanced braces" in rows.loc["bad__arial_16pt", "reason"]
    audit = pd.read_csv(tmp_path / "ds" / "audit.csv").set_index("item_id")
    assert audit.loc["ok1__arial_16pt", "cer"] <= 0.1
    assert bool(audit.loc["bad__arial_16pt", "flagged"])  # not rendered: flagged, kept
    m = read_manifest(tmp_path / "ds" / "manifest.csv")
    # 4 lines at arial 16 pt, and each line's Table 1 render (none of them arial 16 pt)
    assert len(m) == 4 * 2 and "audit_flagged" in m.columns
    assert len(load_questions("builtin")) >= 8


def test_audit_flags_a_wrong_ground_truth_and_stores_the_judge(monkeypatch):
    good = build_questions(QuestionsSpec(styles=("arial",), sizes=(16,), limit=1), SETTINGS)[0]
    wrong = Item("wrong", "xelatex", image=good.image,
                 extra=good.extra | {"text": "Completely different words are expected here."})

    class FixedJudge:
        name = "fixed"

        def __init__(self, score):
            self.score = score

        def judge(self, image, reference):
            return JudgeVerdict(self.score, f"{image.shape[1]} px wide")

    monkeypatch.setitem(JUDGES, "fixed", FixedJudge)
    judge = build_judge({"type": "fixed", "score": 2})
    audit = audit_items([good, wrong], AuditSettings(max_cer=0.1), Normalization(),
                        judge).set_index("item_id")
    assert not audit.loc[good.item_id, "flagged"] and audit.loc["wrong", "flagged"]
    assert audit.loc[good.item_id, "judge_score"] == 2
    assert audit.loc[good.item_id, "judge_explanation"] == "800 px wide"
    with pytest.raises(ValueError, match="0, 1 or 2"):
        JudgeVerdict(3)
    with pytest.raises(ValueError, match="audit.judge.type"):
        build_judge({"type": "nope"})


def test_a_judge_that_scores_many_renders_is_asked_once(monkeypatch):
    """An in-process judge (``judge_many``) scores a set's renders in one call, a failed verdict
    is recorded for its render, and an item that was not rendered is not sent."""
    good = build_questions(QuestionsSpec(styles=("arial",), sizes=(16,), limit=1), SETTINGS)[0]
    second = Item("second", "xelatex", image=good.image, extra=good.extra)
    missing = Item("missing", "xelatex", reason="render failed")
    calls = []

    class BatchJudge:
        name = "batch"

        def judge(self, image, reference):
            raise AssertionError("a batch judge is not asked render by render")

        def judge_many(self, pairs):
            calls.append(len(pairs))
            return [JudgeVerdict(2, "flawless"), RuntimeError("no JSON verdict")]

    audit = audit_items([good, missing, second], AuditSettings(max_cer=0.1), Normalization(),
                        BatchJudge()).set_index("item_id")
    assert calls == [2]
    assert audit.loc[good.item_id, "judge_score"] == 2
    assert audit.loc["second", "judge_explanation"] == "failed: no JSON verdict"
    assert np.isnan(audit.loc["second", "judge_score"])
    assert audit.loc["missing", "status"] == "error"

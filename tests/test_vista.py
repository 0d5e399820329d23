"""VISTA-Bench evaluation: the question family and its solver, answer extraction (App. C.3),
the loaders of both TSV formats, answers of a (reader, model, set), and the tables' numbers."""
import base64
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from roundtrip.datasets import build_dataset
from roundtrip.datasets.rendered.questions import load_questions, prompt_text
from roundtrip.datasets.vista import load_mcq_tsv
from roundtrip.evals.vista import tables
from roundtrip.evals.vista.answers import ANSWER_COLUMNS, answer_set, score
from roundtrip.evals.vista.plan import VistaPlan
from roundtrip.evals.vista.extract import (
    PROSE,
    RELEASE,
    extract_answer,
    normalize_open,
    score_open,
    split_reasoning,
)
from roundtrip.metrics.accuracy import paired_gaps
from roundtrip.readers import build_answerer
from roundtrip.tables import write_table
from roundtrip.readers.answerers import PROMPT_PRESETS, resolve_prompts
from roundtrip.readers.question_family import CATEGORIES, Unsolvable, generate, solve


# -- the question family ------------------------------------------------------------------------
def test_family_is_seeded_solvable_and_varied():
    qs = generate(60, seed=7)
    assert qs == generate(60, seed=7) and qs != generate(60, seed=8)
    assert [q["category"] for q in qs[:5]] == list(CATEGORIES)
    assert {len(q["options"]) for q in qs} == {4, 5, 6, 7, 8}
    for q in qs:
        letters = [k for k, _ in q["options"]]
        assert letters == list("ABCDEFGH"[: len(letters)])
        assert len({v for _, v in q["options"]}) == len(letters)  # distinct options
        assert solve(prompt_text(q)) == q["answer"]
    # the answer is not always in the same place
    assert len({q["answer"] for q in qs}) >= 5


def test_solver_reads_what_ocr_writes_and_refuses_the_rest():
    text = "What is 53 x 25?\nA. 1325\nB) 1300\nC: 78"
    assert solve(text) == "A"
    assert solve("What day of the week was 1 January 2000?\nA. Friday\nB. Saturday") == "B"
    assert solve("What number comes next in the sequence 2, 6, 18, 54, ...?\nA. 162\nB. 108") == "A"
    assert solve("How many grams are in 2.5 kilograms?\nA. 250\nB. 2500\nC. 25000") == "B"
    assert solve("Which of these numbers is the smallest?\nA. 10.5\nB. 9.9\nC. 33") == "B"
    with pytest.raises(Unsolvable, match="computed answer 1325"):
        solve("What is 53 x 25?\nA. 1300\nB. 78")
    with pytest.raises(Unsolvable, match="not a question"):
        solve("Which organ produces insulin?\nA. Liver\nB. Pancreas")
    with pytest.raises(Unsolvable, match="no option lines"):
        solve("What is 5 + 5?")


# -- extraction (VISTA-Bench App. C.3; the release's rule: tests/test_released_vista.py) --------
OPTS = [("A", "Mercury"), ("B", "Venus"), ("C", "Earth"), ("D", "Mars")]


@pytest.mark.parametrize("rule", [RELEASE, PROSE])
@pytest.mark.parametrize("output, letter, how", [
    ("B", "B", "letter"),
    ("The answer is (C).", "C", "letter"),
    ("[D]", "D", "letter"),
    ("Venus", "B", "option_text"),
    ("It must be earth.", "C", "option_text"),
    ("B or C", None, "invalid"),
    ("Cannot determine the answer from the image.", None, "invalid"),
    ("", None, "invalid"),
    ("B " + "is a letter but this sentence goes on and on without end ", None, "invalid"),
    ("Mercury or Venus", None, "invalid"),
])
def test_extract_answer(output, letter, how, rule):
    """Outputs both rules read the same way."""
    ex = extract_answer(output, OPTS, rule)
    assert (ex.letter, ex.how) == (letter, how)


def test_long_output_is_not_matched_by_option_text():
    for rule in (RELEASE, PROSE):
        assert extract_answer("venus " * 40, OPTS, rule).letter is None
    with pytest.raises(ValueError, match="unknown rule"):
        extract_answer("A", OPTS, "fuzzy")


def test_reasoning_is_cut_at_think_and_kept():
    trace, final = split_reasoning("<think>A looks wrong, so maybe C or D</think>\nD")
    assert trace == "A looks wrong, so maybe C or D" and final == "D"
    row = score("<think>A? B? C?</think> Final: C", OPTS, "C")
    assert row["extracted"] == "C" and row["hit"] == 1.0 and "A? B?" in row["reasoning"]
    assert score("A", OPTS, "C")["hit"] == 0.0
    bad = score("I'm sorry, I can't help", OPTS, "C")
    assert bad["extracted_by"] == "invalid" and bad["hit"] == 0.0


def test_open_questions_by_exact_match():
    assert normalize_open("  The  Eiffel-Tower. ") == "the eiffel-tower"
    assert score_open("Paris.", "paris") and not score_open("Paris, France", "Paris")
    # the release never credits an open question; its exact match is kept beside
    row = score("42", [], "42")
    assert (row["extracted_by"], row["hit"], row["exact_match"]) == ("open", 0.0, 1.0)
    row = score("42", [], "42", rule=PROSE)
    assert (row["extracted_by"], row["hit"], row["exact_match"]) == ("open", 1.0, 1.0)
    assert math.isnan(score("A", OPTS, "A")["exact_match"])


def test_prompt_presets_cover_the_prompt_study():
    own = {"short", "words20", "words50", "image_understanding", "cot"}
    paper = {"10-words", "Original", "50-words", "Image-understand", "CoT"}
    assert set(PROMPT_PRESETS) == own | paper
    lengths = {k: len(v["vt"].split()) for k, v in PROMPT_PRESETS.items()}
    assert lengths["short"] < lengths["words20"] < lengths["words50"]
    assert lengths["10-words"] < lengths["Original"] < lengths["50-words"]
    assert resolve_prompts(None) == PROMPT_PRESETS["Original"]
    with pytest.raises(ValueError, match="unknown preset"):
        resolve_prompts("long")
    with pytest.raises(ValueError, match="vista.readers.x.type"):
        build_answerer("x", {"type": "telepathy"})


# -- loaders ------------------------------------------------------------------------------------
def _png_b64(color, size=(12, 10)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def test_vlmevalkit_mcq_tsv(tmp_path):
    (tmp_path / "pics").mkdir()
    Image.new("RGB", (8, 8), "blue").save(tmp_path / "pics" / "p.png")
    rows = [
        {"index": 1, "question": "What color?", "hint": "Look closely", "A": "red", "B": "green",
         "C": "", "answer": "A", "image": _png_b64("red"), "category": "attr",
         "l2-category": "color", "split": "dev"},
        {"index": 2, "question": "Same picture?", "hint": "nan", "A": "yes", "B": "no",
         "answer": "A", "image": "1", "category": "attr", "l2-category": "color"},  # a reference
        {"index": 3, "question": "Eight options", **{k: f"opt {k}" for k in "ABCDEFGH"},
         "answer": "H", "image_path": "pics/p.png", "category": "big"},
        {"index": 4, "question": "Capital of France?", "answer": "Paris"},  # open
        {"index": 5, "question": "", "A": "x", "B": "y", "answer": "A"},  # no question
        {"index": 6, "question": "Bad answer", "A": "x", "B": "y", "answer": "E"},
        {"index": 7, "question": "Bad image", "A": "x", "B": "y", "answer": "A",
         "image": "not-base64-and-not-a-file" * 4},
    ]
    path = tmp_path / "mmbench.tsv"
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    qs = load_mcq_tsv(path)
    assert len(qs) == 7
    q1, q2, q3, q4 = qs[:4]
    assert q1["options"] == [("A", "red"), ("B", "green")] and q1["hint"] == "Look closely"
    assert q1["images"][0].shape == (10, 12, 3) and tuple(q1["images"][0][0, 0]) == (255, 0, 0)
    assert q2["hint"] == "" and np.array_equal(q2["images"][0], q1["images"][0])
    assert len(q3["options"]) == 8 and q3["answer"] == "H" and q3["images"][0].shape == (8, 8, 3)
    assert q3["subfield"] == "" and q1["subfield"] == "color"
    assert q4["options"] == [] and q4["answer"] == "Paris"
    assert "no question" in str(qs[4]) and "line 6" in str(qs[4])
    assert "'E' is not one of the options" in str(qs[5])
    assert "neither a file" in str(qs[6])
    # through load_questions, as a vista_questions set reads it
    assert [getattr(q, "get", lambda k: None)("id") for q in load_questions(str(path))][:4] == \
        ["1", "2", "3", "4"]


def test_vista_release_tsv(tmp_path):
    (tmp_path / "questions").mkdir()
    (tmp_path / "images").mkdir()
    for i in range(3):
        Image.new("RGB", (80, 20 + i), "white").save(tmp_path / "questions" / f"q{i}.png")
    Image.new("RGB", (16, 16), "green").save(tmp_path / "images" / "i0.png")
    rows = [
        {"index": "v0", "question": "Which color is the picture?", "hint": "", "A": "green",
         "B": "red", "answer": "A", "image": "images/i0.png", "question_image": "questions/q0.png",
         "question_type": "MCQ", "category": "Multimodal Perception", "subfield": "Attribute",
         "source": "mmbench", "font": "Arial", "size": "16"},
        {"index": "v1", "question": "2 + 2?", "A": "3", "B": "4", "C": "5", "answer": "B",
         "image": "nan", "question_image": _png_b64("white", (60, 20)),
         "category": "Unimodal Knowledge", "subfield": "Math", "font": "Brush", "size": "9"},
        {"index": "v2", "question": "Name the planet.", "answer": "Mars", "image": "",
         "question_image": "questions/q2.png", "category": "Unimodal Knowledge", "font": "Arial",
         "size": "48"},
        {"index": "v3", "question": "Missing render", "A": "x", "B": "y", "answer": "A",
         "question_image": "questions/none.png", "category": "x"},
    ]
    path = tmp_path / "VISTA-Bench.tsv"
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    df = build_dataset("vb", {"type": "vista_release", "path": str(path)}, tmp_path / "out")
    df = df.set_index("item_id")
    assert list(df["status"]) == ["ok", "ok", "ok", "error"]
    assert "line 5" in df.loc["v3", "reason"] and "question_image" in df.loc["v3", "reason"]
    assert df.loc["v3", "category"] == "x" and df.loc["v3", "source"] == "MMBench"
    assert df.loc["v0", "source"] == "MMBench" and df.loc["v0", "source_raw"] == "mmbench"
    assert df.loc["v0", "item_images"] == "item_images/v0_0.png"
    assert (tmp_path / "out" / "item_images" / "v0_0.png").is_file()
    assert df.loc["v1", "item_images"] == "" and df.loc["v1", "width"] == 60
    assert df.loc["v1", "font"] == "Brush" and df.loc["v1", "font_size_pt"] == 9
    assert json.loads(df.loc["v1", "options"]) == [["A", "3"], ["B", "4"], ["C", "5"]]
    assert df.loc["v1", "text"] == "2 + 2?\nA. 3\nB. 4\nC. 5"
    assert df.loc["v2", "options"] == "[]" and df.loc["v2", "answer"] == "Mars"


# -- answers of a set ---------------------------------------------------------------------------
def _question_set(tmp_path, n=3):
    """A hand-made manifest of family questions (2 renders each) and an OCR file of them: the
    9 pt render of each question is misread."""
    qs = generate(n, seed=1)
    (tmp_path / "ds" / "images").mkdir(parents=True)
    rows, ocr = [], []
    for q in qs:
        for size in (9, 16):
            item = f"{q['id']}__arial_{size}pt"
            Image.new("RGB", (40, 20), "white").save(tmp_path / "ds" / "images" / f"{item}.png")
            rows.append({"item_id": item, "path": f"images/{item}.png", "status": "ok",
                         "reason": "", "font": "arial", "font_size_pt": size,
                         "question_id": q["id"], "question_text": prompt_text(q),
                         "answer": q["answer"], "category": q["category"],
                         "subfield": q["subfield"], "hint": "",
                         "options": json.dumps(q["options"]), "item_images": ""})
            text = prompt_text(q) if size == 16 else "Wh4t 1s 5?\nA 12"
            ocr.append({"item_id": item, "text": text, "status": "ok", "reason": ""})
    rows.append({"item_id": "broken__arial_9pt", "path": "", "status": "error",
                 "reason": "render failed", "question_id": "broken", "question_text": "",
                 "answer": "A", "options": "[]"})
    pd.DataFrame(rows).to_csv(tmp_path / "ds" / "manifest.csv", index=False)
    pd.DataFrame(ocr).to_csv(tmp_path / "ocr.csv", index=False)
    return qs


def test_answer_set_with_the_offline_solver(tmp_path):
    qs = _question_set(tmp_path)
    reader = build_answerer("ocr_solver", {"type": "ocr_solver", "ocr": "tesseract"})
    df = answer_set(tmp_path / "ds" / "manifest.csv", reader, ocr_csv=tmp_path / "ocr.csv")
    assert list(df.columns) == ANSWER_COLUMNS
    text = df[df["mode"] == "text"].set_index("item_id")
    vt = df[df["mode"] == "vt"].set_index("item_id")
    assert len(text) == 4 and len(vt) == 7
    assert (text.loc[[q["id"] for q in qs], "hit"] == 1.0).all()
    assert text.loc["broken", "status"] == "not_scored"
    for q in qs:
        assert vt.loc[f"{q['id']}__arial_16pt", "hit"] == 1.0
        misread = vt.loc[f"{q['id']}__arial_9pt"]
        assert (misread["hit"], misread["extracted_by"]) == (0.0, "invalid")
        assert misread["raw"].startswith("cannot determine")
    assert vt.loc["broken__arial_9pt", "status"] == "not_scored"
    assert math.isnan(vt.loc["broken__arial_9pt", "hit"])


def test_answer_set_of_a_model_reads_its_reconstructions(tmp_path):
    qs = _question_set(tmp_path, n=2)
    recon = tmp_path / "recon"
    recon.mkdir()
    status = [{"item_id": f"{q['id']}__arial_{s}pt", "status": "ok" if s == 16 else "error",
               "reason": "" if s == 16 else "decoder crashed"} for q in qs for s in (9, 16)]
    pd.DataFrame(status).to_csv(recon / "status.csv", index=False)
    reader = build_answerer("s", {"type": "ocr_solver"})
    df = answer_set(tmp_path / "ds" / "manifest.csv", reader, model="small_vq", recon_dir=recon,
                    ocr_csv=tmp_path / "ocr.csv").set_index("item_id")
    row = df.loc[f"{qs[0]['id']}__arial_9pt"]
    assert row["status"] == "not_scored" and "decoder crashed" in row["reason"]
    assert df.loc[f"{qs[0]['id']}__arial_16pt", "hit"] == 1.0


# -- tables -------------------------------------------------------------------------------------
def _answers(rows):
    df = pd.DataFrame(rows)
    for c in ANSWER_COLUMNS:
        if c not in df:
            df[c] = ""
    df["hit"] = df["hit"].astype(float)
    return df[ANSWER_COLUMNS]


def _toy():
    """Two questions; q1 right as text, right at 16 pt, wrong at 9 pt; q2 wrong as text, right
    at 16 pt, wrong (invalid) at 9 pt. Table 1 renders: q1 at 16 pt, q2 at 9 pt."""
    rows = [
        {"item_id": "q1", "question_id": "q1", "mode": "text", "category": "math", "hit": 1,
         "extracted_by": "letter"},
        {"item_id": "q2", "question_id": "q2", "mode": "text", "category": "logic", "hit": 0,
         "extracted_by": "letter"},
    ]
    for q, hits in (("q1", (0, 1)), ("q2", (0, 1))):
        for size, hit in zip((9, 16), hits):
            rows.append({"item_id": f"{q}_{size}", "question_id": q, "mode": "vt",
                         "category": "math" if q == "q1" else "logic", "font": "arial",
                         "size": str(size), "hit": hit,
                         "table1": "1" if (q, size) in (("q1", 16), ("q2", 9)) else "0",
                         "extracted_by": "invalid" if (q, size) == ("q2", 9) else "letter"})
    return _answers(rows)


def test_paired_gap_equals_vt_minus_text():
    gaps = paired_gaps({"q1": [0, 1], "q2": [0, 1]}, {"q1": 1, "q2": 0})
    assert list(gaps) == [-50.0, 50.0]
    assert paired_gaps({"q1": [np.nan]}, {"q1": 1}).size == 0


def test_tables_compute_the_papers_quantities(tmp_path):
    answers = {("r", "original", "d"): _toy()}
    recon = _toy()
    recon.loc[recon["item_id"] == "q1_16", "hit"] = 0.0  # the tokenizer costs q1 at 16 pt
    answers[("r", "tok", "d")] = recon
    scorer = tables.Scorer({"samples": 200})
    acc = tables.accuracy_table(answers, scorer)
    col = {(c.dataset, c.metric): j for j, c in enumerate(acc.columns)}
    cell = lambda t, j: t.cells[(t.models[0], j)]  # noqa: E731
    # one render per question (the Table 1 renders): q1 right, q2 invalid
    assert cell(acc, col[("overall", "vt_accuracy")]).summary.mean == 50.0
    assert cell(acc, col[("overall", "text_accuracy")]).summary.mean == 50.0
    assert cell(acc, col[("overall", "modality_gap")]).summary.mean == 0.0
    assert cell(acc, col[("math", "vt_accuracy")]).summary.mean == 100.0
    assert cell(acc, col[("logic", "text_accuracy")]).summary.mean == 0.0
    assert any("1 of 2 answers invalid" in n for n in cell(acc, col[("overall", "vt_accuracy")]).notes)
    assert acc.models == ["r"]  # Table 1: the originals only

    sweeps = {"d": {"size_style": "arial", "style_size": 16}}
    font = tables.font_table(answers, sweeps, scorer)
    fcol = {(c.dataset, c.metric): j for j, c in enumerate(font.columns)}
    assert font.cells[("r / original", fcol[("size=9 pt", "vt_accuracy")])].summary.mean == 0.0
    # Text - VT (App. D.1)
    assert font.cells[("r / original", fcol[("size=9 pt", "modality_gap")])].summary.mean == 50.0
    assert font.cells[("r / original", fcol[("size=16 pt", "modality_gap")])].summary.mean == -50.0
    assert font.cells[("r / tok", fcol[("size=16 pt", "vt_accuracy")])].summary.mean == 50.0

    rend = tables.rendering_errors_table(answers, sweeps, scorer)
    rcol = {(c.dataset, c.metric): j for j, c in enumerate(rend.columns)}
    # at 9 pt: q1 (right as text) wrong as VT -> 1 of 2 renders; q2 was wrong as text anyway
    assert rend.cells[("r / original", rcol[("size=9 pt", "rendering_errors")])].summary.mean == 50.0
    share = rend.cells[("r / original", rcol[("all", "rendering_share")])].summary
    assert (share.mean, share.n) == (50.0, 2)  # 2 VT errors, one of them rendering-related

    tok = tables.tokenizer_table(answers, scorer)
    tcol = {(c.dataset, c.metric): j for j, c in enumerate(tok.columns)}
    assert tok.models == ["r / tok"]
    assert tok.cells[("r / tok", tcol[("recon", "vt_accuracy")])].summary.mean == 25.0
    assert tok.cells[("r / tok", tcol[("recon", "delta_vt")])].summary.mean == -25.0
    assert tok.cells[("r / tok", tcol[("original", "vt_accuracy")])].summary.mean == 50.0

    curves = tables.gap_curves(answers, sweeps)
    orig = curves[(curves["model"] == "original") & (curves["kind"] == "size")]
    assert list(orig["group"]) == ["9 pt", "16 pt"] and list(orig["gap"]) == [50.0, -50.0]


def test_errors_are_left_out_of_every_table_and_counted_apart():
    """The toy answers with q1's 16 pt render an error on the reconstructions ("tok") and q1's
    text answer an error on the originals (even as an older file scored them: hit 0, invalid):
    every table leaves them out, never counts them wrong, and says so in a footnote of its own;
    the invalid answer keeps its own count."""
    orig, recon = _toy(), _toy()
    error = {"status": "error", "reason": "connection error: chat m at e: gave up", "hit": 0.0,
             "extracted_by": "invalid"}
    for col, value in error.items():
        orig.loc[orig["item_id"] == "q1", col] = value
        recon.loc[recon["item_id"] == "q1_16", col] = value
    answers = {}
    for key, frame in ((("r", "original", "d"), orig), (("r", "tok", "d"), recon)):
        buf = io.StringIO()
        frame.to_csv(buf, index=False)
        buf.seek(0)
        answers[key] = tables.read_answers(buf)  # an error row is never scored when read back
    assert math.isnan(answers[("r", "original", "d")].set_index("item_id").loc["q1", "hit"])
    scorer = tables.Scorer({"samples": 50})
    note = ("1 of {n} answers are errors (no answer: left out, not counted wrong): "
            "connection error (1x)")
    cell = lambda t, row, key: t.cells[(row, [(c.dataset, c.metric) for c in t.columns]  # noqa: E731
                                        .index(key))]
    acc = tables.accuracy_table(answers, scorer)
    text = cell(acc, "r", ("overall", "text_accuracy"))
    assert (text.summary.mean, text.summary.n) == (0.0, 1)  # q2 wrong; q1 left out, not wrong
    assert text.notes == [note.format(n=2)]
    vt = cell(acc, "r", ("overall", "vt_accuracy"))  # the invalid answer: its own count
    assert vt.notes == ["1 of 2 answers invalid (counted wrong)"]
    gap = cell(acc, "r", ("overall", "modality_gap"))
    assert gap.summary.n == 1 and gap.notes == [note.format(n=4)]
    sweeps = {"d": {"size_style": "arial", "style_size": 16}}
    font = tables.font_table(answers, sweeps, scorer)
    f16 = cell(font, "r / tok", ("size=16 pt", "vt_accuracy"))
    assert (f16.summary.mean, f16.summary.n) == (100.0, 1) and f16.notes == [note.format(n=2)]
    tok = tables.tokenizer_table(answers, scorer)
    delta = cell(tok, "r / tok", ("recon", "delta_vt"))
    assert delta.summary.n == 3 and delta.notes == [note.format(n=8)]
    rend = cell(tables.rendering_errors_table(answers, sweeps, scorer), "r / tok",
                ("size=16 pt", "rendering_errors"))
    assert rend.summary.n == 1 and rend.notes == [note.format(n=2)]


# -- the endpoint readers -----------------------------------------------------------------------
def test_vlm_sends_item_pictures_then_the_question_image(monkeypatch):
    sent = []
    reader = build_answerer("v", {"type": "vlm", "endpoint": {"name": "x", "base_url": "u"},
                                  "model": "m", "prompt": "short", "max_tokens": 8,
                                  "decoding": {"top_p": 0.5}})
    monkeypatch.setattr(reader, "_chat", lambda content: sent.append(content) or "A")
    from roundtrip.readers.answerers import Question

    picture = np.zeros((4, 4, 3), np.uint8)
    q = Question("q1", "What is shown?\nA. cat\nB. dog", hint="A photo.", options=[("A", "cat"),
                 ("B", "dog")], images=[picture], question_image=np.ones((5, 8, 3), np.uint8))
    reader.answer(q, "text")
    reader.answer(q, "vt")
    text, vt = sent
    assert [p["type"] for p in text] == ["image_url", "text"]
    assert text[1]["text"].startswith("A photo.\nWhat is shown?\nA. cat\nB. dog\n\n")
    assert text[1]["text"].endswith(PROMPT_PRESETS["short"]["text"])
    assert [p["type"] for p in vt] == ["image_url", "image_url", "text"]
    # the hint travels as text in both modes; the question only as the image in VT mode
    assert vt[2]["text"] == "A photo.\n" + PROMPT_PRESETS["short"]["vt"]
    assert "What is shown" not in str(vt)
    assert reader.params == {"max_tokens": 8, "temperature": 0.0, "top_p": 0.5}


@pytest.fixture()
def fake_endpoint(tmp_path, monkeypatch):
    from fake_openai import FakeOpenAI

    from roundtrip.api.client import clear_clients

    monkeypatch.setenv("RT_VISTA_KEY", "sk-unit")
    with FakeOpenAI(key="sk-unit") as srv:
        yield srv, {"name": "fake", "base_url": srv.base_url, "key_env": "RT_VISTA_KEY",
                    "cache_dir": str(tmp_path / "cache"), "max_retries": 0, "timeout_s": 10}
    clear_clients()


def test_ocr_llm_answers_from_the_ocr_text(fake_endpoint):
    srv, endpoint = fake_endpoint
    from roundtrip.readers.answerers import Question

    reader = build_answerer("o", {"type": "ocr_llm", "endpoint": endpoint, "model": "llm",
                                  "ocr": "tesseract"})
    q = Question("q", "What is 2 + 2?\nA. 4\nB. 5", options=[("A", "4"), ("B", "5")],
                 ocr_text="What is 2 + 3?\nA. 4\nB. 5")  # misread: the LLM answers what it got
    assert score(reader.answer(q, "text"), q.options, "A")["hit"] == 1.0
    assert score(reader.answer(q, "vt"), q.options, "A")["extracted"] == "B"
    assert srv.counts["/v1/chat/completions"] == 2
    reader.answer(q, "vt")  # cached
    assert srv.counts["/v1/chat/completions"] == 2


def test_judge_fallback_maps_an_unreadable_answer(fake_endpoint):
    srv, endpoint = fake_endpoint
    judge = {"endpoint": endpoint, "model": "judge"}
    long_answer = "My pick: the planet Venus, clearly, over the others here and there"
    assert score(long_answer, OPTS, "B")["extracted_by"] == "invalid"  # too long for the rules
    out = score(long_answer, OPTS, "B", "Which planet?", judge)
    assert (out["extracted"], out["extracted_by"], out["hit"]) == ("B", "judge", 1.0)
    refusal = score("I cannot answer this", OPTS, "B", "Which planet?", judge)
    assert refusal["extracted_by"] == "invalid"
    assert srv.counts["/v1/chat/completions"] == 1  # refusals never go to the judge


# -- the release's conventions in the tables ----------------------------------------------------
def test_a_failed_audit_leaves_the_question_out_of_both_modes():
    """Worked case: q1's Table 1 render failed the audit (text wrong), q2 is wrong as VT and
    right as text. Dropping only q1's VT answer gave VT 0 / Text 50 / Gap 100 (unmatched);
    the question leaves both modes: VT 0 / Text 100 / Gap 100."""
    rows = [{"item_id": "q1", "question_id": "q1", "mode": "text", "category": "c", "hit": 0,
             "table1": "1", "extracted_by": "letter"},
            {"item_id": "q2", "question_id": "q2", "mode": "text", "category": "c", "hit": 1,
             "table1": "1", "extracted_by": "letter"},
            {"item_id": "q1_r", "question_id": "q1", "mode": "vt", "category": "c", "hit": 1,
             "table1": "1", "audit": "failed", "extracted_by": "letter"},
            {"item_id": "q2_r", "question_id": "q2", "mode": "vt", "category": "c", "hit": 0,
             "table1": "1", "audit": "passed", "extracted_by": "letter"}]
    answers, notes = tables.prepare({("r", "original", "d"): _answers(rows)})
    assert "left out, and in Table 1 their questions' text answers too" in notes[0]
    acc = tables.accuracy_table(answers, tables.Scorer({"samples": 50}))
    col = {(c.dataset, c.metric): j for j, c in enumerate(acc.columns)}
    got = [acc.cells[("r", col[("overall", m)])].summary.mean
           for m in ("vt_accuracy", "text_accuracy", "modality_gap")]
    assert got == [0.0, 100.0, 100.0]
    kept, _ = tables.prepare({("r", "original", "d"): _answers(rows)}, include_failed_audit=True)
    assert len(kept[("r", "original", "d")]) == 4


def _release_answers():
    """One render per question at a drawn (font, size), as the release: 8 questions, text all
    right; VT right only in Arial."""
    rows = []
    for k, (font, size) in enumerate([("Arial", 9), ("Arial", 16), ("Brush Script MT", 9),
                                      ("Brush Script MT", 16), ("Cambria", 9), ("Arial", 32),
                                      ("Cambria", 16), ("Brush Script MT", 32)]):
        q = f"q{k}"
        source = ["mmlu_val", "SEED-I", "mmmu_val", "scienceqa"][k % 4]
        rows.append({"item_id": q, "question_id": q, "mode": "text", "hit": 1, "table1": "1",
                     "category": "c", "source": source, "extracted_by": "letter"})
        rows.append({"item_id": q, "question_id": q, "mode": "vt", "font": font,
                     "size": str(size), "hit": float(font == "Arial"), "table1": "1",
                     "category": "c", "source": source, "extracted_by": "letter"})
    return _answers(rows)


def test_font_table_on_the_release_compares_sizes_in_arial_and_fonts_at_16_pt():
    """Per size in the size-sweep font and per font at the style-sweep size, as the docs say;
    the release's pooled groups (every font of a size, every size of a font) beside, named."""
    from types import SimpleNamespace

    from roundtrip.evals.vista.plan import VistaPlan

    plan = SimpleNamespace(config={"datasets": {"vb": {"type": "vista_release", "path": "x"}},
                                   "vista": {"readers": {"r": {"type": "ocr_solver"}}}},
                           datasets=["vb"])
    sweeps = VistaPlan(plan).sweeps()
    assert sweeps == {"vb": {"size_style": "arial", "style_size": 16, "pooled": True}}
    font = tables.font_table({("r", "original", "vb"): _release_answers()}, sweeps,
                             tables.Scorer({"samples": 50}))
    cells = {c.dataset: font.cells[("r / original", j)].summary for j, c in
             enumerate(font.columns) if c.metric == "vt_accuracy"}
    assert (cells["size=9 pt"].mean, cells["size=9 pt"].n) == (100.0, 1)  # Arial only
    assert (cells["size_all=9 pt (all fonts)"].mean, cells["size_all=9 pt (all fonts)"].n) == \
        (pytest.approx(100 / 3), 3)
    assert (cells["style=Brush Script MT"].mean, cells["style=Brush Script MT"].n) == (0.0, 1)
    assert cells["style_all=Brush Script MT (all sizes)"].n == 3
    assert cells["style=Arial"].n == 1 and cells["style_all=Arial (all sizes)"].n == 3


def test_source_table_groups_by_the_four_benchmarks():
    """The release's raw sources (tags, MMBench's provenance) map to Fig. 2's four benchmarks,
    in its order."""
    from roundtrip.datasets.vista import source_benchmark

    raw = ["mmlu_val", "SEED-I", "mmmu_val", "scienceqa",
           "https://www.google.com/maps/@44.35,26.10,4z?entry=ttu", "COCO train2014", ""]
    assert [source_benchmark(s, "MMBench") for s in raw] == [
        "MMLU", "SEED-Bench", "MMMU", "MMBench", "MMBench", "MMBench", ""]
    df = _release_answers()
    df["source"] = df["source"].map(lambda s: source_benchmark(s, "MMBench"))
    table = tables.source_table({("r", "original", "vb"): df}, tables.Scorer({"samples": 50}))
    assert list(dict.fromkeys(c.group for c in table.columns)) == ["MMBench", "SEED-Bench",
                                                                  "MMMU", "MMLU"]
    assert len(table.columns) == 12


# -- a reader that cannot answer every question --------------------------------------------------
NOT_FAMILY = "What colour is the car?\nA. red\nB. blue"


def _mixed_set(tmp_path, family: int = 2, other: int = 2):
    """``family`` questions of the family and ``other`` questions that are not (a release-style
    question about a picture), one render each (the Table 1 render), read right by the OCR."""
    (tmp_path / "ds" / "images").mkdir(parents=True)
    qs = [(q["id"], prompt_text(q), q["answer"], q["options"]) for q in generate(family, seed=1)]
    qs += [(f"n{k}", NOT_FAMILY, "A", [["A", "red"], ["B", "blue"]]) for k in range(other)]
    rows, ocr = [], []
    for qid, text, answer, options in qs:
        item = f"{qid}__arial_16pt"
        Image.new("RGB", (40, 20), "white").save(tmp_path / "ds" / "images" / f"{item}.png")
        rows.append({"item_id": item, "path": f"images/{item}.png", "status": "ok", "reason": "",
                     "font": "arial", "font_size_pt": 16, "question_id": qid,
                     "question_text": text, "answer": answer, "category": "Unimodal Knowledge",
                     "subfield": "", "hint": "", "options": json.dumps(options),
                     "item_images": "", "table1": "1"})
        ocr.append({"item_id": item, "text": text, "status": "ok", "reason": ""})
    pd.DataFrame(rows).to_csv(tmp_path / "ds" / "manifest.csv", index=False)
    pd.DataFrame(ocr).to_csv(tmp_path / "ocr.csv", index=False)


def _solver_tables(tmp_path, release: bool = True):
    from roundtrip.report.findings import RunResults

    reader = build_answerer("ocr_solver", {"type": "ocr_solver"})
    df = answer_set(tmp_path / "ds" / "manifest.csv", reader, ocr_csv=tmp_path / "ocr.csv")
    answers, notes = tables.prepare({("ocr_solver", "original", "ds"): df})
    scorer = tables.Scorer({"samples": 50})
    out = tmp_path / "tables"
    for table in (tables.accuracy_table(answers, scorer), tables.tokenizer_table(answers, scorer)):
        table.notes += notes
        write_table(table, out)
    config = {"vista": {"readers": {"ocr_solver": {"type": "ocr_solver"}}},
              "datasets": {"ds": {"type": "vista_release" if release else "vista_questions"}}}
    results = RunResults({p.stem: p for p in out.glob("*.csv")}, config=config,
                         bootstrap={"samples": 50})
    return df, results, out


def test_the_solver_leaves_questions_outside_its_family_out_and_says_so(tmp_path):
    """The offline solver answers only its family's questions. Worked case: 2 family questions
    (read right) and 2 that are not (a question about a picture). Before, the 2 others were
    asked, answered "cannot determine" and counted wrong: Overall VT 50.0 and Text 50.0 beside
    the published VLMs. Now they are out of the solver's scope in both modes (not scored, the
    reason says what it answers), Overall VT and Text are 100.0 over the 2 it answers, the
    In scope column reads 2 (n=4), a note counts and names them, page 1 says so, and the row is
    not set beside the published Table 1."""
    from roundtrip.evals.vista.answers import OUT_OF_SCOPE
    from roundtrip.evals.vista.findings import findings, table1_cells

    _mixed_set(tmp_path)
    df, results, out = _solver_tables(tmp_path)
    outside = df[df["question_id"].str.startswith("n")]
    assert len(outside) == 4 and (outside["status"] == "not_scored").all()
    assert outside["hit"].isna().all() and outside["raw"].eq("").all()
    assert outside["reason"].str.startswith(f"{OUT_OF_SCOPE}: ocr_solver answers only the "
                                            "questions of roundtrip's offline family").all()
    assert outside["reason"].str.endswith("this one: not a question of the family").all()
    acc = pd.read_csv(out / "vista_accuracy.csv")
    row = acc.iloc[0]
    assert (row["overall.vt_accuracy"], row["overall.vt_accuracy.n"]) == (100.0, 2)
    assert (row["overall.text_accuracy"], row["overall.modality_gap"]) == (100.0, 0.0)
    assert (row["overall.in_scope"], row["overall.in_scope.n"]) == (2, 4)
    md = (out / "vista_accuracy.md").read_text()
    assert "2 (n=4)" in md and "2 of 4 outside the reader's scope, left out (not counted " \
        "wrong; table note)" in md
    assert "Note: ocr_solver on ds: 2 of 4 questions outside the reader's scope, left out of " \
        "its cells (not counted wrong): ocr_solver answers only the questions of roundtrip's " \
        "offline family (arithmetic, comparison, unit conversion, sequence, calendar; " \
        "questions: family)" in md
    sentences = findings(results)
    assert sentences[0].startswith("ocr_solver answers 100.0 [100.0, 100.0] % of 2 questions "
                                   "right as visualized text")
    assert sentences[1] == (
        "ocr_solver answers 2 of the 4 questions (ocr_solver answers only the questions of "
        "roundtrip's offline family (arithmetic, comparison, unit conversion, sequence, "
        "calendar; questions: family)): its accuracies are over those 2; the other 2 are left "
        "out, not counted wrong. A reader that leaves questions out is not set beside the "
        "published VLMs of Table 1.")
    assert table1_cells(results) is None  # not beside the published rows


def test_a_solver_with_no_question_in_scope_reads_n_a_with_the_reason(tmp_path):
    """The real release's first 300 rows: no question of the family, so none in the solver's
    scope. Every accuracy reads n/a with its reason (before: 0.0, 299 of 300 invalid), page 1
    says why instead of printing 0.0, and the gap figure draws no line but says why."""
    from roundtrip.evals.vista import figures
    from roundtrip.evals.vista.findings import findings

    _mixed_set(tmp_path, family=0, other=3)
    df, results, out = _solver_tables(tmp_path)
    md = (out / "vista_accuracy.md").read_text()
    row = md.splitlines()[4]
    # Unimodal Knowledge VT, Text; Overall VT, Text, Gap; the Unimodal gap; In scope: one
    # footnote for every cell (before: 0.0 in each, "3 of 3 answers invalid")
    assert row == "| ocr_solver | n/a [1] | n/a [1] | n/a [1] | n/a [1] | n/a [1] | n/a [1] | " \
        "0 (n=3) |"
    assert "[1] n/a: every question outside the reader's scope (table note)" in md
    assert "[2]" not in md
    assert findings(results) == [
        "VISTA-Bench's accuracies could not be reported: vista_accuracy holds no reader with an "
        "overall VT accuracy.",
        "ocr_solver answers none of the 3 questions (ocr_solver answers only the questions of "
        "roundtrip's offline family (arithmetic, comparison, unit conversion, sequence, "
        "calendar; questions: family)): they are left out of its accuracies, which read n/a, "
        "not counted wrong. A reader that leaves questions out is not set beside the published "
        "VLMs of Table 1.",
        "The tokenizer axis is not reported: no model's reconstructions of the question images "
        "were read (vista.models is [], or no model runs on the question sets): the tokenizer "
        "axis is off."]
    curves = tables.gap_curves({("ocr_solver", "original", "ds"): tables.read_answers(
        _csv(df, tmp_path))}, {"ds": {"size_style": "arial", "style_size": 16}})
    assert curves["gap"].isna().all()
    figures.plot_gap(curves, tmp_path / "gap.png")
    assert (tmp_path / "gap.png").stat().st_size > 10_000


def _csv(df, tmp_path):
    path = tmp_path / "answers.csv"
    df.to_csv(path, index=False)
    return path


def test_the_family_is_all_in_the_solvers_scope(tmp_path):
    """On its own family (the default run) nothing changes: every question is in scope and the
    table has no In scope column."""
    _mixed_set(tmp_path, family=3, other=0)
    df, results, out = _solver_tables(tmp_path, release=False)
    assert (df["status"] == "ok").all()
    assert "overall.in_scope" not in pd.read_csv(out / "vista_accuracy.csv")


def test_gap_figure_axis_holds_the_gaps_and_is_never_a_sliver():
    """The y axis holds 0 and every gap with a tenth of their span around, at least 20 points
    (before: gaps of 0 gave matplotlib's -0.04..0.04), within +-105."""
    from roundtrip.evals.vista.figures import gap_limits

    assert gap_limits([0.0, 0.0, np.nan]) == (-10.0, 10.0)
    assert gap_limits([]) == (-10.0, 10.0)
    assert gap_limits([40.0, 100.0]) == (-10.0, 105.0)
    assert gap_limits([-5.0, 3.0]) == pytest.approx((-11.0, 9.0))
    assert gap_limits([-60.0, 20.0]) == pytest.approx((-68.0, 28.0))


def test_the_gap_figure_has_its_caption_in_the_report():
    """The report prints a section figure's caption (report/vista_gap.rst), not its file name."""
    from pathlib import Path

    from roundtrip.report.document import figure_caption

    caption = figure_caption(Path("results/figures/vista_gap.png"))
    assert caption.startswith("The modality gap (Text - VT accuracy, points; positive when VT "
                              "is worse")
    assert "\n" not in caption and figure_caption(Path("x/unknown.png")) == "unknown.png"


def test_a_vista_only_config_reconstructs_no_question_image():
    """A config that asks for VISTA-Bench only (a release set, the offline reader, vista.models:
    []) reconstructs nothing: before, every question image went through identity for VTBench's
    text table (101 of 303 s of a 300-row run). A tokenizer axis (vista.models: [identity]) or
    text_eval brings the reconstruction and its OCR back."""
    import copy

    from conftest import REPO

    from roundtrip.workflow.checks import validate_config
    from roundtrip.workflow.plan import Plan

    base = {"datasets": {"vb": {"type": "vista_release", "path": "/data/VISTA-Bench.tsv"}},
            "models": {"identity": {"type": "identity"}},
            "vista": {"readers": {"ocr_solver": {"type": "ocr_solver"}}, "models": []}}

    def plan(**changes):
        config = copy.deepcopy(base)
        for key, value in changes.items():
            section, name = key.split("__")
            config[section][name] = value
        validate_config(config, str(REPO / "config.schema.yaml"))
        return Plan(config, cores=2)

    off = plan()
    assert off.roles == {"vb": "vista_questions_only"}
    assert off.text_datasets == [] and off.image_datasets == []
    assert off.recon_jobs.variants() == []
    assert VistaPlan(off).keys == [("ocr_solver", "original", "vb")]
    on = plan(vista__models=["identity"])
    assert on.roles == {"vb": "text"} and on.text_datasets == ["vb"]
    assert VistaPlan(on).keys == [("ocr_solver", "original", "vb"),
                                  ("ocr_solver", "identity", "vb")]
    evaluated = plan(datasets__vb={"type": "vista_release", "path": "/d.tsv", "text_eval": True})
    assert evaluated.roles == {"vb": "text"} and evaluated.text_datasets == ["vb"]
    # a small packaged set read through OCR stays a text set: its renders are read in the
    # text sets' batched OCR job
    family = plan(datasets__vb={"type": "vista_questions", "questions": "family", "count": 2})
    assert family.roles == {"vb": "text"}

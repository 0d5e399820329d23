"""VISTA-Bench against the authors' released code: the numbers and strings below were printed by
that code, run as committed, on inputs these tests build themselves.

Release: github.com/2223884741/VISTA-Bench @ ffd7e6e; its ``VLMEvalKit/`` is the copy the
authors evaluated with (App. C.3). Files run: ``VLMEvalKit/utils/convert_data_file.py`` (the TSV
converter of the README's step 1), ``vlmeval/dataset/__init__.py`` (``build_dataset``: the text
set ``VISTA-Bench_norm`` becomes a ``CustomMCQDataset``, ``vlmeval/dataset/image_mcq.py``; the
VT set ``VISTA-Bench-VT`` an ``MMImageMCQDataset``, ``vlmeval/dataset/image_mm_mcq.py``),
``vlmeval/inference.py`` (``infer_data_job`` with ``SPLIT_THINK=1``: a reasoning trace is cut at
the last ``</think>``), ``ImageMCQDataset.evaluate`` with ``model="exact_matching"`` (the judge
run.py picks falls back to exact matching without an OpenAI key;
``vlmeval/dataset/utils/multiple_choice.py``: ``mcq_vanilla_eval``, ``report_acc``) and
``vlmeval/utils/matching_util.py`` (``can_infer``, ``can_infer_option``, ``can_infer_text``).

Environment: CPython 3.11.7; pandas 2.3.3, numpy 2.4.6, openpyxl 3.1.5, validators 0.36.0,
transformers 4.57.6, datasets 3.6.0, huggingface_hub 0.36.2, torch 2.14.1, torchvision 0.29.1
(``VLMEvalKit/requirements.txt`` pins none of them; transformers 5 and datasets 4 cannot be
imported by the release, pandas 2.3.3 is the last 2.x). ``import vlmeval`` fails as committed:
its package ``__init__`` files import modules the release does not contain
(``vlmeval/api/gemini.py``, ``qwen_vl_api.py``, ``qwen_api.py``, ``reka.py``,
``sensechat_vision.py``, ``bailingmm.py``, ``bluelm_api.py``; ``vlmeval/vlm/qwen_vl``,
``qwen2_vl``, ``qwen3_vl``, ``internvl``), and ``vlmeval/config.py`` and ``vlmeval/tools.py``
raise NameError at import (``VideoChatOnlineV2API``, ``qwen_series``). Those modules, and only
they, were replaced by empty modules (API and model wrappers and the model registry: nothing on
the evaluation path); every other module ran as committed.

Commands (the release's checkout on ``PYTHONPATH``, ``LMUData`` a scratch folder):

1. ``python -c "from vlmeval.utils import can_infer; print(can_infer(output, options))"`` for
   each output of :data:`CAN_INFER` (its options as a dict) -> :data:`CAN_INFER`'s letters
   (``False`` and ``'Z'`` are no answer).
2. :func:`write_quirk_tsv`'s TSV (with its images) converted with ``python
   VLMEvalKit/utils/convert_data_file.py --in VISTA-Bench.tsv --out
   $LMUData/VISTA-Bench_norm.tsv --image-prefix <folder>`` and again to
   ``$LMUData/VISTA-Bench-VT.tsv``, the header ``image`` renamed ``image-1`` (README); then
   ``build_dataset(name)``, ``infer_data_job(model, work_dir, "designed", dataset)`` with a
   model whose output per question is :data:`OUTPUTS` (recording each message it is sent) and
   ``dataset.evaluate(prediction_file, model="exact_matching", nproc=1)`` -> the messages
   (:data:`TEXT_MESSAGES`, :data:`VT_MESSAGES`), the hits (:data:`HITS`) and the accuracies
   (:data:`ACCURACY`).
3. The same converter and ``build_dataset`` on the real ``VISTA-Bench.tsv`` of the release,
   ``build_prompt`` on every row -> :data:`REAL_TSV` (checked where the file is at hand:
   ``ROUNDTRIP_VISTA_TSV``).
"""
import csv
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from roundtrip.datasets import build_dataset
from roundtrip.evals.vista import tables
from roundtrip.evals.vista.answers import answer_set
from roundtrip.evals.vista.extract import PROSE, RELEASE, extract_answer
from roundtrip.evals.vista.prompts import release_text_message, release_vt_message
from roundtrip.readers import build_answerer
from roundtrip.readers.answerers import PAPER_PROMPTS

# -- command 1: can_infer on designed outputs ---------------------------------------------------
ABCD = {"A": "cat", "B": "dog", "C": "bird", "D": "fish"}
NUM = {"A": "12", "B": "24", "C": "36", "D": "48"}
NINE = {k: k for k in "ABCDEFGH"}
#: (output, options, the letter can_infer printed; None for False and 'Z')
CAN_INFER = [
    ("B", ABCD, "B"), ("b", ABCD, None), ("B.", ABCD, "B"), ("(C)", ABCD, "C"),
    ("The answer is B", ABCD, "B"), ("B or C: cat", ABCD, "A"), ("It is a dog.", ABCD, "B"),
    ("I'm sorry, but the answer is B", ABCD, "B"), ("concatenate", ABCD, "A"),
    ("B is what I would pick if I had to choose one of these options", ABCD, None),
    ("A. cat", ABCD, "A"), ("A cat is shown in the picture", ABCD, None),
    ("Cannot determine the answer", ABCD, None),
    ("I cannot determine the answer from the image", ABCD, None),
    ("Failed to obtain answer via API.", ABCD, None), ("Z", ABCD, None), ("", ABCD, None),
    ("E", ABCD, None), ("**D**", ABCD, "D"), ("Answer: D", ABCD, "D"),
    ("The total is 24 apples", NUM, None), ("cat and dog", ABCD, None),
    ("After careful consideration of all of the visual evidence in the picture and the wording "
     "of the question, the animal is clearly a dog", {"A": "cat", "B": "dog"}, None),
    ("A/B", ABCD, None), ("'B'", ABCD, None), ("B-", ABCD, None), ("DOG", ABCD, "B"),
    ("答案：B", ABCD, None), ("Answer:\nC", ABCD, "C"), ("I", NINE, None),
]
#: The outputs of CAN_INFER where App. C.3's prose rule reads otherwise: output -> its letter.
PROSE_DIFFERS = {"b": "B", "B or C: cat": None, "It is a dog.": "A",
                 "I'm sorry, but the answer is B": None, "concatenate": None,
                 "'B'": "B", CAN_INFER[22][0]: "A"}


@pytest.mark.parametrize("output, options, letter", CAN_INFER)
def test_release_extraction_is_can_infer(output, options, letter):
    ex = extract_answer(output, options, RELEASE)
    assert ex.letter == letter
    assert (ex.how == "invalid") == (letter is None)


def test_the_prose_rule_stays_beside_under_its_name():
    """App. C.3's prose (roundtrip's earlier rule) reads 7 of the 30 outputs otherwise."""
    differs = {}
    for output, options, letter in CAN_INFER:
        prose = extract_answer(output, options, PROSE).letter
        if prose != letter:
            differs[output] = prose
    assert differs == PROSE_DIFFERS


# -- command 2: the pipeline on a TSV with every quirk of the release ---------------------------
PER, REA, KNO, UNI = ("multimodal perception", "multimodal reasoning", "multimodal knowledge",
                      "unimodal knowledge")
COLUMNS = ["index", "question", "hint", *"ABCDEFGH", "answer", "image", "question_image",
           "question_type", "category", "subfield", "source", "font", "size"]


def _row(index, question, options, answer, image, category, source, font, size, hint="",
         qtype="multiple-choice"):
    return [str(index), question, hint, *(list(options) + [""] * (8 - len(options))), answer,
            image, f"questions/{index}.jpg", qtype, category, "sub", source, font, str(size)]


#: One row per quirk: a hint; several pictures split on ";" and on "，"/"；" with spaces; an
#: answer pointing at a blank option; answer I beyond H; "nan" options; an answer pointing at a
#: "nan" option; an open question; a unimodal row; a hint spanning two lines; an option "None"
#: (pandas reads it as missing); options with trailing spaces; a backslash in an option.
ROWS = [
    _row(1, "Which animal is shown?", ["cat", "dog"], "B", "images/1.jpg", PER, "SEED-I",
         "Arial", 9, hint="Look closely."),
    _row(2, "Which picture is brighter?", ["The first image", "The second image"], "A",
         "images/2.jpg;images/2_2.jpg", KNO, "mmmu_val", "Times New Roman", 16),
    _row(3, "Which picture shows a bird?", ["first", "second", "third", "none"], "C",
         "images/3.jpg， images/3_2.jpg；images/3_3.jpg", KNO, "mmmu_val", "Cambria", 32),
    _row(4, "How many figures are in the window?", ["", "One", "Two", "Three"], "A",
         "images/4.jpg", PER, "https://example.com/maps/@44.35,26.10,4z?entry=ttu", "Arial", 16),
    _row(5, "Which arrow points to the ribosome?", list("ABCDEFGH"), "I", "images/5.jpg", KNO,
         "mmmu_val", "Brush Script MT", 48),
    _row(6, "Which colour is the sky?", ["red", "blue", "nan", "nan"], "B", "images/6.jpg", REA,
         "scienceqa", "Arial", 48),
    _row(7, "Which statement is wrong?", ["Silt is fine", "Shale splits", "Chert is silica",
                                          "nan"], "D", "images/7.jpg", KNO, "mmmu_val",
         "Arial", 9),
    _row(8, "What is 6 times 7?", [], "42", "images/8.jpg", KNO, "mmmu_val", "Arial", 16,
         qtype="open"),
    _row(9, "What is the capital of France?", ["Berlin", "Madrid", "Paris", "Rome"], "C", "",
         UNI, "mmlu_val", "Times New Roman", 16),
    _row(10, "Is the man holding a bat?", ["yes", "no"], "A", "images/10.jpg", REA,
         "COCO train2014", "Cambria", 16, hint="Line one.\nLine two."),
    _row(11, "How many moons does Venus have?", ["Two", "None", "Three", "One "], "B", "", UNI,
         "mmlu_val", "Arial", 32),
    _row(12, "Which costs more?", ["$6 ", "$7 "], "B", "images/12.jpg", REA, "Internet",
         "Brush Script MT", 9),
    _row(13, "Which code prints two lines?", ["print('a\\nb')", "print('ab')"], "A", "", UNI,
         "mmlu_val", "Cambria", 48),
]


def write_quirk_tsv(folder: Path, rows=ROWS) -> Path:
    """The release's layout: ``VISTA-Bench.tsv`` beside ``images/`` and ``questions/``."""
    for sub in ("images", "questions"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    names = []
    for r in rows:
        names += [p.strip() for p in r[12].replace("，", ";").replace("；", ";").split(";")
                  if p.strip()] + [r[13]]
    for k, name in enumerate(names):
        Image.new("RGB", (8, 8), (k * 9 % 256, 80, 160)).save(folder / name)
    path = folder / "VISTA-Bench.tsv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return path


#: The designed model's outputs, per mode and index.
OUTPUTS = {"text": {1: "B", 2: "A", 3: "C", 4: "A", 5: "I", 6: "B", 7: "D", 8: "42", 9: "C",
                    10: "yes", 11: "B", 12: "$7", 13: "print('a\\nb')"},
           "vt": {1: "<think>it could be A</think>B", 2: "The answer is B", 3: "third", 4: "B",
                  5: "I", 6: "blue", 7: "D", 8: "The answer is 42", 9: "It is Paris.",
                  10: "b", 11: "None", 12: "B", 13: "A"}}
#: Reasoning traces (a second VT run): cut at the last </think>; other rows answer "A".
THINK = {1: "<think>A</think>draft C</think> B", 2: "considering B</think>\nA",
         3: "<think>maybe C</think>The answer is A", 6: "<think>B</think>"}
_ASK = "Answer with only the single letter of the correct option (e.g., A, B, C, D). \n"
#: index -> (pictures sent, the text sent), text mode, as the release printed them.
TEXT_MESSAGES = {
    1: (1, "Hint: Look closely.\nQuestion: Which animal is shown?\nOptions:\nA. cat\nB. dog\n"
           + _ASK),
    2: (2, "Question: Which picture is brighter?\nOptions:\nA. The first image\n"
           "B. The second image\n" + _ASK),
    3: (3, "Question: Which picture shows a bird?\nOptions:\nA. first\nB. second\nC. third\n"
           "D. none\n" + _ASK),
    4: (1, "Question: How many figures are in the window?\nOptions:\nB. One\nC. Two\n"
           "D. Three\n" + _ASK),
    5: (1, "Question: Which arrow points to the ribosome?\nOptions:\nA. A\nB. B\nC. C\nD. D\n"
           "E. E\nF. F\nG. G\nH. H\n" + _ASK),
    6: (1, "Question: Which colour is the sky?\nOptions:\nA. red\nB. blue\n" + _ASK),
    7: (1, "Question: Which statement is wrong?\nOptions:\nA. Silt is fine\nB. Shale splits\n"
           "C. Chert is silica\n" + _ASK),
    8: (1, "Question: What is 6 times 7?\n"),
    9: (0, "Question: What is the capital of France?\nOptions:\nA. Berlin\nB. Madrid\n"
           "C. Paris\nD. Rome\n" + _ASK),
    10: (1, "Hint: Line one.\nLine two.\nQuestion: Is the man holding a bat?\nOptions:\n"
            "A. yes\nB. no\n" + _ASK),
    11: (0, "Question: How many moons does Venus have?\nOptions:\nA. Two\nC. Three\nD. One \n"
            + _ASK),
    12: (1, "Question: Which costs more?\nOptions:\nA. $6 \nB. $7 \n" + _ASK),
    13: (0, "Question: Which code prints two lines?\nOptions:\nA. print('a\\\\nb')\n"
            "B. print('ab')\n" + _ASK),
}
_ORIGINAL = ("Read the question and options shown in the image(s). Answer with only the single "
             "letter of the correct option (e.g., A, B, C, D).")
#: index -> (pictures sent, question image included; the text sent), VT mode.
VT_MESSAGES = {1: (2, "Hint: Look closely.\n" + _ORIGINAL), 2: (3, _ORIGINAL), 3: (4, _ORIGINAL),
               4: (2, _ORIGINAL), 5: (2, _ORIGINAL), 6: (2, _ORIGINAL), 7: (2, _ORIGINAL),
               8: (2, _ORIGINAL), 9: (1, _ORIGINAL),
               10: (2, "Hint: Line one.\nLine two.\n" + _ORIGINAL), 11: (1, _ORIGINAL),
               12: (2, _ORIGINAL), 13: (1, _ORIGINAL)}
#: index -> hit, as mcq_vanilla_eval printed them.
HITS = {"text": dict(zip(range(1, 14), (1, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0))),
        "vt": dict(zip(range(1, 14), (1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1))),
        "think": dict(zip(range(1, 14), (1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1)))}
#: report_acc's accuracies (fractions).
ACCURACY = {"text": {"Overall": 0.46153846153846156, KNO: 0.4, PER: 0.5,
                     REA: 0.6666666666666666, UNI: 0.3333333333333333},
            "vt": {"Overall": 0.46153846153846156, KNO: 0.2, PER: 0.5,
                   REA: 0.6666666666666666, UNI: 0.6666666666666666},
            "think": {"Overall": 0.3076923076923077, KNO: 0.2, PER: 0.5,
                      REA: 0.3333333333333333, UNI: 0.3333333333333333}}
#: The release's rows per category of the quirk TSV (both datasets): every row.
QUIRK_ROWS = {KNO: 5, REA: 3, UNI: 3, PER: 2}


@pytest.fixture(scope="module")
def quirk_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("vista_release")
    path = write_quirk_tsv(root / "VISTA-Bench")
    manifest = build_dataset("vb", {"type": "vista_release", "path": str(path)}, root / "out")
    return root / "out" / "manifest.csv", manifest


def _designed_reader(outputs):
    """The endpoint reader with its request replaced by a designed output per question; every
    request it would send is kept."""
    reader = build_answerer("designed", {"type": "vlm", "model": "m", "endpoint": {
        "name": "x", "base_url": "http://unused", "concurrency": 1}})
    sent, current = {}, {}
    answer = reader.answer

    def ask(q, mode):
        current["key"] = (mode, int(q.item_id))
        return answer(q, mode)

    def chat(content):
        sent[current["key"]] = content
        mode, index = current["key"]
        return outputs[mode].get(index, "A")

    reader.answer, reader._chat = ask, chat
    return reader, sent


def test_release_loader_keeps_every_row(quirk_set):
    """Every row is an item with the release's reading of it (finding: the loader lost 29 of
    the real TSV's 1,500 rows)."""
    _, m = quirk_set
    m = m.set_index("item_id")
    assert (m["status"] == "ok").all() and len(m) == 13
    assert m["category"].value_counts().to_dict() == QUIRK_ROWS
    pictures = {int(i): len([p for p in v.split("|") if p]) for i, v in m["item_images"].items()}
    assert pictures == {i: n - 1 for i, (n, _) in VT_MESSAGES.items()}
    letters = {int(i): [k for k, _ in json.loads(v)] for i, v in m["options"].items()}
    assert letters[4] == ["B", "C", "D"] and letters[6] == ["A", "B"]
    assert letters[7] == ["A", "B", "C"] and letters[11] == ["A", "C", "D"]
    assert letters[8] == [] and letters[5] == list("ABCDEFGH")
    assert m.loc["5", "answer"] == "I" and m.loc["4", "answer"] == "A"
    assert m.loc["9", "modality"] == "unimodal" and m.loc["2", "modality"] == "multimodal"
    # the pure-text ground truth keeps the TSV's text; the release reads a doubled backslash
    assert "print('a\\nb')" in m.loc["13", "question_text"]
    assert json.loads(m.loc["13", "options"])[0][1] == "print('a\\\\nb')"


def test_release_sources_map_to_the_four_benchmarks(quirk_set):
    _, m = quirk_set
    m = m.set_index("item_id")
    assert dict(m["source"]) == {"1": "SEED-Bench", "2": "MMMU", "3": "MMMU", "4": "MMBench",
                                 "5": "MMMU", "6": "MMBench", "7": "MMMU", "8": "MMMU",
                                 "9": "MMLU", "10": "MMBench", "11": "MMLU", "12": "MMBench",
                                 "13": "MMLU"}
    assert m.loc["4", "source_raw"].startswith("https://")


def test_a_failed_row_keeps_its_reason_labels_and_line(tmp_path):
    rows = ROWS[:10] + [_row(11, "Where is it?", ["here", "there"], "A", "images/gone.jpg",
                             PER, "koniq10k", "Arial", 9)]
    path = write_quirk_tsv(tmp_path / "data", rows[:10])
    with open(path, "a", newline="", encoding="utf-8") as f:
        csv.writer(f, delimiter="\t", lineterminator="\n").writerow(rows[10])
    Image.new("RGB", (8, 8)).save(tmp_path / "data" / "questions" / "11.jpg")
    m = build_dataset("vb", {"type": "vista_release", "path": str(path)}, tmp_path / "out")
    bad = m.set_index("item_id").loc["11"]
    # row 10's hint spans two lines: the eleventh record starts on line 13
    assert bad["status"] == "error" and bad["reason"].startswith("line 13 (index 11) image[0]")
    assert (bad["category"], bad["modality"], bad["source"]) == (PER, "multimodal", "MMBench")
    reader, _ = _designed_reader(OUTPUTS)
    df = answer_set(tmp_path / "out" / "manifest.csv", reader)
    lost = df[df["question_id"] == "11"]
    assert list(lost["status"]) == ["not_scored", "not_scored"]
    assert lost["reason"].str.startswith("line 13 (index 11) image[0]").all()
    assert set(lost["modality"]) == {"multimodal"} and set(lost["source"]) == {"MMBench"}


def test_messages_are_the_releases(quirk_set):
    """The text each request carries and how many pictures, per mode and question, as the
    release sent them (finding: the text mode's prompt)."""
    path, _ = quirk_set
    reader, sent = _designed_reader(OUTPUTS)
    answer_set(path, reader)
    for mode, expected in (("text", TEXT_MESSAGES), ("vt", VT_MESSAGES)):
        for index, (pictures, text) in expected.items():
            content = sent[(mode, index)]
            assert [p["text"] for p in content if p["type"] == "text"] == [text], (mode, index)
            assert sum(p["type"] == "image_url" for p in content) == pictures, (mode, index)
    assert release_vt_message("", PAPER_PROMPTS["Original"]) == _ORIGINAL
    assert release_text_message("Q?", "", []) == "Question: Q?\n"


@pytest.mark.parametrize("mode", ["text", "vt", "think"])
def test_hits_and_accuracies_are_the_releases(quirk_set, mode):
    path, _ = quirk_set
    outputs = OUTPUTS if mode != "think" else {"text": OUTPUTS["text"], "vt": THINK}
    reader, _ = _designed_reader(outputs)
    df = answer_set(path, reader)
    rows = df[df["mode"] == ("text" if mode == "text" else "vt")]
    assert {int(q): int(h) for q, h in zip(rows["question_id"], rows["hit"])} == HITS[mode]
    table = tables.accuracy_table({("designed", "original", "vb"): df}, tables.Scorer(
        {"samples": 50}))
    col = {(c.dataset, c.metric): j for j, c in enumerate(table.columns)}
    metric = "text_accuracy" if mode == "text" else "vt_accuracy"
    for category, acc in ACCURACY[mode].items():
        key = ("overall" if category == "Overall" else category, metric)
        assert table.cells[("designed", col[key])].summary.mean == pytest.approx(100 * acc)


def test_open_questions_count_wrong_with_exact_match_beside(quirk_set):
    """Open questions: the release's 0 in the headline, the exact-match credit beside, named.
    Worked case: one right multiple-choice answer and one right open answer: 50 % (release),
    100 % (exact match)."""
    path, _ = quirk_set
    reader, _ = _designed_reader(OUTPUTS)
    df = answer_set(path, reader)
    text = df[(df["mode"] == "text") & df["question_id"].isin(["1", "8"])]
    assert list(text["hit"]) == [1.0, 0.0] and list(text["exact_match"].fillna(-1)) == [-1, 1.0]
    table = tables.accuracy_table({("r", "original", "vb"): text}, tables.Scorer({"samples": 50}))
    col = {(c.dataset, c.metric): j for j, c in enumerate(table.columns)}
    assert table.cells[("r", col[("overall", "text_accuracy")])].summary.mean == 50.0
    assert table.cells[("r", col[("overall_exact", "text_accuracy")])].summary.mean == 100.0
    assert table.cells[("r", col[("open", "text_accuracy")])].summary.mean == 100.0


# -- command 3: the real release TSV -------------------------------------------------------------
#: The release's reading of its own VISTA-Bench.tsv: rows per category, and how many rows send
#: how many of the item's own pictures.
REAL_TSV = {"rows": 1500, "per_category": {UNI: 500, KNO: 400, REA: 300, PER: 300},
            "pictures": {0: 500, 1: 979, 2: 12, 3: 3, 4: 3, 5: 3},
            "options": {"197": ["A", "B", "C"], "489": ["B", "C", "D"],
                        "682": list("ABCDEFGH"), "825": ["A", "B", "C"]},
            "answers": {"197": "D", "489": "A", "682": "I", "825": "D"}}


@pytest.mark.skipif(not os.environ.get("ROUNDTRIP_VISTA_TSV"),
                    reason="ROUNDTRIP_VISTA_TSV (the release's VISTA-Bench.tsv, with images/ and "
                           "questions/ beside it) is not set")
def test_the_real_release_loads_whole(tmp_path):
    m = build_dataset("vb", {"type": "vista_release", "path": os.environ["ROUNDTRIP_VISTA_TSV"]},
                      tmp_path / "out")
    assert len(m) == REAL_TSV["rows"] and (m["status"] == "ok").all()
    assert m["category"].value_counts().to_dict() == REAL_TSV["per_category"]
    pictures = m["item_images"].map(lambda v: len([p for p in str(v).split("|") if p]))
    assert pictures.value_counts().to_dict() == REAL_TSV["pictures"]
    by_id = m.set_index("item_id")
    for index, letters in REAL_TSV["options"].items():
        assert [k for k, _ in json.loads(by_id.loc[index, "options"])] == letters
        assert by_id.loc[index, "answer"] == REAL_TSV["answers"][index]
    assert m["source"].value_counts().to_dict() == {"MMLU": 500, "MMMU": 400, "MMBench": 305,
                                                    "SEED-Bench": 295}
    assert pd.Series(m["modality"]).value_counts().to_dict() == {"multimodal": 1000,
                                                                  "unimodal": 500}

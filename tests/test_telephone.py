"""The Telephone Game: SDR fits, S(g)/MCD, GenEval's rules, chains (resume, failures), the
released layout read back, the offline backbones."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import requires_tesseract
from PIL import Image

from roundtrip.datasets import chain_layout as layout
from roundtrip.evals.telephone import fit_sdr
from roundtrip.evals.telephone.chains import Seed, run_chain
from roundtrip.evals.telephone.job import run_job
from roundtrip.evals.telephone.similarity import CERBackbone, generations_of, score_chain
from roundtrip.evals.telephone.tables import curves, mcd_frame, mgg_frame, sdr_fits_frame
from roundtrip.evals.telephone.unified import UnifiedPair
from roundtrip.metrics.drift import average_fits, cer_similarity, mcd, similarity_curve
from roundtrip.metrics.geneval import Detection, relative_position, score_prompt, task_accuracies


# -- SDR ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha,beta,gamma", [(0.6, 0.12, 0.1), (0.45, 0.3, 0.2), (0.7, 0.05, 0.0)])
def test_power_law_recovers_known_parameters(alpha, beta, gamma):
    g = np.arange(1, 21)
    y = alpha * g ** -beta + gamma
    fit = fit_sdr(g, y, "power")
    assert fit.ok and fit.n == 20
    assert fit.params["alpha"] == pytest.approx(alpha, abs=2e-3)
    assert fit.params["beta"] == pytest.approx(beta, abs=2e-3)
    assert fit.params["gamma"] == pytest.approx(gamma, abs=2e-3)
    assert fit.r2 == pytest.approx(1.0, abs=1e-9)
    assert np.allclose(fit.predict(g), y, atol=1e-6)


def test_power_law_with_noise_is_close_and_reports_standard_errors():
    rng = np.random.default_rng(0)
    g = np.arange(1, 21)
    y = 0.6 * g ** -0.1 + 0.05 + rng.normal(0, 0.002, g.size)
    fit = fit_sdr(g, y, "power")
    assert fit.ok and 0.97 < fit.r2 < 1.0
    assert fit.params["beta"] == pytest.approx(0.1, abs=0.03)
    assert all(np.isfinite(v) and v > 0 for v in fit.stderr.values())


def test_exponential_of_the_released_code_recovers_parameters():
    g = np.arange(1, 21)
    y = 0.5 * np.exp(-0.2 * g) + 0.3
    fit = fit_sdr(g, y, "exp")
    assert fit.ok
    assert [fit.params[k] for k in ("a", "b", "c")] == pytest.approx([0.5, 0.2, 0.3], abs=1e-4)
    assert fit.initial == (1.0, 0.1, 0.0)  # the released code's starting point


def test_failed_fits_are_reported_not_numbers():
    two = fit_sdr([1, 2], [0.5, 0.4])
    assert not two.ok and "at least 3" in two.reason
    assert all(math.isnan(v) for v in two.params.values())
    with pytest.raises(ValueError, match="no power curve"):
        two.predict([1, 2])
    at_zero = fit_sdr([0, 1, 2, 3], [0.9, 0.5, 0.4, 0.3], "power")
    assert not at_zero.ok and "generation 0" in at_zero.reason
    nan_only = fit_sdr([1, 2, 3], [math.nan] * 3)
    assert not nan_only.ok
    with pytest.raises(ValueError, match="unknown SDR form"):
        fit_sdr([1, 2, 3], [1, 1, 1], "linear")


def test_a_flat_curve_has_zero_decay():
    fit = fit_sdr([2, 4, 6], [0.8, 0.8, 0.8])
    assert fit.ok and fit.params == {"alpha": 0.0, "beta": 0.0, "gamma": 0.8}
    assert "no drift" in fit.reason


def test_parameters_average_over_directions_as_table_3():
    f1 = fit_sdr(np.arange(1, 11), 0.6 * np.arange(1, 11) ** -0.1 + 0.1)
    f2 = fit_sdr(np.arange(1, 11), 0.4 * np.arange(1, 11) ** -0.3 + 0.2)
    bad = fit_sdr([1, 2], [0.1, 0.1])
    avg = average_fits([f1, f2, bad])
    assert avg["n_fits"] == 2
    assert avg["beta"] == pytest.approx(0.2, abs=1e-3)
    assert avg["alpha"] == pytest.approx(0.5, abs=1e-3)


# -- S(g) and MCD -----------------------------------------------------------------------------------
def test_similarity_curve_and_mcd_follow_eq_1_and_2():
    per_item = {1: [0.9, 0.7, 0.8], 3: [0.6, math.nan, 0.4]}
    curve = similarity_curve(per_item, n_boot=500)
    assert curve[1].mean == pytest.approx(0.8) and curve[1].n == 3
    assert curve[3].mean == pytest.approx(0.5) and curve[3].n == 2
    assert curve[1].ci_low <= 0.8 <= curve[1].ci_high
    assert mcd({g: s.mean for g, s in curve.items()}) == pytest.approx(0.65)
    with pytest.raises(ValueError, match="generation 0"):
        mcd({0: 1.0, 1: 0.5})
    assert math.isnan(mcd({}))


def test_cer_similarity():
    assert cer_similarity("a red bus", "a red bus") == 1.0
    assert cer_similarity("abcd", "abed") == pytest.approx(0.75)
    assert cer_similarity("ab", "a much longer answer") == 0.0
    with pytest.raises(ValueError):
        cer_similarity("  ", "x")


def test_directions_measure_the_generations_of_the_released_code():
    assert generations_of("text-first", "text_text", 6) == [2, 4, 6]
    assert generations_of("text-first", "text_image", 6) == [1, 3, 5]
    assert generations_of("image-first", "image_image", 6) == [2, 4, 6]
    assert generations_of("image-first", "image_text", 6) == [1, 3, 5]
    assert generations_of("image-first", "text_text", 6) == [1, 3, 5]  # caption of I0 vs T(g)
    assert generations_of("text-first", "image_image", 6) == []


# -- GenEval's rules --------------------------------------------------------------------------------
def test_relative_position_with_the_shrunk_offset():
    left, right = (0, 0, 10, 10), (30, 0, 40, 10)
    assert relative_position(left, right) == {"left of"}
    assert relative_position(right, left) == {"right of"}
    assert relative_position((0, 0, 10, 10), (0, 30, 10, 40)) == {"above"}
    assert relative_position((0, 0, 10, 10), (1, 1, 11, 11)) == set()  # overlap: no relation
    assert relative_position((0, 0, 10, 10), (30, 30, 40, 40)) == {"left of", "above"}


def _d(label, x0, y0=0, score=0.9, color=None, size=10):
    return Detection(label, score, (x0, y0, x0 + size, y0 + size), color)


@pytest.mark.parametrize("meta,dets,expected", [
    ({"tag": "single_object", "include": [{"class": "bench", "count": 1}]}, [_d("bench", 0)], True),
    ({"tag": "single_object", "include": [{"class": "bench", "count": 1}]}, [_d("cup", 0)], False),
    ({"tag": "two_object", "include": [{"class": "cup", "count": 1}, {"class": "book", "count": 1}]},
     [_d("cup", 0), _d("book", 50)], True),
    ({"tag": "counting", "include": [{"class": "apple", "count": 3}],
      "exclude": [{"class": "apple", "count": 4}]}, [_d("apple", x) for x in (0, 20, 40)], True),
    ({"tag": "counting", "include": [{"class": "apple", "count": 3}],
      "exclude": [{"class": "apple", "count": 4}]}, [_d("apple", x) for x in (0, 20, 40, 60)], False),
    ({"tag": "counting", "include": [{"class": "apple", "count": 3}],
      "exclude": [{"class": "apple", "count": 4}]}, [_d("apple", x) for x in (0, 20)], False),
    ({"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}]},
     [_d("car", 0, color="red")], True),
    ({"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}]},
     [_d("car", 0, color="blue")], False),
    ({"tag": "position", "include": [{"class": "cat", "count": 1},
                                     {"class": "sofa", "count": 1, "position": ["right of", 0]}]},
     [_d("cat", 0), _d("sofa", 60)], True),
    ({"tag": "position", "include": [{"class": "cat", "count": 1},
                                     {"class": "sofa", "count": 1, "position": ["right of", 0]}]},
     [_d("cat", 60), _d("sofa", 0)], False),
    ({"tag": "color_attr", "include": [{"class": "bus", "count": 1, "color": "blue"},
                                       {"class": "bench", "count": 1, "color": "green"}]},
     [_d("bus", 0, color="blue"), _d("bench", 50, color="green")], True),
    ({"tag": "color_attr", "include": [{"class": "bus", "count": 1, "color": "blue"},
                                       {"class": "bench", "count": 1, "color": "green"}]},
     [_d("bus", 0, color="green"), _d("bench", 50, color="blue")], False),
])
def test_geneval_rules_on_known_detections(meta, dets, expected):
    correct, reason = score_prompt(meta, dets)
    assert correct is expected
    assert (reason == "") is expected


def test_the_most_confident_objects_are_the_entrys_objects():
    meta = {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}]}
    dets = [_d("car", 0, score=0.3, color="blue"), _d("car", 40, score=0.95, color="red")]
    assert score_prompt(meta, dets) == (True, "")


def test_overall_is_the_task_mean_and_overall_prompts_the_prompt_mean():
    tags = ["single_object"] * 4 + ["counting"]
    correct = [True, True, True, True, False]
    acc = task_accuracies(tags, correct)
    assert acc["single_object"] == 1.0 and acc["counting"] == 0.0
    assert acc["overall"] == pytest.approx(0.5)
    assert acc["overall_prompts"] == pytest.approx(0.8)


# -- chains -------------------------------------------------------------------------------------------
class UpperPair(UnifiedPair):
    """Deterministic pair: T2I draws the text's length as a gray level, I2T reads it back as
    that many 'x'; items whose text contains FAIL fail in T2I."""
    name = "upper"

    def __init__(self):
        self.calls = 0

    def t2i(self, texts, seeds):
        self.calls += 1
        return [RuntimeError("refused") if "FAIL" in t else
                np.full((8, 8, 3), min(255, len(t)), np.uint8) for t in texts]

    def i2t(self, images):
        self.calls += 1
        return ["x" * int(im[0, 0, 0]) for im in images]


def _seeds(tmp_path):
    img = tmp_path / "in.png"
    Image.fromarray(np.full((8, 8, 3), 5, np.uint8)).save(img)
    return [Seed("a", "hello", img), Seed("b", "FAIL here", img), Seed("c", None, img)]


def test_chains_resume_and_extend(tmp_path):
    pair, root = UpperPair(), tmp_path / "chains"
    assert run_chain(pair, _seeds(tmp_path), root, layout.TEXT_FIRST, 4) == 4
    assert layout.read_texts(root, layout.TEXT_FIRST, 2) == {"a": "xxxxx"}
    calls = pair.calls
    assert run_chain(pair, _seeds(tmp_path), root, layout.TEXT_FIRST, 4) == 0
    assert pair.calls == calls  # nothing recomputed
    assert run_chain(pair, _seeds(tmp_path), root, layout.TEXT_FIRST, 6) == 2  # only 5 and 6
    status = layout.read_status(root, layout.TEXT_FIRST, 5).set_index("filename")
    assert status.loc["a", "status"] == "ok"
    assert status.loc["b", "reason"] == "generation 1: refused"  # kept from where it failed
    assert status.loc["c", "reason"] == "the item has no caption"
    assert layout.generations_present(root, layout.TEXT_FIRST) == 6


def test_image_first_chain_and_its_scores(tmp_path):
    pair, root = UpperPair(), tmp_path / "chains"
    run_chain(pair, _seeds(tmp_path), root, layout.IMAGE_FIRST, 3)
    assert layout.read_texts(root, layout.IMAGE_FIRST, 1)["a"] == "xxxxx"
    assert (root / "image-first/gen-2/a.png").is_file()
    df = score_chain(root, layout.IMAGE_FIRST, ["a", "b", "c"], {"a": "xxxxx", "b": "xxxx"},
                     {"cer": CERBackbone()}, 3)
    a = df[(df["item_id"] == "a")].set_index("generation")["similarity"]
    assert a[1] == 1.0 and a[3] == 1.0
    b = df[df["item_id"] == "b"].set_index("generation")
    assert b.loc[1, "similarity"] == pytest.approx(0.75)  # 'xxxx' vs 'xxxxx'
    c = df[df["item_id"] == "c"]
    assert (c["status"] == "error").all() and "no caption" in c["reason"].iloc[0]


def _released_chains(root, item_ids):
    """A chain folder as the authors' code lays it out (csv captions, jpg images)."""
    tf = root / "text-first"
    (tf / "gen-1").mkdir(parents=True)
    pd.DataFrame({"filename": [f"{i}.png" for i in item_ids],
                  "caption": ["a red bus on a road", "two cats on a sofa"]}).to_csv(
        tf / "gen-0.csv", index=False)
    for i in item_ids:
        Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(tf / "gen-1" / f"{i}.jpg")
    pd.DataFrame({"filename": [f"{i}.png" for i in item_ids],
                  "caption": ["a red bus on the road", "two dogs on a sofa"]}).to_csv(
        tf / "gen-2.csv", index=False)


def test_a_released_layout_folder_is_scored(tmp_path):
    from roundtrip.datasets.telephone import build_chains

    root = tmp_path / "bagel"
    _released_chains(root, ["img1", "img2"])
    manifest = build_chains("bagel", {"path": str(root)}, tmp_path / "ds")
    assert list(manifest["item_id"]) == ["img1", "img2"]
    assert manifest["generations"].iloc[0] == "text-first:2 image-first:-1"
    sim, mgg = run_job(None, tmp_path / "ds/manifest.csv", "chains", root,
                       ["text_first", "image_first"], 2, {"cer": {"type": "cer"}})
    assert mgg.empty
    ok = sim[sim["status"] == "ok"].set_index("item_id")["similarity"]
    assert ok["img1"] == pytest.approx(cer_similarity("a red bus on a road", "a red bus on the road"))
    assert ok["img2"] == pytest.approx(cer_similarity("two cats on a sofa", "two dogs on a sofa"))


def test_wordllama_backbone_is_offline_and_cosine():
    from roundtrip.evals.telephone.similarity import build_backbone

    wl = build_backbone("wordllama", {"type": "wordllama"})
    s = wl.similarity("text", ["a red truck on a road", "a red truck on a road"], "text",
                      ["a red truck on a road", "a cat asleep on a pillow"])
    assert s[0] == pytest.approx(1.0, abs=1e-6)
    assert s[1] < 0.5
    assert wl.supports("text_text") and not wl.supports("text_image")


def test_missing_backbone_weights_give_na_rows_with_the_fetch_command(tmp_path):
    pair, root = UpperPair(), tmp_path / "chains"
    seeds = _seeds(tmp_path)[:1]
    manifest = pd.DataFrame([{"item_id": "a", "path": str(seeds[0].image), "status": "ok",
                              "reason": "", "text": "hello"}])
    manifest.to_csv(tmp_path / "manifest.csv", index=False)
    sim, _ = run_job(pair, tmp_path / "manifest.csv", "captions", root, ["text_first"], 2,
                     {"clip": {"type": "clip", "weights": str(tmp_path / "no_clip")}})
    assert (sim["status"] == "n/a").all() and len(sim) == 2  # text->text at 2, text->image at 1
    assert "huggingface-cli download" in sim["reason"].iloc[0]
    assert "telephone.backbones.clip.weights" in sim["reason"].iloc[0]


# -- tables ---------------------------------------------------------------------------------------------
def test_tables_mcd_sdr_and_mgg():
    def chain_rows(decay):
        return pd.DataFrame([
            {"item_id": item, "chain": "text-first", "direction": "text_text", "backbone": "cer",
             "generation": g, "status": "ok", "reason": "",
             "similarity": 0.7 * g ** -decay + 0.1 + shift}
            for item, shift in (("i1", 0.0), ("i2", 0.02)) for g in range(2, 21, 2)])
    sims = {("good", "d"): chain_rows(0.05), ("bad", "d"): chain_rows(0.4)}
    curve = curves(sims, {"samples": 200})
    frame, shown, notes = mcd_frame(curve)
    good = frame.set_index("model").loc["good"]
    expected = np.mean([0.7 * g ** -0.05 + 0.11 for g in range(2, 21, 2)])
    assert good["MCD_avg_all_experiments"] == pytest.approx(expected)
    assert frame.set_index("model").loc["bad", "MCD_avg_all_experiments"] < \
        good["MCD_avg_all_experiments"]
    assert math.isnan(good["MCD_avg"])  # the paper's four mappings are not configured
    assert "roundtrip weights fetch mpnet clip-vit-b32 dino-vitb16" in " ".join(notes)
    sdr = sdr_fits_frame(curve)
    power = sdr[(sdr["direction"] == "text→text") & sdr["form"].str.startswith("alpha")]
    betas = power.set_index("model")["p2"]
    assert betas["good"] == pytest.approx(0.05, abs=1e-3) and betas["bad"] == pytest.approx(0.4, abs=1e-3)
    mgg = {("m", "g"): pd.DataFrame([
        {"item_id": "0", "tag": "single_object", "generation": 1, "correct": 1.0, "status": "ok", "reason": ""},
        {"item_id": "1", "tag": "counting", "generation": 1, "correct": 0.0, "status": "ok", "reason": ""},
        {"item_id": "0", "tag": "single_object", "generation": 3, "correct": 1.0, "status": "ok", "reason": ""},
        {"item_id": "1", "tag": "counting", "generation": 3, "correct": 1.0, "status": "ok", "reason": ""}])}
    table, _ = mgg_frame(mgg)
    mgg_row = table.set_index("generation").loc["MGG"]
    assert mgg_row["overall_tasks"] == pytest.approx(0.75)
    assert mgg_row["overall_prompts"] == pytest.approx(0.75)


@requires_tesseract
def test_render_ocr_identity_is_a_fixed_point(tmp_path):
    from roundtrip.datasets.telephone import build_captions
    from roundtrip.evals.telephone.unified import build_pair

    build_captions("c", {"captions": "builtin", "count": 2}, tmp_path / "ds")
    pair = build_pair("r", {"type": "render_ocr"})
    sim, _ = run_job(pair, tmp_path / "ds/manifest.csv", "captions", tmp_path / "chains",
                     ["text_first", "image_first"], 3, {"cer": {"type": "cer"}})
    assert (sim["status"] == "ok").all()
    assert sim["similarity"].min() == 1.0  # rendered and read back exactly, every generation
    rows = json.loads(sim.to_json(orient="records"))
    assert {r["chain"] for r in rows} == {"text-first", "image-first"}

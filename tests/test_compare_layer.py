"""The comparison layer (roundtrip.tables.compare) on results folders written by the tests, no
workflow run: the evaluations' declarations read as the files lie (right/wrong answers with
their flips and a question's renders resampled together, CHD recomputed from the token grids of
the score journal, a CER whose reference OCR changed between runs, a metric defined otherwise
in the other run, FID not measured), items on one side only listed, and a plugin's declaration
(docs/evaluations/writing-an-evaluation.md)."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from roundtrip.core.evaluation import load_evaluations
from roundtrip.core.scoring import ScoreJournal
from roundtrip.metrics.paired import PairedSettings
from roundtrip.metrics.tokens import TokenHistogram, chd
from roundtrip.report.compare import flipped_lines, read_rows, summary_text
from roundtrip.tables.compare import NOT_COMPARED, PairSpec, Run, compare
from roundtrip.tables.provenance import provenance

SETTINGS = PairedSettings(resamples=2000)


def _write(folder, rel, frame):
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return rel


def _provenance(folder, table, files, definitions=True):
    """A table's provenance record listing ``files``, with the metric definitions a run of this
    roundtrip records (``definitions=False``: none, as a table made before they were)."""
    (folder / "tables").mkdir(parents=True, exist_ok=True)
    record = {"inputs": {f"results/{f}": "x" for f in files}}
    if definitions:
        record["definitions"] = provenance(table, "rule", [], {}).get("definitions", {})
    (folder / "tables" / f"{table}.provenance.json").write_text(json.dumps(record))


def _manifest(folder, dataset, ids):
    _write(folder, f"datasets/{dataset}/manifest.csv",
           pd.DataFrame({"item_id": ids, "path": [f"images/{i}.png" for i in ids],
                         "sha256": [f"{i}-sha" for i in ids], "status": "ok"}))


@pytest.fixture(scope="module")
def evaluations():
    return load_evaluations()


def _answers(questions, hits_vt, hits_text, extracted):
    rows = []
    for q, hit in zip(questions, hits_text):
        rows.append({"item_id": q, "question_id": q, "mode": "text", "table1": 1, "hit": hit,
                     "extracted": "A" if hit else "B", "status": "ok", "reason": ""})
    for q, hits in zip(questions, hits_vt):
        for k, hit in enumerate(hits):
            rows.append({"item_id": f"{q}__r{k}", "question_id": q, "mode": "vt",
                         "table1": int(k == 0), "hit": hit, "extracted": extracted(q, k, hit),
                         "status": "ok", "reason": ""})
    return pd.DataFrame(rows)


def test_answers_flip_and_a_questions_renders_are_one_cluster(tmp_path, evaluations):
    rng = np.random.default_rng(0)
    questions = [f"q{k:02d}" for k in range(30)]
    base_vt = (rng.random((30, 3)) < 0.5).astype(float)
    cand_vt = np.where(rng.random((30, 3)) < 0.3, 1.0, base_vt)  # wrong -> right on some
    text = np.ones(30)
    files = []
    for reader, vt in (("r1", base_vt), ("r2", cand_vt)):
        frame = _answers(questions, vt, text, lambda q, k, h, r=reader: f"{r}:{'A' if h else 'C'}")
        if reader == "r2":  # one render not answered: an error, not a wrong answer
            frame.loc[frame["item_id"] == "q05__r2", ["status", "reason", "hit"]] = \
                ["error", "endpoint down", np.nan]
        files.append(_write(tmp_path, f"vista/{reader}/original/qs/answers.csv", frame))
    _provenance(tmp_path, "vista_accuracy", files)
    _manifest(tmp_path, "qs", questions)
    run = Run(tmp_path)
    out = compare(run, run, [PairSpec("r1", "r2")], evaluations, SETTINGS)
    rows = out.rows.set_index("metric")
    assert set(rows["evaluation"]) == {"VISTA-Bench"}
    vt = rows.loc["VT"]
    b, c = base_vt[:, 0], cand_vt[:, 0]
    n10, n01 = int(((b == 1) & (c == 0)).sum()), int(((b == 0) & (c == 1)).sum())
    assert vt["test"] == "exact McNemar" and vt["flips"] == f"{n10} right->wrong, {n01} wrong->right"
    assert vt["p"] == pytest.approx(stats.binomtest(n01, n01 + n10, 0.5).pvalue)
    assert vt["difference"] == pytest.approx(100 * (c.mean() - b.mean()))  # points
    assert rows.loc["Text", "difference"] == 0 and rows.loc["Text", "verdict"] == "equivalent"
    every = rows.loc["VT (every render)"]
    assert every["test"] == "Wilcoxon signed-rank on cluster means"
    assert every["n_paired"] == 89 and every["n_unpaired"] == 1
    items = out.items
    missing = items[~items["paired"].astype(bool)]
    assert list(missing["item_id"]) == ["q05__r2"]
    assert missing["reason"].iloc[0] == "r2: error: endpoint down"
    flipped = items[(items["metric"] == "VT") & (items["difference"] != 0) & items["paired"]]
    assert len(flipped) == n10 + n01
    assert flipped["candidate_text"].str.startswith("r2:").all()
    lines = flipped_lines(items)
    assert lines and "r1:" in lines[0] and "-> \"r2:" in lines[0]
    assert summary_text(out.rows, items)[0].startswith("r2 vs r1, VISTA-Bench: of 3 rows")


def test_chd_is_recomputed_from_the_token_grids_of_the_score_journal(tmp_path, evaluations):
    rng = np.random.default_rng(1)
    ids = [f"i{k}" for k in range(8)]
    real = [rng.integers(0, 32, (8, 8)) for _ in ids]
    files, expected = [], {}
    for model, noise in (("vq_a", 0.1), ("vq_b", 0.4)):
        fake = [np.where(rng.random((8, 8)) < noise, rng.integers(0, 32, (8, 8)), g) for g in real]
        journal = ScoreJournal(tmp_path / f"recon/{model}/set/shards/0-of-1.scores.pkl",
                               {"tokens:abc": lambda r: True})
        journal.append("tokens:abc", [(i, (r.astype(np.int32), f.astype(np.int32), 0.5, 0.4))
                                      for i, r, f in zip(ids, real, fake)])
        journal.close()
        files.append(_write(tmp_path, f"metrics/{model}/set/tokens.csv", pd.DataFrame(
            {"item_id": ids, "status": "ok", "reason": "", "cmms": rng.random(8),
             "cmms_reference": 0.5})))
        a, b = TokenHistogram(32), TokenHistogram(32)
        for r, f in zip(real, fake):
            a.add(r)
            b.add(f)
        expected[model] = chd(a, b)["chd"]
    _provenance(tmp_path, "token_metrics", files)
    run = Run(tmp_path)
    out = compare(run, run, [PairSpec("vq_a", "vq_b")], evaluations, SETTINGS)
    row = out.rows.set_index("metric").loc["CHD"]
    assert row["baseline_value"] == pytest.approx(expected["vq_a"])
    assert row["candidate_value"] == pytest.approx(expected["vq_b"])
    assert row["test"] == "paired bootstrap" and row["ci_low"] > 0 and row["verdict"] == "worse"


def test_a_changed_reference_is_named_and_fid_without_features_makes_no_row(tmp_path,
                                                                             evaluations):
    ids = [f"p{k}" for k in range(6)]
    folders = [tmp_path / "a", tmp_path / "b"]
    for k, folder in enumerate(folders):
        text = _write(folder, "metrics/m/scan/text_tess.csv", pd.DataFrame(
            {"item_id": ids, "status": "ok", "reason": "", "cer": np.linspace(0, 0.5, 6) + k,
             "wer": 0.1, "edits_vtbench": 1, "chars_vtbench": 10}))
        quality = _write(folder, "metrics/m/scan/image_quality.csv", pd.DataFrame(
            {"item_id": ids, "status": "ok", "reason": "", "psnr": 30.0 + k, "ssim": 0.9,
             "mse_vtbench": 0.001, "n_values_vtbench": 100, "ref_min_vtbench": 0.0,
             "ref_max_vtbench": 1.0}))
        _write(folder, "ocr/tess/original/scan.csv", pd.DataFrame(
            {"item_id": ids, "text": "same" if k == 0 else "read again", "status": "ok"}))
        _provenance(folder, "text_preservation", [text, quality])
        _provenance(folder, "reconstruction_native", [quality])
        _manifest(folder, "scan", ids)
    out = compare(Run(folders[0]), Run(folders[1]), [PairSpec("m", "m")], evaluations, SETTINGS)
    rows = out.rows.set_index(["metric", "where"])
    cer = rows.loc[("CER", "ocr=tess")]
    assert cer["verdict"] == NOT_COMPARED
    assert cer["note"].startswith("ocr/tess/original/scan.csv (what cer is measured against) "
                                  "differs between the runs")
    assert rows.loc[("PSNR", "")]["difference"] == pytest.approx(1.0)
    assert "FID (VTBench eval.)" not in set(out.rows["metric"])  # no features: not measured


def test_a_metric_defined_otherwise_in_the_other_run_is_named_and_left_out(tmp_path,
                                                                          evaluations):
    """Between two results folders whose tables recorded the metric definitions
    (``definitions`` in their provenance records): equal definitions compare as before; SSIM
    recorded under another definition in run B (a version bumped for a change of its
    computation) is named with both definitions and left out; a run whose tables recorded no
    definitions (made before roundtrip recorded them) is named and left out too. Within one
    run nothing is checked: both sides share the definition."""
    ids = [f"p{k}" for k in range(6)]
    folders = [tmp_path / "a", tmp_path / "b", tmp_path / "old"]
    for k, folder in enumerate(folders):
        quality = _write(folder, "metrics/m/scan/image_quality.csv", pd.DataFrame(
            {"item_id": ids, "status": "ok", "reason": "", "psnr": 30.0 + k + np.arange(6),
             "ssim": 0.9 - 0.01 * k + 0.001 * np.arange(6), "mse_vtbench": 0.001,
             "n_values_vtbench": 100, "ref_min_vtbench": 0.0, "ref_max_vtbench": 1.0}))
        _provenance(folder, "reconstruction_native", [quality],
                    definitions=folder.name != "old")
        _manifest(folder, "scan", ids)
    record = folders[1] / "tables/reconstruction_native.provenance.json"
    written = json.loads(record.read_text())
    ssim = written["definitions"]["vtbench"]["ssim"]
    assert ssim.startswith("SSIM per item") and ssim.endswith(", v1")
    written["definitions"]["vtbench"]["ssim"] = ssim.replace(", v1", ", v2")
    record.write_text(json.dumps(written))

    out = compare(Run(folders[0]), Run(folders[1]), [PairSpec("m", "m")], evaluations, SETTINGS)
    rows = out.rows.set_index("metric")
    assert rows.loc["PSNR", "verdict"] != NOT_COMPARED  # the same definition: compared
    assert rows.loc["PSNR", "n_paired"] == 6 and rows.loc["PSNR", "note"] == ""
    assert rows.loc["PSNR", "difference"] == pytest.approx(1.0)
    assert rows.loc["PSNR (VTBench eval.)", "verdict"] == "equivalent"
    left = rows.loc["SSIM"]
    assert left["verdict"] == NOT_COMPARED and np.isnan(left["difference"])
    assert left["note"] == (f"the definition of ssim differs between the runs (A: {ssim}; B: "
                            f"{ssim.replace(', v1', ', v2')}): left out")
    assert not ((out.items["metric"] == "SSIM") & out.items["paired"].astype(bool)).any()
    assert "1 not compared (the definition of ssim differs" in summary_text(out.rows,
                                                                           out.items)[0]

    old = compare(Run(folders[2]), Run(folders[0]), [PairSpec("m", "m")], evaluations, SETTINGS)
    assert (old.rows["verdict"] == NOT_COMPARED).all()  # checked before FID finds no features
    assert set(old.rows["note"]) == {
        f"run A records no definition of {m} (tables made before roundtrip recorded them): "
        "left out" for m in ("psnr", "ssim", "psnr_vtbench", "fid", "kid")}
    run = Run(folders[1])  # one run: no check
    same = compare(run, run, [PairSpec("m", "m")], evaluations, SETTINGS)
    assert (same.rows["verdict"] != NOT_COMPARED).all()


def test_a_tables_provenance_records_the_definitions_of_what_it_compares():
    """The provenance record of a table a declaration names holds its metrics' definitions,
    with the run's settings filled in (LPIPS's backbone); a table no declaration names holds
    none."""
    from roundtrip.core.comparison import ComparedMetric, definition_text

    record = provenance("reconstruction_native", "rule", [], {},
                        {"metrics": {"lpips": {"net": "vgg"}}})["definitions"]["vtbench"]
    assert set(record) == {"psnr", "ssim", "psnr_vtbench", "lpips", "fid", "kid"}
    assert record["lpips"].startswith("LPIPS per item: vgg backbone")
    assert "definitions" not in provenance("model_card", "rule", [], {})
    cm = ComparedMetric("x", "f.csv", definition="x at {a.b} with {a.c} and {d}, v3")
    assert definition_text(cm, {"a": {"b": 7, "c": "up"}}) == "x at 7 with up and unset, v3"
    assert definition_text(ComparedMetric("x", "f.csv")) == "x"


def test_a_plugin_declares_its_comparison(tmp_path, monkeypatch):
    from doc_examples import evaluation_page

    plugins = tmp_path / "plugins"
    evaluation_page().write(plugins)
    monkeypatch.syspath_prepend(str(plugins))
    evs = load_evaluations(["brightness_eval.spec"])
    results = tmp_path / "results"
    ids = [f"i{k}" for k in range(8)]
    files = [_write(results, f"metrics/{m}/natural/brightness.csv", pd.DataFrame(
        {"item_id": ids, "status": "ok", "reason": "", "brightness_shift": shift,
         "brightness_error": abs(shift) + np.arange(8) * 1e-3}))
        for m, shift in (("old", 0.01), ("new", 0.03))]
    _provenance(results, "brightness", files)
    run = Run(results)
    out = compare(run, run, [PairSpec("old", "new")], evs, SETTINGS)
    row = out.rows.set_index("evaluation").loc["Brightness"]
    assert row["metric"] == "|Brightness shift|" and row["verdict"] == "worse"
    assert row["difference"] == pytest.approx(0.02)


def test_set_numbers_under_weights_equal_the_set_with_items_repeated():
    """FID (torch-fidelity's, roundtrip.metrics.distribution.fid) and CHD
    (roundtrip.metrics.tokens.chd) recomputed from item weights equal the metric of the set with
    each item repeated as often as its weight: what a bootstrap resample is."""
    from types import SimpleNamespace

    from roundtrip.evals.chd.compare import chd_from_tokens
    from roundtrip.evals.vtbench.compare import weighted_fid
    from roundtrip.metrics.distribution import fid

    rng = np.random.default_rng(5)
    real = rng.normal(size=(10, 32))
    fake = real + rng.normal(scale=0.4, size=(10, 32))
    w = np.array([[1.0] * 10, [3, 0, 1, 1, 2, 0, 1, 1, 0, 1]])
    idx = np.repeat(np.arange(10), w[1].astype(int))
    got = weighted_fid(real, fake, w)
    assert got[0] == pytest.approx(fid(real, fake), rel=1e-6)
    assert got[1] == pytest.approx(fid(real[idx], fake[idx]), rel=1e-6)
    grids = [rng.integers(0, 16, (6, 6)) for _ in range(10)]
    recon = [np.where(rng.random((6, 6)) < 0.3, rng.integers(0, 16, (6, 6)), g) for g in grids]
    side = SimpleNamespace(frame=pd.DataFrame({"item_id": [str(k) for k in range(10)]}),
                           name="m", dataset="d",
                           records=lambda scorer: {str(k): (grids[k], recon[k], 0.0, 0.0)
                                                   for k in range(10)})
    statistic = chd_from_tokens(side, side)
    a, b = TokenHistogram(16), TokenHistogram(16)
    for k in idx:
        a.add(grids[k])
        b.add(recon[k])
    assert statistic(w)[1] == pytest.approx([chd(a, b)["chd"]] * 2)


def test_kid_under_weights_is_torch_fidelitys_and_centred_on_the_set():
    """KID recomputed from item weights (roundtrip.evals.vtbench.compare.weighted_kid): on the
    set, torch-fidelity's KID with one subset as large as the set and the mean of
    torch-fidelity's per-subset estimate over every pair of subsets of the size the run draws
    (half the set: roundtrip.evals.vtbench.perceptual.distribution_rows), with the run's KID
    (100 random subsets, roundtrip.metrics.distribution.kid) within its Monte Carlo error; on a
    resample, torch-fidelity's kernel over the copies written out with the pairs of two copies
    of one item left out, and the mean over every resample of the set its KID (the estimator
    on the copies as samples is not: it counts k(x_i, x_i))."""
    import itertools

    import torch
    from torch_fidelity.metric_kid import kernel_mmd, kernel_poly, kid_features_to_metric

    from roundtrip.evals.vtbench.compare import weighted_kid
    from roundtrip.metrics.distribution import kid

    poly = dict(kid_kernel="poly", kid_kernel_poly_degree=3, kid_kernel_poly_gamma=None,
                kid_kernel_poly_coef0=1)
    rng = np.random.default_rng(7)
    real = rng.normal(size=(8, 16))
    fake = real + rng.normal(scale=0.7, size=(8, 16)) + 0.3
    value = weighted_kid(real, fake, np.ones((1, 8)))[0]
    whole = kid_features_to_metric(torch.as_tensor(real), torch.as_tensor(fake), kid_subsets=1,
                                   kid_subset_size=8, verbose=False)
    assert value == pytest.approx(whole["kernel_inception_distance_mean"], rel=1e-9)
    subsets = list(itertools.combinations(range(8), 4))
    every = np.mean([kernel_mmd(real[list(p)], fake[list(q)], **poly)
                     for p, q in itertools.product(subsets, subsets)])
    assert value == pytest.approx(every, rel=1e-9)
    mean, std = kid(real, fake, 4, 100, 0)  # the run's: 100 random subsets of 4 of the 8
    assert mean != value and abs(mean - value) <= 4 * std / np.sqrt(100)

    w = np.array([2.0, 0, 1, 1, 3, 0, 1, 0])  # a resample of the 8 items
    idx = np.repeat(np.arange(8), w.astype(int))
    x, y = real[idx], fake[idx]
    distinct = idx[:, None] != idx[None, :]  # pairs of positions holding two distinct items
    kxx, kyy, kxy = (kernel_poly(a, b, **poly) for a, b in ((x, x), (y, y), (x, y)))
    n = len(idx)
    expected = (kxx[distinct].mean() + kyy[distinct].mean()
                - 2 * (np.trace(kxy) / n ** 2 + (1 - 1 / n) * kxy[distinct].mean()))
    got = weighted_kid(real, fake, np.stack([w, np.eye(8)[4]]))
    assert got[0] == pytest.approx(expected, rel=1e-9)
    assert np.isnan(got[1])  # one item: no pair of distinct items

    small_real, small_fake = real[:5], fake[:5]
    draws = np.array(list(itertools.product(range(5), repeat=5)))  # every resample of 5
    weights = np.stack([np.bincount(d, minlength=5) for d in draws]).astype(float)
    resampled = weighted_kid(small_real, small_fake, weights)
    one_item = np.isnan(resampled)
    assert one_item.sum() == 5  # the 5 resamples of a single item
    assert resampled[~one_item].mean() == pytest.approx(
        weighted_kid(small_real, small_fake, np.ones((1, 5)))[0], rel=1e-9)
    naive = [kernel_mmd(small_real[d], small_fake[d], **poly) for d in draws[~one_item][::7]]
    assert abs(np.mean(naive) - resampled[~one_item].mean()) > 0.5  # copies as samples


def test_kid_and_fid_rows_are_recomputed_from_the_score_journals_features(tmp_path,
                                                                          evaluations):
    """The comparison's KID and FID rows from the Inception features of each item's
    ``perceptual`` record: both sides' values those of the whole set (torch-fidelity's KID with
    one subset of the set, FID on the 256 px copies), the interval from the paired bootstrap,
    and the KID row's note saying how it differs from the table's."""
    import torch
    from torch_fidelity.metric_kid import kid_features_to_metric

    from roundtrip.metrics.distribution import fid

    rng = np.random.default_rng(3)
    ids = [f"i{k}" for k in range(10)]
    real = rng.normal(size=(10, 24)).astype(np.float32)
    real256 = rng.normal(size=(10, 24)).astype(np.float32)
    files, fakes = [], {}
    for model, scale in (("m1", 0.2), ("m2", 1.5)):
        fake = (real + rng.normal(scale=scale, size=real.shape)).astype(np.float32)
        fake256 = (real256 + rng.normal(scale=scale, size=real.shape)).astype(np.float32)
        fakes[model] = (fake, fake256)
        journal = ScoreJournal(tmp_path / f"recon/{model}/set/shards/0-of-1.scores.pkl",
                               {"perceptual:abc": lambda r: True})
        journal.append("perceptual:abc", [(i, {"lpips": None, "features": (
            real[k], fake[k], real256[k], fake256[k])}) for k, i in enumerate(ids)])
        journal.close()
        files.append(_write(tmp_path, f"metrics/{model}/set/image_quality.csv", pd.DataFrame(
            {"item_id": ids, "status": "ok", "reason": "", "psnr": 30.0, "ssim": 0.9,
             "mse_vtbench": 0.001, "n_values_vtbench": 100, "ref_min_vtbench": 0.0,
             "ref_max_vtbench": 1.0})))
    _provenance(tmp_path, "reconstruction_model_size", files)
    _manifest(tmp_path, "set", ids)
    run = Run(tmp_path)
    out = compare(run, run, [PairSpec("m1", "m2")], evaluations, SETTINGS)
    rows = out.rows.set_index("metric")
    k = rows.loc["KID"]
    for model, column in (("m1", "baseline_value"), ("m2", "candidate_value")):
        fake, fake256 = fakes[model]
        whole = kid_features_to_metric(torch.as_tensor(real.astype(np.float64)),
                                       torch.as_tensor(fake.astype(np.float64)), kid_subsets=1,
                                       kid_subset_size=10, verbose=False)
        assert k[column] == pytest.approx(whole["kernel_inception_distance_mean"], rel=1e-9)
        assert rows.loc["FID (VTBench eval.)", column] == pytest.approx(
            fid(real256, fake256), rel=1e-6)
    assert k["test"] == "paired bootstrap" and k["n_paired"] == 10 and k["kind"] == "set"
    assert k["difference"] == pytest.approx(k["candidate_value"] - k["baseline_value"])
    assert k["ci_low"] < k["difference"] < k["ci_high"] and 0 < k["p"] <= 1
    assert k["note"].startswith("KID recomputed on the whole set")


def _png(folder, rel, value):
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    img = np.full((48, 64, 3), value, np.uint8)
    img[8:20, 8:40] = 255 - value  # a block a reconstruction may change
    from PIL import Image

    Image.fromarray(img).save(path)


def test_the_ocr_and_vista_items_that_flipped_make_their_own_gallery(tmp_path, evaluations):
    """OCR items (CER per item, with the recognized lines) and VISTA answers (right or wrong,
    with the extracted answers) whose images both sides kept become the gallery of the items
    that flipped: the answers right -> wrong first, the largest change of CER first, taken in
    turn, two per row at most; an item without kept images is passed over; none of them goes
    to the gallery of the items that changed most; with nothing flipped, the figure says so and
    the report leaves it out."""
    from PIL import Image

    from roundtrip.report.assemble import what_changed_inputs
    from roundtrip.report.compare import _said, flipped_items, write_comparison

    ids = ["p0", "p1", "p2", "p3"]
    cer = {"m1": [0.1, 0.1, 0.1, 0.1], "m2": [0.5, 0.1, 0.3, 0.9]}
    files = []
    for model, values in cer.items():
        files.append(_write(tmp_path, f"metrics/{model}/scan/text_tess.csv", pd.DataFrame(
            {"item_id": ids, "status": "ok", "reason": "", "cer": values, "wer": values})))
        _write(tmp_path, f"ocr/tess/{model}/scan.csv", pd.DataFrame(
            {"item_id": ids, "text": [f"{model} read {i}" for i in ids], "status": "ok"}))
        for i in ids[:3]:  # p3 not kept
            _png(tmp_path, f"recon/{model}/scan/{i}.png", 40 if model == "m1" else 90)
    for i in ids:
        _png(tmp_path, f"datasets/scan/images/{i}.png", 0)
    _manifest(tmp_path, "scan", ids)
    _provenance(tmp_path, "text_preservation", files)
    questions = ["q0", "q1", "q2", "q3"]
    hits = {"m1": [1, 0, 1, 1], "m2": [0, 1, 0, 1]}  # q0, q2 right -> wrong; q1 wrong -> right
    answer_files = []
    for model, h in hits.items():
        frame = _answers(questions, [[x, x] for x in h], [1] * 4,
                         lambda q, k, hit: "A" if hit else "C")
        answer_files.append(_write(tmp_path, f"vista/r/{model}/qs/answers.csv", frame))
        for q in questions:
            for k in range(2):
                _png(tmp_path, f"recon/{model}/qs/{q}__r{k}.png", 40 if model == "m1" else 90)
    for q in questions:
        for k in range(2):
            _png(tmp_path, f"datasets/qs/images/{q}__r{k}.png", 0)
    _manifest(tmp_path, "qs", questions)
    _provenance(tmp_path, "vista_accuracy", answer_files)
    run = Run(tmp_path)
    out = compare(run, run, [PairSpec("m1", "m2")], evaluations, SETTINGS)
    direction = dict(zip(out.rows["metric"], out.rows["higher_is_better"]))
    assert direction["CER"] is False and direction["VT"] is True  # the metric's direction
    cer_entries = [g for g in out.gallery if g["metric"] == "CER"]
    assert [g["item_id"] for g in cer_entries] == ["p0", "p2", "p1"]  # p3: no image kept
    assert cer_entries[0]["baseline_image"] == tmp_path / "recon/m1/scan/p0.png"
    assert cer_entries[0]["original"] == tmp_path / "datasets/scan/images/p0.png"
    vt = [g for g in out.gallery if g["metric"] == "VT"]  # right -> wrong first, the render
    assert [g["item_id"] for g in vt] == ["q0__r0", "q2__r0", "q1__r0"]
    assert vt[0]["candidate_image"] == tmp_path / "recon/m2/qs/q0__r0.png"
    shown = flipped_items(out.gallery, strips=4)
    assert [(g["metric"], g["item_id"]) for g in shown] == [
        ("VT", "q0__r0"), ("CER", "p0"), ("VT", "q2__r0"), ("CER", "p2")]
    assert _said(shown[0], "baseline") == 'right: "A"'
    assert _said(shown[0], "candidate") == 'wrong: "C"'
    assert _said(shown[1], "candidate") == 'CER 0.5000: "m2 read p0"'
    assert shown[1]["difference"] == pytest.approx(0.4)

    written = write_comparison(out, tmp_path / "out", tmp_path / "out", SETTINGS)
    assert written["flipped_caption"].startswith("OCR and VISTA items that flipped")
    with Image.open(written["flipped"]) as img:
        assert img.size[1] == round(3 * 1.5 * 200)  # three strips at 200 dpi
    assert written["gallery_caption"].startswith("No compared item")  # no image row here
    files = sorted((tmp_path / "out").glob("*.*"))
    figures = what_changed_inputs(files)["figures"]
    assert [f.name for f, _ in figures] == ["differences.png", "changed.png", "flipped.png"]
    back = read_rows(tmp_path / "out/compare.csv")  # the direction survives the CSV
    assert back["higher_is_better"].tolist() == out.rows["higher_is_better"].tolist()

    same = compare(run, run, [PairSpec("m1", "m1")], evaluations, SETTINGS)
    written = write_comparison(same, tmp_path / "same", tmp_path / "same", SETTINGS)
    assert written["flipped_caption"] is None and written["flipped"].is_file()
    figures = what_changed_inputs(sorted((tmp_path / "same").glob("*.*")))["figures"]
    assert [f.name for f, _ in figures] == ["differences.png", "changed.png"]


def _figure_rows(n=30):
    """``n`` compared rows over three evaluations and five metrics (every third lower is
    better), each verdict in turn, with two rows without a detectable difference and one not
    compared; difference ``(k - 15) / 10``, detectable 0.5, the interval +-0.2."""
    from roundtrip.tables.compare import ROW_COLUMNS

    verdicts = ["better", "worse", "equivalent", "inconclusive"]
    rows = []
    for k in range(n):
        d = (k - 15) / 10
        row = dict.fromkeys(ROW_COLUMNS, np.nan)
        row.update(comparison="m2 vs m1", baseline="m1", candidate="m2",
                   evaluation=["VTBench", "CHD / CMMS", "MediBench"][k % 3],
                   dataset=f"set{k // 5}", where="", metric=f"metric{k % 5}", kind="items",
                   n_paired=20, n_unpaired=0, difference=d, ci_low=d - 0.2, ci_high=d + 0.2,
                   test="wilcoxon", p=0.5, detectable=0.5, margin=0.01, digits=3,
                   higher_is_better=k % 3 != 0, headline=True, verdict=verdicts[k % 4],
                   note="", flips="")
        rows.append(row)
    rows[4].update(detectable=0.0)  # left out of the overview: no detectable difference
    rows[7].update(detectable=np.nan)
    rows[9].update(verdict=NOT_COMPARED, difference=np.nan, ci_low=np.nan, ci_high=np.nan,
                   note="dataset changed")
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def test_the_differences_figure_shows_every_row_over_its_detectable_difference(tmp_path):
    """The overview atop the differences figure: every compared row's difference and interval
    over its detectable difference, positive where the candidate is better (a lower-is-better
    metric's sign flipped), sorted; rows without a detectable difference, or without a
    direction (a compare.csv written before ``higher_is_better``), are left out and counted in
    the caption; the detailed panels (at most ``MAX_PANELS``) stay."""
    from PIL import Image

    from roundtrip.report.compare import (MAX_PANELS, NO_DETECTABLE, NO_DIRECTION,
                                          difference_figure, standardized_differences)

    rows = _figure_rows()
    std = standardized_differences(rows)
    assert len(std) == 29  # the compared rows
    shown = std[std["left_out"] == ""]
    assert len(shown) == 27 and (std.loc[std["left_out"] != "", "left_out"]
                                 == NO_DETECTABLE).all()
    assert shown["standardized"].is_monotonic_increasing
    by = shown.set_index(["dataset", "metric"])
    lower = by.loc[("set0", "metric0")]  # k = 0: lower is better, difference -1.5 -> +3
    assert not lower["higher_is_better"]
    assert lower["standardized"] == pytest.approx(3.0)
    assert (lower["standardized_low"], lower["standardized_high"]) == pytest.approx((2.6, 3.4))
    higher = by.loc[("set0", "metric1")]  # k = 1: higher is better, difference -1.4 -> -2.8
    assert higher["standardized"] == pytest.approx(-2.8)
    assert (higher["standardized_low"], higher["standardized_high"]) == pytest.approx(
        (-3.2, -2.4))
    expected = np.array([(1 if k % 3 else -1) * (k - 15) / 10 / 0.5
                         for k in range(30) if k not in (4, 7, 9)])
    assert np.allclose(shown["standardized"], np.sort(expected))

    path = tmp_path / "fig/differences.png"
    caption = difference_figure(rows, path)
    assert path.is_file()
    with Image.open(path) as img:
        assert img.size[0] > 1000 and img.size[1] > 1.45 * 200  # the overview on top
    assert "27 compared rows" in caption and "positive means the candidate is better" in caption
    assert "Left out of it: 2 without a detectable difference (missing or 0), of 29" in caption
    assert f"The {MAX_PANELS} panels with the largest changes are shown" in caption

    # a compare.csv written before the column: read back, every row left out of the overview
    old = tmp_path / "old.csv"
    rows.drop(columns="higher_is_better").to_csv(old, index=False)
    back = read_rows(old)
    std = standardized_differences(back)
    assert set(std["left_out"]) == {NO_DETECTABLE, NO_DIRECTION}
    assert (std["left_out"] == NO_DIRECTION).sum() == 27
    caption = difference_figure(back, tmp_path / "old.png")
    assert (tmp_path / "old.png").is_file()
    assert "27 without a recorded direction" in caption
    assert summary_text(back)[0].startswith("m2 vs m1, VTBench: of ")

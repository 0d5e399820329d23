"""Latent utility: scikit-learn metrics against direct computations, grouped splits that never
share a subject, and the showcase's patch task through a real model's latents."""
import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score, roc_auc_score

from roundtrip.evals.medibench import latent_features as lu
from roundtrip.models import build_model


def test_encode_labels_classes_and_multilabel():
    y, classes, multi = lu.encode_labels(["b", "a", "b"])
    assert classes == ["a", "b"] and list(y) == [1, 0, 1] and not multi
    y, _, multi = lu.encode_labels(["0 1 1", "1 0 0"])
    assert multi and y.tolist() == [[0, 1, 1], [1, 0, 0]]


def test_metrics_match_direct_computation():
    y = np.array([0, 0, 1, 1, 2, 2])
    proba = np.array([[.8, .1, .1], [.3, .6, .1], [.2, .7, .1], [.1, .2, .7], [.1, .1, .8],
                      [.5, .2, .3]])
    m = lu.classification_metrics(y, proba, False)
    pred = proba.argmax(1)
    assert m["accuracy"] == pytest.approx(np.mean(pred == y))
    assert m["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"))
    aucs = [roc_auc_score(y == k, proba[:, k]) for k in range(3)]
    assert m["macro_auc"] == pytest.approx(np.mean(aucs))  # one-vs-rest macro AUC


def test_grouped_folds_never_share_a_subject():
    groups = [f"p{i // 3}" for i in range(30)]  # 10 patients, 3 images each
    y = np.array([i // 3 % 2 for i in range(30)])
    folds = lu.make_folds(y, groups, n_folds=5, seed=0)
    assert len(folds) == 5
    seen = []
    for train, test in folds:
        assert not {groups[i] for i in train} & {groups[i] for i in test}
        seen += list(test)
    assert sorted(seen) == list(range(30))  # every item tested once
    official = lu.make_folds(y, groups, ["train"] * 20 + ["test"] * 10)
    assert len(official) == 1 and list(official[0][1]) == list(range(20, 30))
    with pytest.raises(ValueError, match="at least 2"):
        lu.make_folds(y, ["one"] * 30)


def test_separable_features_score_perfectly_and_noise_does_not():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    x = rng.normal(size=(40, 5)) + y[:, None] * 5
    folds = lu.make_folds(y, [str(i) for i in range(40)], n_folds=4)
    for head in lu.HEADS:
        assert lu.evaluate_features(x, y, False, folds, head)["macro_auc"] == 1.0
    noise = lu.evaluate_features(rng.normal(size=(40, 5)), y, False, folds, "linear")
    assert noise["macro_auc"] < 0.85


def test_quadrant_patches_stay_inside_quadrants():
    img = np.zeros((256, 256, 3), np.float32)
    img[128:, 128:] = 1.0  # quadrant 3 is white
    tiles, quads = lu.quadrant_patches(img, 64)
    assert len(tiles) == 16 and quads.count(3) == 4
    assert all(t.mean() == (1.0 if q == 3 else 0.0) for t, q in zip(tiles, quads))
    with pytest.raises(ValueError, match="smaller"):
        lu.quadrant_patches(img[:100, :100], 64)


def test_codec_without_a_latent_tensor_is_named():
    jpeg = build_model("jpeg_q75", {"type": "jpeg", "quality": 75})
    with pytest.raises(lu.NoLatent, match="not a tensor"):
        lu.latent_features(jpeg, torch.zeros(1, 3, 32, 32))


def test_volume_latents_of_a_2d_model_stack_slices():
    model = build_model("bicubic_x4", {"type": "resample", "factor": 4})
    vol = np.random.default_rng(0).random((32, 32, 10)).astype(np.float32)
    feats = lu.volume_latent_features(model, vol, axis=2)
    assert feats.shape == (10 * 3 * 8 * 8,)

"""Train/test splits of MediBench (Sec. 4.1, Tables 11-12), without torch: the classifiers of
latent utility (:mod:`.latent_utility`) and the fidelity tables (:mod:`.tables`) use the same
held-out part.

- An official ``split`` column (MedMNIST's ``{train,val,test}``, PCam's ``train/valid/test``, a
  labels CSV's ``split``): the ``train`` part trains, the ``test`` part is held out; a
  validation part (``val``, ``valid``, ``validation``) is neither trained on nor tested (Table
  11's train counts are the official train parts: PathMNIST 89,996 of 107,180, PCam 262,144 of
  327,680).
- Otherwise ``split: holdout`` (default): one subject-wise held-out part (Table 11's 80/20,
  Table 12's "N subjects held out"); ``split: cv``: grouped k-fold cross-validation (Table 12's
  10-fold CV of the T1w set), every subject held out once.
- The bundled 2D patches of the offline showcase hold out one quadrant of every image in turn.

The paper reports fidelity "on held-out data" (Sec. 1) and on "the official test set" where one
exists (Sec. 4.1): :func:`held_out_items` names those items of a dataset.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

SPLITS = ("holdout", "cv")
#: Official split names: the part that trains, the part held out, the validation parts (unused).
TRAIN, TEST, VALIDATION = "train", "test", ("val", "valid", "validation")


def encode_labels(labels: list[str]) -> tuple[np.ndarray, list[str], bool]:
    """``(y, class names, multilabel)``: class indices ``(N,)``, or a 0/1 matrix ``(N, L)`` when
    every label is a space-separated 0/1 vector (MedMNIST multi-label sets)."""
    parts = [str(v).split() for v in labels]
    if len(parts[0]) > 1 and all(len(p) == len(parts[0]) and set(p) <= {"0", "1"} for p in parts):
        y = np.array([[int(v) for v in p] for p in parts], dtype=np.int64)
        return y, [f"label_{i}" for i in range(y.shape[1])], True
    classes = sorted(set(map(str, labels)))
    return np.array([classes.index(str(v)) for v in labels]), classes, False


def official_split(splits: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The parts of an official split column (MediBench Sec. 4.1: "we follow them and report on
    the official test set"): ``train`` trains, ``test`` is held out, anything else (a validation
    part, an empty cell) is neither.

    Returns:
        ``(train_idx, test_idx, unused split names in order of appearance)``.

    Raises:
        ValueError: no ``train`` or no ``test`` item.
    """
    s = np.asarray([str(v).strip().lower() for v in splits])
    train, test = np.flatnonzero(s == TRAIN), np.flatnonzero(s == TEST)
    if train.size == 0 or test.size == 0:
        raise ValueError("the split column needs both train and test items (found "
                         f"{sorted(set(s.tolist()))})")
    unused = [v for v in dict.fromkeys(s.tolist()) if v not in (TRAIN, TEST)]
    return train, test, unused


def make_folds(labels: np.ndarray, groups: list[str], splits: list[str] | None = None,
               n_folds: int = 4, seed: int = 0, fold_ids: list[int] | None = None
               ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train_idx, test_idx)`` pairs.

    Priority: ``fold_ids`` (a given assignment, e.g. image quadrants), official ``splits``
    (:func:`official_split`: ``train`` trains, ``test`` is held out, a validation part is
    neither), then stratified grouped folds (``StratifiedGroupKFold``, shuffled with ``seed``)
    over ``groups``.

    Raises:
        ValueError: fewer than 2 groups, or a split without a train or a test part.
    """
    n = len(groups)
    if fold_ids is not None:
        ids = np.asarray(fold_ids)
        return [(np.flatnonzero(ids != f), np.flatnonzero(ids == f)) for f in np.unique(ids)]
    if splits is not None and any(s for s in splits):
        train, test, _ = official_split(splits)
        return [(train, test)]
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    k = min(n_folds, len(set(groups)))
    if k < 2:
        raise ValueError(f"{len(set(groups))} subject(s): at least 2 are needed for a held-out split")
    y = labels if labels.ndim == 1 else labels.argmax(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "least populated class has fewer members"
            cv = StratifiedGroupKFold(k, shuffle=True, random_state=seed)
            return [(tr, te) for tr, te in cv.split(np.zeros(n), y, groups)]
    except ValueError:
        return list(GroupKFold(k).split(np.zeros(n), y, groups))


def holdout_split(labels: np.ndarray, groups: list[str], test_fraction: float = 0.2,
                  held_out_subjects: int | None = None, seed: int = 0
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """One subject-wise train/test split (MediBench Sec. 4.1: "patient/subject-wise splits ...
    report on the held-out" part; Table 11's 80/20, Table 12's "N subjects held out").

    Subjects are shuffled with ``seed`` and taken in that order, class by class in turn (each
    subject counted under its first item's class) so that the held-out part has every class
    that has at least two subjects.

    Args:
        labels: ``(N,)`` class indices or ``(N, L)`` 0/1 labels. groups: subject of each item.
        test_fraction: share of subjects held out, in (0, 1) (rounded, at least 1).
        held_out_subjects: exact number of subjects held out (overrides ``test_fraction``).

    Returns:
        ``[(train_idx, test_idx)]``, one pair.

    Raises:
        ValueError: fewer than 2 subjects, or ``held_out_subjects`` not in [1, subjects - 1].
    """
    subjects = list(dict.fromkeys(groups))
    if len(subjects) < 2:
        raise ValueError(f"{len(subjects)} subject(s): at least 2 are needed for a held-out split")
    k = int(held_out_subjects) if held_out_subjects else max(1, round(test_fraction * len(subjects)))
    if not 1 <= k < len(subjects):
        raise ValueError(f"held_out_subjects={k}: must be in [1, {len(subjects) - 1}] for "
                         f"{len(subjects)} subjects")
    y = labels if labels.ndim == 1 else labels.argmax(1)
    first = {g: int(y[groups.index(g)]) for g in subjects}
    rng = np.random.default_rng(seed)
    by_class: dict[int, list[str]] = {}
    for g in rng.permutation(np.array(subjects, dtype=object)):
        by_class.setdefault(first[g], []).append(g)
    order, queues = [], [q for _, q in sorted(by_class.items())]
    while any(queues):  # round robin over classes: a stratified choice of subjects
        for q in queues:
            if q:
                order.append(q.pop(0))
    test = set(order[:k])
    is_test = np.array([g in test for g in groups])
    return [(np.flatnonzero(~is_test), np.flatnonzero(is_test))]


def make_split(labels: np.ndarray, groups: list[str], splits: list[str] | None = None,
               settings: dict | None = None, fold_ids: list[int] | None = None
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """The paper's split rule (MediBench Sec. 4.1, Tables 11-12) and a description of it.

    Priority: ``fold_ids`` (image quadrants), official ``splits`` (:func:`official_split`), then
    ``settings["split"]``: ``holdout`` (default; :func:`holdout_split`) or ``cv`` (``folds``
    grouped folds, :func:`make_folds`).

    Returns:
        ``(folds, text)``; ``text`` names the split for the tables (e.g. "subject-wise hold-out:
        3 of 12 subjects", "official split: 262144 train / 32768 test items; valid (32768
        items) not used").

    Raises:
        ValueError: unknown ``split``, or the errors of :func:`make_folds`/:func:`holdout_split`.
    """
    settings = settings or {}
    seed = int(settings.get("seed", 0))
    n_subjects = len(set(groups))
    if fold_ids is not None:
        folds = make_folds(labels, groups, None, 2, seed, fold_ids)
        return folds, f"quadrant folds: one quadrant of every image held out, {len(folds)} folds pooled"
    if splits is not None and any(splits):
        train, test, unused = official_split(splits)
        names = [str(v).strip().lower() for v in splits]
        left = "; ".join(f"{u or '(none)'} ({names.count(u)} items) not used" for u in unused)
        return [(train, test)], (f"official split: {len(train)} train / {len(test)} test items"
                                 + (f"; {left}" if left else ""))
    kind = settings.get("split", "holdout")
    if kind == "cv":
        folds = make_folds(labels, groups, None, int(settings.get("folds", 10)), seed)
        return folds, f"{len(folds)}-fold subject-wise CV ({n_subjects} subjects), folds pooled"
    if kind != "holdout":
        raise ValueError(f"latent_utility.split: unknown {kind!r}; use one of {SPLITS}")
    folds = holdout_split(labels, groups, float(settings.get("test_fraction", 0.2)),
                          settings.get("held_out_subjects"), seed)
    held = len({groups[i] for i in folds[0][1]})
    return folds, f"subject-wise hold-out: {held} of {n_subjects} subjects"


# -- the items a table scores ---------------------------------------------------------------
def labeled_rows(manifest: pd.DataFrame) -> pd.DataFrame:
    """The ok rows with a label (a manifest without a ``label`` column has none), in manifest
    order: the items latent utility classifies."""
    if "label" not in manifest.columns:
        return manifest.iloc[:0]
    return manifest[(manifest["status"] == "ok") & (manifest["label"].astype(str) != "")]


def subject_of(row) -> str:
    """The subject (patient) of a manifest row, else the item itself: the unit no split cuts."""
    subject = row.get("subject", "")
    return str(subject) if subject is not None and str(subject) != "" else str(row["item_id"])


def held_out_items(manifest: pd.DataFrame, settings: dict | None) -> tuple[set[str] | None, str]:
    """The items of a dataset whose scores the paper reports: the held-out part of the split
    latent utility uses (MediBench Sec. 1: fidelity "on held-out data"; Sec. 4.1: "report on the
    official test set").

    - an official ``split`` column with a ``test`` part: its ``test`` items;
    - else, for a labeled set with ``split: holdout``: every item of the held-out subjects of
      :func:`make_split` (the same subjects the classifiers are tested on);
    - else (``split: cv``, quadrant folds: every item is held out once; a set without labels:
      no split): every item, ``None``.

    Args:
        manifest: the dataset's manifest (``item_id``, ``status``, optional ``label``,
            ``subject``, ``split``).
        settings: the set's latent-utility settings (``split``, ``test_fraction``,
            ``held_out_subjects``, ``seed``, ``patch``), or None for a set without labels.

    Returns:
        ``(item ids or None for all, a description for the table note)``.

    Raises:
        ValueError: the errors of :func:`make_split` (e.g. one subject only).
    """
    ok = manifest[manifest["status"] == "ok"]
    split = ok["split"].fillna("").astype(str).str.strip().str.lower() if "split" in ok else None
    if split is not None and (split == TEST).any():
        ids = set(ok.loc[split == TEST, "item_id"].astype(str))
        return ids, f"official test split ({len(ids)} of {len(ok)} items)"
    labeled = labeled_rows(manifest)
    settings = settings or {}
    if labeled.empty or not settings:
        return None, f"all {len(ok)} items (no labels: no split)"
    if settings.get("patch"):
        return None, f"all {len(ok)} items (quadrant folds: every item is held out once)"
    if settings.get("split", "holdout") == "cv":
        return None, (f"all {len(ok)} items ({settings.get('folds', 10)}-fold CV: every item "
                      "is held out once)")
    groups = [subject_of(r) for _, r in labeled.iterrows()]
    y, _, _ = encode_labels(list(labeled["label"]))
    (_, test), = make_split(y, groups, None, settings)[0]
    held = {groups[i] for i in test}
    ids = {str(i) for i, r in zip(ok["item_id"], ok.to_dict("records")) if subject_of(r) in held}
    return ids, (f"held-out subjects ({len(held)} of {len(set(groups))}; {len(ids)} of "
                 f"{len(ok)} items)")

"""One Telephone Game job: the chains of one (pair, set), their similarities and MGG verdicts.

Generation is resumable (:func:`.chains.run_chain`); scoring reads the chain folder, so a new
backbone rescored on finished chains generates nothing. A backbone or detector that cannot be
loaded (weights missing, package missing) gives ``n/a`` rows with the reason; the run goes on.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from roundtrip.core.imaging import one_line
from roundtrip.core.manifest import read_manifest
from roundtrip.core.weights import WeightsMissing
from roundtrip.datasets import chain_layout as layout
from roundtrip.evals.telephone import mgg as mgg_mod
from roundtrip.evals.telephone.chains import Seed, run_chain
from roundtrip.evals.telephone.similarity import COLUMNS as SIM_COLUMNS
from roundtrip.evals.telephone.similarity import build_backbone, score_chain

log = logging.getLogger(__name__)


def seeds_of(manifest: pd.DataFrame, root: Path) -> list[Seed]:
    """Chain inputs from a dataset manifest (``text`` = caption, ``path`` = image)."""
    out = []
    for _, r in manifest.iterrows():
        image = root / r["path"] if r["path"] and r["status"] == "ok" else None
        out.append(Seed(str(r["item_id"]), r.get("text", "") or None, image))
    return out


def _loaded(build, what: str):
    """``build()``, or the reason it failed as a string (an n/a note)."""
    try:
        return build()
    except (WeightsMissing, ImportError, OSError, ValueError) as exc:
        return f"n/a: {what}: {one_line(exc)}"


def chains_for(dataset_type: str, chains: list[str]) -> list[str]:
    """The chain folders a set runs: GenEval prompts are captions only (text-first)."""
    folders = [layout.CHAINS[c] for c in chains]
    return [layout.TEXT_FIRST] if dataset_type == "geneval" else folders


def run_job(pair, manifest_path: str | Path, dataset_type: str, chain_root: str | Path,
            chains: list[str], generations: int, backbones: dict[str, dict],
            mgg: dict | None = None, seed: int = 0, device: str = "cpu"
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run and score the chains of one (pair, set).

    Args:
        pair: a :class:`~.unified.UnifiedPair`, or None for a ``chains`` set (scored only).
        manifest_path: the set's manifest (``results/datasets/{set}/manifest.csv``).
        dataset_type: ``captions``, ``geneval`` or ``chains``.
        chain_root: folder of the chains (the ``chains`` set's own folder for such sets).
        chains: config names (``text_first``, ``image_first``).
        generations: ``G``.
        backbones: ``telephone.backbones`` (name -> spec).
        mgg: ``telephone.mgg`` (detector; colour: GenEval's rules beside) for GenEval sets.
        seed: base of the per-item seeds; device: where networks run.

    Returns:
        ``(similarity, mgg)`` frames (:data:`.similarity.COLUMNS`, :data:`.mgg.COLUMNS`).
    """
    manifest_path, chain_root = Path(manifest_path), Path(chain_root)
    manifest = read_manifest(manifest_path)
    seeds = seeds_of(manifest, manifest_path.parent)
    folders = chains_for(dataset_type, chains)
    if pair is not None:
        for chain in folders:
            made = run_chain(pair, seeds, chain_root, chain, generations, seed)
            log.info("%s: %s, %d of %d generations made now", pair.name, chain, made, generations)
    else:  # made elsewhere: score the chains and the generations it has
        folders = [c for c in folders if layout.generations_present(chain_root, c) >= 0]
    ids = [s.item_id for s in seeds]
    captions = {s.item_id: s.caption or "" for s in seeds}
    models = {name: _loaded(lambda n=name, s=spec: build_backbone(n, s, device),
                            f"backbone {name}") for name, spec in backbones.items()}
    frames = [score_chain(chain_root, c, ids, captions, models, generations) for c in folders]
    similarity = pd.concat(frames, ignore_index=True) if frames else \
        pd.DataFrame(columns=SIM_COLUMNS)
    verdicts = pd.DataFrame(columns=mgg_mod.COLUMNS)
    if "metadata" in manifest.columns and (manifest["metadata"] != "").any():
        verdicts = _mgg(chain_root, manifest, generations, mgg or {}, device)
    return similarity, verdicts


def _mgg(root: Path, manifest: pd.DataFrame, generations: int, spec: dict, device: str):
    metadata = {str(i): json.loads(m) for i, m in zip(manifest["item_id"], manifest["metadata"])
                if m}
    det_spec = spec.get("detector") or {}
    if det_spec.get("weights"):
        detector = _loaded(lambda: mgg_mod.OwlDetector(det_spec["weights"],
                                                       det_spec.get("threshold", 0.1), device),
                           "MGG detector (OWLv2)")
    else:
        detector = "n/a: MGG needs an OWLv2 detector: set telephone.mgg.detector.weights to " \
                   "owlv2-large (google/owlv2-large-patch14-ensemble, the released code's) or " \
                   "a local folder"
    col_spec = spec.get("colour") or {}
    colour = _loaded(lambda: mgg_mod.ClipColour(col_spec["weights"], device),
                     "GenEval's colour classifier (CLIP)") if col_spec.get("weights") else None
    return mgg_mod.score_images(root, metadata, generations, detector, colour)

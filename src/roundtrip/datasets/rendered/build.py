"""Dataset builders for the synthetic types (``abstracts``, ``posters``, ``vista_questions``).

:func:`synthesize` renders the items of one dataset, audits them (:mod:`.audit`) into
``audit.csv`` beside the manifest, and returns the items with ``audit_cer`` and
``audit_flagged`` added to their manifest rows.
"""
from __future__ import annotations

import logging
from pathlib import Path

from roundtrip.datasets.rendered.abstracts import AbstractsSpec, build_abstracts
from roundtrip.datasets.rendered.audit import (MAX_NO_VERDICT, AuditSettings, audit_items,
                                               build_judge, judge_coverage, no_verdict_sentence)
from roundtrip.datasets.rendered.posters import PostersSpec, build_posters
from roundtrip.datasets.rendered.questions import QuestionsSpec, build_questions
from roundtrip.datasets.vista import write_item_images
from roundtrip.metrics.text import Normalization
from roundtrip.render import RenderSettings

log = logging.getLogger(__name__)

#: Per synthetic type: its spec class and ``dataset config key -> spec field``. The keys are
#: the ones that change the images; keys absent from the config keep the spec's defaults.
SYNTHETIC_FIELDS = {
    "abstracts": (AbstractsSpec, {"language": "language", "count": "count", "seed": "seed",
                                  "canvas": "canvas_px", "font": "font",
                                  "font_size_pt": "size_pt", "translate": "translate"}),
    "posters": (PostersSpec, {"count": "count", "seed": "seed", "canvas": "size_px",
                              "genres": "genres", "title_pt": "title_pt",
                              "slogan_pt": "slogan_pt"}),
    "vista_questions": (QuestionsSpec, {k: k for k in (
        "questions", "styles", "sizes", "grid", "style_sweep_pt", "size_sweep_style", "limit",
        "count", "seed", "table1")}),
}
#: Dataset config keys of each synthetic type (the ones that change its images).
SYNTHETIC_KEYS = {kind: tuple(keys) for kind, (_, keys) in SYNTHETIC_FIELDS.items()}

#: config key of ``render`` -> RenderSettings field
RENDER_KEYS = {"width": "width_px", "margin_lr": "margin_lr_px", "margin_tb": "margin_tb_px",
               "crop_margin": "crop_margin_px", "supersample": "supersample", "jobs": "jobs",
               "batch_size": "batch_size", "line_spread": "line_spread"}


def render_settings(cfg: dict | None) -> RenderSettings:
    """:class:`RenderSettings` from the ``render`` config section (unknown keys ignored)."""
    cfg = cfg or {}
    return RenderSettings(**{field: cfg[key] for key, field in RENDER_KEYS.items() if key in cfg})


def _spec(kind: str, spec: dict):
    """The spec dataclass of a synthetic dataset's config (lists become tuples)."""
    cls, keys = SYNTHETIC_FIELDS[kind]
    return cls(**{field: tuple(spec[key]) if isinstance(spec[key], list) else spec[key]
                  for key, field in keys.items() if key in spec})


def synthesize(name: str, spec: dict, out_dir: str | Path) -> list:
    """Render and audit the synthetic dataset ``name``.

    Args:
        spec: the dataset's config plus ``render`` and ``audit`` (the config's sections).
        out_dir: the dataset folder; ``audit.csv`` is written there.

    Returns:
        ``roundtrip.datasets.Item`` list ready for :func:`roundtrip.datasets.write_dataset`.

    Raises:
        ValueError: an unknown type, language or genre; RenderError: XeLaTeX missing.
    """
    kind = spec["type"]
    settings = render_settings(spec.get("render"))
    builders = {"abstracts": build_abstracts, "posters": build_posters,
                "vista_questions": build_questions}
    if kind not in builders:
        raise ValueError(f"datasets.{name}.type: '{kind}' is not a synthetic type")
    items = builders[kind](_spec(kind, spec), settings)
    audit_cfg = dict(spec.get("audit") or {})
    audit = audit_items(items, AuditSettings(**{k: audit_cfg[k] for k in
                                                ("max_cer", "psm", "upscale", "threads")
                                                if k in audit_cfg}),
                        Normalization.from_config(spec.get("normalization")),
                        build_judge(audit_cfg.get("judge")))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if kind == "vista_questions":
        write_item_images(items, out_dir)
    audit.to_csv(out_dir / "audit.csv", index=False)
    by_id = audit.set_index("item_id")
    for it in items:
        row = by_id.loc[it.item_id]
        it.extra = (it.extra or {}) | {"audit_cer": row["cer"], "audit_flagged": row["flagged"]}
    n_flag = int(audit["flagged"].astype(bool).sum())
    log.info("dataset %s: %d items rendered, %d flagged by the audit (CER > %s)", name,
             len(items), n_flag, audit_cfg.get("max_cer", AuditSettings.max_cer))
    coverage = judge_coverage(audit)
    if coverage is not None and (sentence := no_verdict_sentence(
            {name: coverage}, audit_cfg.get("max_no_verdict", MAX_NO_VERDICT))):
        log.warning("dataset %s: %s", name, sentence)
    return items

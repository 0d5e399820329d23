"""Columns of the VTBench tables: reconstruction (Table 1), text preservation (Table 3) and
detail statistics (Table 4), for :func:`roundtrip.tables.build_table`."""
from __future__ import annotations

from pathlib import Path

from roundtrip.tables import Column, metric_column

#: Columns of this evaluation that the shared metric registry does not declare:
#: metric -> (label, decimals).
OWN_METRICS = {
    "psnr_range": ("PSNR (range max - min)", 2),
    "ssim_pair_range": ("SSIM (256 px, per-pair range)", 4),
    "fid_model_size": ("FID (Image Size)", 2),
    "cer_vtbench": ("CER (VTBench eval.)", 4),
    "wer_vtbench": ("WER (VTBench eval.)", 4),
    "wer_words_vtbench": ("WER (Eq. 4, words)", 4),
}

#: Tesseract codes of the non-Latin scripts of VTBench's multilingual set that separate words
#: with spaces: WER is defined for them, but Table 3 prints CER only.
SPACED_NON_LATIN = {"hin": "Hindi", "kor": "Korean"}


#: VTBench Table 1's settings: table name suffix -> (protocols, title). ``native_resize`` is a
#: labelled variant of the native setting (its column header names the protocol).
SETTINGS = {
    "model_size": (("model_size",), "Reconstruction at the model's input size (VTBench Table 1, "
                                    "ImageNet setting: center crop resized to the model's size)"),
    "1024": (("fixed_1024",), "Reconstruction at 1024 x 1024 (VTBench Table 1, high resolution)"),
    "native": (("native", "native_resize"), "Reconstruction at native size (VTBench Table 1, "
                                            "varying resolution)"),
    # not a Table 1 setting: every model at the set's own fixed size (MediBench App. A)
    "fixed": (("fixed",), "Reconstruction at a fixed size for every model (datasets.<name>.size)"),
}


def setting_of(protocol: str) -> str:
    """The Table 1 setting (a key of :data:`SETTINGS`) of a reconstruction protocol.

    Raises:
        KeyError: an unknown protocol.
    """
    for name, (protocols, _) in SETTINGS.items():
        if protocol in protocols:
            return name
    raise KeyError(f"no VTBench setting for protocol {protocol!r}")


#: Dataset types that belong to VTBench Task 2 (detail preservation, Table 2) without ``task``.
DETAIL_TYPES = ("gpt_detail",)
#: Table 2's name: detail preservation sets, scored like Table 1 but tabulated apart.
DETAIL_TABLE = "reconstruction_detail"
DETAIL_TITLE = ("Detail preservation (VTBench Task 2, Table 2): each model at its input size "
                "(App. H; any-size models at the set's own size)")


def is_detail_set(spec: dict) -> bool:
    """True for a VTBench Task 2 set: ``task: detail`` or a ``gpt_detail`` dataset."""
    return spec.get("task") == "detail" or (spec.get("type") in DETAIL_TYPES
                                            and spec.get("task") != "reconstruction")


def reconstruction_tables(protocols: dict[str, str], detail: list[str] | tuple = ()
                          ) -> dict[str, list[str]]:
    """VTBench Table 1 (one table per setting present: ``reconstruction_{setting}``) and Table 2
    (:data:`DETAIL_TABLE`, the ``detail`` sets) -> their datasets in config order.

    Args:
        protocols: dataset -> protocol, for every reconstruction set.
        detail: the detail-preservation (Task 2) sets among them.
    """
    out: dict[str, list[str]] = {}
    for setting in SETTINGS:
        datasets = [d for d, p in protocols.items() if d not in detail and setting_of(p) == setting]
        if datasets:
            out[f"reconstruction_{setting}"] = datasets
    if [d for d in protocols if d in detail]:
        out[DETAIL_TABLE] = [d for d in protocols if d in detail]
    return out


def table_title(name: str) -> str:
    """Title of a table of :func:`reconstruction_tables`."""
    if name == DETAIL_TABLE:
        return DETAIL_TITLE
    return SETTINGS[name.removeprefix("reconstruction_")][1]


def _col(dataset: str, metric: str, label: str | None = None, **kwargs) -> Column:
    if metric in OWN_METRICS:
        own_label, digits = OWN_METRICS[metric]
        col = Column(dataset, metric, own_label, digits, **kwargs)
    else:
        col = metric_column(dataset, metric, **kwargs)
    if label:
        col.label = label
    return col


def headline_quality(d: str, group: str, lpips: bool, fid: bool, files: dict[str, str],
                     suffix: str = "") -> list[Column]:
    """The released evaluator's PSNR, SSIM, LPIPS and FID of a dataset (both images at
    256 x 256), labelled ``... (VTBench eval.)`` plus ``suffix`` (e.g. a language)."""
    cols = [_col(d, "psnr_vtbench", source="set", group=group, file=files["set"]),
            _col(d, "ssim_vtbench", group=group, file=files["item"])]
    if lpips:
        cols.append(_col(d, "lpips_vtbench", group=group, file="lpips"))
    if fid:
        cols.append(_col(d, "fid", "FID (VTBench eval.)", source="set", group=group,
                         file="distribution", show_n=True))
    for col in cols:
        col.label += suffix
    return cols


def quality_columns(d: str, group: str, lpips: bool, fid: bool, files: dict[str, str],
                    size: bool = False, ssim: bool = True) -> list[Column]:
    """One dataset group: the released evaluator's PSNR/SSIM/LPIPS and FID first (the headline,
    VTBench's published convention: both images at 256 x 256) and the SSIM of the same copies
    with each pair's own range, then roundtrip's at the scored size (Image Size), each named:
    per-item means, pooled PSNR, the earlier reading of the evaluator's PSNR at that size
    (range max - min), LPIPS on [-1, 1], FID, KID.

    Args:
        files: file kinds of ``item`` (per-item image quality), ``set`` (its set rows),
            ``lpips``, ``distribution``.
        size: lead with the Image Size column (the ``image_size`` set row).
        ssim: include roundtrip's SSIM at the scored size (``metrics.ssim.scored_size``).
    """
    cols = [_col(d, "image_size", source="set", group=group, file=files["set"])] if size else []
    cols += headline_quality(d, group, lpips, fid, files)
    cols += [_col(d, "ssim_pair_range", group=group, file=files["item"]),
             _col(d, "psnr", "PSNR (per-item mean)", group=group, file=files["item"]),
             _col(d, "psnr_pooled", source="set", group=group, file=files["set"])]
    if ssim:
        cols.append(_col(d, "ssim", "SSIM (per-item mean)", group=group, file=files["item"]))
    cols.append(_col(d, "psnr_range", source="set", group=group, file=files["set"]))
    if lpips:
        cols.append(_col(d, "lpips", "LPIPS ([-1, 1] input)", group=group, file="lpips"))
    if fid:
        cols += [_col(d, "fid_model_size", source="set", group=group, file="distribution",
                      show_n=True),
                 _col(d, "kid", source="set", group=group, file="distribution", show_n=True,
                      spread="kid_std")]
    return cols


def reconstruction_columns(datasets: list[str], protocols: dict[str, str] | None = None,
                           lpips: bool = False, fid: bool = False,
                           ssim: bool = True) -> list[Column]:
    """VTBench Table 1/2 columns per dataset, headed ``dataset (protocol)``: Image Size (where
    the protocol fixes one: ``model_size``, ``fixed_1024``), the released evaluator's PSNR, SSIM,
    LPIPS and FID, the per-pair-range SSIM of the same copies, then roundtrip's per-item PSNR,
    pooled PSNR, SSIM (``ssim``: ``metrics.ssim.scored_size``), LPIPS and KID."""
    cols = []
    for d in datasets:
        protocol = (protocols or {}).get(d, "native")
        g = f"{d} ({protocol})" if protocols else d
        cols += quality_columns(d, g, lpips, fid, {"item": "item", "set": "set"},
                                size=protocol in ("model_size", "fixed_1024"), ssim=ssim)
    return cols


#: Table 3's groups in the paper's order, then sets of no paper group.
TEXT_GROUPS = ("Posters", "ArXiv", "Multilingual", "Other")
#: Table 3's multilingual CER columns, in the paper's order (Tesseract codes -> language).
MULTILINGUAL_ORDER = {"chi_sim": "Chinese", "chi_tra": "Chinese", "hin": "Hindi",
                      "jpn": "Japanese", "kor": "Korean"}
#: The pseudo-dataset name of the pooled multilingual block.
MULTILINGUAL = "multilingual"


def text_group(spec: dict) -> str:
    """Table 3 group of a text set from its config: its ``text_group`` key where set, else
    ``Posters`` (posters, gpt_posters), ``ArXiv`` (English abstracts), ``Multilingual``
    (abstracts in another language, or any set whose ``lang`` is one of Table 3's languages),
    else ``Other``."""
    if spec.get("text_group"):
        return spec["text_group"]
    kind = spec.get("type")
    if kind in ("posters", "gpt_posters"):
        return "Posters"
    if kind == "abstracts":
        return "ArXiv" if spec.get("language", "en") == "en" else "Multilingual"
    return "Multilingual" if spec.get("lang") in MULTILINGUAL_ORDER else "Other"


def text_layout(specs: dict[str, dict]) -> dict[str, list[str]]:
    """Table 3 groups (:data:`TEXT_GROUPS` order) -> their datasets; multilingual sets ordered
    Chinese, Hindi, Japanese, Korean (as Table 3), others in config order."""
    out = {g: [d for d, s in specs.items() if text_group(s) == g] for g in TEXT_GROUPS}
    order = list(MULTILINGUAL_ORDER)
    out["Multilingual"].sort(key=lambda d: order.index(specs[d].get("lang"))
                             if specs[d].get("lang") in order else len(order))
    return {g: ds for g, ds in out.items() if ds}


#: roundtrip's per-item-mean CER/WER at the scored size, labelled apart from the headline.
_PER_ITEM_LABELS = {"cer": "CER (per-item mean)", "wer": "WER (per-item mean)",
                    "cer_gt": "CER (GT, per-item mean)", "wer_gt": "WER (GT, per-item mean)"}


def _text_rates(d: str, group: str, has_gt: bool, cer_only: bool, label: str = "",
                released: bool = True) -> list[Column]:
    """CER/WER of a text set: the released evaluator's (headline: sums over the set of the
    256 px copies read at 1024 px; WER its character-level form, then Eq. 4's word-level WER
    pooled alike), then roundtrip's per-item means at the scored size (App. F Eqs. 3-4 as
    written, and after normalization; against the ground truth where the set has it)."""
    cols = []
    if released:
        rates = ("cer_vtbench",) if cer_only else ("cer_vtbench", "wer_vtbench",
                                                   "wer_words_vtbench")
        cols += [_col(d, m, source="set", group=group, file="text_set") for m in rates]
    for suffix, gt in (("", True), ("_gt", has_gt)):
        if not gt:
            continue
        for m in ("cer",) if cer_only else ("cer", "wer"):
            cols += [_col(d, f"{m}{suffix}", _PER_ITEM_LABELS[f"{m}{suffix}"], group=group),
                     _col(d, f"{m}{suffix}_norm", group=group)]
    if label:
        for col in cols:
            col.label = f"{col.label} ({label})"
    return cols


def text_columns(layout: dict[str, list[str]], has_gt: dict[str, bool],
                 cer_only: set[str] | frozenset = frozenset(), langs: dict[str, str] | None = None,
                 lpips: bool = False, fid: bool = False,
                 released: set[str] | frozenset | None = None,
                 ssim: bool = True) -> list[Column]:
    """VTBench Table 3 columns: Image Size (of the first set, once, as the paper), then per group
    (:func:`text_layout`) the image quality of the reconstructions (:func:`quality_columns`,
    file kinds ``quality``, ``quality_set``, ``lpips``, ``distribution``) and CER/WER of their
    OCR vs OCR of the originals (file kinds ``item`` and ``text_set``; and vs ground truth where
    the set has it).

    The Multilingual group is one block over the languages pooled (dataset
    :data:`MULTILINGUAL`, files built by :func:`pooled_multilingual`: roundtrip's reading of
    Table 3's layout, since the released code scores each language apart), then per language
    in the paper's order its own released PSNR/SSIM/LPIPS/FID and its CER.

    Args:
        layout: group -> datasets (:func:`text_layout`).
        has_gt: dataset -> has ground-truth text.
        cer_only: datasets in scripts without spaces between words (Chinese, Japanese), where
            WER is meaningless and VTBench reports CER only.
        langs: dataset -> Tesseract language code (names the per-language columns).
        released: the datasets with the released evaluator's CER/WER (default: all).
        ssim: include roundtrip's SSIM at the scored size (``metrics.ssim.scored_size``).
    """
    files = {"item": "quality", "set": "quality_set"}
    cols: list[Column] = []
    first = True

    def read(d):
        return released is None or d in released

    for group, datasets in layout.items():
        if group == "Multilingual":
            g = f"Multilingual ({', '.join(datasets)})"
            cols += quality_columns(MULTILINGUAL, g, lpips, fid, files, size=first, ssim=ssim)
            for d in datasets:
                lang = MULTILINGUAL_ORDER.get((langs or {}).get(d, ""), d)
                cols += headline_quality(d, g, lpips, fid, files, f" ({lang})")
                cols += _text_rates(d, g, has_gt.get(d, False), True, lang, read(d))
            first = False
            continue
        for d in datasets:
            g = f"{group}: {d}" if group != "Other" else d
            cols += quality_columns(d, g, lpips, fid, files, size=first, ssim=ssim)
            cols += _text_rates(d, g, has_gt.get(d, False), d in cer_only, released=read(d))
            first = False
    return cols


def pooled_multilingual(files: dict, models: list[str], datasets: list[str], out_dir
                        ) -> dict:
    """File entries of the pooled multilingual block (dataset :data:`MULTILINGUAL`), roundtrip's
    reading of Table 3's layout (the released code scores each language apart): per-item frames
    concatenated over ``datasets`` (``quality``, ``lpips``: the SSIM and LPIPS columns are the
    means of the languages' items, each at its own language's batch ranges) and a set file
    (``quality_set``) with the released evaluator's PSNR pooled over them
    (:func:`roundtrip.evals.vtbench.released.pooled_released_psnr`), roundtrip's pooled and range
    PSNR and the Image Size. FID is not pooled (it needs one Inception feature set over the
    languages): its cell says so.

    Args:
        files: ``(model, dataset, kind) -> path`` (:func:`roundtrip.tables.metric_files`).
        out_dir: folder for the pooled set files.

    Returns:
        ``(model, MULTILINGUAL, kind) -> frame or path`` entries to add to ``files``.
    """
    import pandas as pd

    from roundtrip.evals.vtbench.image_quality import image_size_row, range_psnr
    from roundtrip.evals.vtbench.released import pooled_released_psnr
    from roundtrip.metrics.image_quality import pooled_psnr

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = {}
    for model in models:
        for kind in ("quality", "lpips"):
            frames = [pd.read_csv(files[(model, d, kind)], keep_default_na=False,
                                  na_values=[""], dtype={"item_id": str, "reason": str,
                                                         "status": str})
                      for d in datasets if (model, d, kind) in files]
            if frames:
                entries[(model, MULTILINGUAL, kind)] = pd.concat(frames, ignore_index=True)
        q = entries.get((model, MULTILINGUAL, "quality"))
        if q is None:
            continue
        ok = q[q["status"] == "ok"]
        psnr_v, n = pooled_released_psnr(q)
        rows = [{"metric": "psnr_vtbench", "value": psnr_v, "n": n, "note": ""},
                {"metric": "psnr_pooled", "value": pooled_psnr(ok["mse"].to_numpy(),
                                                               ok["n_values"].to_numpy()),
                 "n": len(ok), "note": ""},
                {"metric": "psnr_range", "value": range_psnr(ok), "n": len(ok), "note": ""},
                image_size_row(ok) | {"note": image_size_row(ok)["note"]}]
        path = out_dir / f"{model}.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        entries[(model, MULTILINGUAL, "quality_set")] = str(path)
        fid_note = ("FID of the pooled languages not computed: it needs one Inception feature "
                    "set over the four languages (roundtrip keeps features per set)")
        fpath = out_dir / f"{model}.distribution.csv"
        pd.DataFrame([{"metric": m, "value": float("nan"), "n": 0, "note": fid_note}
                      for m in ("fid", "kid", "kid_std", "fid_model_size")]).to_csv(fpath,
                                                                                   index=False)
        entries[(model, MULTILINGUAL, "distribution")] = str(fpath)
    return entries


def weighted_metrics(lpips: bool, fid: bool, unavailable: dict[str, str]
                     ) -> tuple[bool, bool, list[str]]:
    """Which weighted metrics a table shows, and its notes: an enabled metric whose weights are
    missing is one note under the table, not a column of n/a per dataset.

    Args:
        lpips, fid: ``metrics.lpips.enabled``, ``metrics.fid.enabled``.
        unavailable: file kind (``lpips``, ``distribution``) -> why it was not computed
            (:meth:`roundtrip.workflow.metric_weights.WeightedMetrics.unavailable`).

    Returns:
        ``(show LPIPS, show FID/KID, notes)``.
    """
    notes = [f"{label} not shown, {unavailable[kind]}"
             for on, kind, label in ((lpips, "lpips", "LPIPS"), (fid, "distribution", "FID, KID"))
             if on and kind in unavailable]
    return lpips and "lpips" not in unavailable, fid and "distribution" not in unavailable, notes


def wer_beyond_paper(manifests: dict[str, str | Path], default_langs: dict[str, str],
                     cer_only: set[str]) -> list[str]:
    """The note labelling WER columns VTBench Table 3 does not print: Hindi and Korean sets
    (their words are space-separated, so WER is defined; the paper shows CER only for its
    multilingual set). Empty when there are none."""
    from roundtrip.core.manifest import read_manifest

    named = []
    for dataset, path in manifests.items():
        m = read_manifest(path)
        langs = set(m["lang"]) if "lang" in m.columns else {default_langs[dataset]}
        scripts = sorted({SPACED_NON_LATIN[p] for lang in langs for p in str(lang).split("+")
                          if p in SPACED_NON_LATIN})
        if scripts and dataset not in cer_only:
            named.append(f"{dataset} ({', '.join(scripts)})")
    if not named:
        return []
    return [f"WER of {', '.join(named)} is roundtrip's addition: VTBench Table 3 prints CER only "
            "for non-Latin scripts; these separate words with spaces, so WER is defined"]


def detail_columns(group: str = "originals") -> list[Column]:
    """VTBench Table 4 columns (definitions in :mod:`roundtrip.metrics.detail`)."""
    return [metric_column(group, "hf_energy_pct"),
            metric_column(group, "laplacian_var"),
            metric_column(group, "edge_density_pct")]


#: The combined Table 1: name and the setting headers in the paper's order.
TABLE1 = "vtbench_table1"
TABLE1_SETTINGS = {"reconstruction_model_size": "ImageNet",
                   "reconstruction_1024": "High Resolution",
                   "reconstruction_native": "Varying Resolution"}
#: The headline metrics Table 1 prints per setting (the released evaluator's convention).
TABLE1_METRICS = ("psnr_vtbench", "ssim_vtbench", "lpips_vtbench", "fid")


def table1_frame(tables: dict, card, first_note: int = 1) -> tuple:
    """VTBench Table 1 as the paper prints it: one row per model with Params, Type and
    Resolution, then the three settings as column groups (headline metrics of each dataset).

    Args:
        tables: built per-setting :class:`~roundtrip.tables.Table` objects by name (others,
            e.g. Table 2, are ignored).
        card: the model card frame (``model, family, params, native_sizes``) or None.
        first_note: the number the first cell footnote gets (the table's own notes come first).

    Returns:
        ``(formatted frame, numeric frame, cell notes)`` for
        :func:`roundtrip.tables.write_frame`: a cell whose per-setting cell has footnotes (an
        infinite PSNR of exact reconstructions, items not scored) carries their marks, numbered
        from ``first_note`` in the order of the returned notes; a model without a card row reads
        "n/a" in Params/Type.
    """
    import math

    import pandas as pd

    from roundtrip.tables.engine import format_count, format_value

    card = card.set_index("model") if card is not None else pd.DataFrame()
    rows, nums, notes = [], [], []

    def marks(cell) -> str:
        for note in cell.notes:
            if note not in notes:
                notes.append(note)
        return "".join(f" [{first_note + notes.index(n)}]" for n in cell.notes)

    models = next(iter(tables.values())).models if tables else []
    for model in models:
        known = model in card.index
        params = card.loc[model, "params"] if known else math.nan
        row = {"model": model,
               "Params": format_count(float(params)) if known else "n/a",
               "Type": card.loc[model, "family"] if known else "n/a",
               "Resolution": _resolution(tables, model,
                                         card.loc[model, "native_sizes"] if known else "any")}
        num = dict(row)
        for name, setting in TABLE1_SETTINGS.items():
            table = tables.get(name)
            if table is None:
                continue
            for j, col in enumerate(table.columns):
                if col.metric not in TABLE1_METRICS:
                    continue
                cell = table.cells[(model, j)]
                key = f"{setting} ({col.dataset}): {col.label}"
                row[key] = "–" if cell.dash else \
                    format_value(cell.summary.mean, col.digits) + marks(cell)
                num[key] = cell.summary.mean
        rows.append(row)
        nums.append(num)
    return pd.DataFrame(rows), pd.DataFrame(nums), notes


def _resolution(tables: dict, model: str, native: str) -> str:
    """The model's ImageNet-setting input (Table 1's Resolution): its native size, or for an
    any-size model the Image Size it was scored at in the model-size setting."""
    if native != "any":
        return str(native)
    table = tables.get("reconstruction_model_size")
    for j, col in enumerate(table.columns if table else []):
        value = table.cells[(model, j)].summary.mean
        if col.metric == "image_size" and value == value:
            return f"{int(value)}x{int(value)}"
    return "any"

"""Config checks that JSON schema cannot express, run before any job starts.

``config.schema.yaml`` checks types, ranges and required keys; :func:`check_config` then builds
every model and OCR engine once (without loading weights) and checks that every model's weights
can be found and every API endpoint in use has its key in the environment, so a bad parameter,
a missing checkpoint or a missing key fails at DAG-build time with the key named, not an hour
into a cluster run.
"""
from __future__ import annotations

from roundtrip.core import weights
from roundtrip.core.config import ConfigError, missing_paths_message
from roundtrip.core.weights import WeightsMissing
from roundtrip.models import ORIGINAL, TRAINED_TYPES, build_model
from roundtrip.readers import build_ocr
from roundtrip.workflow.plan import metric_weight_names

DISCRETE_FAMILIES = ("VQ", "LFQ", "BSQ", "RVQ", "RBSQ")


def schema_problem(config: dict, schema_path: str) -> str | None:
    """The short message of the first schema violation of ``config`` (first line: the key),
    or None (:func:`roundtrip.core.config.schema_error`)."""
    import yaml

    from roundtrip.core.config import schema_error

    with open(schema_path) as fh:
        return schema_error(config, yaml.safe_load(fh))


def check_file(path: str, schema_path: str) -> str | None:
    """Every check of a config file, as ``roundtrip check-config`` runs them: YAML syntax (with
    the line), the schema, then :func:`check_config`. Returns the problem, or None.

    Snakemake's ``--configfile`` loader reports a YAML error without its line; this does not.
    """
    import yaml
    from snakemake.utils import validate

    from roundtrip.core.config import resolve_data_root, yaml_error

    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror or exc}"
    if problem := yaml_error(text, path):
        return problem
    config = yaml.safe_load(text) or {}
    if not isinstance(config, dict):
        return f"{path}: a config is a mapping of sections (datasets, models, ...)"
    if problem := schema_problem(config, schema_path):
        return problem
    validate(config, schema_path)  # fills the defaults check_config relies on
    resolve_data_root(config)
    try:
        check_config(config)
    except ConfigError as exc:
        return str(exc)
    return None


def check_config(config: dict) -> None:
    """Validate cross-key constraints of a schema-validated config.

    Raises:
        ConfigError: naming the key, e.g. ``models.jpeg_q10.quality: quality must be in 1..100``.
    """
    # Every missing data path and model weight at once, before the rest.
    if problem := missing_paths_message(config, _missing_weights(config)):
        raise ConfigError(problem)
    _check_api(config)
    _check_medical(config)
    if ORIGINAL in config.get("models", {}):
        raise ConfigError(f"models.{ORIGINAL}: the name '{ORIGINAL}' is reserved for the unmodified "
                          "originals; rename the model")
    datasets = config.get("datasets", {})
    for name, spec in config.get("models", {}).items():
        try:
            model = build_model(name, spec)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if spec["type"] in TRAINED_TYPES:
            unknown = [d for d in spec.get("train", {}).get("datasets", []) if d not in datasets]
            if unknown:
                raise ConfigError(f"models.{name}.train.datasets: unknown datasets {unknown}")
    ocr_engines = {}
    for name, spec in config.get("ocr", {}).get("engines", {}).items():
        try:
            ocr_engines[name] = build_ocr(name, spec)
        except ValueError as exc:  # the message names ocr.engines.<name>
            raise ConfigError(str(exc)) from exc
    for name, spec in config.get("datasets", {}).items():
        if spec.get("text_eval") and not config.get("ocr", {}).get("engines"):
            raise ConfigError(f"datasets.{name}.text_eval: needs at least one engine in ocr.engines")
        unknown = [m for m in spec.get("models", []) if m not in config.get("models", {})]
        if unknown:
            raise ConfigError(f"datasets.{name}.models: unknown models {unknown}")
        _check_synthetic(name, spec)
        _check_path(name, spec)
        if spec["type"] == "skimage":
            from roundtrip.datasets.skimage import SKIMAGE_BUNDLED

            unknown = [i for i in spec.get("images", []) if i not in SKIMAGE_BUNDLED]
            if unknown:
                raise ConfigError(f"datasets.{name}.images: not bundled with scikit-image: {unknown}; "
                                  f"choose from {sorted(SKIMAGE_BUNDLED)}")
    _check_metrics(config)
    _check_ocr_datasets(config, ocr_engines)
    _check_vista(config)
    _check_telephone(config)


def _missing_weights(config: dict) -> list[tuple[str, str]]:
    """``(models.<name>, reason)`` for every model whose weights are not where its spec says
    (trained models have none yet; a spec that does not build is reported by its own check)."""
    missing = []
    for name, spec in (config.get("models") or {}).items():
        if not isinstance(spec, dict) or spec.get("type") in TRAINED_TYPES or name == ORIGINAL:
            continue
        try:
            model = build_model(name, spec)
        except ValueError:
            continue
        if hasattr(model, "check_weights"):
            try:
                model.check_weights()
            except WeightsMissing as exc:
                missing.append((f"models.{name}", " ".join(str(exc).split())))
    return missing


def _check_ocr_datasets(config: dict, built: dict) -> None:
    """``ocr.engines.<name>.datasets`` names text sets; each engine (``built``: name -> the
    engine) reads their languages; the text-preservation table's engine (``tables.ocr_engine``)
    reads every text set."""
    from roundtrip.readers import OCRUnavailable

    engines = config.get("ocr", {}).get("engines", {})
    datasets = config.get("datasets", {})
    text_sets = [d for d, spec in datasets.items() if spec.get("text_eval")]
    for name, spec in engines.items():
        chosen = spec.get("datasets")
        unknown = [d for d in chosen or [] if d not in datasets]
        if unknown:
            raise ConfigError(f"ocr.engines.{name}.datasets: unknown datasets {unknown}")
        engine = built[name]
        if not hasattr(engine, "languages"):
            continue
        for d in chosen or text_sets:
            try:
                engine.check([datasets[d].get("lang", "eng")])
            except OCRUnavailable as exc:
                raise ConfigError(f"ocr.engines.{name}.datasets: {d} ({datasets[d].get('lang', 'eng')}): "
                                  f"{exc}") from exc
    table_engine = config.get("tables", {}).get("ocr_engine") or next(iter(engines), None)
    chosen = (engines.get(table_engine) or {}).get("datasets")
    missed = [d for d in text_sets if chosen and d not in chosen]
    if missed:
        raise ConfigError(f"ocr.engines.{table_engine}.datasets: the text-preservation table's "
                          f"engine (tables.ocr_engine) must read every text set; missing {missed}")


#: Dataset types whose ``path`` is a folder of files, and what the folder must hold.
_FOLDER_TYPES = {"folder": "image files", "nifti": ".nii/.nii.gz files", "bids": "a BIDS tree",
                 "brats": "BraTS case folders"}


def _check_path(name: str, spec: dict) -> None:
    """A dataset's ``path`` (and ``labels_csv``) exists, and a folder is not empty, before any
    job runs (otherwise its build job fails late, without naming the key)."""
    from pathlib import Path

    path = spec.get("path")
    if not path:
        return
    p = Path(path)
    if spec["type"] in _FOLDER_TYPES:
        if not p.is_dir():
            raise ConfigError(f"datasets.{name}.path: {path} is not a directory")
        if spec["type"] == "folder":
            from roundtrip.datasets.folder import list_image_files

            if not list_image_files(p):
                raise ConfigError(f"datasets.{name}.path: {path} holds no {_FOLDER_TYPES['folder']} "
                                  "(.png, .jpg, .tif, .bmp, .webp, .gif)")
        elif not any(p.iterdir()):
            raise ConfigError(f"datasets.{name}.path: {path} is empty (expected "
                              f"{_FOLDER_TYPES[spec['type']]})")
    elif not p.exists():
        raise ConfigError(f"datasets.{name}.path: {path} does not exist")
    labels = spec.get("labels_csv")
    if labels and not Path(labels).is_file():
        raise ConfigError(f"datasets.{name}.labels_csv: {labels} does not exist")


def _check_vista(config: dict) -> None:
    """VISTA readers build, name OCR engines, models and question sets that exist."""
    from roundtrip.datasets import QUESTION_TYPES
    from roundtrip.readers import build_answerer

    vista = config.get("vista") or {}
    readers = vista.get("readers") or {}
    engines = config.get("ocr", {}).get("engines", {})
    datasets = config.get("datasets", {})
    for name, spec in readers.items():
        try:
            build_answerer(name, spec)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if spec["type"] in ("ocr_llm", "ocr_solver"):
            engine = spec.get("ocr", "tesseract")
            if engine not in engines:
                raise ConfigError(f"vista.readers.{name}.ocr: {engine!r} is not an entry of "
                                  f"ocr.engines (known: {sorted(engines)})")
            limited = engines[engine].get("datasets")
            missed = [d for d in vista.get("datasets") or
                      [d for d, s in datasets.items() if s["type"] in QUESTION_TYPES]
                      if limited and d not in limited]
            if missed:
                raise ConfigError(f"vista.readers.{name}.ocr: {engine} does not read {missed} "
                                  f"(ocr.engines.{engine}.datasets)")
    unknown = [m for m in vista.get("models") or [] if m not in config.get("models", {})]
    if unknown:
        raise ConfigError(f"vista.models: unknown models {unknown}")
    for d in vista.get("datasets") or []:
        if d not in datasets:
            raise ConfigError(f"vista.datasets: unknown dataset {d!r}")
        if datasets[d]["type"] not in QUESTION_TYPES:
            raise ConfigError(f"vista.datasets: {d} is a {datasets[d]['type']} set, not a "
                              f"question set ({', '.join(QUESTION_TYPES)})")
    for name, spec in datasets.items():
        if spec["type"] == "vista_release":
            from pathlib import Path

            if not spec.get("path"):
                raise ConfigError(f"datasets.{name}.path: a vista_release set needs the TSV")
            if not Path(spec["path"]).is_file():
                raise ConfigError(f"datasets.{name}.path: {spec['path']} does not exist")


def _check_telephone(config: dict) -> None:
    """The Telephone Game: pairs build (a render_ocr tokenizer is a model of the config),
    backbones are known types, its datasets are chain inputs, a chains folder has the layout."""
    from roundtrip.datasets import CHAIN_INPUTS, role_of
    from roundtrip.evals.telephone.unified import build_pair

    tele = config.get("telephone") or {}
    models, datasets = config.get("models", {}), config.get("datasets", {})
    for name, spec in (tele.get("pairs") or {}).items():
        tok = spec.get("tokenizer")
        if tok is not None and tok not in models:
            raise ConfigError(f"telephone.pairs.{name}.tokenizer: {tok!r} is not an entry of models")
        if name == ORIGINAL:
            raise ConfigError(f"telephone.pairs.{name}: the name '{ORIGINAL}' is reserved")
        try:
            build_pair(name, {k: v for k, v in spec.items() if k != "tokenizer"}).check()
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        except WeightsMissing as exc:  # the message starts with telephone.pairs.<name>.<key>
            raise ConfigError(str(exc)) from exc
    for d in tele.get("datasets") or []:
        if d not in datasets:
            raise ConfigError(f"telephone.datasets: unknown dataset {d!r}")
        if role_of(datasets[d]) != CHAIN_INPUTS:
            raise ConfigError(f"telephone.datasets: {d} is a {datasets[d]['type']} set, not a "
                              f"chain input (captions, geneval, chains)")
    for name, spec in datasets.items():
        if spec["type"] == "chains":
            from pathlib import Path

            from roundtrip.datasets.telephone import chain_items

            if not spec.get("path"):
                raise ConfigError(f"datasets.{name}.path: a chains set needs the chain folder")
            try:
                chain_items(Path(spec["path"]))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"datasets.{name}.path: {exc}") from exc
        elif spec["type"] in ("captions", "geneval"):
            source = spec.get("captions" if spec["type"] == "captions" else "prompts", "builtin")
            if source != "builtin":
                from pathlib import Path

                if not Path(source).expanduser().is_file():
                    key = "captions" if spec["type"] == "captions" else "prompts"
                    raise ConfigError(f"datasets.{name}.{key}: {source} does not exist")


def _check_api(config: dict) -> None:
    """Resolve API endpoints and prompts in place (:func:`roundtrip.api.settings.resolve_api`)
    and require the keys of the endpoints in use, before any work."""
    from roundtrip.api.settings import ApiConfigError, MissingApiKey, check_api_keys, resolve_api

    try:
        check_api_keys(config, resolve_api(config))
    except (ApiConfigError, MissingApiKey) as exc:
        raise ConfigError(str(exc)) from exc


def _check_medical(config: dict) -> None:
    """Medical datasets name bundled images and paths that exist, and the segmenter can run."""
    from pathlib import Path

    from roundtrip.datasets import is_medical_spec, is_volume_spec
    from roundtrip.datasets.medical import SKIMAGE_MODALITIES
    from roundtrip.evals.medibench.segment import SegmenterUnavailable, build_segmenter

    medical = [n for n, s in config.get("datasets", {}).items() if is_medical_spec(s)]
    for name in medical:
        spec = config["datasets"][name]
        if spec["type"] == "skimage_medical":
            unknown = [i for i in spec.get("images", []) if i not in SKIMAGE_MODALITIES]
            if unknown:
                raise ConfigError(f"datasets.{name}.images: {unknown} are not bundled medical "
                                  f"images; choose from {sorted(SKIMAGE_MODALITIES)}")
        for key in ("path", "labels_csv"):
            if spec.get(key) and not Path(spec[key]).exists():
                raise ConfigError(f"datasets.{name}.{key}: {spec[key]} does not exist")
        if spec.get("patch") and is_volume_spec(spec):
            raise ConfigError(f"datasets.{name}.patch: patches are for 2D sets only")
    if not medical:
        return
    seg = config.get("medical", {}).get("segmenter", {"type": "gmm"})
    try:
        segmenter = build_segmenter(seg)
        if hasattr(segmenter, "check"):
            segmenter.check()
    except (SegmenterUnavailable, KeyError, ValueError) as exc:
        raise ConfigError(f"medical.segmenter: {exc}") from exc


def _check_synthetic(name: str, spec: dict) -> None:
    """Fonts, question files and the XeLaTeX tool chain of a synthetic dataset."""
    from pathlib import Path

    from roundtrip.datasets import SYNTHETIC_TYPES
    from roundtrip.render import UnknownFont, resolve_font
    from roundtrip.render.latex import RenderError, require_xelatex

    kind = spec["type"]
    if kind not in SYNTHETIC_TYPES:
        return
    try:
        require_xelatex()
    except RenderError as exc:
        raise ConfigError(f"datasets.{name}.type: {kind} is rendered with XeLaTeX: {exc}") from exc
    keys = {"abstracts": ["font"], "vista_questions": ["styles", "size_sweep_style"]}.get(kind, [])
    for key in keys:
        values = spec.get(key, [])
        for style in [values] if isinstance(values, str) else values:
            try:
                resolve_font(style)
            except UnknownFont as exc:
                raise ConfigError(f"datasets.{name}.{key}: {exc}") from exc
    source = spec.get("questions", "builtin")
    if kind == "vista_questions" and source not in ("builtin", "family") \
            and not Path(source).is_file():
        raise ConfigError(f"datasets.{name}.questions: file {source} does not exist")


_TYPE_FAMILIES = {"diffusers_kl": "continuous", "monai_kl": "continuous", "diffusers_vq": "VQ",
                  "monai_vqvae": "VQ", "identity": "codec", "jpeg": "codec", "webp": "codec",
                  "resample": "codec"}


def _family(name: str, spec: dict) -> str:
    """A model's family without loading weights (trained models have none yet)."""
    if spec["type"] in TRAINED_TYPES:
        return spec["family"]
    if spec["type"] in _TYPE_FAMILIES:
        return _TYPE_FAMILIES[spec["type"]]
    return build_model(name, spec).info().family


def _check_cmms_held_out(config: dict) -> None:
    """CMMS's training images are disjoint from the sets CHD/CMMS score (CHD paper Sec. 4.2)."""
    from roundtrip.evals.chd.training import overlap_message, training_overlap
    from roundtrip.workflow.plan import Plan, training_datasets

    plan = Plan(config)
    scored = list(dict.fromkeys(plan.token_datasets + [d for d in [plan.sensitivity_dataset] if d]))
    overlaps = training_overlap(training_datasets(config), scored, config["datasets"])
    if overlaps:
        raise ConfigError(overlap_message(overlaps))


def _check_metrics(config: dict) -> None:
    metrics = config.get("metrics", {})
    if metrics.get("missing_weights", "error") == "error":
        for key, name in metric_weight_names(metrics).items():
            try:
                weights.require(name, metrics.get("weights_cache"))
            except WeightsMissing as exc:
                raise ConfigError(f"{key}: {exc} (or set metrics.missing_weights: n/a, or "
                                  f"{key}.enabled: false)") from exc
    tokens = metrics.get("tokens", {})
    reference = tokens.get("reference")
    datasets = config.get("datasets", {})
    if reference is not None:
        spec = config.get("models", {}).get(reference)
        if spec is None:
            raise ConfigError(f"metrics.tokens.reference: {reference!r} is not in models")
        family = _family(reference, spec)
        if family not in DISCRETE_FAMILIES:
            raise ConfigError(f"metrics.tokens.reference: {reference!r} is a {family} model; CHD "
                              f"and CMMS need discrete tokens ({', '.join(DISCRETE_FAMILIES)})")
    unknown = [d for d in tokens.get("datasets") or [] if d not in datasets]
    if unknown:
        raise ConfigError(f"metrics.tokens.datasets: unknown datasets {unknown}")
    from roundtrip.datasets import is_volume_spec

    volumes = [d for d in tokens.get("datasets") or [] if is_volume_spec(datasets[d])]
    if volumes:
        raise ConfigError(f"metrics.tokens.datasets: {volumes} are volume datasets; CHD and CMMS "
                          "are computed on the token grids of 2D images")
    unknown = [d for d in tokens.get("cmms", {}).get("datasets", []) if d not in datasets]
    if unknown:
        raise ConfigError(f"metrics.tokens.cmms.datasets: unknown datasets {unknown}")
    sens = tokens.get("sensitivity", {}).get("dataset")
    if sens is not None:
        if sens not in datasets:
            raise ConfigError(f"metrics.tokens.sensitivity.dataset: unknown dataset {sens!r}")
        if reference is None:
            raise ConfigError("metrics.tokens.sensitivity.dataset: needs "
                              "metrics.tokens.reference (the tokenizer whose tokens are compared)")
    if reference is not None and not tokens.get("cmms", {}).get("allow_overlap"):
        _check_cmms_held_out(config)

"""Config checks that JSON schema cannot express, run before any job starts.

``config.schema.yaml`` checks types, ranges and required keys; :func:`check_config` then builds
every model and OCR engine once (without loading weights) and checks that every model's weights
can be found and every API endpoint in use has its key in the environment, so a bad parameter,
a missing checkpoint or a missing key fails at DAG-build time with the key named, not an hour
into a cluster run.
"""
from __future__ import annotations

from pathlib import Path

from roundtrip.core import weights
from roundtrip.core.config import DEFAULT_CONFIG, ConfigError, missing_paths_message
from roundtrip.core.evaluation import RegistryError
from roundtrip.core.weights import WeightsMissing
from roundtrip.models import ORIGINAL, TRAINED_TYPES, build_model
from roundtrip.readers import build_ocr
from roundtrip.workflow.metric_weights import metric_weight_names
from roundtrip.workflow.plan import Plan, registered


def evaluation_schemas(config: dict, schema: dict) -> dict[str, dict]:
    """Top-level section -> its JSON schema, for the config sections of the registered
    evaluations (:attr:`roundtrip.core.evaluation.Evaluation.schema`: a mapping or a YAML/JSON
    file; without one, any mapping). Sections ``schema`` (``config.schema.yaml``) describes
    itself are left to it (``metrics.tokens`` lives inside the shared ``metrics``).

    Raises:
        ConfigError: an evaluation named in ``evaluations.plugins`` cannot be loaded.
    """
    import yaml

    try:
        evaluations = registered(config)
    except RegistryError as exc:
        raise ConfigError(f"evaluations.plugins: {exc}") from exc
    known = schema.get("properties", {})
    out = {}
    for ev in evaluations.values():
        if not ev.config_section or ev.config_section.split(".")[0] in known:
            continue
        section = ev.schema or {"type": "object"}
        if not isinstance(section, dict):
            section = yaml.safe_load(Path(section).read_text())
            section.pop("$schema", None)
        out[ev.config_section] = section
    return out


def composed_schema(config: dict, schema_path: str) -> dict:
    """``config.schema.yaml`` with the sections of the registered evaluations added
    (:func:`evaluation_schemas`): the schema the config is checked and filled in with."""
    import yaml

    with open(schema_path) as fh:
        schema = yaml.safe_load(fh)
    schema["properties"] |= evaluation_schemas(config, schema)
    return schema


def schema_problem(config: dict, schema_path: str) -> str | None:
    """The short message of the first schema violation of ``config`` (first line: the key),
    or None (:func:`roundtrip.core.config.schema_error`), against :func:`composed_schema`."""
    from roundtrip.core.config import schema_error

    try:
        return schema_error(config, composed_schema(config, schema_path))
    except ConfigError as exc:
        return str(exc)


def validate_config(config: dict, schema_path: str) -> dict:
    """Fill the defaults of :func:`composed_schema` into a config that :func:`schema_problem`
    passed, in place, with Snakemake's ``validate`` (one validation for every section, the
    evaluations' own included, so defaults are filled in the same way everywhere). Returns
    ``config``."""
    import tempfile

    import yaml
    from snakemake.utils import validate

    schema = composed_schema(config, schema_path)
    # Snakemake's validate reads its schema from a file
    with tempfile.TemporaryDirectory(prefix="roundtrip-schema-") as tmp:
        path = Path(tmp) / "config.schema.yaml"
        path.write_text(yaml.safe_dump(schema, sort_keys=False))
        validate(config, str(path))
    return config


def check_file(path: str, schema_path: str) -> str | None:
    """Every check of a config file, as ``roundtrip check-config`` runs them: YAML syntax (with
    the line) and duplicate keys (with both lines), the schema, then :func:`check_config`,
    whose messages name ``path`` as the file to fix. Returns the problem, or None.

    Snakemake's ``--configfile`` loader reports a YAML error without its line; this does not.
    """
    from roundtrip.core.config import config_names, load_yaml, resolve_data_root, yaml_error

    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror or exc}"
    if problem := yaml_error(text, path):
        return problem
    config = load_yaml(text) or {}
    if not isinstance(config, dict):
        return f"{path}: a config is a mapping of sections (datasets, models, ...)"
    if problem := schema_problem(config, schema_path):
        return problem
    validate_config(config, schema_path)  # fills the defaults check_config relies on
    resolve_data_root(config)
    try:
        check_config(config, source=config_names([path]))
    except ConfigError as exc:
        return str(exc)
    return None


def check_config(config: dict, source: str = DEFAULT_CONFIG) -> None:
    """Validate cross-key constraints of a schema-validated config.

    Args:
        config: the config, defaults filled in and dataset paths resolved.
        source: the config file(s) it was read from, as the messages name the file to fix
            (:func:`roundtrip.core.config.config_names`: ``my.yaml`` for ``--configfile
            my.yaml``).

    Raises:
        ConfigError: naming the key, e.g. ``models.jpeg_q10.quality: quality must be in 1..100``.
    """
    # Every missing data path, model weight and metric weight at once, before the rest.
    if problem := missing_paths_message(config, _missing_weights(config, source),
                                        _missing_metric_weights(config), source):
        raise ConfigError(problem)
    _check_api(config)
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
    _probe_models(config)
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
        _check_bundled_names(name, spec)
    _check_ocr_datasets(config, ocr_engines)
    try:
        plan = Plan(config)  # registers the evaluations
    except RegistryError as exc:  # a plugin that does not load stops here
        raise ConfigError(f"evaluations.plugins: {exc}") from exc
    for evaluation in plan.evaluations.values():
        evaluation.check(plan)


def _probe_models(config: dict) -> None:
    """Every model imported, loaded and run once at the sizes the run gives it, before any job
    (:mod:`roundtrip.workflow.probes`; cached by the model's fingerprint)."""
    from roundtrip.models.probe import ProbeError
    from roundtrip.workflow.probes import probe_config

    try:
        probe_config(config)
    except ProbeError as exc:
        raise ConfigError(str(exc)) from exc


def _missing_weights(config: dict, source: str = DEFAULT_CONFIG) -> list[tuple[str, str]]:
    """``(models.<name>, reason)`` for every model whose weights are not where its spec says
    (trained models have none yet; a spec that does not build is reported by its own check).
    A reason that says to fix the path in the config names ``source``, the file being read."""
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
                # the adapters, which do not know the file, say "config.yaml"
                reason = " ".join(str(exc).split()).replace("in the config file", f"in {source}")
                missing.append((f"models.{name}", reason))
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


def _check_bundled_names(name: str, spec: dict) -> None:
    """Images of ``skimage`` and ``package_photos`` sets must be ones the packages ship."""
    if spec["type"] == "skimage":
        from roundtrip.datasets.skimage import SKIMAGE_BUNDLED as known
        where = "bundled with scikit-image"
    elif spec["type"] == "package_photos":
        from roundtrip.datasets.package_photos import PACKAGE_PHOTOS as known
        where = "a packaged photograph"
    else:
        return
    unknown = [i for i in spec.get("images", []) if i not in known]
    if unknown:
        raise ConfigError(f"datasets.{name}.images: not {where}: {unknown}; "
                          f"choose from {sorted(known)}")


def _check_path(name: str, spec: dict) -> None:
    """A dataset's ``path`` (and ``labels_csv``) exists, and a folder is not empty, before any
    job runs (otherwise its build job fails late, without naming the key)."""
    from pathlib import Path

    from roundtrip.datasets import check_source

    path = spec.get("path")
    if not path:
        return
    try:  # a type whose path may be a pattern (shards, parquet files) resolves it itself
        resolved = check_source(name, spec)
    except (FileNotFoundError, ValueError) as exc:  # the message names the key
        raise ConfigError(str(exc)) from exc
    if not resolved:
        _check_plain_path(name, spec["type"], path)
    labels = spec.get("labels_csv")
    if labels and not Path(labels).is_file():
        raise ConfigError(f"datasets.{name}.labels_csv: {labels} does not exist")


def _check_plain_path(name: str, kind: str, path: str) -> None:
    """``datasets.<name>.path`` of type ``kind``: a non-empty folder for the folder types,
    else a file or folder that exists."""
    from pathlib import Path

    p = Path(path)
    if kind in _FOLDER_TYPES:
        if not p.is_dir():
            raise ConfigError(f"datasets.{name}.path: {path} is not a directory")
        if kind == "folder":
            from roundtrip.datasets.folder import list_image_files

            if not list_image_files(p):
                raise ConfigError(f"datasets.{name}.path: {path} holds no {_FOLDER_TYPES['folder']} "
                                  "(.png, .jpg, .tif, .bmp, .webp, .gif)")
        elif not any(p.iterdir()):
            raise ConfigError(f"datasets.{name}.path: {path} is empty (expected "
                              f"{_FOLDER_TYPES[kind]})")
    elif not p.exists():
        raise ConfigError(f"datasets.{name}.path: {path} does not exist")


def _check_api(config: dict) -> None:
    """Resolve API endpoints and prompts in place (:func:`roundtrip.api.settings.resolve_api`)
    and require the keys of the endpoints in use, before any work."""
    from roundtrip.api.settings import ApiConfigError, MissingApiKey, check_api_keys, resolve_api

    try:
        evaluations = registered(config)
    except RegistryError as exc:
        raise ConfigError(f"evaluations.plugins: {exc}") from exc
    uses = [use for ev in evaluations.values() for use in ev.api_uses(config)]
    try:
        check_api_keys(config, resolve_api(config, uses))
    except (ApiConfigError, MissingApiKey) as exc:
        raise ConfigError(str(exc)) from exc


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


def _missing_metric_weights(config: dict) -> list[tuple[str, str]]:
    """``(metrics.<name>, reason)`` for every enabled metric whose weight file is not in the
    cache, where ``metrics.missing_weights`` is ``error`` (with ``n/a``, the default, its
    columns are left out with a note)."""
    metrics = config.get("metrics", {})
    if metrics.get("missing_weights", "n/a") != "error":
        return []
    missing = []
    for key, name in metric_weight_names(metrics).items():
        try:
            weights.require(name, metrics.get("weights_cache"))
        except WeightsMissing as exc:
            missing.append((key, f"{exc} (or set metrics.missing_weights: n/a, or "
                                 f"{key}.enabled: false)"))
    return missing

"""The error every configuration check raises (:mod:`roundtrip.workflow.checks`)."""


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key, e.g.
    ``models.jpeg_q10.quality: quality must be in 1..100``."""


def yaml_error(text: str, name: str) -> str | None:
    """``"{name}:{line}:{column}: YAML syntax error: ..."`` when ``text`` is not valid YAML,
    else None (Snakemake's own loader reports no line)."""
    import yaml

    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        what = " ".join(str(getattr(exc, "problem", None) or exc).split())
        return f"{where}: YAML syntax error: {what}"
    return None


def yaml_file_error(path: str) -> str | None:
    """:func:`yaml_error` of the file at ``path`` (None when it is valid YAML or cannot be read:
    the reader that follows reports that)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    return yaml_error(text, path)


def _type_choices(error) -> list[str] | None:
    """The valid ``type`` values of the entry an error is about (the ``enum`` of its schema's
    ``type`` property), or None where the entry's schema has no such list."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "enum" and error.absolute_path and error.absolute_path[-1] == "type":
        return [str(v) for v in error.validator_value]
    enum = schema.get("properties", {}).get("type", {}).get("enum")
    return [str(v) for v in enum] if enum else None


def _type_message(errors: list) -> str | None:
    """A message naming ``type`` when an entry of a typed section (datasets, models, OCR engines,
    readers, pairs, ...) lacks it or names an unknown one: without a type every type's required
    keys are reported missing, and ``best_match`` picks one of those (``'path' is a required
    property``), which points away from the fix. Shallowest entry first."""
    for error in sorted(errors, key=lambda e: len(e.absolute_path)):
        missing = error.validator == "required" and "type" in error.validator_value \
            and isinstance(error.instance, dict) and "type" not in error.instance
        choices = _type_choices(error)
        if not choices or not (missing or error.validator == "enum"):
            continue
        key = ".".join(str(p) for p in error.absolute_path)
        first = (f"{key}: 'type' is missing; set {key}.type to one of:" if missing else
                 f"{key}: {error.instance!r} is not a type here; set it to one of:")
        return f"{first}\n  {', '.join(choices)}"
    return None


def schema_error(config: dict, schema: dict) -> str | None:
    """The most relevant JSON-schema violation of ``config`` as a short message whose first line
    names the key (``models.jpeg_bad.quality: 500 is greater than the maximum of 100``), with the
    key's description from the schema on a second line; None when the config is valid.

    An entry without ``type`` (or with an unknown one) in a section of typed entries gets a
    message naming ``type`` and listing the section's types instead (:func:`_type_message`).
    ``config`` is not modified (defaults are filled by Snakemake's ``validate`` afterwards).
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    errors = list(Draft202012Validator(schema).iter_errors(config))
    if not errors:
        return None
    if typed := _type_message(errors):
        return typed
    error = best_match(errors)
    key = ".".join(str(p) for p in error.absolute_path) or "config"
    message = " ".join(error.message.split())
    if len(message) > 240:  # e.g. a whole dataset entry quoted back: keep the verdict
        message = message[:120] + " ... " + message[-100:]
    lines = [f"{key}: {message}"]
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    if description and error.absolute_path:
        lines.append(f"  ({key}: {' '.join(str(description).split())[:300]})")
    return "\n".join(lines)


#: Dataset keys whose value names a file or folder (unless it is one of :data:`BUILTIN_SOURCES`).
DATASET_PATH_KEYS = ("path", "labels_csv", "prompts", "captions", "questions")

#: Values of those keys that name data shipped with roundtrip, not a path.
BUILTIN_SOURCES = frozenset({"builtin", "family"})


def dataset_paths(config: dict) -> list[tuple[str, str]]:
    """Every path a config's datasets name, as ``(key, path)`` pairs such as
    ``("datasets.imagenet.path", "/data/imagenet/val")``, in config order; builtin sources
    (``builtin``, ``family``) are left out."""
    found = []
    for name, spec in (config.get("datasets") or {}).items():
        for key in DATASET_PATH_KEYS:
            value = spec.get(key) if isinstance(spec, dict) else None
            if isinstance(value, str) and value and value not in BUILTIN_SOURCES:
                found.append((f"datasets.{name}.{key}", value))
    return found


def resolve_data_root(config: dict) -> dict:
    """Resolve the relative dataset paths of ``config`` under its top-level ``data_root``, in place.

    A preset names its data once (``data_root: /data/vtbench``) and every dataset relative to it
    (``path: imagenet/val``); absolute paths and builtin sources are kept as they are, and ``~``
    is expanded everywhere. Without ``data_root`` relative paths stay relative to the working
    directory (where Snakemake runs). Returns ``config``.
    """
    import os

    root = config.get("data_root")
    root = os.path.expanduser(str(root)) if root else None
    for name, spec in (config.get("datasets") or {}).items():
        for key in DATASET_PATH_KEYS:
            value = spec.get(key) if isinstance(spec, dict) else None
            if not isinstance(value, str) or not value or value in BUILTIN_SOURCES:
                continue
            value = os.path.expanduser(value)
            if root and not os.path.isabs(value):
                value = os.path.join(root, value)
            spec[key] = value
    return config


def missing_paths_message(config: dict, weights: list[tuple[str, str]] = ()) -> str | None:
    """One message naming every dataset path of ``config`` that does not exist and every model
    whose weights are missing, or None.

    Args:
        config: the config, dataset paths resolved (:func:`resolve_data_root`).
        weights: ``(key, reason)`` pairs of models whose weights were not found, e.g.
            ``("models.sd35l", "cannot load AutoencoderKL weights ...")``.

    The first line names the key (one problem) or the counts (several); each further line is
    ``  datasets.<name>.<key>: <path>`` or ``  models.<name>: <reason>``, so a preset pointed
    at a half-copied data root and weights folder lists all that is missing at once instead of
    one path per attempt.
    """
    from roundtrip.core.paths import any_exists

    # a shard pattern (webdataset, parquet) exists when it names at least one file; the
    # dataset's own check then names any file it spells out that is missing
    missing = [(key, f"{path} does not exist") for key, path in dataset_paths(config)
               if not any_exists(path)]
    problems = missing + list(weights)
    if not problems:
        return None
    if len(problems) == 1:
        key, what = problems[0]
        return f"{key}: {what}"
    root = config.get("data_root")
    where = f" (data_root: {root})" if root else ""
    lack = f"{len(weights)} model{' lacks its' if len(weights) == 1 else 's lack their'} weights"
    if not weights:
        head = f"datasets: {len(missing)} paths do not exist{where}; put the data there"
    elif not missing:
        head = f"models: {lack}; put them there"
    else:
        head = (f"datasets: {len(missing)} paths do not exist{where} and {lack}; put the data "
                "and weights there")
    lines = [f"{head} or fix the keys:"]
    lines += [f"  {key}: {what.removesuffix(' does not exist')}" for key, what in missing]
    lines += [f"  {key}: {what}" for key, what in weights]
    return "\n".join(lines)

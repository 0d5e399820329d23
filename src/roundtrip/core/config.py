"""The error every configuration check raises (:mod:`roundtrip.workflow.checks`), and the
reading of a config file: YAML with line numbers, duplicate keys refused."""
import yaml


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key, e.g.
    ``models.jpeg_q10.quality: quality must be in 1..100``."""


class DuplicateKey(yaml.YAMLError):
    """A mapping of a YAML document names the same key twice (YAML 1.2 requires keys to be
    unique; PyYAML would keep the last value and drop the first silently).

    Attributes:
        key: the dotted path of the repeated key (``models``, ``datasets.natural.size``).
        line: the 1-based line of the second occurrence.
        first_line: the 1-based line of the first one.
    """

    def __init__(self, key: str, line: int, first_line: int):
        super().__init__(f"duplicate key '{key}' (first at line {first_line})")
        self.key, self.line, self.first_line = key, line, first_line


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated in one mapping, at any depth, with
    :class:`DuplicateKey` (the repeated key's dotted path and both lines). Keys are compared
    as constructed values (``1`` and ``0x1`` are the same key); a merge key (``<<``) may bring
    keys that the mapping then sets again, as YAML's merge allows."""

    def construct_document(self, node):
        self._check_unique(node, (), set())
        return super().construct_document(node)

    def _check_unique(self, node, path: tuple[str, ...], seen: set[int]) -> None:
        if id(node) in seen:  # an alias visits its anchor's node once
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for k, child in enumerate(node.value):
                self._check_unique(child, (*path[:-1], f"{path[-1]}[{k}]") if path
                                   else (f"[{k}]",), seen)
            return
        if not isinstance(node, yaml.MappingNode):
            return
        first: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                self._check_unique(value_node, path, seen)
                continue
            key = self.construct_object(key_node, deep=True) \
                if isinstance(key_node, yaml.ScalarNode) else None
            try:
                hash(key)
            except TypeError:
                key = None
            name = (*path, str(key))
            if key is not None and key in first:
                raise DuplicateKey(".".join(name), key_node.start_mark.line + 1,
                                   first[key].start_mark.line + 1)
            if key is not None:
                first[key] = key_node
            self._check_unique(value_node, name, seen)


def load_yaml(text: str):
    """The YAML document ``text`` as Python objects, read by :class:`UniqueKeyLoader`.

    Raises:
        DuplicateKey: a mapping repeats a key. yaml.YAMLError: a syntax error.
    """
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def yaml_error(text: str, name: str) -> str | None:
    """``"{name}:{line}:{column}: YAML syntax error: ..."`` when ``text`` is not valid YAML,
    ``"{name}:{line}: duplicate key 'models' (first at line 3)"`` when a mapping repeats a key
    (:class:`DuplicateKey`), else None (Snakemake's own loader reports no line and keeps the
    last of two equal keys)."""
    try:
        load_yaml(text)
    except DuplicateKey as exc:
        return f"{name}:{exc.line}: duplicate key '{exc.key}' (first at line {exc.first_line})"
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        what = " ".join(str(getattr(exc, "problem", None) or exc).split())
        return f"{where}: YAML syntax error: {what}"
    return None


def yaml_file_error(path: str) -> str | None:
    """:func:`yaml_error` of the file at ``path``, named as given (None when it is valid YAML
    with unique keys, or cannot be read: the reader that follows reports that)."""
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


def _did_you_mean(error) -> str:
    """``"; did you mean 'protocol'?"`` for an unknown key that is a near miss of a key its
    section knows (``difflib``'s ratio of at least 0.6), one suggestion per unknown key; ``""``
    where the error is not about unknown keys or none is close."""
    import difflib

    schema = error.schema if isinstance(error.schema, dict) else {}
    known = list(schema.get("properties", {}))
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict) \
            or not known:
        return ""
    unknown = [str(k) for k in error.instance if k not in known]
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if close:  # with several unknown keys, say which suggestion is for which
            hints.append(f"'{close[0]}'" + (f" for '{name}'" if len(unknown) > 1 else ""))
    return f"; did you mean {', '.join(hints)}?" if hints else ""


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
    lines = [f"{key}: {message}{_did_you_mean(error)}"]
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


#: The config a plain ``snakemake`` reads (the Snakefile's ``configfile:``).
DEFAULT_CONFIG = "config.yaml"


def missing_paths_message(config: dict, weights: list[tuple[str, str]] = (),
                          metric_weights: list[tuple[str, str]] = (),
                          source: str = DEFAULT_CONFIG) -> str | None:
    """One message naming every dataset path of ``config`` that does not exist, every model
    whose weights are missing and every metric whose weights are missing, or None.

    Args:
        config: the config, dataset paths resolved (:func:`resolve_data_root`).
        weights: ``(key, reason)`` pairs of models whose weights were not found, e.g.
            ``("models.sd35l", "cannot load AutoencoderKL weights ...")``.
        metric_weights: ``(key, reason)`` pairs of enabled metrics whose weight file is not in
            the cache, e.g. ``("metrics.lpips", "LPIPS (net: alex) needs ...")``.
        source: the config file(s) the keys are in, as the message names them
            (:func:`config_names`).

    The first line names the key (one problem) or the counts and the file to fix (several);
    each further line is ``  datasets.<name>.<key>: <path>``, ``  models.<name>: <reason>`` or
    ``  metrics.<name>: <reason>``, so a preset pointed at a half-copied data root, weights
    folder and metric cache lists all that is missing at once instead of one kind per attempt.
    """
    from roundtrip.core.paths import any_exists

    # a shard pattern (webdataset, parquet) exists when it names at least one file; the
    # dataset's own check then names any file it spells out that is missing
    missing = [(key, f"{path} does not exist") for key, path in dataset_paths(config)
               if not any_exists(path)]
    problems = missing + list(weights) + list(metric_weights)
    if not problems:
        return None
    if len(problems) == 1:
        key, what = problems[0]
        return f"{key}: {what}"
    root = config.get("data_root")
    where = f" (data_root: {root})" if root else ""
    parts = [f"{len(missing)} path{'s do' if len(missing) > 1 else ' does'} not exist{where}"
             if missing else "",
             _lack(len(weights), "model"), _lack(len(metric_weights), "metric")]
    weighed = bool(weights or metric_weights)
    put = "the data and weights" if missing and weighed else "the data" if missing else "them"
    section = "datasets" if missing else "models" if weights else "metrics"
    lines = [f"{section}: {_and([p for p in parts if p])}; put {put} there or fix the keys in "
             f"{source}:"]
    lines += [f"  {key}: {what.removesuffix(' does not exist')}" for key, what in missing]
    lines += [f"  {key}: {what}" for key, what in list(weights) + list(metric_weights)]
    return "\n".join(lines)


def _lack(n: int, what: str) -> str:
    """``"2 models lack their weights"``, ``"1 metric lacks its weights"``, ``""`` for none."""
    if not n:
        return ""
    return f"{n} {what} lacks its weights" if n == 1 else f"{n} {what}s lack their weights"


def _and(parts: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return " and ".join(parts) if len(parts) < 3 else ", ".join(parts[:-1]) + " and " + parts[-1]


def config_paths(configfiles, workdir: str = ".") -> list[str]:
    """The config files a run was given, as a user in ``workdir`` names them: each path
    relative to ``workdir`` where it lies inside it (``my.yaml``,
    ``configs/papers/vtbench.yaml``), else absolute; ``[]`` where none was given (a plain
    ``snakemake`` reads :data:`DEFAULT_CONFIG`).

    Args:
        configfiles: the paths given to ``--configfile`` (Snakemake's
            ``workflow.overwrite_configfiles``: ``pathlib.Path`` objects, absolute or relative
            to ``workdir``), or the one file ``check-config`` reads.
        workdir: the folder Snakemake runs in.
    """
    import os

    root = os.path.abspath(workdir)
    out = []
    for f in configfiles or ():
        path = os.path.normpath(os.path.join(root, os.fspath(f)))
        rel = os.path.relpath(path, root)
        out.append(path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel)
    return out


def config_names(configfiles, workdir: str = ".") -> str:
    """The config file(s) a run reads, as its messages and its report name them:
    :func:`config_paths` joined by ``", "`` (``--configfile a.yaml b.yaml`` merges both), or
    :data:`DEFAULT_CONFIG` where none was given."""
    return ", ".join(config_paths(configfiles, workdir)) or DEFAULT_CONFIG

"""Config checks that JSON schema cannot express, run before any job starts.

``config.schema.yaml`` checks types, ranges and required keys (:func:`schema_problems`: every
violation at once, each naming its key); :func:`check_config` then builds every model, OCR
engine and render judge once (without loading weights) and checks that every model's weights
can be found, every model a reader, judge or pair runs in process is on this machine and of its
kind (an image-text model where it reads images), and every API endpoint in use has its key in
the environment, so a bad parameter, a missing checkpoint or a missing key fails at DAG-build
time with the key named, not an hour into a cluster run. ``roundtrip check-config``
(:func:`check_file` with ``probe_endpoints``) also asks each endpoint in use whether it answers.

A config with several problems gets them all in one message, one per line (a line that starts
with two spaces continues the one above), in the order: the schema; missing data, weights and
in-process models; the API uses; then the checks that need the models built.
"""
from __future__ import annotations

import copy
import functools
from contextlib import contextmanager
from pathlib import Path

from roundtrip.core import weights
from roundtrip.core.config import DEFAULT_CONFIG, ConfigError, missing_paths_message
from roundtrip.core.evaluation import RegistryError
from roundtrip.core.weights import WeightsMissing
from roundtrip.models import ORIGINAL, TRAINED_TYPES, build_model
from roundtrip.readers import build_ocr
from roundtrip.workflow.metric_weights import metric_weight_names
from roundtrip.workflow.plan import Plan, registered
from roundtrip.workflow.probes import duplicate_models

#: Schema violations one message lists at most (a config of another program would list many).
MAX_SCHEMA_PROBLEMS = 20


class Problems(list):
    """The problems a check found, one message each (the first line of a message names its
    key); :meth:`collect` turns a :class:`ConfigError` into one more of them."""

    @contextmanager
    def collect(self):
        """Run the block; a :class:`ConfigError` it raises is appended instead of raised."""
        try:
            yield
        except ConfigError as exc:
            self.append(str(exc))

    def raise_any(self) -> None:
        """Raise one :class:`ConfigError` with every problem, one after the other (none: return).

        Raises:
            ConfigError: the problems joined by line breaks.
        """
        if self:
            raise ConfigError("\n".join(self))


def evaluation_schemas(config: dict, schema: dict) -> dict[str, dict]:
    """Top-level section -> its JSON schema, for the config sections of the registered
    evaluations (:attr:`roundtrip.core.evaluation.Evaluation.schema`: a mapping or a YAML/JSON
    file; without one, any mapping). Sections ``schema`` (``config.schema.yaml``) describes
    itself are left to it (``metrics.tokens`` lives inside the shared ``metrics``).

    Raises:
        ConfigError: an evaluation named in ``evaluations.plugins`` cannot be loaded.
    """
    evaluations = _registered(config)
    known = schema.get("properties", {})
    out = {}
    for ev in evaluations.values():
        if not ev.config_section or ev.config_section.split(".")[0] in known:
            continue
        section = ev.schema or {"type": "object"}
        if not isinstance(section, dict):
            section = copy.deepcopy(_schema_file(str(section)))
            section.pop("$schema", None)
        out[ev.config_section] = section
    return out


def composed_schema(config: dict, schema_path: str) -> dict:
    """``config.schema.yaml`` with the sections of the registered evaluations added
    (:func:`evaluation_schemas`): the schema the config is checked and filled in with."""
    schema = copy.deepcopy(_schema_file(str(schema_path)))
    schema["properties"] |= evaluation_schemas(config, schema)
    return schema


@functools.lru_cache(maxsize=16)
def _schema_file(path: str) -> dict:
    """A schema file (YAML or JSON) read once per process, by libyaml's parser where PyYAML has
    it: the pure-Python parser took 0.3 s per read of ``config.schema.yaml``, paid at every
    Snakemake start-up. Callers copy before changing it."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=loader)  # noqa: S506 - a safe loader


def schema_problem(config: dict, schema_path: str) -> str | None:
    """Every schema violation of ``config`` in one message (:func:`schema_problems`, one after
    the other; the first line names the first key), or None."""
    problems = schema_problems(config, schema_path)
    return "\n".join(problems) if problems else None


def schema_problems(config: dict, schema_path: str) -> list[str]:
    """The short message of each schema violation of ``config`` against
    :func:`composed_schema`, in the order :func:`roundtrip.core.config.schema_error` picks them
    (first line: the key, ``audit.judge: Additional properties are not allowed ('modle' was
    unexpected); did you mean 'model'?``), at most :data:`MAX_SCHEMA_PROBLEMS`; empty when the
    config is valid.

    Each message is the most relevant violation of a copy of the config from which the parts
    already reported were taken out: the unknown keys of an entry, else the key whose value is
    wrong, else (a required key missing, an entry without ``type``) the entry. An entry that
    lacks a required key and has unknown ones gets both messages (a misspelt ``model`` is
    missing, and its misspelling is unknown, with the key it is close to). ``config`` is not
    modified.
    """
    from jsonschema import Draft202012Validator

    from roundtrip.core.config import schema_error

    try:
        schema = composed_schema(config, schema_path)
    except ConfigError as exc:
        return [str(exc)]
    validator = Draft202012Validator(schema)
    work = copy.deepcopy(config)
    found: list[str] = []
    stand_ins: dict[str, list] = {}  # key of a value put in for a missing one -> its entry
    for _ in range(4 * MAX_SCHEMA_PROBLEMS):  # each turn takes a part out of `work`
        problem = schema_error(work, schema)
        if problem is None or problem in found or len(found) == MAX_SCHEMA_PROBLEMS:
            break
        key = problem.split("\n", 1)[0].split(": ", 1)[0]
        if key in stand_ins:  # a stand-in's own violation: the entry was reported, take it out
            _take_out_path(validator, work, stand_ins.pop(key))
            continue
        found.append(problem)
        error = _error_at(validator, work, key, _validator_of(problem))
        if error is None:
            break
        if error.validator == "required" and error.absolute_path \
                and _error_at(validator, work, key, ("additionalProperties", None)).validator \
                == "additionalProperties":
            # stand-ins for the missing keys let the entry's unknown keys be reported next
            entry, node = list(error.absolute_path), _node(work, list(error.absolute_path))
            for missing in (k for k in error.validator_value if k not in node):
                if not _stand_in(validator, work, entry, missing):
                    stand_ins[f"{key}.{missing}"] = entry
        elif not _take_out(validator, work, error):
            break
    return found


def _errors(validator, instance) -> list:
    """Every violation of ``instance``, those inside ``anyOf``/``oneOf`` branches included."""
    out, todo = [], list(validator.iter_errors(instance))
    while todo:
        error = todo.pop()
        out.append(error)
        todo += list(error.context or ())
    return out


def _stand_in(validator, instance: dict, entry: list, name: str) -> bool:
    """Put a value the schema takes (an empty string, 0, false, an empty list or mapping, the
    first of an ``enum``) under the missing key ``name`` of the entry at ``entry``; where none
    is taken (or ``name`` is ``type``, which decides what else the entry needs), None. Returns
    whether the value put there is taken."""
    node = _node(instance, entry)
    path = [*entry, name]
    candidates = [] if name == "type" else [None, "", 0, False, [], {}]
    for value in candidates:
        node[name] = value
        wrong = [e for e in _errors(validator, instance) if list(e.absolute_path) == path]
        if not wrong:
            return True
        enum = next((e.validator_value for e in wrong if e.validator == "enum"), None)
        if enum and enum[0] not in candidates:
            candidates.append(enum[0])
    node[name] = None
    return False


def _validator_of(problem: str) -> tuple[str | None, str | None]:
    """``(schema keyword, property)`` a message of :func:`roundtrip.core.config.schema_error`
    reports, where its words say: unknown keys (``additionalProperties``), a required key or
    ``type`` missing (``required`` and the key), an unknown type (``enum``)."""
    import re

    first = problem.split("\n", 1)[0]
    if "Additional properties are not allowed" in first:
        return "additionalProperties", None
    if "'type' is missing" in first:
        return "required", "type"
    if m := re.search(r"'([^']+)' is a required property", first):
        return "required", m.group(1)
    if "is not a type here" in first:
        return "enum", None
    return None, None


def _error_at(validator, instance, key: str,
              keyword: tuple[str | None, str | None] = (None, None)):
    """The violation of ``instance`` at config key ``key`` (``config``: the root), one of schema
    keyword ``keyword[0]`` (a ``required`` one of property ``keyword[1]``) first; None where
    there is none."""
    at = [e for e in _errors(validator, instance)
          if (".".join(str(p) for p in e.absolute_path) or "config") == key]
    name, prop = keyword
    if name:
        at = [e for e in at if e.validator == name
              and (prop is None or prop in e.validator_value)] or at
    return at[0] if at else None


def _take_out(validator, instance: dict, error) -> bool:
    """Remove from ``instance`` what ``error`` is about (:func:`schema_problems`); False where
    nothing can be removed (the root)."""
    import re

    path = list(error.absolute_path)
    node = _node(instance, path)
    if error.validator == "additionalProperties" and isinstance(node, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        known, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
        extra = [k for k in node if k not in known and not any(re.search(p, str(k))
                                                                for p in patterns)]
        for k in extra:
            del node[k]
        return bool(extra)
    return _take_out_path(validator, instance, path)


def _take_out_path(validator, instance: dict, path: list) -> bool:
    """Remove the value at ``path`` from ``instance``, or, where its entry requires it, that
    entry (and so on up); False where that would be the root."""
    while path:
        parent, leaf = _node(instance, path[:-1]), path[-1]
        value = parent.pop(leaf)
        if not any(e.validator == "required" and list(e.absolute_path) == path[:-1]
                   and leaf in e.validator_value for e in _errors(validator, instance)):
            return True
        # the parent requires it: put it back and take out the parent entry instead
        if isinstance(parent, list):
            parent.insert(leaf, value)
        else:
            parent[leaf] = value
        path = path[:-1]
    return False


def _node(instance, path: list):
    for part in path:
        instance = instance[part]
    return instance


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


def check_file(path: str, schema_path: str, probe_endpoints: bool = False) -> str | None:
    """Every check of a config file, as ``roundtrip check-config`` runs them: YAML syntax (with
    the line) and duplicate keys (with both lines), the schema (every violation), then
    :func:`check_config`, whose messages name ``path`` as the file to fix. Returns every
    problem found, one after the other (the first line names a key), or None.

    A config the schema refuses is not filled in with its defaults, so :func:`check_config`
    does not run on it; what can be checked without the defaults is listed after the schema's
    violations (missing data paths and weights, the models run in process: two missing model
    folders and a misspelt key of the judge come in one message).

    Args:
        probe_endpoints: ask every API endpoint the config uses whether it answers
            (:func:`roundtrip.api.client.probe_endpoint`, once each, with its short timeout);
            an endpoint that does not is a problem that names it. ``roundtrip check-config``
            asks them; a check of a config written for another machine does not.

    Snakemake's ``--configfile`` loader reports a YAML error without its line; this does not.
    """
    from roundtrip.core.config import config_names, load_yaml, yaml_error

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
    return config_problem(config, schema_path, config_names([path]), probe_endpoints)


def config_problem(config: dict, schema_path: str, source: str = DEFAULT_CONFIG,
                   probe_endpoints: bool = False) -> str | None:
    """Every check of a loaded config, as the Snakefile and ``roundtrip check-config`` both run
    them: the schema (every violation, then what can be checked without the defaults), else
    the defaults filled in (:func:`validate_config`) and the dataset paths resolved under
    ``data_root``, in place, then :func:`check_config`. Returns every problem found, one after
    the other (the first line names a key), or None.

    Args:
        config: the config as read from its file(s); filled in and resolved when the schema
            passes.
        source: the config file(s) it was read from, as the messages name the file to fix.
        probe_endpoints: as :func:`check_config`.
    """
    from roundtrip.core.config import resolve_data_root

    if problems := schema_problems(config, schema_path):
        return "\n".join(problems + _unvalidated_problems(config, source, problems))
    validate_config(config, schema_path)  # fills the defaults check_config relies on
    resolve_data_root(config)
    try:
        check_config(config, source=source, probe_endpoints=probe_endpoints)
    except (ConfigError, RegistryError) as exc:  # the first line names the key
        return str(exc)
    return None


def _unvalidated_problems(config: dict, source: str, reported: list[str]) -> list[str]:
    """What :func:`check_config` finds first (missing data paths and weights, the models run in
    process) of a config the schema refused (its problems ``reported``), as far as a config
    without its defaults can be checked: a part that cannot be checked, or an entry the schema
    already reported, is left to the check after the schema's problems are fixed."""
    from roundtrip.core.config import resolve_data_root

    config = resolve_data_root(copy.deepcopy(config))
    found = []
    try:
        if missing := missing_paths_message(config, _missing_weights(config, source), (), source):
            found.append(missing)
    except (AttributeError, KeyError, TypeError, ValueError):  # a section of the wrong shape
        pass
    keys = tuple(p.split(": ", 1)[0] for p in reported)
    try:
        found += [line for line in _in_process_problems(_uses(config))[0]
                  if not line.split(": ", 1)[0].startswith(keys)]
    except (AttributeError, KeyError, TypeError, ValueError, ConfigError):
        pass
    return found


def check_config(config: dict, source: str = DEFAULT_CONFIG,
                 probe_endpoints: bool = False) -> None:
    """Validate cross-key constraints of a schema-validated config, every problem at once.

    First what needs nothing built: every missing data path, model weight and metric weight
    (one message), every model a reader, judge or pair runs in process that is not on this
    machine or (where it reads images) is no image-text model
    (:func:`roundtrip.workflow.probes.in_process_problems`), every API use (endpoints, prompts,
    keys; with ``probe_endpoints``, whether each endpoint answers). Then, when those are clean,
    what builds on them: the models built and probed, the render judge and the OCR engines
    built, the datasets' own checks and each evaluation's (one problem per evaluation).

    Args:
        config: the config, defaults filled in and dataset paths resolved. Its API uses are
            resolved in place (:func:`roundtrip.api.settings.resolve_api`).
        source: the config file(s) it was read from, as the messages name the file to fix
            (:func:`roundtrip.core.config.config_names`: ``my.yaml`` for ``--configfile
            my.yaml``).
        probe_endpoints: ask each endpoint in use whether it answers (``roundtrip
            check-config``; the workflow does not, as every job of a cluster run reads the
            Snakefile again).

    Raises:
        ConfigError: every problem, one after the other, each starting with its key, e.g.
            ``models.jpeg_q10.quality: quality must be in 1..100``.
    """
    problems = Problems()
    uses = _uses(config)
    if missing := missing_paths_message(config, _missing_weights(config, source),
                                        _missing_metric_weights(config), source):
        problems.append(missing)
    located, failed = _in_process_problems(uses)
    problems += located
    problems += _api_problems(config, [u for u in uses if u[0] not in failed], probe_endpoints)
    problems.raise_any()

    with problems.collect():
        if ORIGINAL in config.get("models", {}):
            raise ConfigError(f"models.{ORIGINAL}: the name '{ORIGINAL}' is reserved for the "
                              "unmodified originals; rename the model")
    datasets = config.get("datasets", {})
    for name, spec in config.get("models", {}).items():
        with problems.collect():
            try:
                build_model(name, spec)
            except ValueError as exc:
                raise ConfigError(str(exc)) from exc
            unknown = [d for d in spec.get("train", {}).get("datasets", []) if d not in datasets] \
                if spec["type"] in TRAINED_TYPES else []
            if unknown:
                raise ConfigError(f"models.{name}.train.datasets: unknown datasets {unknown}")
    problems += duplicate_models(config.get("models") or {})
    if not problems:  # every model builds: each is loaded and run once
        with problems.collect():
            _probe_models(config)
    with problems.collect():
        _check_judge(config)
    engines = config.get("ocr", {}).get("engines", {})
    ocr_engines = {}
    for name, spec in engines.items():
        with problems.collect():
            try:
                ocr_engines[name] = build_ocr(name, spec)
            except ValueError as exc:  # the message names ocr.engines.<name>
                raise ConfigError(str(exc)) from exc
    for name, spec in datasets.items():
        with problems.collect():
            if spec.get("text_eval") and not engines:
                raise ConfigError(f"datasets.{name}.text_eval: needs at least one engine in "
                                  "ocr.engines")
        with problems.collect():
            unknown = [m for m in spec.get("models", []) if m not in config.get("models", {})]
            if unknown:
                raise ConfigError(f"datasets.{name}.models: unknown models {unknown}")
        for check in (_check_synthetic, _check_path, _check_bundled_names):
            with problems.collect():
                check(name, spec)
    if len(ocr_engines) == len(engines):
        with problems.collect():
            _check_ocr_datasets(config, ocr_engines)
    _check_evaluations(config, problems)
    problems.raise_any()


def _check_evaluations(config: dict, problems: Problems) -> None:
    """Each registered evaluation's own check (``Evaluation.check``), its first problem added to
    ``problems``. Where other problems were found already, an evaluation whose check cannot run
    on the config as it is (the plan does not build, the check fails on what they are about)
    adds nothing: those problems come first."""
    earlier = bool(problems)
    try:
        plan = Plan(config)  # registers the evaluations
    except RegistryError as exc:  # a plugin that does not load stops here
        problems.append(f"evaluations.plugins: {exc}")
        return
    except (KeyError, TypeError, ValueError):
        if earlier:
            return
        raise
    for evaluation in plan.evaluations.values():
        with problems.collect():
            try:
                evaluation.check(plan)
            except (KeyError, TypeError, ValueError, AttributeError):
                if not earlier:
                    raise
    with problems.collect():
        _check_compare(plan)


def _check_compare(plan: Plan) -> None:
    """Every ``compare:`` entry names a model of the config or a name an active evaluation
    compares (its readers, its model pairs: ``Evaluation.compared_names``), and not the same
    twice (docs/comparing.md)."""
    from roundtrip.tables.compare import compare_config

    section = compare_config(plan.config)
    where = "compare" if isinstance(plan.config.get("compare"), list) else "compare.pairs"
    known = list(plan.config.get("models", {}))
    for ev in plan.active:
        known += [n for n in ev.compared_names(plan) if n not in known]
    for k, entry in enumerate(section["pairs"]):
        for role in ("baseline", "candidate"):
            if entry[role] not in known:
                raise ConfigError(f"{where}[{k}].{role}: unknown name {entry[role]!r}: name a "
                                  f"model of models or a reader or pair of the config "
                                  f"(known: {', '.join(known)})")
        if entry["baseline"] == entry["candidate"]:
            raise ConfigError(f"{where}[{k}]: baseline and candidate are both "
                              f"{entry['baseline']!r}; to compare a model with a rerun of "
                              "itself, run `roundtrip compare RESULTS_A RESULTS_B` on the two "
                              "results folders")


def _check_judge(config: dict) -> None:
    """The render judge (``audit.judge``) builds with its settings (nothing is loaded).

    Raises:
        ConfigError: naming ``audit.judge``.
    """
    from roundtrip.datasets.rendered.audit import build_judge

    try:
        build_judge((config.get("audit") or {}).get("judge"))
    except ValueError as exc:  # the message names audit.judge
        raise ConfigError(str(exc)) from exc


def _uses(config: dict) -> list[tuple[str, dict, dict[str, str]]]:
    """Every API use of ``config``: the shared sections' (:func:`roundtrip.api.settings
    .api_uses`) and the registered evaluations' (``Evaluation.api_uses``).

    Raises:
        ConfigError: an evaluation named in ``evaluations.plugins`` cannot be loaded.
    """
    from roundtrip.api.settings import api_uses

    return [*api_uses(config),
            *(use for ev in _registered(config).values() for use in ev.api_uses(config))]


def _registered(config: dict) -> dict:
    """:func:`roundtrip.workflow.plan.registered`, its failure a :class:`ConfigError` naming
    ``evaluations.plugins``."""
    try:
        return registered(config)
    except RegistryError as exc:
        raise ConfigError(f"evaluations.plugins: {exc}") from exc


def _in_process_problems(uses: list) -> tuple[list[str], set[str]]:
    """``(problems, paths)``: the problems of the models run in process
    (:func:`roundtrip.workflow.probes.in_process_problems`) and the config paths of the uses
    that have some."""
    from roundtrip.workflow.probes import in_process_problems

    problems, failed = [], set()
    for use in uses:
        if found := in_process_problems([use]):
            problems += found
            failed.add(use[0])
    return problems, failed


def _api_problems(config: dict, uses: list, probe_endpoints: bool = False) -> list[str]:
    """Resolve each API use in place (:func:`roundtrip.api.settings.resolve_api`: endpoints
    and default prompts; the models of in-process uses located) and require the keys of the
    endpoints in use; with ``probe_endpoints``, each endpoint in use is asked once whether it
    answers (:func:`roundtrip.api.client.probe_endpoint`, all at once). One problem per use,
    per missing key and per endpoint that does not answer."""
    from roundtrip.api.settings import (ApiConfigError, MissingApiKey, check_api_keys,
                                        resolve_api)

    api = config.get("api") or {}
    problems, used = [], []
    for use in uses:
        try:  # one use at a time: a bad one does not hide the next
            used += resolve_api({"api": api}, [use])
        except ApiConfigError as exc:
            problems.append(str(exc))
    names = sorted(set(used))
    for name in names:
        try:
            check_api_keys(config, [name])
        except MissingApiKey as exc:
            problems.append(str(exc))
    if probe_endpoints and names:
        problems += _unreachable(api.get("endpoints") or {}, names)
    return problems


def _unreachable(endpoints: dict, names: list[str]) -> list[str]:
    """One line per endpoint of ``names`` (``api.endpoints`` entries) that does not answer
    :func:`roundtrip.api.client.probe_endpoint` (one ``GET /models`` each, with its short
    timeout, all at once), naming its config key and URL."""
    from concurrent.futures import ThreadPoolExecutor

    from roundtrip.api.client import probe_endpoint

    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        found = pool.map(lambda n: probe_endpoint({"name": n, **endpoints[n]}), names)
        return [line for line in found if line]


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

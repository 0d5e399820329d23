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


def schema_error(config: dict, schema: dict) -> str | None:
    """The most relevant JSON-schema violation of ``config`` as a short message whose first line
    names the key (``models.jpeg_bad.quality: 500 is greater than the maximum of 100``), with the
    key's description from the schema on a second line; None when the config is valid.

    ``config`` is not modified (defaults are filled by Snakemake's ``validate`` afterwards).
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return None
    key = ".".join(str(p) for p in error.absolute_path) or "config"
    message = " ".join(error.message.split())
    if len(message) > 240:  # e.g. a whole dataset entry quoted back: keep the verdict
        message = message[:120] + " ... " + message[-100:]
    lines = [f"{key}: {message}"]
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    if description and error.absolute_path:
        lines.append(f"  ({key}: {' '.join(str(description).split())[:300]})")
    return "\n".join(lines)

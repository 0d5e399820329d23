"""The error every configuration check raises (:mod:`roundtrip.workflow.checks`)."""


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key, e.g.
    ``models.jpeg_q10.quality: quality must be in 1..100``."""

"""Helpers for the thin Snakemake scripts: logging into the rule's log file, version capture."""
from __future__ import annotations

import logging
import platform
import sys


def setup_logging(log_path: str | None) -> logging.Logger:
    """Send ``logging`` records and uncaught tracebacks to the rule's ``log:`` file."""
    handlers = [logging.FileHandler(log_path, mode="w")] if log_path else [logging.StreamHandler()]
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("roundtrip")

    def excepthook(exc_type, exc, tb):
        logger.error("uncaught exception", exc_info=(exc_type, exc, tb))
        sys.__excepthook__(exc_type, exc, tb)

    sys.excepthook = excepthook
    return logger


def versions() -> dict[str, str]:
    """Versions of the software that determines the numbers (recorded beside results)."""
    import numpy
    import PIL
    import torch

    from roundtrip import __version__

    return {"roundtrip": __version__, "python": platform.python_version(),
            "numpy": numpy.__version__, "torch": torch.__version__, "pillow": PIL.__version__}

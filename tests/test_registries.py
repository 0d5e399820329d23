"""Type names are declared once: every ``type`` enum of the config schema (config.schema.yaml and
the evaluations' own sections) lists exactly the names its registry holds, so a type added to a
registry and not to the schema (or the reverse) fails here, not in a user's run."""
import pytest
import yaml
from conftest import REPO

from roundtrip.core.evaluation import load_evaluations
from roundtrip.datasets import DATASET_TYPES
from roundtrip.evals.medibench.segment import SEGMENTER_TYPES
from roundtrip.evals.telephone.similarity import BACKBONE_TYPES
from roundtrip.evals.telephone.unified import UNIFIED_TYPES
from roundtrip.models import MODEL_TYPES
from roundtrip.readers import OCR_TYPES
from roundtrip.readers.answerers import ANSWERER_TYPES
from roundtrip.workflow.checks import composed_schema

# config.schema.yaml with the evaluations' own sections (telephone, vista, medical) added, as
# the workflow checks a config
SCHEMA = composed_schema(yaml.safe_load((REPO / "config.yaml").read_text()),
                         str(REPO / "config.schema.yaml"))


def _type_enum(*path: str) -> set[str]:
    node = SCHEMA
    for key in path:
        node = node[key]
    return set(node["properties"]["type"]["enum"])


@pytest.mark.parametrize("path,registry", [
    (("properties", "datasets", "additionalProperties"), DATASET_TYPES),
    (("properties", "models", "additionalProperties"), MODEL_TYPES),
    (("properties", "ocr", "properties", "engines", "additionalProperties"), OCR_TYPES),
    (("properties", "vista", "properties", "readers", "additionalProperties"), ANSWERER_TYPES),
    (("properties", "telephone", "properties", "pairs", "additionalProperties"), UNIFIED_TYPES),
    (("properties", "telephone", "properties", "backbones", "additionalProperties"),
     BACKBONE_TYPES),
    (("properties", "medical", "properties", "segmenter"), SEGMENTER_TYPES),
], ids=["datasets", "models", "ocr engines", "vista readers", "telephone pairs",
        "telephone backbones", "segmenters"])
def test_schema_types_are_the_registry(path, registry):
    assert _type_enum(*path) == set(registry)


def test_every_built_in_evaluation_is_registered_with_its_rules():
    evaluations = load_evaluations()
    assert list(evaluations) == ["vtbench", "chd", "medibench", "vista", "telephone"]
    for ev in evaluations.values():
        assert ev.rules.is_file() and ev.title and ev.paper, ev.key
        section = ev.config_section
        if section:  # every built-in's section has a schema: its own file, or a shared one's
            assert section.split(".")[0] in SCHEMA["properties"], section
            assert ev.schema is None or ev.schema.is_file(), ev.key

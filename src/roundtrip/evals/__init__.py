"""One package per evaluation; each declares itself to the workflow in ``spec.py`` (an
:class:`roundtrip.core.evaluation.Evaluation` registered under the ``roundtrip.evaluations``
entry points of ``pyproject.toml``), holds its reconstruction scorers, its plan, its rules file
(``rules/evals/<name>.smk``) and its tables, and none imports another (a test enforces it):

- :mod:`.vtbench`: reconstruction quality, detail statistics, text preservation, OCR robustness;
- :mod:`.chd`: the token-space metrics CHD and CMMS and the sensitivity experiment;
- :mod:`.medibench`: medical fidelity, clinical structure and latent utility;
- :mod:`.vista`: VISTA-Bench's modality gap;
- :mod:`.telephone`: the Telephone Game's semantic drift.

docs/evaluations/writing-an-evaluation.md says what a new one needs.
"""

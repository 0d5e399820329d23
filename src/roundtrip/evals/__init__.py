"""One package per paper's evaluation; each holds its per-pair scorers and its tables, and none
imports another (a test enforces it):

- :mod:`.vtbench`: reconstruction quality, detail statistics, text preservation, OCR robustness;
- :mod:`.chd`: the token-space metrics CHD and CMMS and the sensitivity experiment;
- :mod:`.medibench`: medical fidelity, clinical structure and latent utility.

docs/design.md ("Adding an evaluation") says what a new one needs.
"""

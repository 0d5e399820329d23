"""The Telephone Game (UCF-UM): semantic drift over alternating text-to-image (T2I) and
image-to-text (I2T) generations.

A unified model (or a decoupled pair) runs text-first chains ``T0 -> I1 -> T2 -> ...`` and
image-first chains ``I0 -> T1 -> I2 -> ...`` for ``G`` generations; the outputs are compared
with the input by embedding backbones (MCD, SDR) and, over GenEval prompts, by a detector (MGG).
Modules:

- :mod:`.unified`: the pairs (``render_ocr`` offline, ``api``, ``diffusers`` + ``transformers``);
- :mod:`.chains`: the chains, generation by generation, resumable, in the released layout
  (:mod:`roundtrip.datasets.chain_layout`);
- :mod:`.similarity`: the backbones (wordllama, 1 - CER, MPNet, CLIP, DINO) and the per-item
  similarities of every direction (Table 1 of the paper);
- :mod:`.mgg`: OWLv2 detection and MGG verdicts per generation (Sec. 3.3): the released rules
  (:mod:`.mgg_rules`) as the headline, GenEval's own rules with CLIP colour beside;
- :mod:`.job`: one (pair, set) job: chains, similarities, MGG;
- :mod:`.tables`, :mod:`.figures`: S(g), MCD, SDR, MGG tables; Figs. 1/5, 6, 7, 8/11, 9.

The metric formulas are in :mod:`roundtrip.metrics.drift` (S, MCD, SDR) and
:mod:`roundtrip.metrics.geneval` (GenEval's rules). :func:`fit_sdr` is re-exported here.
"""
from roundtrip.evals.telephone.mgg import mgg_scores
from roundtrip.metrics.drift import SDRFit, fit_sdr, mcd

__all__ = ["SDRFit", "fit_sdr", "mcd", "mgg_scores"]

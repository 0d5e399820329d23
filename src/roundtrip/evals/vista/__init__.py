"""VISTA-Bench: visualized text vs pure text in VLMs, the modality gap.

A reader (``roundtrip.readers.answerers``: a VLM on an endpoint, OCR then an LLM, or the offline
OCR solver) answers every question of a question set twice: as pure text and as the rendered
question image (visualized text, VT); optionally the images first go through a model of the zoo
(the tokenizer axis). Modules:

- :mod:`.extract`: answer extraction (the release's VLMEvalKit rule, App. C.3's prose) and
  open-question matching;
- :mod:`.prompts`: the text sent with each question, as the release lays it out or in the
  reader's own layout;
- :mod:`.answers`: the answers of one (reader, model, set), scored;
- :mod:`.tables`: Table 1 (one render per question, categories in the paper's order, the
  Multimodal and Unimodal gaps of Fig. 8), the font size and style sweep (Figs. 3, 7, 11),
  rendering-related errors (Sec. 4.3), subfields, source benchmarks (Fig. 2), the tokenizer
  axis; the gap is Text - VT (App. D.1; Table 1's VT - Text beside the published rows);
- :mod:`.figures`: the gap against font size and style.

The whole account, with the conventions and the deviations of the showcase:
``docs/evaluations/vista.md``.

The question sets are built by ``roundtrip.datasets`` (``vista_questions``: rendered by us;
``vista_release``: the released TSV).
"""
from roundtrip.evals.vista.extract import Extraction, extract_answer

__all__ = ["Extraction", "extract_answer"]

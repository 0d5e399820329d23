"""Rendered text datasets (types ``abstracts``, ``posters``, ``vista_questions``): offline
synthesis of text images with exactly known ground truth, through :mod:`roundtrip.render`.

- :mod:`.abstracts`: dense academic paragraphs on a square canvas (English from a seeded grammar;
  Chinese, Japanese, Korean and Hindi from hand-written corpora in :mod:`.corpora`).
- :mod:`.posters`: movie posters (seeded titles, slogans and genre backgrounds).
- :mod:`.questions`: multiple-choice questions rendered at (font style, size) pairs (VISTA-Bench).
- :mod:`.build`: the dataset builder (render, then audit);
- :mod:`.audit`: OCR read-back of every render, CER against the ground truth, flags, and the
  interface of a VLM render judge.
"""

"""Offline synthesis of text-image datasets with exactly known ground truth.

- :mod:`.abstracts`: dense academic paragraphs on a square canvas (English from a seeded grammar;
  Chinese, Japanese, Korean and Hindi from hand-written corpora in :mod:`.corpora`).
- :mod:`.posters`: movie posters (seeded titles, slogans and genre backgrounds).
- :mod:`.questions`: multiple-choice questions rendered at (font style, size) pairs (VISTA-Bench).
- :mod:`.audit`: OCR read-back of every render, CER against the ground truth, flags, and the
  interface of a VLM render judge.
"""

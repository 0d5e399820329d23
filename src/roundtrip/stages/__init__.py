"""Pipeline stages that every evaluation shares, one module each:

- :mod:`.reconstruct`: images through a model, per (model, dataset), resumable;
- :mod:`.volumes`: volumes through 2D (slice-wise) and 3D models;
- :mod:`.codes`: tokens and latents of a (model, dataset), on request;
- :mod:`.ocr`: a reader over a dataset's originals or a model's reconstructions;
- :mod:`.train`: training of the small tokenizers the showcase evaluates.
"""

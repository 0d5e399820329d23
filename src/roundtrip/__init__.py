"""roundtrip: what survives a round trip through a tokenizer, VAE or VLM.

The library behind the Snakemake workflow: datasets, model adapters, metrics, OCR and tables.
"""
__version__ = "0.1.0"

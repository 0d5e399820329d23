"""Leaf modules every other part of roundtrip builds on; they import nothing of roundtrip.

- :mod:`.manifest`: the dataset manifest and per-item status files (read, write, merge);
- :mod:`.recon_items`: iterating the reconstruction items of a (model, dataset);
- :mod:`.imaging`: image files in one canonical array form;
- :mod:`.protocols`: VTBench's input protocols (model size, 1024², native);
- :mod:`.weights`: the offline cache of pretrained metric weights;
- :mod:`.config`: the configuration error type;
- :mod:`.logs`: a job's log file and the versions recorded in it.
"""

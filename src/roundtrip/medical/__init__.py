"""MediBench (medical VAEs in 2D and 3D). So far: loading NIfTI volumes into one canonical form
with per-item outcomes for bad input (:mod:`.volumes`). Preprocessing, slice-wise and 3D
reconstruction, the three pillars and their tables are still to come (issue 7)."""

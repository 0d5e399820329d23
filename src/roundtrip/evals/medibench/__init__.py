"""MediBench (VAEs in medical imaging): three pillars in 2D and 3D.

- fidelity: PSNR/SSIM (2D through :mod:`roundtrip.evals.vtbench.image_quality`, volumes through
  :mod:`.structure` with :mod:`roundtrip.metrics.fidelity`);
- clinical structure: :mod:`.segment` (segmenters) and :mod:`.structure` (SegSim, Dice, HD95,
  SegQC);
- latent utility: :mod:`.latent_utility` and :mod:`.latent_features`;
- :mod:`.panels` (figures) and :mod:`.tables` (Tables 1-6).
"""

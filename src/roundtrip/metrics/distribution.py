"""FID and KID between a set of originals and a set of reconstructions.

Features: the standard FID Inception-v3 (TensorFlow 2015-12-05 weights as converted by
torch-fidelity), 2048-d pool features; images enter as uint8 RGB at any size and are resized to
299 x 299 inside the extractor, as in every FID implementation derived from the TF original.
Statistics: torch-fidelity's ``fid_statistics_to_metric`` (Heusel et al., 2017) and
``kid_features_to_metric`` (Binkowski et al., 2018: unbiased MMD^2 with the cubic polynomial
kernel, averaged over random subsets).

Small sets: VTBench scores FID on 100-image sets; 2048-d covariances from 100 samples are rank
deficient and FID is strongly biased upward at such sizes, so every value is reported with its
sample count, and KID, whose estimator is unbiased, beside it.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from roundtrip.core import weights

FEATURE_DIM = 2048


class InceptionFeatures:
    """Inception-v3 pool features of uint8 images.

    Args:
        weights_path: torch-fidelity Inception state dict; default: ``inception-fid`` in the cache.
        cache: weights cache directory.
        device: torch device.

    Raises:
        WeightsMissing: the weights file is not in the cache.
    """

    def __init__(self, weights_path: str | Path | None = None, cache: str | Path | None = None,
                 device: str | torch.device = "cpu"):
        from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

        path = Path(weights_path) if weights_path else weights.require("inception-fid", cache)
        self.net = FeatureExtractorInceptionV3("inception-v3-compat", [str(FEATURE_DIM)],
                                               feature_extractor_weights_path=str(path)).to(device)
        self.device = torch.device(device)

    @torch.no_grad()
    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """``images``: uint8 ``[B, 3, H, W]`` -> float64 ``[B, 2048]`` on the CPU."""
        if images.dtype != torch.uint8 or images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"Inception features need uint8 [B, 3, H, W], got {images.dtype} "
                             f"{tuple(images.shape)}")
        (feats,) = self.net(images.to(self.device))
        return feats.double().cpu()


def fid(real: np.ndarray, fake: np.ndarray) -> float:
    """Frechet distance between Gaussians fitted to two feature sets.

    Args:
        real, fake: float ``[N, D]`` features, N >= 2 each.

    Returns:
        FID (>= 0 up to rounding; 0 for identical sets), or NaN if a set has fewer than 2 rows.
    """
    from torch_fidelity.metric_fid import fid_features_to_statistics, fid_statistics_to_metric

    if len(real) < 2 or len(fake) < 2:
        return math.nan
    s1 = fid_features_to_statistics(torch.as_tensor(np.asarray(real, np.float64)))
    s2 = fid_features_to_statistics(torch.as_tensor(np.asarray(fake, np.float64)))
    return float(fid_statistics_to_metric(s1, s2, verbose=False)["frechet_inception_distance"])


def kid(real: np.ndarray, fake: np.ndarray, subset_size: int = 1000, subsets: int = 100,
        seed: int = 0) -> tuple[float, float]:
    """Kernel Inception Distance: mean and std of unbiased MMD^2 over random subsets.

    Args:
        real, fake: float ``[N, D]`` features.
        subset_size: clipped to the smaller set size (torch-fidelity's default is 1000).
        subsets: number of random subsets.

    Returns:
        ``(mean, std)``; NaN if a set has fewer than 2 rows. May be slightly negative (unbiased).
    """
    from torch_fidelity.metric_kid import kid_features_to_metric

    size = min(subset_size, len(real), len(fake))
    if size < 2:
        return math.nan, math.nan
    out = kid_features_to_metric(torch.as_tensor(np.asarray(real, np.float64)),
                                 torch.as_tensor(np.asarray(fake, np.float64)),
                                 kid_subsets=subsets, kid_subset_size=size, rng_seed=seed,
                                 verbose=False, kid_kernel="poly")
    return (float(out["kernel_inception_distance_mean"]),
            float(out["kernel_inception_distance_std"]))

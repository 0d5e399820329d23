"""Detail statistics of an image (VTBench Appendix D, Table 4).

VTBench names three statistics without fixing their parameters; roundtrip fixes them as follows,
so numbers are comparable across runs:

* **Grayscale**: ITU-R BT.601 luma ``Y = 0.299 R + 0.587 G + 0.114 B`` on the 0..255 scale
  (16-bit sources are scaled to 0..255 first), float64.
* **High-frequency energy share (%)**: App. D's "proportion of image energy in high-frequency
  components (computed via FFT)": with ``P = |FFT2(Y - mean(Y))|^2`` the power spectrum, the share
  of the power at radial spatial frequency ``sqrt(fx^2 + fy^2) > cutoff`` cycles/pixel
  (``numpy.fft.fftfreq`` grid, Nyquist = 0.5). The paper gives no cutoff; roundtrip uses
  0.05 cycles/pixel, a tenth of the Nyquist frequency (detail with a period shorter than 20
  pixels), and removes the mean (DC) so a flat image has share 0. The eight bundled photographs
  give 16.2 % (median; 3.8-19.1 % for the seven photographs, 38.1 % for the Hubble field)
  against Table 4's 40.8 % for ImageNet: roughly 25 points below it (the paper's cutoff and
  image sizes are unknown; a cutoff of 0.01 cycles/pixel would give a median of 45.7 %).
* **Laplacian variance**: variance over all pixels of the 3x3 Laplacian
  ``[[0, 1, 0], [1, -4, 1], [0, 1, 0]]`` of ``Y`` (``scipy.ndimage.laplace``, reflected borders),
  the sharpness measure of Pech-Pacheco et al. (ICPR 2000); in squared 0..255 units.
* **Edge density (%)**: share of pixels marked by the Canny detector (``skimage.feature.canny``)
  on ``Y / 255`` with Gaussian sigma 1.0 and hysteresis thresholds 0.1 (low) and 0.2 (high) on
  the Sobel gradient magnitude.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

HF_CUTOFF = 0.05
CANNY_SIGMA, CANNY_LOW, CANNY_HIGH = 1.0, 0.1, 0.2


@dataclass(frozen=True)
class DetailStats:
    """Detail statistics of one image (see module docstring for definitions)."""
    hf_energy_pct: float
    laplacian_var: float
    edge_density_pct: float


def luma(image: np.ndarray) -> np.ndarray:
    """``(H, W, 3)`` ``uint8``/``uint16`` RGB -> float64 BT.601 luma on 0..255."""
    x = image.astype(np.float64)
    if image.dtype == np.uint16:
        x *= 255.0 / 65535.0
    return x[..., 0] * 0.299 + x[..., 1] * 0.587 + x[..., 2] * 0.114


def hf_energy_share(y: np.ndarray, cutoff: float = HF_CUTOFF) -> float:
    """Percentage (0..100) of the spectral power ``|F|^2`` of ``y`` (float ``[H, W]``, mean
    removed) above ``cutoff`` cycles/pixel, radially (module docstring; VTBench App. D).

    Raises:
        ValueError: ``cutoff`` outside ``[0, sqrt(0.5)]`` (the radial frequency range).
    """
    if not 0.0 <= cutoff <= math.sqrt(0.5):
        raise ValueError(f"cutoff must be in [0, {math.sqrt(0.5):.4f}] cycles/pixel, got {cutoff}")
    power = np.abs(np.fft.fft2(y - y.mean())) ** 2
    total = power.sum()
    if total < 1e-18 * y.size:  # a constant image: only rounding noise left
        return 0.0
    fy = np.fft.fftfreq(y.shape[0])[:, None]
    fx = np.fft.fftfreq(y.shape[1])[None, :]
    return float(100.0 * power[np.hypot(fy, fx) > cutoff].sum() / total)


def laplacian_variance(y: np.ndarray) -> float:
    """Variance of the 4-neighbour Laplacian of ``y``."""
    return float(ndimage.laplace(y, mode="reflect").var())


def edge_density(y: np.ndarray) -> float:
    """Percentage of Canny edge pixels in ``y`` (0..255 scale)."""
    from skimage.feature import canny

    edges = canny(y / 255.0, sigma=CANNY_SIGMA, low_threshold=CANNY_LOW, high_threshold=CANNY_HIGH)
    return float(100.0 * edges.mean())


def detail_stats(image: np.ndarray) -> DetailStats:
    """All three statistics of an ``(H, W, 3)`` RGB image.

    Raises:
        ValueError: not an ``(H, W, 3)`` image.
    """
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected (H, W, 3) image, got shape {image.shape}")
    y = luma(image)
    return DetailStats(hf_energy_share(y), laplacian_variance(y), edge_density(y))

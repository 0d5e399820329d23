"""The convention mistakes a simple fix would explain: a diagnosis of each reconstruction.

A model can return finite values of the right shape in ``[-1, 1]`` and still be wrong in a way
that no output check (:mod:`roundtrip.models.outputs`) sees: its outputs in ``[0, 1]``, its
channels in BGR order, the image flipped or transposed, or shifted by a pixel or two by a
padding or cropping mistake. Such a reconstruction scores like a poor model (10 to 24 dB) and
would be ranked as one. This module asks, per item, whether one simple fix of the output brings
it much closer to its input:

- **value range**: ``2 y - 1`` (outputs in ``[0, 1]``) and ``(y + 1) / 2`` (outputs in
  ``[-1, 1]`` that an ``input_range: [0, 1]`` then mapped again);
- **channel order**: the channels reversed (RGB returned as BGR), for 3-channel images;
- **orientation**: flipped vertically, horizontally, both (rotated by 180 degrees), and
  transposed (square images);
- **shift**: moved by up to :data:`MAX_SHIFT` pixels in each direction.

A fix *explains* the error when it raises the PSNR by at least :data:`MIN_GAIN_DB` (the
mean squared error at least halved: the fix accounts for most of the error) and the SSIM by at
least :data:`MIN_SSIM_GAIN`, and the fixed output correlates with its input (Pearson's r at
least :data:`MIN_FIXED_CORRELATION`: an output unrelated to its input has nothing a fix could
explain). A value-range fix also needs the output's values to lie as that mistake puts them
(:data:`RANGE_QUANTILE`, :data:`RANGE_SLACK`): none below 0 for outputs in ``[0, 1]``, some
below -1 for outputs mapped twice; a page reconstructed too grey is a poor model, not a range
mistake. A shift needs less, :data:`MIN_SHIFT_GAIN_DB` (one pixel costs a 25 dB model only 1
to 2 dB), because an unshifted model is always best aligned as it is: for JPEG, resampling and
blurring autoencoders every shift loses PSNR. Over several images at once
(:func:`diagnose_set`, the probe), the errors are pooled and the shift must be one for all.

The test is "a simple fix explains most of the error", never "the error is large": a
deliberately lossy model (JPEG at quality 10, a blurring autoencoder) gains nothing from any of
these fixes and is never flagged. An item smaller than :data:`MIN_SIDE` a side, whose input
is nearly flat (standard deviation below :data:`MIN_INPUT_STD`, where a flip or a shift changes
nothing and a range change cannot be told from a colour cast) or whose reconstruction is
already close (PSNR at least :data:`MAX_PSNR_DB`) is not judged.

To keep the cost per item small, the comparison reads a centred crop of at most
:data:`CROP` pixels a side (symmetric, so that a flip of the crop is the crop of the flip),
inside a margin of :data:`MAX_SHIFT` pixels (the shifted copies are compared on the same
region). PSNR uses the data range 2 of ``[-1, 1]``; SSIM is scikit-image's
``structural_similarity`` (Wang et al. 2004) on the crop, computed only for a fix that passes
the PSNR threshold. Measured on one CPU thread (the fastest of several repeats, on each of six
photographs): about 10 to 15 ms an item where no fix passes its PSNR threshold, most of it the
two float64 correlations of :func:`_shift_distances`, and 20 to 35 ms where one does (SSIM
before and after the fix), the same at every size from ``CROP + 2 * MAX_SHIFT`` pixels a side
on; more on a machine busy with other work.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

#: The PSNR gain (dB) at which a fix explains the error: +3 dB is the squared error halved.
MIN_GAIN_DB = 3.0
#: The PSNR gain (dB) at which a shift explains an item's error: a one-pixel shift of a 25 dB
#: model costs it 1 to 2 dB; an unshifted lossy model (JPEG, a blurring autoencoder) is always
#: best aligned unshifted (every shift loses PSNR), so a gain of 1 dB is a displacement.
MIN_SHIFT_GAIN_DB = 1.0
#: The same over several images pooled (the probe), where the shift must be the same for all.
MIN_SET_SHIFT_GAIN_DB = 0.5
#: A value-range fix also needs the output's values to look like that range, as the share
#: :data:`RANGE_QUANTILE` of its lowest values says: outputs in ``[0, 1]`` go no lower than
#: ``-RANGE_SLACK``; outputs mapped twice (``2 y - 1`` of a ``[-1, 1]`` output) reach below
#: ``-1 - 5 RANGE_SLACK`` wherever the input is darker than mid-grey. A model whose outputs are
#: merely too dark or too bright (a white page reconstructed grey) is neither.
RANGE_QUANTILE = 0.01
RANGE_SLACK = 0.02
#: The correlation with the input that a fixed output must reach: a value-range fix is affine
#: and changes no correlation, so an output unrelated to its input (a constant, noise) moved
#: closer in mean (a dark image and a grey output) explains nothing.
MIN_FIXED_CORRELATION = 0.5
#: The SSIM gain a fix must also bring.
MIN_SSIM_GAIN = 0.02
#: Inputs flatter than this (standard deviation on ``[-1, 1]``, about 6 grey levels) are not
#: judged: a flip or shift of a flat image changes nothing, a range change looks like a colour.
MIN_INPUT_STD = 0.05
#: A reconstruction this close (PSNR in dB) has no error worth explaining.
MAX_PSNR_DB = 45.0
#: Largest shift tried, in pixels, in each direction.
MAX_SHIFT = 4
#: Side of the centred crop compared (pixels, before the shift margin).
CROP = 128
#: Smallest side of an item judged at all: on 24 x 24 pixels of smooth noise, a flip of an
#: unrelated output passes every threshold for 2 items in 480 (none from 32 x 32 on).
MIN_SIDE = 32
#: Smallest side of the region compared for a shift; smaller images are not tried for shifts:
#: the best of 80 shifts of an output unrelated to its input gains about 0.2 dB on 16 x 16
#: pixels, up to 1.2 dB (24 x 24 volume slices through a poor tokenizer), a fifth of that on
#: 32 x 32.
MIN_SHIFT_SIDE = 32


@dataclass(frozen=True)
class Finding:
    """One fix that explains an item's error.

    Attributes:
        defect: ``range_unit``, ``range_inverse``, ``bgr``, ``flip_vertical``,
            ``flip_horizontal``, ``rotate_180``, ``transpose`` or ``shift``.
        psnr: the item's PSNR as returned (dB, on the compared crop).
        fixed_psnr: its PSNR once fixed (dB).
        ssim, fixed_ssim: SSIM before and after the fix.
        shift: ``(dy, dx)`` pixels the output is displaced by (``shift`` only): down and right
            are positive.
    """
    defect: str
    psnr: float
    fixed_psnr: float
    ssim: float
    fixed_ssim: float
    shift: tuple[int, int] = (0, 0)

    def reason(self, name: str, unit_range: bool | None = None) -> str:
        """The item's error: what the output looks like, the evidence and the fix.

        Args:
            name: the model's config key.
            unit_range: whether the adapter already maps ``[0, 1]`` (``input_range: [0, 1]``);
                None where the adapter has no such setting.
        """
        key = f"models.{name}"
        evidence = (f"PSNR {self.psnr:.1f} -> {self.fixed_psnr:.1f} dB, SSIM {_two(self.ssim)} -> "
                    f"{_two(self.fixed_ssim)} {_UNDO[self.defect]}")
        if self.defect == "range_unit":
            fix = ("return 2*x - 1" + (f", or set {key}.input_range: [0, 1]"
                                        if unit_range is False else ""))
            look = "outputs look like [0, 1]"
        elif self.defect == "range_inverse":
            fix = (f"remove {key}.input_range: [0, 1] (the model returns [-1, 1])"
                   if unit_range else "return x in [-1, 1], not 2*x - 1")
            look = "outputs look like [-1, 1] mapped again as if in [0, 1]"
        elif self.defect == "shift":
            dy, dx = self.shift
            moves = [f"{abs(dy)} px {'down' if dy > 0 else 'up'}" if dy else "",
                     f"{abs(dx)} px {'right' if dx > 0 else 'left'}" if dx else ""]
            look = f"outputs look shifted by {' and '.join(m for m in moves if m)}"
            fix = "check the padding, cropping or stride alignment in decode"
        else:
            look, fix = _LOOKS[self.defect]
        return f"{key}: {look} ({evidence}): {fix}"


def _two(value: float) -> str:
    """Two decimals, without a sign on a value that rounds to zero."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


#: What an orientation or channel defect looks like, and its fix.
_LOOKS = {
    "bgr": ("outputs look like BGR", "return RGB channels (y[:, [2, 1, 0]]) from decode"),
    "flip_vertical": ("outputs look flipped vertically", "undo the flip in decode "
                      "(torch.flip(y, dims=[2]))"),
    "flip_horizontal": ("outputs look flipped horizontally", "undo the flip in decode "
                        "(torch.flip(y, dims=[3]))"),
    "rotate_180": ("outputs look rotated by 180 degrees", "undo the rotation in decode "
                   "(torch.flip(y, dims=[2, 3]))"),
    "transpose": ("outputs look transposed (height and width swapped)",
                  "return [B, C, H, W], not [B, C, W, H] (y.transpose(2, 3))"),
}
#: How the evidence names the fix it tried.
_UNDO = {"range_unit": "as 2*x - 1", "range_inverse": "as (x + 1) / 2",
         "bgr": "with the channels reversed", "flip_vertical": "flipped back",
         "flip_horizontal": "flipped back", "rotate_180": "rotated back",
         "transpose": "transposed back", "shift": "shifted back"}


def _centre(h: int, side: int) -> slice:
    """A centred slice of at most ``side`` of ``h`` (symmetric: ``h - stop == start``)."""
    t = max(0, (h - side) // 2)
    return slice(t, h - t)


def _psnr(mse: float) -> float:
    """PSNR (dB) of a mean squared error on ``[-1, 1]`` (data range 2)."""
    return 10.0 * math.log10(4.0 / max(float(mse), 1e-12))


def _candidates(y: torch.Tensor) -> dict[str, torch.Tensor]:
    """The fixed versions of one output crop ``y`` ``[C, h, w]`` (shifts apart)."""
    out = {"range_unit": 2.0 * y - 1.0, "range_inverse": (y + 1.0) / 2.0,
           "flip_vertical": y.flip(1), "flip_horizontal": y.flip(2),
           "rotate_180": y.flip(1, 2)}
    if y.shape[0] == 3:
        out["bgr"] = y.flip(0)
    if y.shape[1] == y.shape[2]:
        out["transpose"] = y.transpose(1, 2)
    return out


def diagnose(x: torch.Tensor, y: torch.Tensor) -> list[Finding | None]:
    """Per item, the simple fix that explains its reconstruction's error (module docstring).

    Args:
        x: the model's input, float ``[B, C, H, W]`` in ``[-1, 1]``.
        y: its reconstruction, float, the same shape (checked by
            :func:`~roundtrip.models.outputs.reconstruction_defects` first: finite, in range);
            tensors of another rank (volumes) are not judged.

    Returns:
        One entry per item: the :class:`Finding` of the fix with the largest PSNR gain among
        those that explain the error (:data:`MIN_GAIN_DB`, :data:`MIN_SHIFT_GAIN_DB`,
        :data:`MIN_SSIM_GAIN`), or None (nothing explains it, or the item is not judged).
    """
    return [_decide([c]) if c is not None else None for c in _compared(x, y)]


def diagnose_set(x: torch.Tensor, y: torch.Tensor) -> Finding | None:
    """The simple fix that explains the error of a model over several images at once (the
    probe's photographs): the squared errors are pooled over the items, and a shift must be the
    same for all of them, so that a smaller gain (:data:`MIN_SET_SHIFT_GAIN_DB`) is evidence.

    Args:
        x, y: as :func:`diagnose`, ``B`` images of one size.

    Returns:
        The :class:`Finding` (PSNR and SSIM pooled: the PSNR of the mean squared error, the
        mean SSIM), or None; None too where fewer than half the items can be judged.
    """
    judged = [c for c in _compared(x, y) if c is not None]
    if not judged or 2 * len(judged) < int(x.shape[0]):
        return None
    return _decide(judged, pooled=True)


@dataclass
class _Compared:
    """One item's crops and the squared errors of its output and of each fix.

    ``target`` is the input inside the shift margin ``m``; ``output`` the reconstruction there;
    ``mse`` the mean squared error of each fix (``""`` for the output as returned);
    ``shifts`` the channel-mean squared error of every shift ``[2m + 1, 2m + 1]`` (None
    without a margin)."""
    target: torch.Tensor
    output: torch.Tensor
    full: torch.Tensor
    m: int
    mse: dict
    shifts: torch.Tensor | None
    low: float = 0.0  # the RANGE_QUANTILE quantile of the output's values


def _compared(x: torch.Tensor, y: torch.Tensor) -> list[_Compared | None]:
    if x.ndim != 4 or y.shape != x.shape:
        return [None] * int(x.shape[0])
    _, _, h, w = x.shape
    rows, cols = _centre(h, CROP + 2 * MAX_SHIFT), _centre(w, CROP + 2 * MAX_SHIFT)
    xs = x.detach()[:, :, rows, cols].float().cpu()
    ys = y.detach()[:, :, rows, cols].float().cpu()
    return [_compare(a, b) for a, b in zip(xs, ys)]


def _compare(x: torch.Tensor, y: torch.Tensor) -> _Compared | None:
    """The squared errors of one item's crops ``[C, h, w]``, or None (not judged)."""
    if min(x.shape[1:]) < MIN_SIDE or float(x.std()) < MIN_INPUT_STD:
        return None
    m = MAX_SHIFT if min(x.shape[1:]) - 2 * MAX_SHIFT >= MIN_SHIFT_SIDE else 0
    inner = (slice(None), slice(m, x.shape[1] - m), slice(m, x.shape[2] - m))
    target = x[inner]
    mse = {"": float(((y[inner] - target) ** 2).mean())}
    mse |= {name: float(((c[inner] - target) ** 2).mean())
            for name, c in _candidates(y).items()}
    low = float(torch.quantile(y.flatten()[::max(1, y.numel() // 65536)], RANGE_QUANTILE))
    return _Compared(target, y[inner], y, m, mse, _shift_distances(target, y, m) if m else None,
                     low)


def _decide(items: list[_Compared], pooled: bool = False) -> Finding | None:
    """The fix with the largest PSNR gain over ``items`` (pooled squared errors) that passes
    its PSNR threshold and raises the (mean) SSIM by :data:`MIN_SSIM_GAIN`."""
    base = _psnr(sum(c.mse[""] for c in items) / len(items))
    if base >= MAX_PSNR_DB:
        return None
    fixes = {name: (_psnr(sum(c.mse[name] for c in items) / len(items)), (0, 0))
             for name in items[0].mse if name and all(name in c.mse for c in items)}
    if any(c.low < -RANGE_SLACK for c in items):
        fixes.pop("range_unit")  # values below 0: not a [0, 1] output
    if any(c.low > -1.0 - 5 * RANGE_SLACK for c in items):
        fixes.pop("range_inverse")  # nothing below -1: not mapped twice
    if all(c.shifts is not None for c in items):
        shift = _best_of(sum(c.shifts for c in items))
        mse = sum(float(((_shifted_back(c.full, shift, c.m) - c.target) ** 2).mean())
                  for c in items) / len(items)
        fixes["shift"] = (_psnr(mse), shift)
    needed = {"shift": MIN_SET_SHIFT_GAIN_DB if pooled else MIN_SHIFT_GAIN_DB}
    passing = sorted(((p - base, name) for name, (p, _) in fixes.items()
                      if p - base >= needed.get(name, MIN_GAIN_DB)), reverse=True)
    for _, name in passing:
        psnr, shift = fixes[name]
        fixed = [_fixed(c, name, shift) for c in items]
        if sum(_correlation(c.target, f) for c, f in zip(items, fixed)) < (
                MIN_FIXED_CORRELATION * len(items)):
            continue  # no structure to explain: an output unrelated to its input
        before = sum(_ssim(c.target, c.output) for c in items) / len(items)
        after = sum(_ssim(c.target, f) for c, f in zip(items, fixed)) / len(items)
        if after - before >= MIN_SSIM_GAIN:
            return Finding(name, base, psnr, before, after, shift)
    return None


def _fixed(c: _Compared, name: str, shift: tuple[int, int]) -> torch.Tensor:
    """The output crop of ``c`` with the fix ``name`` applied, inside the margin."""
    if name == "shift":
        return _shifted_back(c.full, shift, c.m)
    h, w = c.full.shape[1:]
    return _candidates(c.full)[name][:, c.m:h - c.m, c.m:w - c.m]


def _shift_distances(target: torch.Tensor, y: torch.Tensor, m: int) -> torch.Tensor:
    """The mean squared error, on the channels' mean, of the output moved back by every shift
    ``(dy, dx)`` in ``[-m, m]``: ``[2m + 1, 2m + 1]``, entry ``[m + dy, m + dx]``; the output's
    content sits ``dy`` rows lower and ``dx`` columns right of the input's.

    Every shift at once: the squared distance of each shifted window to the input is
    ``sum(y_s^2) - 2 <y_s, x> + sum(x^2)``, whose window terms are one correlation each
    (``conv2d`` with the input, and with ones, as kernels)."""
    gy, gt = y.mean(0)[None, None].double(), target.mean(0)[None, None].double()
    cross = torch.nn.functional.conv2d(gy, gt)[0, 0]
    energy = torch.nn.functional.conv2d(gy * gy, torch.ones_like(gt))[0, 0]
    return ((energy - 2.0 * cross + float((gt * gt).sum())) / gt.numel()).float()


def _best_of(distances: torch.Tensor) -> tuple[int, int]:
    """The shift ``(dy, dx)`` of the smallest distance other than the unshifted output's."""
    m = distances.shape[0] // 2
    d = distances.clone()
    d[m, m] = math.inf  # the output as returned is the baseline, not a fix
    k = int(d.argmin())
    return k // d.shape[1] - m, k % d.shape[1] - m


def _shifted_back(y: torch.Tensor, shift: tuple[int, int], m: int) -> torch.Tensor:
    dy, dx = shift
    _, h, w = y.shape
    return y[:, m + dy:h - m + dy, m + dx:w - m + dx]


def _correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    """Pearson's correlation of two crops' values (0 where either is constant)."""
    a, b = a.flatten().double(), b.flatten().double()
    a, b = a - a.mean(), b - b.mean()
    norm = float(a.norm() * b.norm())
    return float(a @ b) / norm if norm > 0 else 0.0


def _ssim(a: torch.Tensor, b: torch.Tensor) -> float:
    """SSIM of two ``[C, h, w]`` crops on ``[-1, 1]`` (scikit-image, Gaussian window as in
    Wang et al. 2004); NaN where the crop is too small for its window."""
    from skimage.metrics import structural_similarity

    a_np, b_np = a.permute(1, 2, 0).numpy(), b.permute(1, 2, 0).numpy()
    if min(a_np.shape[:2]) < 7:
        return math.nan
    return float(structural_similarity(a_np, b_np, data_range=2.0, channel_axis=2,
                                       gaussian_weights=True, sigma=1.5,
                                       use_sample_covariance=False))

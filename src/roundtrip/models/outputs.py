"""Checks on what a model returns, in the layer every model shares (:class:`~.base.Adapter`).

A reconstruction that is not finite, has another shape than its input, or lies far outside the
adapter contract's ``[-1, 1]`` would still give a number once clamped (a NaN image becomes black
and scores 4 dB); token ids beyond the codebook would still fill a histogram. These checks turn
such outputs into an item's error with a reason that names the defect and the likely fix, so that
no table cell is computed from them:

- **shape**: a reconstruction is a float tensor of its input's shape ``[B, C, H, W]`` (or
  ``[B, C, D, H, W]``): the same batch, the same channels, the same spatial size;
- **finite**: no NaN or infinity;
- **range**: at most :data:`MAX_OUT_OF_RANGE_SHARE` of an item's values lie outside
  ``[-1 - t, 1 + t]``, ``t`` = the model's tolerance (``models.<name>.output_tolerance``, default
  :data:`DEFAULT_TOLERANCE`); a decoder's slight overshoot is clamped to ``[-1, 1]`` as before;
- **token ids**: integers with ``0 <= id < codebook_size`` (per quantizer for residual models),
  one row per input item;
- **repeats**: a second reconstruction of the same input equals the first within
  :data:`REPEAT_NOISE` but on :data:`REPEAT_SHARE` of the values (:func:`repeat_defect`); for a
  ``stochastic`` model, under the same seed.
"""
from __future__ import annotations

import torch

#: How far outside ``[-1, 1]`` a reconstruction's values may reach before they count as out of
#: range (a decoder's overshoot; ``models.<name>.output_tolerance`` changes it per model).
DEFAULT_TOLERANCE = 0.5
#: The share of an item's values allowed outside ``[-1 - t, 1 + t]``: a poorly trained decoder's
#: overshoot is clamped (and scored as what the model gives), an output in another range
#: (``[0, 255]``: nearly every value beyond) is refused.
MAX_OUT_OF_RANGE_SHARE = 0.25


#: Two reconstructions of one input that differ by more than this (on ``[-1, 1]``: half a grey
#: level of 8 bits) come from a model that samples; less is float noise (a GPU's
#: nondeterministic reductions, a batch against a single item: about 1e-6).
REPEAT_NOISE = 1.0 / 255
#: ... on more than this share of the values: a dropout of p = 0.01 changes 2 % of them between
#: two calls, a sampling decoder nearly all; a quantizer whose nearest code flips on the last
#: bits of a nondeterministic GPU kernel changes one patch (0.1 % of a page).
REPEAT_SHARE = 0.01


class OutputError(ValueError):
    """Some items of a batch failed the output checks.

    Attributes:
        reasons: one string per input item, ``""`` for an item that passed, else why it failed
            (the message names the defect and the fix).
    """

    def __init__(self, reasons: list[str]):
        self.reasons = list(reasons)
        failed = [r for r in self.reasons if r]
        more = f" (and {len(failed) - 1} more items)" if len(failed) > 1 else ""
        super().__init__((failed[0] if failed else "output check failed") + more)


def _size(shape) -> str:
    return "x".join(str(int(s)) for s in shape)


def reconstruction_defects(x: torch.Tensor, y, name: str, downsample: int = 1,
                           tolerance: float = DEFAULT_TOLERANCE) -> list[str]:
    """Why each item of a reconstruction ``y`` of the input ``x`` cannot be scored.

    Args:
        x: the model's input, float ``[B, C, *spatial]`` in ``[-1, 1]``.
        y: what ``decode(encode(x))`` returned (anything: it is checked).
        name: the model's config key, for the messages (``models.<name>``).
        downsample: the model's declared ``downsample`` (named when the size differs).
        tolerance: values beyond ``[-1 - tolerance, 1 + tolerance]`` count as out of range.

    Returns:
        One string per input item: ``""`` where the item passed, else its defect and fix.
        A defect of the whole batch (not a tensor, another shape) is given to every item.
    """
    n, key = int(x.shape[0]), f"models.{name}"
    whole = _shape_defect(x, y, key, downsample)
    if whole:
        return [whole] * n
    flat = y.detach().reshape(n, -1)
    nan, inf = torch.isnan(flat).sum(1), torch.isinf(flat).sum(1)
    finite = torch.where(torch.isfinite(flat), flat, torch.zeros((), dtype=flat.dtype))
    beyond = (finite.abs() > 1.0 + tolerance).float().mean(1)
    low, high = finite.amin(1), finite.amax(1)
    reasons = []
    for i in range(n):
        if nan[i] or inf[i]:
            what = ", ".join(f"{int(c):,} {w}" for c, w in ((nan[i], "NaN"), (inf[i], "infinite"))
                             if c)
            reasons.append(f"{key}: the reconstruction holds {what} values (of {flat.shape[1]:,}): "
                           "the model's forward pass is not finite for this input")
        elif beyond[i] > MAX_OUT_OF_RANGE_SHARE:
            reasons.append(
                f"{key}: outputs span [{float(low[i]):.4g}, {float(high[i]):.4g}], "
                f"{100 * float(beyond[i]):.0f} % of values beyond [-1, 1] by more than "
                f"{tolerance:g}: return [-1, 1] (or [0, 1] with {key}.input_range: [0, 1]; "
                f"{key}.output_tolerance widens the band)")
        else:
            reasons.append("")
    return reasons


def _shape_defect(x: torch.Tensor, y, key: str, downsample: int) -> str:
    """The defect of the whole batch's shape, or ``""``."""
    if not torch.is_tensor(y):
        return (f"{key}: decode returned {type(y).__name__}, not a tensor: return a float "
                f"tensor [B, C, H, W] in [-1, 1]")
    if not y.is_floating_point():
        return (f"{key}: decode returned a {str(y.dtype).replace('torch.', '')} tensor: return "
                "float values in [-1, 1]")
    if y.ndim != x.ndim:
        return (f"{key}: decode returned shape {tuple(y.shape)} for an input of shape "
                f"{tuple(x.shape)}: return [B, C, H, W], one image per input item")
    if y.shape[0] != x.shape[0]:
        return (f"{key}: decode returned {y.shape[0]} items for {x.shape[0]}: return one "
                "reconstruction per input item, in order")
    if y.shape[1] != x.shape[1]:
        return (f"{key}: outputs have {y.shape[1]} channel{'s' if y.shape[1] != 1 else ''} for "
                f"{x.shape[1]}-channel inputs: return [B, {x.shape[1]}, H, W] (repeat a "
                "grayscale output to every channel)")
    if y.shape[2:] != x.shape[2:]:
        # the input was padded to a multiple of ``downsample``: a wrong factor is the usual cause
        return (f"model returned {_size(y.shape[2:])} for {_size(x.shape[2:])}: "
                f"check {key}.downsample ({downsample})")
    return ""


def token_defects(ids, n: int, name: str, codebook_size: int | None) -> list[str]:
    """Why each item's token ids cannot be used.

    Args:
        ids: what :meth:`Adapter.tokens` returned: integer ``[B, n]``, ``[B, h, w]`` or
            ``[B, h, w, Q]`` (residual models: ``codebook_size`` per quantizer); ``k B`` rows,
            ``k`` per item in item order, where a one-channel model reads each channel of an RGB
            item (MONAI adapters).
        n: the number of input items ``B``.
        name: the model's config key.
        codebook_size: codes per quantizer, or None where the model does not declare it (then
            only ``id >= 0`` is checked).

    Returns:
        One string per item: ``""`` where its ids are usable, else the defect and fix.
    """
    key = f"models.{name}"
    if not torch.is_tensor(ids):
        return [f"{key}: tokens() returned {type(ids).__name__}, not a tensor of token ids"] * n
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        return [f"{key}: tokens() returned {str(ids.dtype).replace('torch.', '')} values: "
                "return integer token ids (a LongTensor)"] * n
    # a one-channel model reads an RGB item channel by channel: k rows per item, item-major
    if ids.ndim < 2 or ids.shape[0] == 0 or ids.shape[0] % n:
        return [f"{key}: tokens() returned shape {tuple(ids.shape)} for {n} items: return "
                "[B, n], [B, h, w] or [B, h, w, Q] token ids"] * n
    flat = ids.detach().reshape(n, -1)
    low, high = flat.amin(1), flat.amax(1)
    reasons = []
    for i in range(n):
        lo, hi = int(low[i]), int(high[i])
        if lo < 0 or (codebook_size is not None and hi >= codebook_size):
            bound = (f"the codebook of {codebook_size} ({key}.codebook_size)"
                     if codebook_size is not None else "0")
            fix = (f"return ids in [0, {codebook_size}) or set {key}.codebook_size to the "
                   "model's codebook size" if codebook_size is not None
                   else "return ids >= 0")
            reasons.append(f"{key}: token ids span [{lo}, {hi}], beyond {bound}: {fix}")
        else:
            reasons.append("")
    return reasons


def repeat_defect(first: torch.Tensor, again, name: str, stochastic: bool = False) -> str:
    """Why two reconstructions of the same input must not be scored, or ``""``.

    Args:
        first, again: the two reconstructions, float tensors of one shape (``again`` may be
            anything: a shape or type defect is left to :func:`reconstruction_defects`).
        name: the model's config key.
        stochastic: the model is declared stochastic and ``again`` ran under the same seed.

    Returns:
        ``""`` where they agree within :data:`REPEAT_NOISE` on all but :data:`REPEAT_SHARE` of
        the values, else the defect (how far and how many values) and the fix: keep dropout and
        sampling off in eval mode, or declare ``stochastic: true``.
    """
    if not torch.is_tensor(again) or again.shape != first.shape:
        return ""
    diff = (again.detach().float().cpu() - first.detach().float().cpu()).abs()
    beyond = float((diff > REPEAT_NOISE).float().mean())
    if beyond <= REPEAT_SHARE:
        return ""
    key = f"models.{name}"
    share = 100 * beyond
    what = f"by up to {float(diff.max()):.3g} on [-1, 1], {share:.0f} % of values"
    if stochastic:
        return (f"{key}.stochastic: true, but two reconstructions of the same input under the "
                f"same seed differ ({what}): the model draws from a generator roundtrip does not "
                "seed (torch, NumPy and random are seeded before each item): seed it from "
                "torch.initial_seed()")
    return (f"{key}: two reconstructions of the same input differ ({what}): an active dropout "
            "or sampling; use F.dropout(x, p, training=self.training) and the posterior mode, "
            f"or set {key}.stochastic: true to have every item seeded")

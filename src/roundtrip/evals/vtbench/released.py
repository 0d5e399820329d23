"""The convention of VTBench's released evaluator, from which the published Tables 1-3 come.

The paper (Sec. 4.1, App. F) names PSNR, SSIM, LPIPS, FID, CER and WER without their
parameters; the authors' released code (github.com/xingjianleng/VTBench @ 01368b3,
``evaluations/evaluate_images.py`` with ``character_error_rate.py``, ``word_error_rate.py`` and
``ocr.py``, run by ``examples/submit.sh`` with ``--batch_size 16`` and its default
``--image_size 256``; torchmetrics 1.7.1) fixes them:

* **the evaluated size**: both images, read as 8-bit RGB, are resized to 256 x 256 with
  ``torchvision.transforms.Resize((256, 256))`` (Pillow's bilinear filter) before every metric,
  whatever the model's size (:func:`evaluated_view`);
* **batches of 16 pairs** in sorted file-name order (:func:`released_order`, :data:`BATCH`);
* **PSNR** ``PeakSignalNoiseRatio()`` without ``data_range``: one sum of squared errors over the
  set, and ``R = max(0, max) - min(0, min)`` of the originals over the set (its ``min_target`` and
  ``max_target`` states start at 0.0) (:class:`ReleasedPSNR`);
* **SSIM** ``StructuralSimilarityIndexMeasure()`` defaults (Gaussian 11 x 11, sigma 1.5, K1 0.01,
  K2 0.03, reflect padding) with ``data_range`` taken per ``update``: the larger of the max minus
  min of the 16 reconstructions and of the 16 originals; the set's value is the float32 sum of
  the per-image values over the updates divided by the count (:func:`ssim_at_ranges`,
  :func:`released_ssim_set`);
* **LPIPS** AlexNet fed the [0, 1] tensors without ``normalize``; **FID** on
  ``(x * 255).clamp(0, 255).to(torch.uint8)`` of the 256 x 256 tensors (the same 8-bit values);
* **OCR** of each 256 x 256 image after ``resize((1024, 1024))`` with Pillow's default filter
  (bicubic) (:func:`ocr_view`), by ``google/gemma-3-12b-it`` with :data:`OCR_PROMPT`;
* **CER** of the set ``sum(edits) / sum(|OCR(original)|)``, **WER** the *character* Levenshtein
  distance between the space-joined word lists over the number of words of the original
  (:class:`ReleasedTextRates`).

roundtrip reproduces these operations without importing torchmetrics at run time (importing it
loads torchvision, transformers and scipy.signal: seconds in every job); the tests compare the
values with the authors' code run on the same inputs. Its sums run in one thread's order at any
thread count, so its values are the same bits at 1 thread (the ``portable`` mode) and at more:
torchmetrics' at one thread; torchmetrics itself, at more threads, sums a batch of a single
image in another order (its last bits, within 2e-7 in SSIM).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from rapidfuzz.distance import Levenshtein

from roundtrip.core.imaging import to_uint8
from roundtrip.metrics.image_quality import sse_levels

#: Side of the square the released evaluator scores at (``--image_size`` default).
EVAL_SIZE = 256
#: Pairs per ``update`` (``submit.sh``: ``--batch_size 16``).
BATCH = 16
#: Side of the image the released OCR reads (``ocr.py``: ``resize((1024, 1024))``).
OCR_SIZE = 1024
#: The released OCR model and prompt (``evaluations/ocr.py``), at most 1024 new tokens; it
#: calls ``generate`` with no decoding arguments, so the model folder's generation_config.json
#: decides (the preset's ``decoding: model``).
OCR_MODEL = "google/gemma-3-12b-it"
OCR_PROMPT = ("Extract and output only the text from the image in its original language. "
              "If there is no text, return nothing.")
OCR_MAX_NEW_TOKENS = 1024


def evaluated_view(image: np.ndarray, size: int = EVAL_SIZE) -> np.ndarray:
    """The image the released evaluator scores: the 8-bit RGB image resized to ``size`` x
    ``size`` with Pillow's bilinear filter (``transforms.Resize((size, size))`` on a PIL image;
    an image already at that size is unchanged).

    Args:
        image: ``(H, W, 3)`` ``uint8`` or ``uint16`` (16-bit values are rounded to 8 bits, as
            the released harness saves 8-bit PNGs).

    Returns:
        ``(size, size, 3)`` ``uint8``.
    """
    u8 = to_uint8(image)
    if u8.shape[:2] == (size, size):
        return u8
    return np.asarray(Image.fromarray(u8).resize((size, size), Image.BILINEAR))


def ocr_view(view: np.ndarray) -> np.ndarray:
    """What the released OCR reads of an evaluated image: ``resize((1024, 1024))`` with
    Pillow's default filter (bicubic for RGB). The evaluator's float round trip
    ``(x / 255 * 255).to(uint8)`` keeps every 8-bit value, so the input is the view itself.

    Args:
        view: ``(256, 256, 3)`` ``uint8`` (:func:`evaluated_view`).

    Returns:
        ``(1024, 1024, 3)`` ``uint8``.
    """
    return np.asarray(Image.fromarray(view).convert("RGB").resize((OCR_SIZE, OCR_SIZE)))


def released_order(names: list[str]) -> list[int]:
    """Indices of ``names`` (item ids) in the released evaluator's order: sorted file names
    ``{item_id}.png`` (``sorted(os.listdir(original_dir))``)."""
    return sorted(range(len(names)), key=lambda i: f"{names[i]}.png")


def as_tensor(view: np.ndarray) -> torch.Tensor:
    """``[1, 3, H, W]`` float32 in [0, 1] of a ``uint8`` image, as ``ToTensor`` makes it."""
    return torch.from_numpy(np.array(view, dtype=np.uint8)).permute(2, 0, 1)[None].float().div(255)


def _one_thread_sum(values: torch.Tensor) -> torch.Tensor:
    """The sum of every value of ``values`` (a 0-d tensor of its dtype) in the order one thread
    sums it, at any thread count: PyTorch splits a sum with a single output between its threads (a
    two-pass reduction, another order), and sums several rows one row per thread in one
    thread's order, so the values are summed as the first of two identical rows, in the
    order they lie in memory (where one thread sums a whole tensor).

    Args:
        values: any tensor whose elements fill their memory (contiguous in some dimension
            order, as an element-wise result is).
    """
    order = sorted(range(values.dim()), key=lambda d: values.stride(d), reverse=True)
    row = values.permute(order).reshape(1, -1)
    return torch.cat((row, row)).sum(dim=1)[0]


def _check(reconstruction: torch.Tensor, original: torch.Tensor) -> None:
    if reconstruction.shape != original.shape or reconstruction.ndim != 4:
        raise ValueError("the released evaluator compares images of one size: got "
                         f"{tuple(reconstruction.shape)} and {tuple(original.shape)}")


class ReleasedPSNR:
    """PSNR of a set as the released evaluator computes it, streaming.

    torchmetrics 1.7.1's ``PeakSignalNoiseRatio()`` (no ``data_range``) accumulates the sum of
    squared errors, the value count, and ``min_target``/``max_target`` that start at 0.0, then
    returns ``10 log10(R^2 / (SSE / N))`` with ``R = max_target - min_target``: for images in
    [0, 1], the largest value of the originals (originals in [0.25, 0.85] give R = 0.85, not
    0.6). The sums are kept in float64 (torchmetrics: float32 per update), a difference below
    1e-5 dB (tested against the authors' evaluator).
    """

    def __init__(self):
        self.sse, self.count, self.n = 0.0, 0, 0
        self.lo, self.hi = 0.0, 0.0

    def update(self, reconstruction: torch.Tensor, original: torch.Tensor) -> None:
        """Add one pair: float ``[B, 3, H, W]`` (the original is torchmetrics' target).

        Raises:
            ValueError: the two tensors differ in shape.
        """
        self.add(self.pair_stats(reconstruction, original))

    @staticmethod
    def pair_stats(reconstruction: torch.Tensor, original: torch.Tensor) -> tuple:
        """``(sse, count, lo, hi)`` of one pair, what :meth:`update` adds: the sum of squared
        errors (float64), the value count, and the min and max of the original.

        Raises:
            ValueError: the two tensors differ in shape.
        """
        _check(reconstruction, original)
        diff = reconstruction.double() - original.double()
        return (float(_one_thread_sum(diff * diff)), diff.numel(), float(original.min()),
                float(original.max()))

    @staticmethod
    def level_stats(reconstruction: np.ndarray, original: np.ndarray) -> tuple:
        """:meth:`pair_stats` of two 8-bit images from their integer levels: the sum of squared
        errors exact (``sum((a - b)^2) / 255^2``, one rounding; :meth:`pair_stats` of the
        float32 ``k / 255`` values agrees to about 1e-8 relative), the value count, and the
        original's min and max as ``ToTensor`` makes them (float32 ``k / 255``).

        Args:
            reconstruction, original: ``uint8`` arrays of one shape (:func:`evaluated_view`).

        Raises:
            ValueError: shapes differ, or an array is not ``uint8``.
        """
        if reconstruction.shape != original.shape:
            raise ValueError("the released evaluator compares images of one size: got "
                             f"{reconstruction.shape} and {original.shape}")
        if reconstruction.dtype != np.uint8 or original.dtype != np.uint8:
            raise ValueError(f"level_stats needs uint8 images, got {reconstruction.dtype}, "
                             f"{original.dtype}")
        sse = sse_levels(reconstruction, original) / (255 * 255)
        lo, hi = (float(np.float32(v) / np.float32(255)) for v in (original.min(), original.max()))
        return sse, original.size, lo, hi

    def add(self, stats: tuple) -> None:
        """Add one pair's :meth:`pair_stats`."""
        sse, count, lo, hi = stats
        self.sse += sse
        self.count += count
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.n += 1

    @property
    def data_range(self) -> float:
        """``max(0, max) - min(0, min)`` of the originals seen so far (NaN before any)."""
        return self.hi - self.lo if self.n else math.nan

    def compute(self) -> float:
        """PSNR in dB; NaN for an empty set, inf when every pair is identical."""
        if not self.n:
            return math.nan
        if self.sse == 0.0:
            return math.inf
        return 10.0 * math.log10(self.data_range ** 2 / (self.sse / self.count))


def _ssim_moments(preds: torch.Tensor, target: torch.Tensor) -> tuple:
    """The filtered moments of torchmetrics' SSIM (Gaussian 11 x 11, sigma 1.5, reflect pad 5),
    with its tensor operations in its order, so the values are its bits on CPU."""
    if min(preds.shape[-2:]) <= 5:
        raise ValueError("SSIM's 11 x 11 window reflect-pads by 5: images need more than 5 "
                         f"pixels a side, got {tuple(preds.shape[-2:])}")
    pad, size, sigma = 5, 11, 1.5  # torchmetrics: int(3.5 * sigma + 0.5) * 2 + 1 = 11
    dist = torch.arange(start=(1 - size) / 2, end=(1 + size) / 2, step=1, dtype=preds.dtype)
    gauss = torch.exp(-torch.pow(dist / sigma, 2) / 2)
    gauss = (gauss / gauss.sum()).unsqueeze(dim=0)
    b, channel = preds.shape[:2]
    # torchmetrics' torch.cat((p, t, p * p, t * t, p * t)) of the padded pair, each product
    # written into its place (the same values, without the copies of a concatenation)
    stacked = torch.empty((5 * b, channel, preds.shape[2] + 2 * pad, preds.shape[3] + 2 * pad),
                          dtype=preds.dtype)
    p, t = stacked[:b], stacked[b:2 * b]
    p.copy_(F.pad(preds, (pad, pad, pad, pad), mode="reflect"))
    t.copy_(F.pad(target, (pad, pad, pad, pad), mode="reflect"))
    torch.mul(p, p, out=stacked[2 * b:3 * b])
    torch.mul(t, t, out=stacked[3 * b:4 * b])
    torch.mul(p, t, out=stacked[4 * b:])
    # torchmetrics filters [5B, C, H, W] with C groups; every (map, channel) plane is filtered
    # on its own either way, so the planes are folded into the channels of one depthwise
    # convolution: oneDNN's CPU kernel then fills its 8-channel blocks (2.3x faster on a
    # 1024 px image) and sums each window in the same order (the same bits; tested).
    maps, planes = stacked.shape[0], stacked.shape[0] * channel
    kernel = torch.matmul(gauss.t(), gauss).expand(planes, 1, size, size)
    filtered = F.conv2d(stacked.reshape(1, planes, *stacked.shape[-2:]), kernel, groups=planes)
    mu_p, mu_t, e_pp, e_tt, e_pt = filtered.reshape(maps, channel, *filtered.shape[-2:]).split(
        preds.shape[0])
    mu_p_sq, mu_t_sq, mu_pt = mu_p.pow(2), mu_t.pow(2), mu_p * mu_t
    var_p = torch.clamp(e_pp - mu_p_sq, min=0.0)
    var_t = torch.clamp(e_tt - mu_t_sq, min=0.0)
    cov = e_pt - mu_pt
    # the terms of torchmetrics' map that do not depend on the data range, in its order
    return 2 * mu_pt, 2 * cov, mu_p_sq + mu_t_sq, var_p + var_t


def _ssim_map_into(moments: tuple, data_range: torch.Tensor, upper: torch.Tensor,
                   lower: torch.Tensor, part: torch.Tensor) -> torch.Tensor:
    """torchmetrics' SSIM map of :func:`_ssim_moments` at one data range, written into
    ``upper`` (returned): ``c1 = (0.01 R)^2``, ``c2 = (0.03 R)^2`` and
    ``((2 mu_pt + c1)(2 cov + c2)) / ((mu_p^2 + mu_t^2 + c1)(var_p + var_t + c2))`` in its
    order, in place in three buffers of the moments' shape (each IEEE operation rounds the same
    wherever it writes, and ``a * b`` is ``b * a``: the same bits). ``data_range``: a 0-d
    float32 tensor."""
    two_mu_pt, two_cov, mu_sq, var_sum = moments
    c1 = pow(0.01 * data_range, 2)
    c2 = pow(0.03 * data_range, 2)
    torch.add(two_cov, c2, out=upper)
    torch.add(var_sum, c2, out=lower)
    torch.add(two_mu_pt, c1, out=part)
    upper.mul_(part)                      # (2 mu_pt + c1) * (2 cov + c2)
    torch.add(mu_sq, c1, out=part)
    lower.mul_(part)                      # (mu^2 + c1) * (var + c2)
    return upper.div_(lower)


def _ssim_per_image(moments: tuple, data_range: torch.Tensor) -> torch.Tensor:
    """``[B]`` per-image SSIM of :func:`_ssim_moments` at one data range (a 0-d tensor): the
    mean of each image's :func:`_ssim_map_into`."""
    buffers = (torch.empty_like(moments[0]) for _ in range(3))
    ssim_map = _ssim_map_into(moments, data_range, *buffers)
    return ssim_map.reshape(ssim_map.shape[0], -1).mean(-1)


def released_ssim(reconstruction: torch.Tensor, original: torch.Tensor) -> float:
    """SSIM of one update with torchmetrics' defaults: ``data_range`` = the larger of the two
    tensors' max minus min, the mean of the per-image values (bit for bit torchmetrics' on CPU at
    one thread; tested): the operations :func:`ssim_at_ranges` runs, at one range (whose
    first value, at the pair's own range, is the *per-pair range* column).

    Args:
        reconstruction: ``[B, C, H, W]`` (``preds``), computed in float32.
        original: same shape (``target``).

    Raises:
        ValueError: the two tensors differ in shape or are not 4D, or ``H`` or ``W`` is at most
            5 (reflect padding by 5 needs more).
    """
    _check(reconstruction, original)
    preds, target = reconstruction.float(), original.float()
    data_range = max(preds.max() - preds.min(), target.max() - target.min())
    return float(torch.mean(_ssim_per_image(_ssim_moments(preds, target), data_range)))


def view_extremes(reconstruction: np.ndarray, original: np.ndarray) -> tuple[int, int, int, int]:
    """``(min, max)`` of the reconstruction then of the original, 8-bit levels of two
    :func:`evaluated_view` images: what a batch's SSIM data range is made of."""
    return (int(reconstruction.min()), int(reconstruction.max()), int(original.min()),
            int(original.max()))


def ssim_at_ranges(reconstruction: np.ndarray, original: np.ndarray) -> tuple[int, np.ndarray]:
    """The released SSIM of one 8-bit pair at every data range its batch of 16 can have.

    A batch's range is ``max(max - min of the 16 reconstructions, of the 16 originals)``, in
    8-bit levels ``k / 255`` with ``k`` at least the pair's own range ``k0``: the values for
    ``k = k0 .. 255`` are computed here, from one filtering, so that the set's batches, known
    only when every item is scored, pick theirs (:func:`released_ssim_set`). The range is
    ``k / 255`` in float32, as ``ToTensor`` makes a value ``k`` (torchmetrics subtracts two
    such values; they agree to float32 rounding, below 1e-7 in SSIM).

    Args:
        reconstruction, original: ``(H, W, 3)`` ``uint8`` of one size (:func:`evaluated_view`).

    Returns:
        ``(k0, values)``: float32 ``[256 - k0]``, the pair's SSIM at ``k = k0 + i``.

    Raises:
        ValueError: shapes differ or a side is at most 5 pixels.
    """
    if reconstruction.shape != original.shape:
        raise ValueError("the released evaluator compares images of one size: got "
                         f"{reconstruction.shape} and {original.shape}")
    pmin, pmax, tmin, tmax = view_extremes(reconstruction, original)
    k0 = max(pmax - pmin, tmax - tmin)
    moments = _ssim_moments(as_tensor(reconstruction), as_tensor(original))
    # k = 0 (a flat batch): c1 = c2 = 0, and the map is NaN where torchmetrics' is. The ranges
    # are evaluated in chunks, one map row per range: the same element-wise operations per
    # range, so the same bits as one range at a time.
    ranges = torch.arange(k0, 256, dtype=torch.float32).div(255)
    plane = tuple(m[0] for m in moments)
    maps = torch.empty((_RANGE_CHUNK,) + plane[0].shape, dtype=plane[0].dtype)
    buffers = (maps, torch.empty_like(maps[0]), torch.empty_like(maps[0]))
    values = torch.cat([_per_range(plane, chunk, *buffers) for chunk in ranges.split(_RANGE_CHUNK)])
    return k0, values.numpy().astype(np.float32)


def _per_range(plane: tuple, ranges: torch.Tensor, maps: torch.Tensor, lower: torch.Tensor,
               part: torch.Tensor) -> torch.Tensor:
    """The SSIM of one pair's moments (``plane``: each ``[C, H, W]``) at each of ``ranges``
    (``[n]``, ``n`` at most ``len(maps)``): each range's :func:`_ssim_map_into` written into a
    row of ``maps`` (``[_RANGE_CHUNK, C, H, W]``, reused from chunk to chunk with ``lower``
    and ``part``), then every row's mean at once. Rows past ``n`` repeat the last range, so a
    lone range is evaluated into two rows: PyTorch sums a single row in a thread-dependent
    order (:func:`_one_thread_sum`), several rows each in one thread's order, so every value is
    the one-thread value at any thread count. Each map is made of contiguous operations with a
    scalar (no broadcasting over a range dimension: 0.6x the time), in rows that stay in the
    CPU cache."""
    for row in range(len(maps)):
        _ssim_map_into(plane, ranges[min(row, len(ranges) - 1)], maps[row], lower, part)
    return maps.reshape(len(maps), -1).mean(-1)[:len(ranges)]


#: Data ranges evaluated at once by :func:`ssim_at_ranges` (2 ranges of a 256 x 256 RGB pair:
#: 0.8 MB per map, which stay in the CPU cache; 4 took 1.3x as long, 16 2.3x).
_RANGE_CHUNK = 2


def released_ssim_set(records: list[tuple[int, np.ndarray, tuple]]) -> tuple[float, list[float]]:
    """The released SSIM of a set from per-pair :func:`ssim_at_ranges` records.

    Args:
        records: ``(k0, values, extremes)`` per scored pair in the released order
            (:func:`released_order`), ``extremes`` from :func:`view_extremes`.

    Returns:
        ``(set SSIM, per-pair SSIM at its batch's range)``: batches of :data:`BATCH` in order,
        each batch's range from its pairs' extremes, the per-image values summed in float32
        per batch and over batches (torchmetrics' ``similarity`` state), divided by the count;
        NaN for no pair.
    """
    if not records:
        return math.nan, []
    similarity, total, per_pair = torch.tensor(0.0), torch.tensor(0.0), []
    for start in range(0, len(records), BATCH):
        batch = records[start:start + BATCH]
        ext = np.array([r[2] for r in batch])
        k = max(int(ext[:, 1].max() - ext[:, 0].min()), int(ext[:, 3].max() - ext[:, 2].min()))
        values = torch.tensor([float(v[k - k0]) for k0, v, _ in batch], dtype=torch.float32)
        similarity += values.sum()
        total += len(batch)
        per_pair += values.tolist()
    return float(similarity / total), per_pair


def released_text_counts(reference: str, hypothesis: str) -> dict[str, int]:
    """What the released ``CharacterErrorRate`` and ``WordErrorRate`` add for one pair of OCR
    outputs, and the word-level distance of Eq. 4 beside them.

    Returns:
        ``edits``: Levenshtein distance over characters; ``chars``: ``len(reference)``;
        ``wer_edits``: the released WER's numerator, the *character* Levenshtein distance
        between the whitespace-split words joined by single spaces; ``word_edits``: the
        Levenshtein distance over words (App. F, Eq. 4); ``words``: the reference's word count.
    """
    ref_words, hyp_words = reference.strip().split(), hypothesis.strip().split()
    return {"edits": Levenshtein.distance(hypothesis, reference), "chars": len(reference),
            "wer_edits": Levenshtein.distance(" ".join(hyp_words), " ".join(ref_words)),
            "word_edits": Levenshtein.distance(ref_words, hyp_words), "words": len(ref_words)}


class ReleasedTextRates:
    """CER and WER of a set as the released ``CharacterErrorRate``/``WordErrorRate`` compute
    them: the sums over the set's pairs divided once (``sum(edits) / sum(chars)``; 0.0 when the
    originals' OCR has no character at all, as the released ``compute`` returns), and Eq. 4's
    word-level WER pooled the same way, named apart (``wer_words``)."""

    def __init__(self):
        self.sums = {"edits": 0, "chars": 0, "wer_edits": 0, "word_edits": 0, "words": 0}
        self.n = 0

    def add(self, counts: dict[str, int]) -> None:
        """Add one pair's :func:`released_text_counts`."""
        for key in self.sums:
            self.sums[key] += int(counts[key])
        self.n += 1

    def rates(self) -> dict[str, float]:
        """``cer``, ``wer`` (released) and ``wer_words`` (Eq. 4); NaN with no pair."""
        s = self.sums
        if not self.n:
            return dict.fromkeys(("cer", "wer", "wer_words"), math.nan)
        return {"cer": s["edits"] / s["chars"] if s["chars"] else 0.0,
                "wer": s["wer_edits"] / s["words"] if s["words"] else 0.0,
                "wer_words": s["word_edits"] / s["words"] if s["words"] else 0.0}


def pooled_released_psnr(per_item) -> tuple[float, int]:
    """The released PSNR of several sets pooled (roundtrip's reading of Table 3's multilingual
    block: the released code scores each language apart), from per-item ``mse_vtbench``,
    ``n_values_vtbench`` and ``ref_max_vtbench``/``ref_min_vtbench`` (the evaluated views) of
    the scored (``status == "ok"``) rows; the range starts at 0 as :class:`ReleasedPSNR`'s.

    Returns:
        ``(PSNR in dB, pairs pooled)``; NaN with 0 pairs.
    """
    ok = per_item[per_item["status"] == "ok"].dropna(subset=["mse_vtbench", "ref_max_vtbench"])
    if ok.empty:
        return math.nan, 0
    psnr = ReleasedPSNR()
    for row in ok.itertuples():
        n = int(row.n_values_vtbench)
        psnr.add((float(row.mse_vtbench) * n, n, float(row.ref_min_vtbench),
                  float(row.ref_max_vtbench)))
    return psnr.compute(), len(ok)

"""PSNR and SSIM against scikit-image's reference implementations on real photographs."""
import math

import numpy as np
import pytest
import skimage.data
import torch
from conftest import jpeg_roundtrip
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from roundtrip.metrics.image_quality import (
    REFLECT_OWN_RANGE,
    VALID,
    SSIMConvention,
    _gaussian_kernel,
    _ssim_conventions_torch,
    mse,
    mse_levels,
    pooled_psnr,
    psnr,
    ssim,
    ssim_batch,
    ssim_conventions,
)


def _unit(a):
    return a.astype(np.float64) / 255.0


def test_psnr_matches_skimage(degraded_pairs):
    for name, x, y in degraded_pairs:
        ours = psnr(_unit(x), _unit(y))
        ref = peak_signal_noise_ratio(_unit(x), _unit(y), data_range=1.0)
        assert abs(ours - ref) < 1e-6, name


def test_ssim_matches_skimage_gaussian(degraded_pairs):
    for name, x, y in degraded_pairs:
        ours = ssim(_unit(x), _unit(y))
        ref = structural_similarity(_unit(x), _unit(y), data_range=1.0, channel_axis=-1,
                                    gaussian_weights=True, sigma=1.5,
                                    use_sample_covariance=False)
        assert abs(ours - ref) < 1e-4, name
        assert 0 < ours < 1


def test_ssim_float32_path_agrees_with_skimage(degraded_pairs):
    """The workflow scores in float32; centered moments keep it within 1e-5 of scikit-image,
    also on a scanned page (large flat white areas, where E[x^2] - E[x]^2 cancels)."""
    page = np.repeat(skimage.data.page()[..., None], 3, axis=2)
    pairs = [(x, y) for _, x, y in degraded_pairs] + [(page, jpeg_roundtrip(page, 30))]
    for x, y in pairs:
        tx = torch.from_numpy(_unit(x).astype(np.float32)).permute(2, 0, 1)[None]
        ty = torch.from_numpy(_unit(y).astype(np.float32)).permute(2, 0, 1)[None]
        ours = float(ssim_batch(tx, ty, dtype=torch.float32)[0])
        ref = structural_similarity(_unit(x), _unit(y), channel_axis=2, gaussian_weights=True,
                                    sigma=1.5, use_sample_covariance=False, data_range=1.0)
        assert abs(ours - ref) < 1e-5


def test_ssim_batch_equals_single_items(degraded_pairs):
    same = [(x, y) for n, x, y in degraded_pairs if n.startswith("astronaut")]
    tx = torch.stack([torch.from_numpy(_unit(x)).permute(2, 0, 1) for x, _ in same])
    ty = torch.stack([torch.from_numpy(_unit(y)).permute(2, 0, 1) for _, y in same])
    batch = ssim_batch(tx, ty)
    for k, (x, y) in enumerate(same):
        assert abs(float(batch[k]) - ssim(_unit(x), _unit(y))) < 1e-12


def _whole_image_ssim(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The PyTorch path's float32 formula on whole images, without strips (its reference)."""
    from roundtrip.metrics.image_quality import SSIM_K1, SSIM_K2, _blur_valid, _gaussian_kernel

    k = _gaussian_kernel(1.5, 3.5, torch.float32)
    b, c, h, w = x.shape
    x, y = x.float().reshape(b * c, h, w), y.float().reshape(b * c, h, w)
    shift = ((x.mean(dim=(1, 2)) + y.mean(dim=(1, 2))) / 2)[:, None, None]
    x, y = x - shift, y - shift
    mx0, my0 = _blur_valid(x, k), _blur_valid(y, k)
    vx, vy = _blur_valid(x * x, k) - mx0 * mx0, _blur_valid(y * y, k) - my0 * my0
    cxy = _blur_valid(x * y, k) - mx0 * my0
    mx, my = mx0 + shift, my0 + shift
    c1, c2 = SSIM_K1 ** 2, SSIM_K2 ** 2
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean(dim=(1, 2)).view(b, c).mean(dim=1).to(torch.float64)


def test_torch_path_strips_give_the_whole_image_bits():
    """The PyTorch path (a GPU job's; here on the CPU) builds its map in strips of rows; the
    value is the whole-image computation's to the bit, for (H, W, 3) arrays seen as
    [1, 3, H, W] (as the scorer passes them: the mean then sums channels innermost) and for
    contiguous batches, over several strips."""
    rng = np.random.default_rng(5)
    images = [skimage.data.astronaut(), skimage.data.coffee(),
              rng.integers(0, 256, (1024, 1024, 3)).astype(np.uint8)]
    for image in images:
        x = _unit(image)
        y = np.clip(x + rng.normal(0, 0.05, x.shape), 0, 1)
        hwc = [torch.from_numpy(a).permute(2, 0, 1)[None] for a in (x, y)]
        chw = [t.contiguous() for t in hwc]
        for tx, ty in (hwc, chw):
            value = _ssim_conventions_torch(tx, ty, [VALID], 1.5, torch.float32)[0]
            assert torch.equal(value, _whole_image_ssim(tx, ty))


def _whole_plane_ssim(x: np.ndarray, y: np.ndarray) -> float:
    """The CPU path's float32 formula on whole (H, W, 3) planes, without strips, each map
    summed exactly (``math.fsum``): OpenCV's filter of the reflect-101-bordered plane, the
    valid region its interior."""
    import cv2

    k = _gaussian_kernel(1.5, 3.5, torch.float32).numpy()
    values = []
    for ch in range(3):
        xp, yp = (np.ascontiguousarray(a[..., ch], dtype=np.float32) for a in (x, y))
        total = (np.add.reduce(xp, axis=None, dtype=np.float64)
                 + np.add.reduce(yp, axis=None, dtype=np.float64))
        shift = np.float32(total / (2 * xp.size))
        xp, yp = xp - shift, yp - shift
        mx0, my0, exx, eyy, exy = (cv2.sepFilter2D(z, -1, k, k, borderType=cv2.BORDER_REFLECT_101)
                                   for z in (xp, yp, xp * xp, yp * yp, xp * yp))
        vx, vy, cxy = exx - mx0 * mx0, eyy - my0 * my0, exy - mx0 * my0
        mx, my = mx0 + shift, my0 + shift
        c1, c2 = np.float32(0.01 ** 2), np.float32(0.03 ** 2)
        s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        inner = s[5:-5, 5:-5].astype(np.float64)
        values.append(math.fsum(inner.ravel()) / inner.size)
    return sum(values) / 3


def test_cpu_path_is_the_whole_plane_computation_and_any_layout_gives_its_bits():
    """On the CPU, SSIM's maps are built in strips of rows from OpenCV's filtering of whole
    planes: the value is the whole-plane formula's to float64 summation (1e-12, the strips'
    sums against an exact one), and the same bits for (H, W, 3) arrays seen as [1, 3, H, W]
    (as the scorer passes them) and for contiguous tensors, over several strips."""
    rng = np.random.default_rng(5)
    images = [skimage.data.astronaut(), skimage.data.coffee()[:397, :531],
              rng.integers(0, 256, (1024, 1024, 3)).astype(np.uint8)]
    for image in images:
        x = _unit(image).astype(np.float32)
        y = np.clip(x + rng.normal(0, 0.05, x.shape), 0, 1).astype(np.float32)
        hwc = [torch.from_numpy(a).permute(2, 0, 1)[None] for a in (x, y)]
        chw = [t.contiguous() for t in hwc]
        value = ssim_batch(*hwc, dtype=torch.float32)
        assert torch.equal(value, ssim_batch(*chw, dtype=torch.float32))
        assert float(value[0]) == pytest.approx(_whole_plane_ssim(x, y), abs=1e-12)


def test_opencv_filter_is_the_valid_blur_to_float32_rounding(photos):
    """The CPU path's filter (OpenCV's separable filter of the reflect-101-bordered plane, fused
    multiply-adds in its AVX2 kernels) against the PyTorch path's (products rounded one by one,
    on the reflect-padded plane): within 1.2e-7 on values in [-0.5, 0.5] (2 float32 ulps of
    0.5), most values differing in their last bits. In float64 the two paths' SSIMs agree to
    1e-12 under every convention."""
    import cv2

    from roundtrip.metrics.image_quality import _blur_valid

    k = _gaussian_kernel(1.5, 3.5, torch.float32)
    plane = (np.random.default_rng(2).random((301, 517)) - 0.5).astype(np.float32)
    ours = cv2.sepFilter2D(plane, -1, k.numpy(), k.numpy(), borderType=cv2.BORDER_REFLECT_101)
    padded = torch.nn.functional.pad(torch.from_numpy(plane)[None, None], (5, 5, 5, 5),
                                     mode="reflect")[0]
    theirs = _blur_valid(padded, k)[0].numpy()
    assert np.abs(ours - theirs).max() <= 1.2e-7
    assert (ours != theirs).mean() > 0.3
    x = photos["coffee"][:200, 100:420]
    tx, ty = (torch.from_numpy(_unit(a)).permute(2, 0, 1)[None]
              for a in (x, jpeg_roundtrip(x, 20)))
    cpu = ssim_conventions(ty, tx, CONVENTIONS)
    for a, b in zip(cpu, _ssim_conventions_torch(ty, tx, CONVENTIONS, 1.5, torch.float64)):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)


def _pair_tensors(x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """``(H, W, 3)`` uint8 arrays as the scorer passes them: float32 in [0, 1], ``[1, 3, H, W]``
    views of the ``(H, W, 3)`` arrays."""
    return tuple(torch.from_numpy(_unit(a).astype(np.float32)).permute(2, 0, 1)[None]
                 for a in (x, y))


#: Every kind of convention: roundtrip's, torchmetrics' default, and the other two mixes.
CONVENTIONS = [VALID, REFLECT_OWN_RANGE, SSIMConvention("reflect", 1.0),
               SSIMConvention("valid", None, True)]


def test_shared_moments_give_each_convention_its_own_value(photos):
    """One filtering read by every convention gives, for each, the value it gets alone, to the
    bit: on a photograph through JPEG, a scanned page (flat white), a non-square crop and a
    batch of two with its batch-wide range. Against the PyTorch path (a GPU job's, and the
    CPU's before OpenCV filtered the moments): every convention within 1e-6 here (float32
    rounding of the filter's sums; up to 6.6e-6 on a near-black 1024 px photograph, where the
    PyTorch path is the one farther from float64), the stated change of earlier runs' scores."""
    page = np.repeat(skimage.data.page()[..., None], 3, axis=2)
    astronaut = photos["astronaut"][:256, 128:384]
    cases = [_pair_tensors(astronaut, jpeg_roundtrip(astronaut, 30)),
             _pair_tensors(page, jpeg_roundtrip(page, 30)),
             _pair_tensors(photos["coffee"][:97, 31:300], jpeg_roundtrip(photos["coffee"], 50)[:97, 31:300])]
    flipped = _pair_tensors(astronaut[::-1].copy(), astronaut)
    x2, y2 = (torch.cat(t) for t in zip(cases[0], flipped))
    cases.append((x2, y2))
    for x, y in cases:
        together = ssim_conventions(y, x, CONVENTIONS, dtype=torch.float32)
        for convention, value in zip(CONVENTIONS, together):
            alone = ssim_conventions(y, x, [convention], dtype=torch.float32)[0]
            assert value.shape == (x.shape[0],) and torch.isfinite(value).all()
            assert torch.equal(value, alone), convention
        torch_path = _ssim_conventions_torch(y, x, CONVENTIONS, 1.5, torch.float32)
        for convention, value, before in zip(CONVENTIONS, together, torch_path):
            assert torch.allclose(value, before, rtol=0, atol=1e-6), convention
        # the regions differ: the same moments read two ways give two values
        assert not torch.equal(together[0], together[1])


def test_ssim_same_bits_at_one_and_two_threads(photos):
    """Every convention's value is the same at one and two PyTorch threads and at one and
    four OpenCV threads (OpenCV runs the filter in the calling thread, numpy the rest; the
    PyTorch path's maps are element-wise and its reductions run per channel, or in numpy)."""
    import cv2

    x, y = _pair_tensors(photos["chelsea"], jpeg_roundtrip(photos["chelsea"], 20))
    before, before_cv = torch.get_num_threads(), cv2.getNumThreads()
    try:
        values, torch_path = {}, {}
        for threads in (1, 2, 4):
            torch.set_num_threads(min(threads, 2))
            cv2.setNumThreads(threads)
            values[threads] = ssim_conventions(y, x, CONVENTIONS, dtype=torch.float32)
            torch_path[threads] = _ssim_conventions_torch(y, x, CONVENTIONS, 1.5, torch.float32)
    finally:
        torch.set_num_threads(before)
        cv2.setNumThreads(before_cv)
    for runs in (values, torch_path):
        assert all(torch.equal(a, b) for t in (2, 4) for a, b in zip(runs[1], runs[t]))


def test_mse_is_the_float64_difference(degraded_pairs):
    """``mse`` casts both images to float64 before subtracting: the same bits as subtracting
    float64 copies."""
    for _, x, y in degraded_pairs[:3]:
        ux, uy = (a.astype(np.float32) / np.float32(255) for a in (x, y))
        expected = float(np.mean((ux.astype(np.float64) - uy.astype(np.float64)) ** 2))
        assert mse(ux, uy) == expected


def test_mse_levels_is_exact(degraded_pairs):
    """``mse_levels`` is the exact MSE of the integer levels (a fraction of integers, one
    rounding); ``mse`` of the float32 [0, 1] values agrees to 1e-7 relative (its rounding of
    each value to float32). 16-bit levels too; mixed or float inputs are refused."""
    from fractions import Fraction

    for _, x, y in degraded_pairs[:3]:
        d = x.astype(np.int64) - y.astype(np.int64)
        assert mse_levels(x, y) == float(Fraction(int((d * d).sum()), d.size * 255 ** 2))
        ux, uy = (a.astype(np.float32) / np.float32(255) for a in (x, y))
        assert mse_levels(x, y) == pytest.approx(mse(ux, uy), rel=1e-7)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 65536, (31, 17, 3), dtype=np.uint16) for _ in range(2))
    d = a.astype(np.int64) - b.astype(np.int64)
    assert mse_levels(a, b) == float(Fraction(int((d * d).sum()), d.size * 65535 ** 2))
    assert mse_levels(a, a) == 0.0
    # more values than one of sse_levels' blocks, not a multiple of it, one input a strided view
    from roundtrip.metrics.image_quality import _SSE_BLOCK, sse_levels

    big = rng.integers(0, 256, (2 * _SSE_BLOCK // 3 + 7, 3, 2), dtype=np.uint8)
    other = rng.integers(0, 256, (3, 2 * _SSE_BLOCK // 3 + 7, 2), dtype=np.uint8).transpose(1, 0, 2)
    d = big.astype(np.int64) - other.astype(np.int64)
    assert big.size > _SSE_BLOCK and big.size % _SSE_BLOCK
    assert sse_levels(big, other) == int((d * d).sum())
    with pytest.raises(ValueError, match="uint8 or two uint16"):
        mse_levels(a, b.astype(np.uint8))
    with pytest.raises(ValueError, match="shape"):
        mse_levels(a, b[:3])


def test_identical_images():
    x = np.random.default_rng(0).random((32, 40, 3))
    assert psnr(x, x) == math.inf
    assert ssim(x, x) == pytest.approx(1.0, abs=1e-12)


def test_pooled_psnr_weights_by_pixel_count():
    mses, n = np.array([1e-3, 1e-2]), np.array([100, 300])
    expected = 10 * math.log10(1 / ((1e-3 * 100 + 1e-2 * 300) / 400))
    assert pooled_psnr(mses, n) == pytest.approx(expected, abs=1e-12)
    # pooled PSNR stays finite when one item is perfect, unlike the mean of per-item PSNRs
    assert math.isfinite(pooled_psnr(np.array([0.0, 1e-3]), np.array([10, 10])))


def test_errors():
    with pytest.raises(ValueError, match="shape"):
        mse(np.zeros((4, 4)), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="window"):
        ssim(np.zeros((8, 8, 3)), np.zeros((8, 8, 3)))
    small = torch.zeros(1, 3, 5, 9)
    with pytest.raises(ValueError, match="more than 5 pixels"):
        ssim_conventions(small, small, [REFLECT_OWN_RANGE])
    with pytest.raises(ValueError, match="at least one"):
        ssim_conventions(small, small, [])
    with pytest.raises(ValueError, match="region"):
        SSIMConvention("same")

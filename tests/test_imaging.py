"""Image I/O: every supported file flavour becomes canonical RGB at its bit depth."""
import numpy as np
import png
import pytest
import skimage.data
from PIL import Image

from roundtrip.core.imaging import (ImageReadError, from_unit, read_image, same_pixels, to_unit,
                                    write_png)


def test_rgb_png_roundtrip_is_exact(tmp_path):
    img = skimage.data.astronaut()
    write_png(tmp_path / "a.png", img)
    out = read_image(tmp_path / "a.png")
    assert out.dtype == np.uint8 and np.array_equal(out, img)


def test_grayscale_is_replicated_to_three_channels(tmp_path):
    cam = skimage.data.camera()
    Image.fromarray(cam).save(tmp_path / "g.png")
    out = read_image(tmp_path / "g.png")
    assert out.shape == cam.shape + (3,)
    assert all(np.array_equal(out[..., c], cam) for c in range(3))


def test_rgba_is_composited_over_white(tmp_path):
    rgba = np.zeros((4, 5, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[:, :2, 3] = 255   # opaque red-ish
    rgba[:, 2:, 3] = 0     # fully transparent -> white
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    out = read_image(tmp_path / "a.png")
    assert out[0, 0].tolist() == [200, 0, 0]
    assert out[0, 4].tolist() == [255, 255, 255]


def test_16bit_rgb_png_keeps_full_precision(tmp_path):
    rng = np.random.default_rng(1)
    img = rng.integers(0, 65536, (7, 9, 3), dtype=np.uint16)
    write_png(tmp_path / "c.png", img)
    # Pillow alone would truncate to 8 bits; the reader must not.
    assert Image.open(tmp_path / "c.png").mode == "RGB"
    out = read_image(tmp_path / "c.png")
    assert out.dtype == np.uint16 and np.array_equal(out, img)


def test_16bit_gray_with_alpha(tmp_path):
    g = np.full((3, 4), 1000, np.uint16)
    a = np.full((3, 4), 65535, np.uint16)
    a[0, 0] = 0
    la = np.stack([g, a], -1).reshape(3, 8)
    png.Writer(width=4, height=3, greyscale=True, alpha=True, bitdepth=16).write(
        open(tmp_path / "la.png", "wb"), la)
    out = read_image(tmp_path / "la.png")
    assert out.dtype == np.uint16
    assert out[1, 1].tolist() == [1000] * 3 and out[0, 0].tolist() == [65535] * 3


def test_exif_orientation_is_applied(tmp_path):
    img = skimage.data.chelsea()  # 300 x 451, landscape
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 CW on display
    Image.fromarray(img).save(tmp_path / "r.jpg", quality=95, exif=exif)
    out = read_image(tmp_path / "r.jpg")
    assert out.shape[:2] == (451, 300)
    ref = np.asarray(Image.fromarray(img).rotate(-90, expand=True))
    assert np.abs(out.astype(int) - ref.astype(int)).mean() < 3  # JPEG noise only


def test_palette_image(tmp_path):
    Image.fromarray(skimage.data.astronaut()).convert("P").save(tmp_path / "p.png")
    out = read_image(tmp_path / "p.png")
    assert out.shape == (512, 512, 3) and out.dtype == np.uint8


@pytest.mark.parametrize("content", [b"", b"not an image at all", None])
def test_unreadable_files_raise_clear_error(tmp_path, content):
    path = tmp_path / "bad.png"
    if content is None:  # truncated PNG
        write_png(path, skimage.data.astronaut())
        path.write_bytes(path.read_bytes()[:2000])
    else:
        path.write_bytes(content)
    with pytest.raises(ImageReadError, match="bad.png"):
        read_image(path)


def test_missing_file_raises(tmp_path):
    with pytest.raises(ImageReadError, match="cannot read"):
        read_image(tmp_path / "nope.png")


def test_unit_conversions_invert_exactly():
    a8 = np.arange(256, dtype=np.uint8).reshape(16, 16)
    assert np.array_equal(from_unit(to_unit(a8), np.uint8), a8)
    a16 = np.arange(0, 65536, 7, dtype=np.uint16)
    assert np.array_equal(from_unit(to_unit(a16), np.uint16), a16)


def test_to_uint8_rounds_16_bit_and_keeps_8_bit():
    from roundtrip.core.imaging import to_uint8

    v = np.arange(0, 65536, dtype=np.uint16).reshape(256, 256, 1).repeat(3, axis=2)
    np.testing.assert_array_equal(to_uint8(v), np.round(v / 257.0).astype(np.uint8))
    u = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    assert to_uint8(u) is u


def test_same_pixels_needs_shape_dtype_and_values():
    a = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    assert same_pixels(a, a.copy())
    assert not same_pixels(a, a.astype(np.uint16))  # equal values, other dtype (16-bit source)
    assert not same_pixels(a, a.reshape(2, 3, 2))  # same values, other shape
    b = a.copy()
    b[1, 1, 2] += 1
    assert not same_pixels(a, b)


def _pillow_rgb(data: bytes) -> np.ndarray:
    import io

    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return np.asarray(im.convert("RGB"))


def test_plain_rgb_pngs_are_decoded_by_imagecodecs_to_pillows_pixels(tmp_path):
    """A PNG of 8-bit RGB with no chunk but its header, image data and end (as roundtrip and
    Pillow write them) is decoded by imagecodecs: Pillow's pixels, on photographs, a scanned page,
    noise and odd sizes (1 x 1, one row, one column) at zlib levels 0 to 9 and Pillow's
    ``optimize``. A file with any other chunk (text, resolution, a transparent colour), alpha,
    16 bits, bytes after the end or missing ones goes to Pillow; a plain file with damaged data
    gets Pillow's reason."""
    import io

    from roundtrip.core.imaging import _decode_plain_png, _plain_rgb8_png, decode_image

    rng = np.random.default_rng(0)
    images = [skimage.data.astronaut(), skimage.data.coffee()[:301, :257],
              np.repeat(skimage.data.page()[..., None], 3, axis=2),
              rng.integers(0, 256, (1, 1, 3), dtype=np.uint8),
              rng.integers(0, 256, (1, 517, 3), dtype=np.uint8),
              rng.integers(0, 256, (333, 1, 3), dtype=np.uint8),
              rng.integers(0, 256, (257, 263, 3), dtype=np.uint8)]
    for image in images:
        for options in [{"compress_level": level} for level in range(10)] + [{"optimize": True}]:
            buf = io.BytesIO()
            Image.fromarray(image).save(buf, format="PNG", **options)
            data = buf.getvalue()
            assert _plain_rgb8_png(data), (image.shape, options)
            decoded = _decode_plain_png(data)
            assert decoded is not None and np.array_equal(decoded, _pillow_rgb(data))
            assert np.array_equal(decoded, image) and decoded.dtype == np.uint8
    write_png(tmp_path / "w.png", images[0], 1)
    data = (tmp_path / "w.png").read_bytes()
    assert _plain_rgb8_png(data) and np.array_equal(read_image(tmp_path / "w.png"), images[0])

    from PIL import PngImagePlugin

    text = PngImagePlugin.PngInfo()
    text.add_text("Software", "x")
    others = [{"pnginfo": text}, {"dpi": (72, 72)}, {"transparency": (0, 0, 0)}]
    for options in others:
        buf = io.BytesIO()
        Image.fromarray(images[1]).save(buf, format="PNG", **options)
        assert not _plain_rgb8_png(buf.getvalue()), options
    buf = io.BytesIO()
    Image.fromarray(images[1]).convert("RGBA").save(buf, format="PNG")
    assert not _plain_rgb8_png(buf.getvalue())
    write_png(tmp_path / "c16.png", images[1].astype(np.uint16) * 257)
    assert not _plain_rgb8_png((tmp_path / "c16.png").read_bytes())
    assert not _plain_rgb8_png(data + b"\0") and not _plain_rgb8_png(data[:-1])
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0xFF
    assert _plain_rgb8_png(bytes(damaged)) and _decode_plain_png(bytes(damaged)) is None
    with pytest.raises(ImageReadError, match="cannot decode d.png"):
        decode_image(bytes(damaged), "d.png")


def test_fast_png_writer_keeps_pixels_with_up_filtered_rows(tmp_path, monkeypatch):
    """``write_png`` at :data:`FAST_PNG` writes 8-bit images through imagecodecs:
    a plain PNG (IHDR, IDAT, IEND) whose every row after the first is "Up"-filtered (filter
    byte 2; the first row's Up is its None, which libpng may write as 0), decoded by Pillow to the same pixels, odd and
    one-pixel sizes included; level 6 stays Pillow's encoder (its adaptive filters), and Pillow
    writes the file where imagecodecs cannot."""
    import zlib

    from roundtrip.core.imaging import FAST_PNG, _plain_rgb8_png

    rng = np.random.default_rng(3)
    images = [skimage.data.astronaut(), skimage.data.coffee()[:301, :257],
              rng.integers(0, 256, (1, 1, 3), dtype=np.uint8),
              rng.integers(0, 256, (333, 1, 3), dtype=np.uint8)]

    def row_filters(data: bytes, image: np.ndarray) -> set[int]:
        pos, idat = 8, b""
        while pos < len(data):
            n = int.from_bytes(data[pos:pos + 4], "big")
            if data[pos + 4:pos + 8] == b"IDAT":
                idat += data[pos + 8:pos + 8 + n]
            pos += 12 + n
        raw = zlib.decompress(idat)
        stride = image.shape[1] * 3 + 1
        return {raw[r * stride] for r in range(1, image.shape[0])}, raw[0]

    for image in images:
        write_png(tmp_path / "f.png", image, FAST_PNG)
        data = (tmp_path / "f.png").read_bytes()
        assert _plain_rgb8_png(data)
        assert np.array_equal(_pillow_rgb(data), image)
        later, first = row_filters(data, image)
        assert later <= {2} and first in (0, 2)
    write_png(tmp_path / "d.png", images[0])
    assert row_filters((tmp_path / "d.png").read_bytes(), images[0])[0] != {2}
    # where imagecodecs refuses (its output estimate), Pillow writes the same pixels
    import imagecodecs

    def refuse(*args, **kwargs):
        raise imagecodecs.PngError("png_write_data_fn output stream too small")

    monkeypatch.setattr(imagecodecs, "png_encode", refuse)
    write_png(tmp_path / "p.png", images[1], FAST_PNG)
    assert np.array_equal(read_image(tmp_path / "p.png"), images[1])

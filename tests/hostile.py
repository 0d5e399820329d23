"""Hostile input: image files and NIfTI volumes a user's folder may hold, each with the outcome
roundtrip must give it.

:func:`write_images` and :func:`write_volumes` write one file (or a few) per kind into a folder
and return ``{kind: Expect}``: the item ids the kind produces, their manifest status and a piece
of their reason (or of their ``notes``).
"""
from __future__ import annotations

import gzip
import io
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import png
from PIL import Image


@dataclass
class Expect:
    """What the manifest must say about the items of one hostile kind."""
    item_ids: tuple[str, ...]
    status: str                # "ok" or "error"
    text: str = ""             # a piece of the reason (errors) or of the notes (ok items)
    column: str = "reason"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_declaring(width: int, height: int, bit_depth: int = 8, idat: bytes | None = None) -> bytes:
    """A PNG whose header declares ``width x height`` RGB pixels, with a tiny (or the given)
    IDAT: a decompression bomb's header without its payload."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, 2, 0, 0, 0)
    body = idat if idat is not None else zlib.compress(b"\x00" * 64)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", body)
            + _png_chunk(b"IEND", b""))


def _rgb(h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.linspace(0, 255, w)[None, :, None] * np.ones((h, 1, 3))
    return np.clip(base + rng.normal(0, 20, (h, w, 3)), 0, 255).astype(np.uint8)


def _save(img: Image.Image | np.ndarray, path: Path, **kw) -> None:
    (img if isinstance(img, Image.Image) else Image.fromarray(img)).save(path, **kw)


def write_images(folder: Path) -> dict[str, Expect]:
    """At least 40 hostile and awkward image files in ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Expect] = {}

    def add(kind, ids, status, text="", column="reason"):
        out[kind] = Expect(tuple(ids), status, text, column)

    # -- refused before decoding -------------------------------------------------------------
    (folder / "bomb8.png").write_bytes(png_declaring(30000, 30000))
    add("8-bit decompression bomb", ["bomb8"], "error", "declares 30000 x 30000 pixels")
    (folder / "bomb16.png").write_bytes(png_declaring(30000, 30000, 16))
    add("16-bit decompression bomb", ["bomb16"], "error", "above limits.max_pixels")
    (folder / "wide_bomb.gif").write_bytes(_gif_declaring(65000, 65000))
    add("GIF declaring 65000 x 65000", ["wide_bomb"], "error", "above limits.max_pixels")
    # -- undecodable -------------------------------------------------------------------------
    (folder / "corrupt16.png").write_bytes(png_declaring(8, 8, 16, idat=b"\x78\x9c garbage!"))
    add("16-bit PNG, corrupt zlib stream", ["corrupt16"], "error", "cannot decode 16-bit PNG")
    (folder / "corrupt8.png").write_bytes(png_declaring(8, 8, 8, idat=b"\x78\x9c garbage!"))
    add("8-bit PNG, corrupt zlib stream", ["corrupt8"], "error", "cannot decode corrupt8.png")
    buf = io.BytesIO()
    _save(_rgb(64, 64), buf, format="JPEG")
    (folder / "truncated.jpg").write_bytes(buf.getvalue()[:300])
    add("truncated JPEG", ["truncated"], "error", "cannot decode truncated.jpg")
    (folder / "empty.png").write_bytes(b"")
    add("zero-byte file", ["empty"], "error", "not a recognised image format")
    (folder / "notes.jpg").write_text("this is a text file, not a photo\n")
    add("text file named .jpg", ["notes"], "error", "not a recognised image format")
    (folder / "html.webp").write_text("<html><body>404 Not Found</body></html>")
    add("error page saved as .webp", ["html"], "error", "not a recognised image format")
    (folder / "random.tif").write_bytes(np.random.default_rng(1).bytes(4096))
    add("random bytes named .tif", ["random"], "error", "not a recognised image format")
    _save(Image.fromarray(np.linspace(0, 1, 64 * 64, dtype=np.float32).reshape(64, 64), "F"),
          folder / "float.tif")
    add("32-bit float TIFF", ["float"], "error", "floating-point images are not supported")
    os.symlink(folder / "does_not_exist.png", folder / "dangling.png")
    add("broken symbolic link", ["dangling"], "error", "broken symbolic link")
    # -- colliding names: every file keeps an item ---------------------------------------------
    _save(_rgb(32, 32, 2), folder / "x.png")
    _save(_rgb(32, 32, 3), folder / "x.jpg", quality=95)
    _save(_rgb(32, 32, 4), folder / "x png.jpg", quality=95)
    add("three names mapping to one id", ["x", "x_png", "x_png__2"], "ok")
    out["three names mapping to one id (the rename is recorded)"] = Expect(
        ("x_png__2",), "ok", "already taken by another source", "notes")
    _save(_rgb(32, 32, 5), folder / "dup.PNG")
    _save(_rgb(32, 32, 6), folder / "dup.png")
    add("same name, extension case differs", ["dup", "dup_png"], "ok")
    # -- awkward but valid: read as they are -------------------------------------------------
    _save(np.full((256, 256, 3), 255, np.uint8), folder / "blank_page.png")
    add("blank white page", ["blank_page"], "ok")
    _save(np.zeros((64, 64, 3), np.uint8), folder / "black.png")
    add("all-black image", ["black"], "ok")
    _save(_rgb(1, 1), folder / "one_pixel.png")
    add("1 x 1 image", ["one_pixel"], "ok")
    _save(_rgb(2, 700), folder / "strip.png")
    add("2 x 700 strip", ["strip"], "ok")
    _save(_rgb(700, 3), folder / "column.png")
    add("700 x 3 column", ["column"], "ok")
    _save(_rgb(37, 53), folder / "odd_size.png")
    add("odd size 53 x 37", ["odd_size"], "ok")
    rgba = np.dstack([_rgb(48, 48, 7), np.linspace(0, 255, 48 * 48).reshape(48, 48).astype(np.uint8)])
    _save(Image.fromarray(rgba, "RGBA"), folder / "alpha.png")
    add("RGBA with gradient alpha", ["alpha"], "ok")
    _save(Image.fromarray(_rgb(48, 48, 8)).convert("P"), folder / "palette.gif")
    add("palette GIF", ["palette"], "ok")
    frames = [Image.fromarray(_rgb(32, 32, s)).convert("P") for s in range(3)]
    frames[0].save(folder / "animated.gif", save_all=True, append_images=frames[1:])
    add("animated GIF (first frame)", ["animated"], "ok")
    _save(Image.fromarray(_rgb(40, 40, 9)).convert("CMYK"), folder / "cmyk.jpg")
    add("CMYK JPEG", ["cmyk"], "ok")
    _save(Image.fromarray(_rgb(40, 40, 10)[..., 0]).convert("1"), folder / "bilevel.png")
    add("1-bit image", ["bilevel"], "ok")
    _save(Image.fromarray(_rgb(40, 40, 11)[..., 0], "L"), folder / "gray.bmp")
    add("grayscale BMP", ["gray"], "ok")
    _write_png16(folder / "gray16.png", (np.arange(48 * 48).reshape(48, 48) * 28).astype(np.uint16))
    add("16-bit grayscale PNG", ["gray16"], "ok")
    _write_png16(folder / "rgba16.png", np.dstack(
        [(np.arange(32 * 32).reshape(32, 32) * 60).astype(np.uint16)] * 3
        + [np.full((32, 32), 40000, np.uint16)]))
    add("16-bit RGBA PNG", ["rgba16"], "ok")
    _save(_rgb(40, 40, 12), folder / "lossless.webp", lossless=True)
    add("lossless WebP", ["lossless"], "ok")
    _save(_rgb(40, 40, 13), folder / "rgb.tiff")
    add("RGB TIFF", ["rgb"], "ok")
    buf = io.BytesIO()
    _save(_rgb(40, 60, 14), buf, format="JPEG")
    (folder / "really_a_jpeg.png").write_bytes(buf.getvalue())
    add("JPEG named .png", ["really_a_jpeg"], "ok")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees: read upright, 40 wide becomes 40 tall
    _save(_rgb(30, 40, 15), folder / "rotated.jpg", exif=exif.tobytes())
    add("EXIF-rotated JPEG", ["rotated"], "ok")
    _save(_rgb(40, 40, 16), folder / "Ünïcödé name ß.png")
    add("non-ASCII file name", ["_n_c_d_name_"], "ok")  # ids keep ASCII letters, digits, ._-
    (folder / "sub dir").mkdir()
    _save(_rgb(40, 40, 17), folder / "sub dir" / "nested.png")
    add("file in a subfolder", ["sub_dir__nested"], "ok")
    _save(_rgb(40, 40, 18), folder / ".hidden.png")  # hidden files are skipped, as documented
    (folder / "folder.png").mkdir()  # a directory with an image's name is not a file
    for i in range(6):  # ordinary photos, so the set has a body besides its hostile members
        _save(_rgb(48, 64, 100 + i), folder / f"photo_{i}.jpg", quality=90)
    add("ordinary photos", [f"photo_{i}" for i in range(6)], "ok")
    return out


def _gif_declaring(width: int, height: int) -> bytes:
    """A GIF header (logical screen and one image descriptor) declaring ``width x height``."""
    buf = io.BytesIO()
    Image.new("P", (4, 4)).save(buf, format="GIF")
    data = bytearray(buf.getvalue())
    data[6:10] = struct.pack("<HH", width, height)  # logical screen
    i = data.index(b"\x2c")  # image descriptor: left, top, width, height
    data[i + 5:i + 9] = struct.pack("<HH", width, height)
    return bytes(data)


def _write_png16(path: Path, arr: np.ndarray) -> None:
    planes = 1 if arr.ndim == 2 else arr.shape[2]
    greyscale, alpha = planes in (1, 2), planes in (2, 4)
    writer = png.Writer(arr.shape[1], arr.shape[0], bitdepth=16, greyscale=greyscale, alpha=alpha)
    with open(path, "wb") as fh:
        writer.write(fh, arr.reshape(arr.shape[0], -1).tolist())


# -- volumes -------------------------------------------------------------------------------------
def write_volumes(folder: Path) -> dict[str, Expect]:
    """At least 20 hostile and awkward NIfTI files in ``folder`` (created)."""
    import nibabel as nib

    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Expect] = {}
    rng = np.random.default_rng(0)

    def save(name, data, affine=None, dtype=None, sform=None):
        img = nib.Nifti1Image(data if dtype is None else data.astype(dtype),
                              np.diag([2.0, 2.0, 2.0, 1.0]) if affine is None else affine)
        if sform is not None:  # a header no affine decomposes into: written as the sform only
            img.header.set_sform(sform, code=2)
            img.header["qform_code"] = 0
            img = nib.Nifti1Image(img.get_fdata(dtype=np.float32), None, header=img.header)
        nib.save(img, str(folder / name))

    def add(kind, ids, status, text="", column="reason"):
        out[kind] = Expect(tuple(ids), status, text, column)

    blob = rng.normal(100, 30, (16, 16, 12)).astype(np.float32)
    save("ok_float.nii.gz", blob)
    add("float32 volume", ["ok_float"], "ok")
    save("ok_int16.nii.gz", (blob * 10).astype(np.int16))
    add("int16 volume", ["ok_int16"], "ok")
    save("ok_uint8.nii", np.clip(blob, 0, 255).astype(np.uint8))
    add("uint8 volume, uncompressed", ["ok_uint8"], "ok")
    save("ok_float64.nii.gz", blob.astype(np.float64))
    add("float64 volume", ["ok_float64"], "ok")
    save("series4d.nii.gz", np.stack([blob, blob * 2], axis=-1))
    add("4D series", ["series4d"], "ok", "4D series of 2 volumes", "notes")
    save("constant.nii.gz", np.full((16, 16, 12), 7.0, np.float32))
    add("constant volume", ["constant"], "ok", "constant volume", "notes")
    save("zeros.nii.gz", np.zeros((16, 16, 12), np.float32))
    add("all-zero volume", ["zeros"], "ok", "constant volume (every voxel 0)", "notes")
    oblique = np.array([[2 * np.cos(0.3), -2 * np.sin(0.3), 0, 0],
                        [2 * np.sin(0.3), 2 * np.cos(0.3), 0, 0], [0, 0, 2, 0], [0, 0, 0, 1]])
    save("oblique.nii.gz", blob, oblique)
    add("oblique affine", ["oblique"], "ok", "oblique affine", "notes")
    save("aniso.nii.gz", blob, np.diag([1.0, 1.0, 5.0, 1.0]))
    add("anisotropic voxels", ["aniso"], "ok", "anisotropic spacing", "notes")
    save("tiny.nii.gz", blob[:2, :2, :2])
    add("2 x 2 x 2 volume", ["tiny"], "ok")
    # -- errors ----------------------------------------------------------------------------------
    save("complex.nii.gz", (blob + 1j * blob).astype(np.complex64))
    add("complex64 volume", ["complex"], "error", "voxel type complex64 is not supported")
    save("flat2d.nii.gz", blob[..., 0])
    add("2D image", ["flat2d"], "error", "a 3D volume (or a 4D series) is needed")
    save("five_d.nii.gz", blob[..., None, None].repeat(2, 3).repeat(2, 4))
    add("5D image", ["five_d"], "error", "5D image")
    nan = blob.copy()
    nan[3, 3, 3] = np.nan
    save("nan.nii.gz", nan)
    add("NaN voxel", ["nan"], "error", "NaN/Inf voxels")
    inf = blob.copy()
    inf[0, 0, 0] = np.inf
    save("inf.nii.gz", inf)
    add("Inf voxel", ["inf"], "error", "NaN/Inf voxels")
    save("singular.nii.gz", blob, sform=np.zeros((4, 4)))
    add("singular affine", ["singular"], "error", "singular affine")
    save("nan_affine.nii.gz", blob, sform=np.full((4, 4), np.nan))
    add("NaN affine", ["nan_affine"], "error", "singular affine")
    full = (folder / "ok_float.nii.gz").read_bytes()
    (folder / "truncated.nii.gz").write_bytes(full[: len(full) // 2])
    add("truncated .nii.gz", ["truncated"], "error", "cannot read truncated.nii.gz")
    (folder / "empty.nii").write_bytes(b"")
    add("zero-byte .nii", ["empty"], "error", "cannot read empty.nii")
    (folder / "text.nii.gz").write_bytes(gzip.compress(b"not a nifti header\n" * 30))
    add("gzipped text named .nii.gz", ["text"], "error", "cannot read text.nii.gz")
    (folder / "plain.nii.gz").write_text("plain text, not even gzip\n")
    add("text named .nii.gz", ["plain"], "error", "cannot read plain.nii.gz")
    hdr = nib.Nifti1Header()
    hdr.set_data_shape((2000, 2000, 2000))
    hdr.set_data_dtype(np.float32)
    with open(folder / "huge.nii", "wb") as fh:  # a header declaring 8 G voxels, no voxels
        fh.write(hdr.binaryblock + b"\x00" * 4)
    add("header declaring 2000^3 voxels", ["huge"], "error", "above limits.max_voxels")
    rgb = np.zeros((8, 8, 8), dtype=[("R", "u1"), ("G", "u1"), ("B", "u1")])
    nib.save(nib.Nifti1Image(rgb, np.eye(4)), str(folder / "rgb24.nii.gz"))
    add("RGB24 structured voxels", ["rgb24"], "error", "is not supported")
    # -- colliding names -------------------------------------------------------------------------
    save("twin.nii", blob)
    save("twin.nii.gz", blob * 1.5)
    add("twin.nii and twin.nii.gz", ["twin", "twin__2"], "ok")
    out["twin.nii and twin.nii.gz (the rename is recorded)"] = Expect(
        ("twin__2",), "ok", "already taken by another source", "notes")
    return out

"""Probe a model before any job runs: load it, push one small input through it per input size
the run will use, and ask discrete models for their tokens.

A model that cannot be imported, built or loaded, that returns another size than it was given,
whose outputs fail the checks every job applies (:mod:`roundtrip.models.outputs`: not finite,
another channel count, outside ``[-1, 1]``, token ids beyond the codebook), whose
reconstructions a simple fix explains (:mod:`roundtrip.models.diagnosis`: outputs in ``[0, 1]``,
BGR, flipped, transposed, shifted), whose output changes from one call to the next on the same
input (an active dropout or sampling, unless ``stochastic: true``), or whose latent grid
contradicts its ``downsample``, fails here with one line naming the config key, the cause and
the fix, instead of once per item an hour into a run. What the probe sees (the latent of each size) also feeds the model
card (:mod:`roundtrip.models.card`), so a user's own tokenizer gets its latent shape and
compression ratio without declaring them.

The probe's input is :data:`PHOTOS`, photographs bundled with scikit-image, each centre-cropped
to the probe's aspect ratio and resized to its size (the same bytes every time): float32
``[2, 3, H, W]`` in ``[-1, 1]``, the adapter contract of :class:`~roundtrip.models.base.Adapter`.
Photographs, not a synthetic pattern, because the diagnosis needs what a model is made for:
texture, colour and content that differs under a flip.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field
from functools import cache

import torch

from roundtrip.core.weights import WeightsMissing
from roundtrip.models.base import DISCRETE_FAMILIES, Adapter, seeded
from roundtrip.models.diagnosis import diagnose_set
from roundtrip.models.outputs import OutputError, reconstruction_defects, repeat_defect

#: The probe's photographs: ``skimage.data`` names (colour, textured, asymmetric).
PHOTOS = ("astronaut", "coffee")


#: Smallest side of the probe input for a model's padding (several down-sampling stages fit).
MIN_SIDE = 48


class ProbeError(ValueError):
    """A model failed its probe; the message's first line starts with the config key
    (``models.<name>`` or one of its keys) and says what to change."""


@dataclass
class ProbeResult:
    """What the probe of one model saw.

    Attributes:
        latent_shapes: ``"HxW"`` -> the shape of one item's latent for an ``H x W`` input
            (the batch dimension dropped), or None where the latent is not a tensor (a codec's
            bytes).
        token_shapes: ``"HxW"`` -> the shape of one item's token ids (discrete families only).
        seconds: wall time of the probe, loading included.
    """
    latent_shapes: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    token_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"latent_shapes": {k: list(v) if v else None for k, v in self.latent_shapes.items()},
                "token_shapes": {k: list(v) for k, v in self.token_shapes.items()},
                "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, data: dict) -> "ProbeResult":
        return cls({k: tuple(v) if v else None for k, v in data["latent_shapes"].items()},
                   {k: tuple(v) for k, v in data["token_shapes"].items()}, data["seconds"])


@cache
def _photo(name: str) -> torch.Tensor:
    """``skimage.data.<name>()`` as float32 ``[3, H, W]`` in ``[-1, 1]``."""
    from skimage import data

    image = torch.from_numpy(getattr(data, name)()[..., :3].copy())
    return image.permute(2, 0, 1).float().div(127.5).sub(1.0)


def probe_input(h: int, w: int) -> torch.Tensor:
    """The probe images: float32 ``[len(PHOTOS), 3, h, w]`` in ``[-1, 1]``, each photograph of
    :data:`PHOTOS` centre-cropped to the aspect ratio ``h / w`` and resized (bilinear with
    antialiasing) to ``h x w`` (deterministic)."""
    out = []
    for name in PHOTOS:
        img = _photo(name)
        ih, iw = img.shape[1:]
        ch, cw = (ih, max(1, round(ih * w / h))) if ih * w <= iw * h else (
            max(1, round(iw * h / w)), iw)
        top, left = (ih - ch) // 2, (iw - cw) // 2
        crop = img[None, :, top:top + ch, left:left + cw]
        out.append(torch.nn.functional.interpolate(crop, size=(h, w), mode="bilinear",
                                                   align_corners=False, antialias=True))
    return torch.cat(out).clamp_(-1.0, 1.0).contiguous()


def padding_size(downsample: int) -> tuple[int, int]:
    """An input size that the workflow's padding (to a multiple of ``downsample``) can produce
    but a model needing a larger multiple cannot take back: odd multiples of ``downsample``, at
    least :data:`MIN_SIDE` a side, different in height and width (so a transposed output shows).
    """
    d = max(1, int(downsample))
    k = -(-MIN_SIDE // d)
    k += 1 - k % 2  # odd multiple: 2 * downsample does not divide it
    return d * k, d * (k + 2)


def load_model(model: Adapter) -> None:
    """Load the model's weights where it has any (:meth:`TorchAdapter.load`).

    Raises:
        ProbeError: import, construction or weights failed; the adapter's own message (which
            names the key) is kept, a foreign exception gets ``models.<name>`` and its first line.
    """
    load = getattr(model, "load", None)
    if load is None:
        return
    try:
        load()
    except (ProbeError, WeightsMissing):
        raise  # their messages name the model and the fix
    except Exception as exc:  # noqa: BLE001 - a user's module may raise anything
        raise ProbeError(_message(model, "loading failed", exc)) from exc


def probe_model(model: Adapter, sizes: list[tuple[int, int]]) -> ProbeResult:
    """Load ``model`` and reconstruct :func:`probe_input` at each ``(H, W)`` of ``sizes``.

    Each input must come back at its own size and pass the output checks and the diagnosis,
    the first size's reconstruction must repeat on a second call (or, for a
    ``stochastic`` model, under the same seed), and a model of a discrete family
    (:data:`DISCRETE_FAMILIES`) must give token ids. Sizes the model does not support
    (:meth:`Adapter.supports`) are skipped. Library warnings raised while loading and running
    the model are not shown (check-config prints the config's problems only).

    Raises:
        ProbeError: with the key and the fix, e.g. ``models.my_vq.downsample: 4 gives 64 px
            for 68: the model needs a multiple of 8``.
    """
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load_model(model)
        result = ProbeResult()
        for k, (h, w) in enumerate((h, w) for h, w in sizes if model.supports(h, w)):
            x = probe_input(h, w)
            with seeded(model.seed) if model.stochastic else contextlib.nullcontext():
                latent, y = _round_trip(model, x)
            if tuple(y.shape[-2:]) != (h, w):
                raise ProbeError(_size_message(model, (h, w), tuple(y.shape[-2:])))
            key = f"{h}x{w}"
            _check_output(model, x, y)
            if k == 0:
                _check_repeats(model, x, y)
            result.latent_shapes[key] = _latent_shape(model, latent)
            _check_grid(model, result.latent_shapes[key], h, w, "latent")
            if model.info().family in DISCRETE_FAMILIES:
                result.token_shapes[key] = _token_shape(model, latent, key, len(x))
                _check_grid(model, (1, *result.token_shapes[key]), h, w, "token")
    result.seconds = time.perf_counter() - start
    return result


def _check_output(model: Adapter, x: torch.Tensor, y) -> None:
    """The reconstruction checks every job applies (:mod:`roundtrip.models.outputs`) and the
    diagnosis of the probe's photographs together (:func:`~roundtrip.models.diagnosis.
    diagnose_set`), at the probe's size: a model wrong at every size stops here, once."""
    size = f"probe input {x.shape[2]}x{x.shape[3]}"
    y = y.detach().cpu() if torch.is_tensor(y) else y
    defect = next((r for r in reconstruction_defects(x, y, model.name, model.info().downsample,
                                                      model.output_tolerance) if r), "")
    if defect:
        raise ProbeError(f"{defect} ({size})")
    finding = diagnose_set(x, y)
    if finding is not None:
        reason = finding.reason(model.name, getattr(model, "unit_range", None))
        raise ProbeError(f"{reason} ({size}, {len(x)} photographs)")


def _check_repeats(model: Adapter, x: torch.Tensor, y: torch.Tensor) -> None:
    """A second reconstruction of the same input must equal the first
    (:func:`~roundtrip.models.outputs.repeat_defect`); for a ``stochastic`` model, under the
    same seed (:func:`~roundtrip.models.base.seeded`)."""
    with seeded(model.seed) if model.stochastic else contextlib.nullcontext():
        _, again = _round_trip(model, x)
    defect = repeat_defect(y, again, model.name, model.stochastic)
    if defect:
        raise ProbeError(f"{defect} (probe input {x.shape[2]}x{x.shape[3]})")


def _check_grid(model: Adapter, shape: tuple[int, ...] | None, h: int, w: int,
                what: str) -> None:
    """Refuse a ``downsample`` that the latent (or token) grid contradicts: a ``[C, h', w']``
    grid (tokens: ``[h', w']`` or ``[h', w', Q]``) whose sides divide the input's by one factor
    other than the declared one. A grid of another form (a sequence, a vector) or with no
    common factor (a model that pads inside) is not judged."""
    if not shape or len(shape) < 3:
        return
    gh, gw = int(shape[1]), int(shape[2])
    if gh <= 0 or gw <= 0 or h % gh or w % gw or h // gh != w // gw:
        return
    factor, d = h // gh, max(1, int(model.info().downsample))
    if factor != d:
        key = f"models.{model.name}.downsample"
        raise ProbeError(f"{key}: {d}, but the {what} grid is {gh}x{gw} for a {h}x{w} input, "
                         f"{factor}x smaller: set {key}: {factor}")


def observed_latent_shape(model: Adapter, h: int, w: int) -> tuple[int, ...] | None:
    """The shape of one item's latent for an ``h x w`` input: the adapter's own
    :meth:`~Adapter.latent_shape` where it knows it, else what :meth:`~Adapter.encode` returns
    for :func:`probe_input` (None where that is not a tensor, or the size is not supported).

    Raises:
        ProbeError: the model cannot be loaded or fails to encode.
    """
    shape = model.latent_shape(h, w)
    if shape or not hasattr(model, "load") or not model.supports(h, w):
        return tuple(shape) if shape else None
    load_model(model)
    with torch.no_grad():
        try:
            latent = model.encode(probe_input(h, w)[:1].to(model.device))
        except Exception as exc:  # noqa: BLE001
            raise ProbeError(_message(model, f"encode at {h}x{w} failed", exc)) from exc
    return _latent_shape(model, latent)


def _round_trip(model: Adapter, x: torch.Tensor):
    """``(latent, decode(latent))`` of the probe images ``x`` ``[n, 3, h, w]``."""
    h, w = x.shape[2:]
    x = x.to(model.device)
    with torch.no_grad():
        try:
            latent = model.encode(x)
            y = model.decode(latent)
        except Exception as exc:  # noqa: BLE001 - a user's forward pass may raise anything
            raise ProbeError(_message(model, f"forward pass at {h}x{w} failed", exc)) from exc
    if not torch.is_tensor(y):
        raise ProbeError(f"models.{model.name}: decode returned {type(y).__name__}, not a tensor "
                         "[B, 3, H, W] in [-1, 1]")
    return latent, y


def _latent_shape(model: Adapter, latent) -> tuple[int, ...] | None:
    tensor = model.latent_tensor(latent)
    return tuple(tensor.shape[1:]) if tensor is not None else None


def _token_shape(model: Adapter, latent, size: str, n: int) -> tuple[int, ...]:
    name, family = model.name, model.info().family
    try:
        ids = model.checked_tokens(latent, n)
    except OutputError as exc:
        raise ProbeError(f"{exc.reasons[0]} (probe input {size})") from exc
    except Exception as exc:  # noqa: BLE001
        raise ProbeError(_message(model, f"tokens() at {size} failed", exc)) from exc
    if ids is None:
        raise ProbeError(f"models.{name}.family: {family} is discrete, but the model gives no "
                         "token ids: add tokens(latent) -> LongTensor to its class, or set "
                         f"models.{name}.family: continuous")
    return tuple(ids.shape[1:])


def _size_message(model: Adapter, given: tuple[int, int], got: tuple[int, int]) -> str:
    d = max(1, int(model.info().downsample))
    needed = _needed_multiple(model, d)
    fix = (f"the model needs a multiple of {needed}" if needed else
           "the model does not return the size it is given")
    side = 0 if given[0] != got[0] else 1
    return (f"models.{model.name}.downsample: {d} gives {got[side]} px for {given[side]}: {fix} "
            f"(set models.{model.name}.downsample: {needed})" if needed else
            f"models.{model.name}: returned {got[0]}x{got[1]} for a {given[0]}x{given[1]} input: "
            f"{fix}")


def _needed_multiple(model: Adapter, d: int) -> int | None:
    """The smallest multiple of ``d`` (times 2, 4, ... 64) whose odd multiples come back at
    their size, or None."""
    for m in (d * 2 ** k for k in range(1, 7)):
        h, w = padding_size(m)
        try:
            _, y = _round_trip(model, probe_input(h, w)[:1])
        except ProbeError:
            continue
        if tuple(y.shape[-2:]) == (h, w):
            return m
    return None


def _message(model: Adapter, what: str, exc: Exception) -> str:
    text = str(exc).strip()
    if text.startswith("models."):  # the adapter's own message already names the key
        return text
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"models.{model.name}: {what}: {type(exc).__name__}: {first}"

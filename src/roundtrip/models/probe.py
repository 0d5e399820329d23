"""Probe a model before any job runs: load it, push one small input through it per input size
the run will use, and ask discrete models for their tokens.

A model that cannot be imported, built or loaded, that returns another size than it was given,
whose outputs fail the checks every job applies (:mod:`roundtrip.models.outputs`: not finite,
another channel count, outside ``[-1, 1]``, token ids beyond the codebook), or whose latent grid
contradicts its ``downsample``, fails here with one line naming the config key, the cause and
the fix, instead of once per item an hour into a run. What the probe sees (the latent of each size) also feeds the model
card (:mod:`roundtrip.models.card`), so a user's own tokenizer gets its latent shape and
compression ratio without declaring them.

The probe's input is a smooth colour gradient (no randomness: the same bytes every time), float32
``[1, 3, H, W]`` in ``[-1, 1]``, the adapter contract of :class:`~roundtrip.models.base.Adapter`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from roundtrip.core.weights import WeightsMissing
from roundtrip.models.base import DISCRETE_FAMILIES, Adapter
from roundtrip.models.outputs import OutputError, reconstruction_defects


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


def probe_input(h: int, w: int) -> torch.Tensor:
    """The probe image: float32 ``[1, 3, h, w]`` in ``[-1, 1]``, a horizontal, a vertical and a
    diagonal gradient in the three channels (deterministic)."""
    ys = torch.linspace(-1.0, 1.0, h).view(h, 1).expand(h, w)
    xs = torch.linspace(-1.0, 1.0, w).view(1, w).expand(h, w)
    return torch.stack([xs, ys, (xs + ys) / 2]).unsqueeze(0).contiguous()


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

    Each input must come back at its own size, and a model of a discrete family
    (:data:`DISCRETE_FAMILIES`) must give token ids. Sizes the model does not support
    (:meth:`Adapter.supports`) are skipped.

    Raises:
        ProbeError: with the key and the fix, e.g. ``models.my_vq.downsample: 4 gives 64 px
            for 68: the model needs a multiple of 8``.
    """
    start = time.perf_counter()
    load_model(model)
    result = ProbeResult()
    for h, w in sizes:
        if not model.supports(h, w):
            continue
        latent, y = _round_trip(model, h, w)
        if tuple(y.shape[-2:]) != (h, w):
            raise ProbeError(_size_message(model, (h, w), tuple(y.shape[-2:])))
        key = f"{h}x{w}"
        _check_output(model, y, h, w)
        result.latent_shapes[key] = _latent_shape(model, latent)
        _check_grid(model, result.latent_shapes[key], h, w, "latent")
        if model.info().family in DISCRETE_FAMILIES:
            result.token_shapes[key] = _token_shape(model, latent, key)
            _check_grid(model, (1, *result.token_shapes[key]), h, w, "token")
    result.seconds = time.perf_counter() - start
    return result


def _check_output(model: Adapter, y, h: int, w: int) -> None:
    """The reconstruction checks every job applies (:mod:`roundtrip.models.outputs`), at the
    probe's size: a model wrong at every size stops here, once."""
    x = probe_input(h, w)
    defect = reconstruction_defects(x, y.detach().cpu() if torch.is_tensor(y) else y,
                                    model.name, model.info().downsample,
                                    model.output_tolerance)[0]
    if defect:
        raise ProbeError(f"{defect} (probe input {h}x{w})")


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
            latent = model.encode(probe_input(h, w).to(model.device))
        except Exception as exc:  # noqa: BLE001
            raise ProbeError(_message(model, f"encode at {h}x{w} failed", exc)) from exc
    return _latent_shape(model, latent)


def _round_trip(model: Adapter, h: int, w: int):
    x = probe_input(h, w).to(model.device)
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


def _token_shape(model: Adapter, latent, size: str) -> tuple[int, ...]:
    name, family = model.name, model.info().family
    try:
        ids = model.checked_tokens(latent, 1)
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
            _, y = _round_trip(model, h, w)
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

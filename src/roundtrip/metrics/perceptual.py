"""LPIPS (Zhang et al., CVPR 2018) through the ``lpips`` package, with weights from the offline cache.

Protocol: each image pair is compared at the evaluated resolution (no resizing), as float32 RGB
mapped from [0, 1] to [-1, 1], the range the ``lpips`` networks were trained on
(``input_range="unit"`` in :meth:`LPIPS.__call__`). The VTBench paper names LPIPS without its
backbone; its released evaluator uses torchmetrics' LPIPS (AlexNet) and passes [0, 1] tensors
without ``normalize=True``, so the network sees them as if they were [-1, 1] images:
``input_range="as_signed"`` reproduces that convention (the ``lpips_vtbench`` column).

Weights: the linear calibration layers ship inside the ``lpips`` package; the ImageNet backbone
(torchvision's AlexNet or VGG-16 file) is loaded from the roundtrip weights cache
(:mod:`roundtrip.core.weights`), never downloaded here.
"""
from __future__ import annotations

from pathlib import Path

import torch

from roundtrip.core import weights

#: LPIPS backbone -> registry name of its ImageNet weights (:mod:`roundtrip.core.weights`).
NETS = weights.LPIPS_NETS


def _load_backbone(pnet: torch.nn.Module, state_dict: dict) -> None:
    """Copy torchvision ``features.{i}.*`` tensors into lpips's ``slice{k}.{i}.*`` layout."""
    mapped = {}
    for key in pnet.state_dict():
        _, index, param = key.split(".", 2)
        source = f"features.{index}.{param}"
        if source not in state_dict:
            raise ValueError(f"backbone file lacks {source!r}; is it a torchvision "
                             "AlexNet/VGG-16 state dict?")
        mapped[key] = state_dict[source]
    pnet.load_state_dict(mapped)


class LPIPS:
    """LPIPS distance between image pairs.

    Args:
        net: ``alex`` (default; the backbone of VTBench's released evaluator) or ``vgg``.
        backbone: path of the torchvision backbone state dict; default: the cache file of
            :data:`NETS` ``[net]`` under ``cache``.
        cache: weights cache directory (see :func:`roundtrip.core.weights.cache_dir`).
        device: torch device.

    Raises:
        ValueError: unknown ``net`` or a backbone file of the wrong layout.
        WeightsMissing: the backbone file is not in the cache (message says how to fetch it).
    """

    def __init__(self, net: str = "alex", backbone: str | Path | None = None,
                 cache: str | Path | None = None, device: str | torch.device = "cpu"):
        if net not in NETS:
            raise ValueError(f"LPIPS net must be one of {sorted(NETS)}, got {net!r}")
        import lpips

        path = Path(backbone) if backbone else weights.require(NETS[net], cache)
        # pnet_rand: do not let torchvision download the backbone; we load it from `path`.
        self.model = lpips.LPIPS(net=net, pretrained=True, pnet_rand=True, verbose=False)
        _load_backbone(self.model.net, torch.load(path, map_location="cpu", weights_only=True))
        self.model = self.model.eval().to(device)
        self.device = torch.device(device)

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, y: torch.Tensor, input_range: str = "unit"
                 ) -> torch.Tensor:
        """LPIPS of each pair.

        Args:
            x, y: float ``[B, 3, H, W]`` in [0, 1], same shape.
            input_range: ``unit`` maps [0, 1] to the [-1, 1] the network expects (roundtrip's
                ``lpips``); ``as_signed`` feeds the [0, 1] values unchanged, as VTBench's released
                evaluator does (torchmetrics LPIPS without ``normalize``; ``lpips_vtbench``).

        Returns:
            float32 ``[B]``, >= 0 (0 for identical images); lower is more similar.

        Raises:
            ValueError: shapes differ or are not ``[B, 3, H, W]``; unknown ``input_range``.
        """
        if x.shape != y.shape or x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f"LPIPS needs two [B, 3, H, W] tensors of one shape, got "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
        if input_range not in ("unit", "as_signed"):
            raise ValueError(f"input_range must be 'unit' or 'as_signed', got {input_range!r}")
        x, y = x.to(self.device, torch.float32), y.to(self.device, torch.float32)
        if input_range == "unit":
            x, y = x * 2 - 1, y * 2 - 1
        return self.model(x, y).flatten().float().cpu()

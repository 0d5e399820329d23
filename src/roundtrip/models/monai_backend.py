"""MONAI autoencoders (``monai.networks.nets.AutoencoderKL`` and ``VQVAE``), 2D or 3D.

Built from a dict of constructor arguments (``network:`` in config) and a local checkpoint (a
state dict, or a dict holding one under ``state_dict``/``model``). Medical models usually take
one channel: an RGB input is then reconstructed channel by channel (the channels are stacked into
the batch), which keeps color images comparable; grayscale inputs have three equal channels.
"""
from __future__ import annotations

import math

from roundtrip.models.base import ModelInfo
from roundtrip.models.torch_base import TorchAdapter, read_weights, require_file

HOW = "Put the checkpoint there or set the checkpoint path in the config file."


class _MonaiAdapter(TorchAdapter):
    """Args:
        checkpoint: path of the state dict.
        network: constructor arguments of the MONAI class (``spatial_dims`` required).
        input_range: ``[-1, 1]`` (default, MediBench App. A) or ``[0, 1]``.
        native_size: training size (one side), for the model_size protocol.
    """

    net_name = ""

    def __init__(self, checkpoint: str, network: dict, input_range: list | None = None,
                 native_size: int | None = None, precision: str = "fp32"):
        super().__init__(precision)
        if "spatial_dims" not in (network or {}):
            raise ValueError("network.spatial_dims (2 or 3) is required")
        if int(network["spatial_dims"]) not in (2, 3):
            raise ValueError(f"network.spatial_dims must be 2 or 3, got {network['spatial_dims']}")
        rng = list(input_range or [-1, 1])
        if rng not in ([-1, 1], [0, 1]):
            raise ValueError(f"input_range must be [-1, 1] or [0, 1], got {rng}")
        self.checkpoint, self.network = checkpoint, dict(network)
        self.unit_range, self.native_size = rng == [0, 1], native_size
        self.spatial_dims = int(network["spatial_dims"])
        self.in_channels = int(network.get("in_channels", 1))

    def check_weights(self):
        require_file(self.checkpoint, self.name, "MONAI checkpoint", HOW)

    def _load_module(self):
        import monai.networks.nets as nets

        module = getattr(nets, self.net_name)(**self.network)
        sd = read_weights(require_file(self.checkpoint, self.name, "MONAI checkpoint", HOW),
                          f"models.{self.name}.checkpoint")
        for key in ("state_dict", "model"):
            if isinstance(sd, dict) and key in sd and isinstance(sd[key], dict):
                sd = sd[key]
        module.load_state_dict(sd)
        return module

    # channel-wise handling of RGB inputs for 1-channel models
    def _in(self, x):
        x = x.to(self.device)
        x = (x + 1) / 2 if self.unit_range else x
        self._c = x.shape[1]
        if self.in_channels == 1 and self._c > 1:
            x = x.reshape(-1, 1, *x.shape[2:])
        return x

    def _out(self, y):
        y = y * 2 - 1 if self.unit_range else y
        if self.in_channels == 1 and self._c > 1:
            y = y.reshape(-1, self._c, *y.shape[2:])
        return y

    def _native_sizes(self):
        if not self.native_size:
            return []
        return [(int(self.native_size),) * self.spatial_dims]


class MonaiKL(_MonaiAdapter):
    """MONAI ``AutoencoderKL``; latent = posterior mean ``z_mu`` (deterministic)."""

    net_name = "AutoencoderKL"

    def encode(self, x):
        z_mu, _ = self.module.encode(self._in(x))
        return z_mu

    def decode(self, latent):
        return self._out(self.module.decode(latent))

    def _downsample(self):
        return 2 ** (len(self.network.get("channels", (32, 64, 64, 64))) - 1)

    def latent_shape(self, *spatial):
        f = self._downsample()
        return (int(self.network.get("latent_channels", 3)), *(s // f for s in spatial))

    def info(self):
        return ModelInfo(family="continuous", params=self.n_params(),
                         native_sizes=self._native_sizes(), downsample=self._downsample())


class MonaiVQVAE(_MonaiAdapter):
    """MONAI ``VQVAE``; latent = quantized embeddings, tokens = codebook indices."""

    net_name = "VQVAE"

    def encode(self, x):
        z = self.module.encode(self._in(x))
        quant, _ = self.module.quantize(z)
        return {"quant": quant, "z": z}

    def decode(self, latent):
        return self._out(self.module.decode(latent["quant"]))

    def tokens(self, latent):
        return self.module.quantizer.quantize(latent["z"]).long()

    def _downsample(self):
        params = self.network.get("downsample_parameters", ((2, 4, 1, 1),) * 3)
        if isinstance(params[0], int):
            params = [params]
        return math.prod(int(p[0]) for p in params)

    def latent_shape(self, *spatial):
        f = self._downsample()
        return (int(self.network.get("embedding_dim", 64)), *(s // f for s in spatial))

    def info(self):
        return ModelInfo(family="VQ", params=self.n_params(), native_sizes=self._native_sizes(),
                         downsample=self._downsample(),
                         codebook_size=int(self.network.get("num_embeddings", 32)))

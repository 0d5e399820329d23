"""Learned backends load from a path through config, as users' real weights would."""
import math
import sys

import pytest
import torch
from torch import nn

from roundtrip.core.config import ConfigError
from roundtrip.core.weights import WeightsMissing
from roundtrip.models import build_model
from roundtrip.models.card import card_row, compression_ratio
from roundtrip.workflow.checks import check_config

SDXL_VAE_CONFIG = dict(  # the public architecture of the SDXL VAE (random weights here)
    in_channels=3, out_channels=3, latent_channels=4, layers_per_block=2, norm_num_groups=32,
    block_out_channels=[128, 256, 512, 512], sample_size=1024, scaling_factor=0.13025,
    down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4)


def tiny_kl_config(**over):
    return dict(in_channels=3, out_channels=3, latent_channels=4, layers_per_block=1,
                norm_num_groups=8, block_out_channels=[8, 16], sample_size=32,
                down_block_types=["DownEncoderBlock2D"] * 2,
                up_block_types=["UpDecoderBlock2D"] * 2) | over


@pytest.fixture(scope="module")
def x64():
    g = torch.Generator().manual_seed(0)
    return torch.rand(2, 3, 64, 48, generator=g) * 2 - 1


def test_diffusers_kl_from_local_dir(tmp_path, x64):
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    net = AutoencoderKL(**tiny_kl_config(scaling_factor=0.5, shift_factor=0.1)).eval()
    net.save_pretrained(tmp_path / "vae")
    m = build_model("tiny_vae", {"type": "diffusers_kl", "weights": str(tmp_path / "vae")})
    m.check_weights()
    z = m.encode(x64)
    with torch.no_grad():
        mode = net.encode(x64).latent_dist.mode()
        ref = net.decode(mode).sample
    assert torch.allclose(z, (mode - 0.1) * 0.5, atol=1e-6)  # posterior mode, scaled and shifted
    assert torch.allclose(m.decode(z), ref, atol=1e-5)
    info = m.info()
    assert info.family == "continuous" and info.downsample == 2 and info.native_sizes == [(32, 32)]
    assert info.params == sum(p.numel() for p in net.parameters())
    assert m.latent_shape(64, 48) == tuple(z.shape[1:])


def test_diffusers_vq_tokens(tmp_path, x64):
    from diffusers import VQModel

    torch.manual_seed(0)
    VQModel(in_channels=3, out_channels=3, latent_channels=4, num_vq_embeddings=16,
            block_out_channels=[8, 16], layers_per_block=1, norm_num_groups=8, sample_size=32,
            down_block_types=["DownEncoderBlock2D"] * 2,
            up_block_types=["UpDecoderBlock2D"] * 2).save_pretrained(tmp_path / "vq")
    m = build_model("tiny_vq", {"type": "diffusers_vq", "weights": str(tmp_path / "vq")})
    z = m.encode(x64)
    tok = m.tokens(z)
    assert tok.shape == (2, 32, 24) and tok.dtype == torch.long
    assert 0 <= int(tok.min()) and int(tok.max()) < 16
    # decoding the tokens' codebook vectors equals decoding the latent (which is quantized inside)
    codes = m.module.quantize.embedding(tok).permute(0, 3, 1, 2)
    with torch.no_grad():
        quantized = m.module.quantize(z)[0]
        assert torch.allclose(codes, quantized, atol=1e-6)
        assert torch.allclose(m.module.decode(codes, force_not_quantize=True).sample,
                              m.decode(z), atol=1e-4)
    assert m.info().codebook_size == 16 and m.info().family == "VQ"


def test_sdxl_vae_architecture_ratios(tmp_path):
    from diffusers import AutoencoderKL

    AutoencoderKL(**SDXL_VAE_CONFIG).save_pretrained(tmp_path / "sdxl")
    m = build_model("sdxl_vae", {"type": "diffusers_kl", "weights": str(tmp_path / "sdxl")})
    row = card_row(m)
    assert row["latent_256"] == "4x32x32" and row["latent_512"] == "4x64x64"
    assert round(row["ratio_256"], 4) == 0.0208 and round(row["ratio_512"], 4) == 0.0208
    with torch.no_grad():  # the shape formula agrees with a real forward pass
        assert tuple(m.encode(torch.zeros(1, 3, 256, 256)).shape) == (1, 4, 32, 32)
    assert row["native_sizes"] == "1024x1024"


def test_missing_diffusers_weights_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    m = build_model("sd_vae", {"type": "diffusers_kl", "weights": "nobody/not-a-real-vae"})
    with pytest.raises(WeightsMissing) as err:
        m.check_weights()
    msg = str(err.value)
    assert "sd_vae" in msg and "nobody/not-a-real-vae" in msg
    assert "huggingface-cli download" in msg and "models.sd_vae.weights" in msg
    with pytest.raises(WeightsMissing):
        m.load()
    cfg = {"datasets": {"d": {"type": "skimage", "images": ["brick"]}},
           "models": {"sd_vae": {"type": "diffusers_kl", "weights": "nobody/not-a-real-vae"}}}
    with pytest.raises(ConfigError, match=r"models\.sd_vae"):
        check_config(cfg)


def _monai_kl_net():
    return dict(spatial_dims=2, in_channels=1, out_channels=1, channels=[8, 16], latent_channels=2,
                num_res_blocks=1, norm_num_groups=8, attention_levels=[False, False],
                with_encoder_nonlocal_attn=False, with_decoder_nonlocal_attn=False)


def _monai_vq_net(spatial_dims, num_embeddings):
    return dict(spatial_dims=spatial_dims, in_channels=1, out_channels=1, channels=[8, 8],
                num_res_layers=1, num_res_channels=[8, 8],
                downsample_parameters=[(2, 4, 1, 1)] * 2,
                upsample_parameters=[(2, 4, 1, 1, 0)] * 2, num_embeddings=num_embeddings,
                embedding_dim=4)


def test_monai_kl_and_vqvae_from_checkpoint(tmp_path, x64):
    from monai.networks.nets import VQVAE, AutoencoderKL

    torch.manual_seed(0)
    kl_net = _monai_kl_net()
    kl = AutoencoderKL(**kl_net).eval()
    torch.save({"state_dict": kl.state_dict()}, tmp_path / "kl.pt")
    m = build_model("mkl", {"type": "monai_kl", "checkpoint": str(tmp_path / "kl.pt"),
                            "network": kl_net})
    y = m.reconstruct(x64)
    assert y.shape == x64.shape  # RGB through a 1-channel model, channel by channel
    with torch.no_grad():
        ref = kl.decode(kl.encode(x64[:, 1:2])[0])
    assert torch.allclose(y[:, 1:2], ref.clamp(-1, 1), atol=1e-5)
    assert m.latent_shape(64, 48) == (2, 32, 24)

    vq_net = _monai_vq_net(spatial_dims=2, num_embeddings=16)
    torch.save(VQVAE(**vq_net).state_dict(), tmp_path / "vq.pt")
    v = build_model("mvq", {"type": "monai_vqvae", "checkpoint": str(tmp_path / "vq.pt"),
                            "network": vq_net})
    assert v.reconstruct(x64).shape == x64.shape
    tok = v.tokens(v.encode(x64))
    assert tok.shape == (6, 16, 12) and int(tok.max()) < 16
    assert v.info().downsample == 4 and v.info().codebook_size == 16
    with pytest.raises(WeightsMissing, match="mvq.*MONAI checkpoint not found"):
        build_model("mvq", {"type": "monai_vqvae", "checkpoint": str(tmp_path / "no.pt"),
                            "network": vq_net}).check_weights()


class HalfRes(nn.Module):
    """A toy tokenizer for the bring-your-own recipes."""

    def __init__(self, width: int = 4):
        super().__init__()
        self.enc = nn.Conv2d(3, width, 2, stride=2)
        self.dec = nn.ConvTranspose2d(width, 3, 2, stride=2)

    @torch.jit.export  # TorchScript compiles only forward() unless methods are exported
    def encode(self, x):
        return self.enc(x)

    @torch.jit.export
    def decode(self, z):
        return self.dec(z)

    def forward(self, x):
        return self.decode(self.encode(x))


MY_TOK_SOURCE = """
from torch import nn


class HalfRes(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.enc = nn.Conv2d(3, width, 2, stride=2)
        self.dec = nn.ConvTranspose2d(width, 3, 2, stride=2)

    def encode(self, x):
        return self.enc(x)

    def decode(self, z):
        return self.dec(z)
"""


def test_torchscript_and_state_dict_recipes(tmp_path, x64, monkeypatch):
    torch.manual_seed(0)
    net = HalfRes().eval()
    torch.jit.script(net).save(str(tmp_path / "tok.pt"))
    torch.save(net.state_dict(), tmp_path / "sd.pt")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_tok.py").write_text(MY_TOK_SOURCE)
    # another test's my_tok.py (the README's example) may have been imported first
    monkeypatch.delitem(sys.modules, "my_tok", raising=False)
    ts = build_model("ts", {"type": "torchscript", "path": str(tmp_path / "tok.pt"),
                            "downsample": 2})
    sd = build_model("sd", {"type": "state_dict", "import_path": "my_tok:HalfRes",
                            "kwargs": {"width": 4}, "state_dict": str(tmp_path / "sd.pt"),
                            "downsample": 2})
    with torch.no_grad():
        ref = net.decode(net.encode(x64)).clamp(-1, 1)
    assert torch.allclose(ts.reconstruct(x64), ref, atol=1e-6)
    assert torch.allclose(sd.reconstruct(x64), ref, atol=1e-6)
    assert ts.info().downsample == 2 and sd.latent_shape(4, 4) is None
    with pytest.raises(ValueError, match="import_path"):
        build_model("bad", {"type": "state_dict", "import_path": "nocolon", "state_dict": "x"})


def test_compression_ratio():
    assert compression_ratio((4, 32, 32), 256, 256) == pytest.approx(4096 / 196608)
    assert math.isnan(compression_ratio(None, 256, 256))


def test_monai_3d_volumes(tmp_path):
    from monai.networks.nets import VQVAE, AutoencoderKL

    torch.manual_seed(0)
    vol = torch.rand(1, 1, 16, 16, 16) * 2 - 1
    kl_net = _monai_kl_net() | {"spatial_dims": 3}
    torch.save(AutoencoderKL(**kl_net).state_dict(), tmp_path / "kl3.pt")
    kl = build_model("kl3", {"type": "monai_kl", "checkpoint": str(tmp_path / "kl3.pt"),
                             "network": kl_net, "native_size": 16})
    z = kl.encode(vol)
    assert tuple(z.shape) == (1, *kl.latent_shape(16, 16, 16)) == (1, 2, 8, 8, 8)
    assert kl.reconstruct(vol).shape == vol.shape
    assert kl.info().native_sizes == [(16, 16, 16)]
    vq_net = _monai_vq_net(spatial_dims=3, num_embeddings=8)
    torch.save(VQVAE(**vq_net).state_dict(), tmp_path / "vq3.pt")
    vq = build_model("vq3", {"type": "monai_vqvae", "checkpoint": str(tmp_path / "vq3.pt"),
                             "network": vq_net})
    assert vq.reconstruct(vol).shape == vol.shape
    assert tuple(vq.tokens(vq.encode(vol)).shape) == (1, 4, 4, 4)

"""Tiny random-weight models saved in the layouts the real ones ship in (``save_pretrained``),
for tests of the loading and inference code paths that run offline: CLIP (tokenizer written
here: byte-level vocabulary, no merges), DINOv2, OWLv2, a Stable Diffusion pipeline and a
VisionEncoderDecoder captioner. Their outputs are meaningless; their shapes and plumbing are
the real ones."""
from __future__ import annotations

import json
from pathlib import Path


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def clip_tokenizer(folder: Path):
    """A CLIPTokenizer over single bytes (every character a token), saved to ``folder``."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(vocab) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77)
    return tok


def clip_configs(vocab_size: int, image_size: int = 32) -> dict:
    text = dict(vocab_size=vocab_size, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                num_attention_heads=4, max_position_embeddings=77, bos_token_id=vocab_size - 2,
                eos_token_id=vocab_size - 1, pad_token_id=vocab_size - 1)
    vision = dict(image_size=image_size, patch_size=8, hidden_size=32, intermediate_size=37,
                  num_hidden_layers=2, num_attention_heads=4)
    return {"text_config": text, "vision_config": vision, "projection_dim": 16}


def tiny_clip(folder: Path) -> Path:
    """CLIPModel + CLIPProcessor (32 px images) with random weights."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    torch.manual_seed(0)
    tok = clip_tokenizer(folder / "_tok")
    CLIPModel(CLIPConfig(**clip_configs(len(tok)))).save_pretrained(folder)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tok).save_pretrained(folder)
    return folder


def tiny_dino(folder: Path) -> Path:
    """Dinov2Model + its image processor (28 px crops) with random weights."""
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    torch.manual_seed(0)
    Dinov2Model(Dinov2Config(image_size=28, patch_size=14, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=37)).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 28, "width": 28},
                      do_center_crop=True).save_pretrained(folder)
    return folder


def tiny_owlv2(folder: Path) -> Path:
    """Owlv2ForObjectDetection + Owlv2Processor (32 px) with random weights."""
    import torch
    from transformers import (Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor,
                              Owlv2Processor)

    torch.manual_seed(0)
    tok = clip_tokenizer(folder / "_tok")
    cfg = clip_configs(len(tok))
    cfg["projection_dim"] = 32  # the class head maps image features to the text width
    Owlv2ForObjectDetection(Owlv2Config(**cfg)).save_pretrained(folder)
    images = Owlv2ImageProcessor(size={"height": 32, "width": 32})
    Owlv2Processor(image_processor=images, tokenizer=tok).save_pretrained(folder)
    return folder


def tiny_stable_diffusion(folder: Path) -> Path:
    """A StableDiffusionPipeline (32 px latents of 4 channels, 64 px images) with random
    weights, no safety checker."""
    import torch
    from diffusers import (AutoencoderKL, DDIMScheduler, StableDiffusionPipeline,
                           UNet2DConditionModel)
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(0)
    tok = clip_tokenizer(folder / "_tok")
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1, sample_size=32,
                                in_channels=4, out_channels=4, cross_attention_dim=32,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
                                norm_num_groups=32, attention_head_dim=4)
    vae = AutoencoderKL(block_out_channels=(32, 64), in_channels=3, out_channels=3,
                        down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4,
                        norm_num_groups=32)
    text = CLIPTextModel(CLIPTextConfig(**clip_configs(len(tok))["text_config"]))
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet,
                                   scheduler=DDIMScheduler(clip_sample=False, steps_offset=1), safety_checker=None,
                                   feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return folder


def tiny_captioner(folder: Path) -> Path:
    """A VisionEncoderDecoderModel (ViT encoder, GPT-2 decoder) with its image processor and a
    byte-level GPT-2 tokenizer, random weights."""
    import torch
    from transformers import (GPT2Config, GPT2LMHeadModel, GPT2Tokenizer,
                              VisionEncoderDecoderModel, ViTConfig, ViTImageProcessor, ViTModel)

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=64)
    encoder = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=37))
    eos = len(vocab) - 1
    decoder = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_embd=32, n_layer=2, n_head=4,
                                         n_positions=64, add_cross_attention=True,
                                         bos_token_id=eos, eos_token_id=eos, is_decoder=True))
    model = VisionEncoderDecoderModel(encoder=encoder, decoder=decoder)
    model.config.decoder_start_token_id = eos
    model.config.pad_token_id = eos
    model.generation_config.decoder_start_token_id = eos
    model.generation_config.pad_token_id = eos
    model.save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def tiny_sentence_transformer(folder: Path) -> Path:
    """A sentence-transformers model (a 2-layer BERT over characters, mean pooling) saved as
    ``SentenceTransformer.save`` writes it (``modules.json``)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizer

    torch.manual_seed(0)
    bert = folder / "_bert"
    bert.mkdir(parents=True, exist_ok=True)
    chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,")
    (bert / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                               *chars, *[f"##{c}" for c in chars]]) + "\n")
    tok = BertTokenizer(str(bert / "vocab.txt"), model_max_length=64)
    tok.save_pretrained(bert)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=37,
                         max_position_embeddings=64)).save_pretrained(bert)
    word = Transformer(str(bert), max_seq_length=64)
    SentenceTransformer(modules=[word, Pooling(32, "mean")]).save(str(folder))
    return folder


def user_model_files(root: Path, module: str, source: str) -> Path:
    """A user's model as ``type: state_dict`` reads it: ``source`` written to
    ``root/code/{module}.py`` (a folder not on ``sys.path``) and the random weights of its
    ``TinyVQ`` (seed 0) to ``root/tiny_vq.pt``; returns ``root``. The module is executed under
    another name, so the run under test imports its own copy."""
    import importlib.util

    import torch

    (root / "code").mkdir(parents=True, exist_ok=True)
    (root / "code" / f"{module}.py").write_text(source)
    spec = importlib.util.spec_from_file_location(f"_weights_of_{module}",
                                                  root / "code" / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    torch.save(mod.TinyVQ().state_dict(), root / "tiny_vq.pt")
    return root


def inprocess_bench():
    """``benchmarks/inprocess_vlm.py`` as a module (its model builder, paths and timing)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks/inprocess_vlm.py"
    spec = importlib.util.spec_from_file_location("inprocess_vlm_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_gemma3(folder: Path, constant: bool = False) -> Path:
    """The tiny random Gemma 3 chat VLM of ``benchmarks/inprocess_vlm.py`` (``random_gemma3``,
    size ``tiny``: a 1-layer SigLIP tower on 32 px images, 4 image tokens, a word-level
    tokenizer, Gemma's chat template); ``constant``: every logit 0 (greedy answers token 0)."""
    return inprocess_bench().random_gemma3(folder, "tiny", constant=constant)


#: Words of the tiny Janus' vocabulary (its answers are made of them).
JANUS_SENTENCES = ["Describe this image in one detailed paragraph: the objects, their count, "
                   "colours, positions and any visible text.",
                   'Create an image that shows the following description faithfully: "',
                   "a red bus on a quiet street", "two cats sleep on a blue sofa"]


def tiny_janus(folder: Path) -> Path:
    """A JanusForConditionalGeneration (both directions: chat and image generation) with its
    JanusProcessor, random weights: a 2-layer Llama of width 32, a 1-layer SigLIP tower on 32 px
    images (16 image tokens), a VQ decoder of 64 codes giving 32 x 32 images, a word-level
    tokenizer (``tokenizers``) with Janus' special tokens and a chat template in Janus' turn
    format; its ``generation_config`` is the converted hub folders' (guidance 5, temperature
    1, the begin-of-image id, custom entries kept)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (JanusConfig, JanusForConditionalGeneration, JanusImageProcessor,
                              JanusProcessor, PreTrainedTokenizerFast)

    special = ["<pad>", "<eos>", "<bos>", "<unk>", "<|User|>", "<|Assistant|>",
               "<begin_of_image>", "<end_of_image>", "<image_placeholder>"]
    split = pre_tokenizers.Whitespace().pre_tokenize_str
    words = sorted({w for s in JANUS_SENTENCES for w, _ in split(s)})
    vocab = {w: i for i, w in enumerate([*special, *words])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.add_special_tokens(special)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>", extra_special_tokens={"image_token": "<image_placeholder>",
                                                 "boi_token": "<begin_of_image>",
                                                 "eoi_token": "<end_of_image>"})
    template = ("{{ bos_token }}{% for m in messages %}"
                "{{ '<|User|>' if m['role'] == 'user' else '<|Assistant|>' }}: "
                "{% for p in m['content'] %}{% if p['type'] == 'image' %}<image_placeholder>"
                "{% else %}{{ p['text'] }}{% endif %}{% endfor %}\n\n{% endfor %}"
                "{% if add_generation_prompt %}<|Assistant|>:{% endif %}")
    px, patch = 32, 8
    tokens = (px // patch) ** 2
    processor = JanusProcessor(
        image_processor=JanusImageProcessor(size={"height": px, "width": px}, min_size=4),
        tokenizer=tokenizer, chat_template=template, num_image_tokens=tokens)
    config = JanusConfig(
        text_config=dict(model_type="llama", vocab_size=len(vocab), hidden_size=32,
                         intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=1, max_position_embeddings=512,
                         pad_token_id=vocab["<pad>"], bos_token_id=vocab["<bos>"],
                         eos_token_id=vocab["<eos>"]),
        vision_config=dict(image_size=px, patch_size=patch, num_image_tokens=tokens,
                           hidden_size=32, projection_dim=32, num_hidden_layers=1,
                           num_attention_heads=2, mlp_ratio=2),
        # 3 upsamplings of the 4 x 4 code grid: 32 px images
        vq_config=dict(embed_dim=8, num_embeddings=64, latent_channels=8, base_channels=32,
                       channel_multiplier=[1, 1, 1, 1], num_res_blocks=1, projection_dim=32,
                       image_token_embed_dim=32),
        image_token_id=vocab["<image_placeholder>"],
        tie_word_embeddings=False)  # tied, the answer repeats the prompt's last word
    torch.manual_seed(0)
    model = JanusForConditionalGeneration(config)
    with torch.no_grad():  # at the init's 0.02 scale the image does not change the answer
        for name, weight in model.named_parameters():
            if weight.dim() == 2 and "vqmodel" not in name:
                weight.normal_(0.0, 0.3)
    gen = model.generation_config
    gen._from_model_config = False  # keep the custom entry below when saved and loaded
    gen.pad_token_id, gen.bos_token_id = vocab["<pad>"], vocab["<bos>"]
    gen.eos_token_id, gen.guidance_scale, gen.temperature = vocab["<eos>"], 5.0, 1.0
    gen.generation_kwargs = {"boi_token_id": vocab["<begin_of_image>"]}
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def tiny_captioner_that_writes(folder: Path) -> Path:
    """:func:`tiny_captioner` whose ``generation_config.json`` suppresses the end-of-sequence
    token, so that greedy decoding writes ``max_new_tokens`` tokens (the random captioner
    otherwise ends every caption at its first token: an empty caption)."""
    from transformers import GenerationConfig

    tiny_captioner(folder)
    config = GenerationConfig.from_pretrained(folder)
    config.suppress_tokens = [config.eos_token_id]
    config.save_pretrained(folder)
    return folder


def tiny_gpt2(folder: Path) -> Path:
    """A text-only ``GPT2LMHeadModel`` (2 layers of width 32, a byte-level vocabulary) saved with
    ``save_pretrained``: a model folder that holds no image-text model."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=257, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                               bos_token_id=256, eos_token_id=256)).save_pretrained(folder)
    return folder

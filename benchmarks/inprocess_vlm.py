"""Throughput and memory of the in-process VLM reader (``type: transformers``) by batch size.

Builds a random Gemma 3 VLM (``Gemma3ForConditionalGeneration``, :func:`random_gemma3`: a
SigLIP vision tower and a Gemma 3 text model with sliding and full attention layers, a
word-level tokenizer built from a few sentences, a chat template in Gemma's turn format) of the
``--size`` below, saved with ``save_pretrained`` and loaded back by path, as a real folder is;
nothing is downloaded. Its ``generation_config`` has no end-of-sequence token, so every answer
is ``--new-tokens`` long and the batch sizes do the same work.

For each batch size in ``--batch-sizes`` (default 1 2 4 8 16), an OCR engine of
``type: transformers`` (:class:`roundtrip.readers.transformers_vlm.TransformersOCR`, greedy)
reads ``--images`` seeded random images, resized to the model's input size, with an empty
response cache, ``--repeats`` times, in a process of its own (the model loaded once, one
warm-up batch first). Each batch size records the median images/s and generated tokens/s, the
resident memory with the model loaded and its peak during the batches (sampled every 5 ms), on
CUDA the memory allocated for the model and ``torch.cuda.max_memory_allocated`` during the
batches, and whether its answers equal those of the first batch size (greedy decoding: they
must). Writes ``benchmarks/results/inprocess_vlm.json``.

Usage: ``python benchmarks/inprocess_vlm.py [--size small] [--batch-sizes 1 2 4 8 16]
[--images 32] [--new-tokens 16] [--repeats 3] [--threads 1] [--device auto] [--out JSON]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

from records import REPO, commit, write_record  # noqa: E402 - sibling module

#: A verdict string that is token 0 of the vocabulary (a model answering token 0 judges 2).
VERDICT = '{"score": 2, "explanation": "flawless"}'
SENTENCES = ["Extract and output only the text from the image in its original language.",
             "If there is no text, return nothing.",
             "The quick brown fox jumps over the lazy dog.",
             "Compare the text in the image with it and answer with a JSON object.",
             "user model"]
SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
           "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
#: Gemma's turn format: one user turn, each image as <start_of_image> (the processor expands
#: it to the image's tokens).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>"
    "{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<start_of_image>{% elif p['type'] == 'text' %}{{ p['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
#: ``--size`` -> (text width, text layers, vision width, vision layers, image px, patch px,
#: image tokens). ``tiny`` is the tests' model; ``small`` has Gemma 3's image-token count per
#: side / 4 and a text model of width 256.
SIZES = {"tiny": (32, 2, 32, 1, 32, 8, 4), "small": (256, 4, 256, 2, 224, 14, 64)}


def random_gemma3(folder: Path, size: str = "tiny", constant: bool = False,
                  eos: bool = True) -> Path:
    """A random-weight Gemma 3 VLM with its processor saved to ``folder``.

    Args:
        size: a :data:`SIZES` key.
        constant: the text model's final norm scales every hidden state to zero, so every logit
            is 0 and greedy decoding answers token 0 (:data:`VERDICT`) at every step.
        eos: end answers at ``<eos>``/``<end_of_turn>`` (False: every answer runs to
            ``max_new_tokens``). The ``generation_config`` otherwise is Gemma 3's instruction
            models' (sampling, top-k 64, top-p 0.95).
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (Gemma3Config, Gemma3ForConditionalGeneration,
                              Gemma3ImageProcessor, Gemma3Processor, GenerationConfig,
                              PreTrainedTokenizerFast)

    width, layers, v_width, v_layers, px, patch, tokens = SIZES[size]
    split = pre_tokenizers.Whitespace().pre_tokenize_str
    words = sorted({w for s in SENTENCES for w, _ in split(s)})
    vocab = {w: i for i, w in enumerate([VERDICT, *SPECIAL, *words])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.add_special_tokens(SPECIAL)  # matched whole, and skipped when decoding
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                              "image_token": "<image_soft_token>"})
    processor = Gemma3Processor(
        image_processor=Gemma3ImageProcessor(size={"height": px, "width": px}),
        tokenizer=tokenizer, chat_template=CHAT_TEMPLATE, image_seq_length=tokens)
    heads = max(2, width // 64)
    config = Gemma3Config(
        text_config=dict(vocab_size=len(vocab), hidden_size=width, intermediate_size=2 * width,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=1, head_dim=width // heads,
                         query_pre_attn_scalar=width // heads, sliding_window=16,
                         layer_types=["sliding_attention"] * (layers - 1) + ["full_attention"],
                         max_position_embeddings=1024, tie_word_embeddings=False,
                         pad_token_id=vocab["<pad>"], eos_token_id=vocab["<eos>"],
                         bos_token_id=vocab["<bos>"]),
        vision_config=dict(image_size=px, patch_size=patch, hidden_size=v_width,
                           intermediate_size=2 * v_width, num_hidden_layers=v_layers,
                           num_attention_heads=max(2, v_width // 64)),
        mm_tokens_per_image=tokens, boi_token_index=vocab["<start_of_image>"],
        eoi_token_index=vocab["<end_of_image>"], image_token_index=vocab["<image_soft_token>"])
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config)
    with torch.no_grad():  # the image projection starts at zero: images would not count
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, 0.3)
        if constant:
            model.model.language_model.norm.weight.fill_(-1.0)  # scale (1 + w) = 0
    model.generation_config = GenerationConfig(
        bos_token_id=vocab["<bos>"], pad_token_id=vocab["<pad>"], do_sample=True, top_k=64,
        top_p=0.95, eos_token_id=[vocab["<eos>"], vocab["<end_of_turn>"]] if eos else None)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


class PeakRSS:
    """Peak resident memory of this process while in the block, sampled every 5 ms."""

    def __enter__(self):
        import psutil

        self._proc = psutil.Process()
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def _mb(n: float) -> float:
    return round(n / 2**20, 1)


def one_batch_size(folder: Path, batch: int, args, work: Path) -> dict:
    """Time the reader at one batch size, in this (fresh) process (module docstring)."""
    import numpy as np
    import psutil
    import torch

    from roundtrip.api.client import clear_clients
    from roundtrip.readers import build_ocr
    from roundtrip.readers.transformers_vlm import _load, pick_device, pick_dtype

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (96, 128, 3), dtype=np.uint8) for _ in range(args.images)]
    px = SIZES[args.size][4]
    spec = {"type": "transformers", "model": str(folder), "prompt": SENTENCES[0],
            "batch_size": batch, "image_size": [px, px], "max_new_tokens": args.new_tokens,
            "device": args.device}
    device = pick_device(args.device)
    cuda = device != "cpu"
    _load(str(folder), device, pick_dtype("auto", device))  # the model, before any batch
    loaded = psutil.Process().memory_info().rss
    gpu_loaded = torch.cuda.memory_allocated() if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    seconds, texts, usage = [], None, None
    with PeakRSS() as mem:
        warm = build_ocr("bench", spec | {"cache_dir": str(work / f"warm{batch}")})
        warm.read_many(images[:batch], "eng")
        for r in range(args.repeats):
            clear_clients()
            engine = build_ocr("bench", spec | {"cache_dir": str(work / f"b{batch}r{r}")})
            if cuda:
                torch.cuda.synchronize()
            t = time.perf_counter()
            texts = engine.read_many(images, "eng")
            if cuda:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t)
            usage = engine.vlm.usage
    s = statistics.median(seconds)
    row = {"batch_size": batch, "images": len(images), "seconds": [round(x, 3) for x in seconds],
           "images_per_s": round(len(images) / s, 2),
           "tokens_out_per_s": round(usage.output_tokens / s, 1),
           "tokens_in": usage.input_tokens, "tokens_out": usage.output_tokens,
           "rss_model_loaded_mb": _mb(loaded), "peak_rss_mb": _mb(mem.peak),
           "peak_rss_above_loaded_mb": _mb(mem.peak - loaded),
           "failed": [str(t) for t in texts if isinstance(t, Exception)][:3],
           "answers": [t if isinstance(t, str) else "" for t in texts]}
    if cuda:
        row |= {"gpu_model_allocated_mb": _mb(gpu_loaded),
                "gpu_peak_allocated_mb": _mb(torch.cuda.max_memory_allocated())}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--images", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/inprocess_vlm.json"))
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # one batch size, in a child
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        row = one_batch_size(Path(args.folder), args.worker, args, Path(args.folder).parent)
        print(json.dumps(row))
        return

    import torch
    import transformers

    from roundtrip.readers.transformers_vlm import pick_device, pick_dtype

    work = Path(tempfile.mkdtemp(prefix="inprocess-vlm-"))
    folder = random_gemma3(work / "model", args.size, eos=False)
    rows = []
    for batch in args.batch_sizes:  # each in a fresh process: its own peak memory
        cmd = [sys.executable, __file__, "--worker", str(batch), "--folder", str(folder)]
        for flag in ("size", "images", "new_tokens", "repeats", "threads", "device"):
            cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first = rows[0]["answers"]
    for row in rows:
        row["same_answers_as_first"] = row.pop("answers") == first
    device = pick_device(args.device)
    params = sum(p.numel() for p in transformers.AutoModelForImageTextToText.from_pretrained(
        folder, local_files_only=True).parameters())
    result = {
        "benchmark": "in-process VLM reader (type: transformers), images/s by batch size",
        "commit": commit(), "python": platform.python_version(), "torch": torch.__version__,
        "transformers": transformers.__version__, "machine": platform.machine(),
        "cpu_count": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
        "device": "cpu" if device == "cpu" else torch.cuda.get_device_name(0),
        "dtype": pick_dtype("auto", device), "torch_threads": args.threads,
        "model": {"architecture": "Gemma3ForConditionalGeneration (random weights)",
                  "size": args.size, "parameters": params,
                  "image_px": SIZES[args.size][4], "image_tokens": SIZES[args.size][6]},
        "settings": {"images": args.images, "image_shape": [96, 128, 3],
                     "new_tokens": args.new_tokens, "decoding": "greedy",
                     "repeats": args.repeats, "one_process_per_batch_size": True},
        "results": rows,
    }
    write_record(args.out, result)
    for row in rows:
        print(f"batch {row['batch_size']:>2}: {row['images_per_s']:>7} images/s, "
              f"{row['tokens_out_per_s']:>8} tokens/s, peak RSS {row['peak_rss_mb']} MB "
              f"(+{row['peak_rss_above_loaded_mb']} MB over the loaded model)"
              + (f", GPU peak {row['gpu_peak_allocated_mb']} MB"
                 if "gpu_peak_allocated_mb" in row else "")
              + f", same answers as batch {rows[0]['batch_size']}: {row['same_answers_as_first']}")


if __name__ == "__main__":
    main()

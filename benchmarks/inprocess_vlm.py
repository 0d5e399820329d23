"""Throughput, time to first token and memory of the in-process VLM reader
(``type: transformers``) against plain transformers ``generate``, by decoding path and batch
size.

Builds a random Gemma 3 VLM (``Gemma3ForConditionalGeneration``, :func:`random_gemma3`: a
SigLIP vision tower and a Gemma 3 text model with sliding and full attention layers, a
word-level tokenizer built from a few sentences, a chat template in Gemma's turn format) of the
``--size`` below, saved with ``save_pretrained`` and loaded back by path, as a real folder is;
nothing is downloaded. Its ``generation_config`` has no end-of-sequence token, so every answer
is ``--new-tokens`` long and every path and batch size does the same work.

Each path of ``--paths`` reads ``--images`` seeded random images (96 x 128, resized to the
model's input size with PIL, the OCR prompt) at each batch size of ``--batch-sizes``, greedy,
``--repeats`` times, in a process of its own (the model loaded once, one warm-up batch first,
which also compiles a compiled path):

- ``transformers``: the baseline, plain ``generate``: the processor on a batch of prepared
  images, ``model.generate(**inputs, max_new_tokens, do_sample=False)``, ``batch_decode``; no
  cache, no ordering, no thread;
- ``eager``: roundtrip's OCR engine (:class:`roundtrip.readers.transformers_vlm.TransformersOCR`,
  an empty response cache each repeat) on its eager path: a dynamic KV cache, nothing compiled,
  batches in the order the images came, prepared in the generating thread;
- ``static``: the engine with a static KV cache, not compiled;
- ``fast``: the engine with its defaults (``cache_implementation``, ``compile``,
  ``attn_implementation`` and ``prefetch`` ``auto``, length-sorted batches): on a GPU a static
  cache whose decoding step transformers compiles (CUDA graphs), and the prefetch thread; on
  the CPU the eager decoding with length-sorted batches.

Each row records the median images/s and generated tokens/s; the time to the first token (from
the start of the read to the end of the first batch's prefill, the vision tower and the prompt,
which yields the first token; median over repeats), the prefill seconds of each ``generate``
call of the last repeat and their median over every call of every repeat; the resident memory with the model loaded and its peak during the
reads (sampled every 5 ms); on CUDA the memory allocated for the model and
``torch.cuda.max_memory_allocated`` during the reads (None on the CPU); and whether its answers
equal the baseline's at the same batch size (greedy decoding: on the CPU in float32 they must;
in bfloat16 on a GPU other kernels may round differently). A setting whose process fails is
recorded with its error and the others still run. Writes
``benchmarks/results/inprocess_vlm_fastpath.json`` after each setting (``"complete": false``
until the last), so a run stopped at a time limit keeps what it measured.

Usage: ``python benchmarks/inprocess_vlm.py [--size small] [--paths transformers eager fast]
[--batch-sizes 1 2 4 8 16] [--images 32] [--new-tokens 16] [--repeats 3] [--threads 1]
[--device auto] [--out JSON]``
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
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
#: side / 4 and a text model of width 256; ``medium`` has the widths and depths of Gemma 3 4B
#: (text 2560 x 34 layers; SigLIP 1152 x 27 layers at 896 px, patches of 14, 256 image tokens),
#: about 2.1 billion parameters with this builder's other choices (:func:`random_gemma3`),
#: saved in bfloat16.
SIZES = {"tiny": (32, 2, 32, 1, 32, 8, 4), "small": (256, 4, 256, 2, 224, 14, 64),
         "medium": (2560, 34, 1152, 27, 896, 14, 256)}
#: Sizes saved in bfloat16 (the dtype a GPU runs them in): half the disk and load time.
SAVED_IN_BFLOAT16 = ("medium",)
#: ``--paths``: the settings of roundtrip's OCR engine on each path; ``transformers`` is plain
#: ``generate`` (module docstring).
PATHS = {"transformers": None,
         "eager": {"cache_implementation": "dynamic", "compile": False, "sort_by_length": False,
                   "prefetch": False},
         "static": {"cache_implementation": "static", "compile": False},
         "fast": {}}


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

    The text model has ``width // 64`` attention heads of ``width // heads`` dimensions, one
    key/value head, an MLP of twice its width, a sliding window of 16 on every layer but the
    last, and the tokenizer's vocabulary of about 60 words (Gemma 3 4B: 8 heads of 256, 4
    key/value heads, an MLP of 10240, a window of 1024 on five layers of six, 262,208 tokens).
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
    if size in SAVED_IN_BFLOAT16:
        model = model.to(torch.bfloat16)
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


class FirstTokens:
    """Times every ``generate`` call of ``model`` while in the block: its start and the end of
    its first forward pass (the prefill, which yields the first token; the GPU synchronized
    first). The hook that times it is removed at once, before the decoding steps (which a
    compiled path runs in a compiled function)."""

    def __init__(self, model, cuda: bool):
        self.model, self.cuda, self.calls = model, cuda, []

    def __enter__(self):
        import torch

        real = self.model.generate

        def generate(*args, **kwargs):
            call = {"start": time.perf_counter()}

            def first(module, inputs, output):
                if self.cuda:
                    torch.cuda.synchronize()
                call["first"] = time.perf_counter()
                handle.remove()

            handle = self.model.register_forward_hook(first)
            try:
                return real(*args, **kwargs)
            finally:
                handle.remove()
                self.calls.append(call)

        self.model.generate = generate  # an instance attribute: the reader calls it
        return self

    def __exit__(self, *exc):
        del self.model.generate


def _images(args) -> list:
    import numpy as np

    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (96, 128, 3), dtype=np.uint8) for _ in range(args.images)]


def _plain_generate(folder: Path, device: str, dtype: str, new_tokens: int):
    """The baseline: ``(model, read)``, ``read(images, batch)`` -> ``(answers, tokens in,
    tokens out)`` with plain transformers, ``new_tokens`` new tokens (module docstring)."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from roundtrip.readers.transformers_vlm import (_answer_length, _eos_ids, _inputs,
                                                    prepared_image)

    model = AutoModelForImageTextToText.from_pretrained(
        folder, dtype=getattr(torch, dtype), local_files_only=True).to(device).eval()
    processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
    processor.tokenizer.padding_side = "left"
    px = model.config.vision_config.image_size
    eos = _eos_ids(model)

    def read(images, batch: int):
        answers, tokens_in, tokens_out = [], 0, 0
        for k in range(0, len(images), batch):
            pils = [prepared_image(im, (px, px)) for im in images[k:k + batch]]
            inputs = _inputs(processor, [([pil, SENTENCES[0]], [pil]) for pil in pils])
            inputs = inputs.to(model.device, dtype=model.dtype)
            with torch.no_grad():
                ids = model.generate(**inputs, max_new_tokens=new_tokens,
                                     do_sample=False)
            new = ids[:, inputs["input_ids"].shape[1]:].cpu()
            answers += processor.batch_decode(new, skip_special_tokens=True)
            tokens_in += int(inputs["attention_mask"].sum())
            tokens_out += sum(_answer_length(row.tolist(), eos)[0] for row in new)
        return answers, tokens_in, tokens_out

    return model, read


def one_setting(folder: Path, path: str, batch: int, args, work: Path) -> dict:
    """Time one path (:data:`PATHS`) at one batch size, in this process (module docstring).

    Returns:
        The row of the record, with ``answers`` (the texts of the last repeat).
    """
    import psutil
    import torch

    from roundtrip.api.client import clear_clients
    from roundtrip.readers import build_ocr
    from roundtrip.readers.transformers_vlm import _load, pick_device, pick_dtype

    torch.set_num_threads(args.threads)
    images = _images(args)
    px = SIZES[args.size][4]
    device = pick_device(args.device)
    dtype = pick_dtype("auto", device)
    cuda = device != "cpu"
    settings = PATHS[path]
    if settings is None:
        model, plain = _plain_generate(folder, device, dtype, args.new_tokens)
    else:
        model = _load(str(folder), device, dtype)[0]  # the model the engine runs, before any batch
        spec = {"type": "transformers", "model": str(folder), "prompt": SENTENCES[0],
                "batch_size": batch, "image_size": [px, px], "max_new_tokens": args.new_tokens,
                "device": args.device} | settings
    loaded = psutil.Process().memory_info().rss
    gpu_loaded = torch.cuda.memory_allocated() if cuda else None
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    def read(cache: str):
        """``(answers, tokens in, tokens out)`` of the images."""
        if settings is None:
            return plain(images, batch)
        clear_clients()
        engine = build_ocr("bench", spec | {"cache_dir": str(work / cache)})
        answers = engine.read_many(images, "eng")
        usage = engine.vlm.usage
        return answers, usage.input_tokens, usage.output_tokens

    seconds, first_token, prefill = [], [], []
    with PeakRSS() as mem, FirstTokens(model, cuda) as timed:
        if settings is None:  # the warm-up batch
            plain(images[:batch], batch)
        else:
            build_ocr("bench", spec | {"cache_dir": str(work / f"warm-{path}-{batch}")}
                      ).read_many(images[:batch], "eng")
        for r in range(args.repeats):
            timed.calls.clear()
            if cuda:
                torch.cuda.synchronize()
            t = time.perf_counter()
            answers, tokens_in, tokens_out = read(f"{path}-b{batch}-r{r}")
            if cuda:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t)
            first_token.append(timed.calls[0]["first"] - t)
            prefill.append([round(c["first"] - c["start"], 4) for c in timed.calls])
    s = statistics.median(seconds)
    return {"path": path, "batch_size": batch, "images": len(images),
            "seconds": [round(x, 3) for x in seconds], "images_per_s": round(len(images) / s, 2),
            "tokens_out_per_s": round(tokens_out / s, 1), "tokens_in": tokens_in,
            "tokens_out": tokens_out, "first_token_s": round(statistics.median(first_token), 4),
            "prefill_s": prefill[-1],
            "prefill_s_median": round(statistics.median(x for run in prefill for x in run), 4),
            "rss_model_loaded_mb": _mb(loaded), "peak_rss_mb": _mb(mem.peak),
            "peak_rss_above_loaded_mb": _mb(mem.peak - loaded),
            "gpu_model_allocated_mb": None if gpu_loaded is None else _mb(gpu_loaded),
            "gpu_peak_allocated_mb": _mb(torch.cuda.max_memory_allocated()) if cuda else None,
            "failed": [str(a) for a in answers if isinstance(a, Exception)][:3],
            "answers": [a if isinstance(a, str) else "" for a in answers]}


def parser() -> argparse.ArgumentParser:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--paths", nargs="+", choices=list(PATHS),
                    default=["transformers", "eager", "fast"])
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--images", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/inprocess_vlm_fastpath.json"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # PATH:BATCH, in a child process
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    return ap


def _parameters(folder: Path) -> int:
    """Parameters of a saved model, read from its safetensors headers (nothing loaded)."""
    from safetensors import safe_open

    total = 0
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(str(file), "pt") as weights:
            for name in weights.keys():
                total += math.prod(weights.get_slice(name).get_shape())
    return total


def _compare(rows: list[dict]) -> list[dict]:
    """The rows without their answers, each with whether its answers equal plain ``generate``'s
    at its batch size and its speed relative to it (None where either is missing)."""
    plain = {r["batch_size"]: r for r in rows if r["path"] == "transformers" and "answers" in r}
    out = []
    for row in rows:
        row = dict(row)
        answers, base = row.pop("answers", None), plain.get(row["batch_size"])
        compared = answers is not None and base is not None and row["path"] != "transformers"
        same = answers == base["answers"] if compared else None
        speed = round(row["images_per_s"] / base["images_per_s"], 3) if compared else None
        out.append(row | {"same_answers_as_transformers": same, "speed_vs_transformers": speed})
    return out


def main() -> None:
    args = parser().parse_args()
    if args.worker:
        path, batch = args.worker.split(":")
        row = one_setting(Path(args.folder), path, int(batch), args, Path(args.folder).parent)
        print(json.dumps(row))
        return

    import torch
    import transformers

    from roundtrip.readers.transformers_vlm import pick_device, pick_dtype

    device = pick_device(args.device)
    work = Path(tempfile.mkdtemp(prefix="inprocess-vlm-"))
    started = time.perf_counter()
    folder = random_gemma3(work / "model", args.size, eos=False)
    print(f"built the {args.size} model in {time.perf_counter() - started:.0f} s", flush=True)
    try:
        measured = commit()
    except OSError:  # no git where it runs (a GPU machine given a copy of the working tree)
        measured = ""
    result = {
        "benchmark": "in-process VLM reader (type: transformers) against plain transformers "
                     "generate, by decoding path and batch size",
        "commit": measured, "python": platform.python_version(), "torch": torch.__version__,
        "transformers": transformers.__version__, "machine": platform.machine(),
        "cpu_count": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
        "device": "cpu" if device == "cpu" else torch.cuda.get_device_name(0),
        "dtype": pick_dtype("auto", device), "torch_threads": args.threads,
        "model": {"architecture": "Gemma3ForConditionalGeneration (random weights)",
                  "size": args.size, "parameters": _parameters(folder),
                  "text_width_layers": list(SIZES[args.size][:2]),
                  "vision_width_layers": list(SIZES[args.size][2:4]),
                  "image_px": SIZES[args.size][4], "image_tokens": SIZES[args.size][6]},
        "settings": {"images": args.images, "image_shape": [96, 128, 3],
                     "new_tokens": args.new_tokens, "decoding": "greedy",
                     "repeats": args.repeats, "paths": {p: PATHS[p] for p in args.paths},
                     "one_process_per_path_and_batch_size": True},
        "complete": False,
        "results": [],
    }
    try:
        _run_settings(args, folder, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the model (4 GB at size medium), the caches


def _run_settings(args, folder: Path, result: dict) -> None:
    """Each path at each batch size in a process of its own; the record written after each."""
    rows = []
    for batch in args.batch_sizes:
        for path in args.paths:  # each in a fresh process: its own memory peak and compilation
            cmd = [sys.executable, __file__, "--worker", f"{path}:{batch}",
                   "--folder", str(folder)]
            for flag in ("size", "images", "new_tokens", "repeats", "threads", "device"):
                cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:  # recorded; the other settings still run
                rows.append({"path": path, "batch_size": batch,
                             "error": proc.stderr.strip()[-3000:]})
                print(f"{path:>12}, batch {batch:>2}: failed\n{proc.stderr[-2000:]}", flush=True)
            else:
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(f"{path:>12}, batch {batch:>2}: {row['images_per_s']:>7} images/s, "
                      f"{row['tokens_out_per_s']:>8} tokens/s, first token "
                      f"{row['first_token_s']} s, peak RSS {row['peak_rss_mb']} MB, GPU peak "
                      f"{row['gpu_peak_allocated_mb']} MB", flush=True)
            # after each setting: a run stopped at its time limit keeps what it measured
            write_record(args.out, result | {"results": _compare(rows)})
    write_record(args.out, result | {"complete": True, "results": _compare(rows)})


if __name__ == "__main__":
    main()

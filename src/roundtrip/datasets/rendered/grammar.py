"""A seeded grammar of English research-abstract sentences (our own word lists and templates).

:func:`abstract` draws a title and a paragraph; the same seed gives the same text on every
machine (``random.Random`` is stable across platforms and Python versions for these calls).
"""
from __future__ import annotations

import random
import re

METHODS = ["a hierarchical tokenizer", "a residual quantizer", "a spectral autoencoder",
           "a lookup-free codebook", "a masked latent model", "a contrastive decoder",
           "a sparse mixture of experts", "a diffusion prior", "a lightweight adapter",
           "an adaptive patch encoder", "a multiscale transformer", "a graph attention module"]
TASKS = ["image reconstruction", "text-to-image generation", "document understanding",
         "visual question answering", "medical image segmentation", "video prediction",
         "optical character recognition", "remote sensing retrieval", "3D scene completion",
         "few-shot classification", "layout analysis", "super-resolution"]
PROBLEMS = ["fine detail is lost at high compression", "small text becomes unreadable",
            "codebook usage collapses during training", "latent spaces drift across domains",
            "evaluation metrics disagree with human judgment", "memory grows with resolution",
            "rare classes are underrepresented", "tokens ignore spatial structure"]
ADJECTIVES = ["simple", "scalable", "robust", "efficient", "unified", "principled",
              "data-efficient", "training-free", "compact", "interpretable"]
DATASETS = ["ImageNet", "COCO", "a new benchmark of 12,000 scanned pages",
            "three public medical archives", "a corpus of 40 languages",
            "satellite images from five continents", "synthetic posters", "LAION subsets"]
GAINS = ["reduces the error rate by {p}%", "improves PSNR by {d} dB",
         "halves the number of tokens", "matches larger models with {k}x fewer parameters",
         "raises accuracy from {a}% to {b}%", "cuts inference time by {p}%"]
OPENERS = [
    "Recent progress in {task} has exposed a common weakness: {problem}.",
    "Although {task} has advanced quickly, {problem}.",
    "A persistent obstacle in {task} is that {problem}.",
    "Current systems for {task} work well on average, yet {problem}.",
]
BODY = [
    "We propose {method}, a {adj} approach that addresses this gap without extra supervision.",
    "Our key observation is that {problem} when models are trained on {data}.",
    "We introduce {method} together with a {adj} training objective.",
    "The method combines {method} with {method2} in a single {adj} pipeline.",
    "Experiments on {data} show that the approach {gain}.",
    "On {data}, it {gain} while keeping the same compute budget.",
    "We further analyze why {problem} and derive a {adj} bound on the error.",
    "Ablation studies confirm that each component contributes to the final result.",
    "Compared with strong baselines, our model {gain} on {task}.",
    "We also release code, trained weights and a {adj} evaluation protocol.",
    "The analysis reveals a trade-off between compression and {task} quality.",
    "Surprisingly, a {adj} variant performs almost as well as the full system.",
]
CLOSERS = [
    "These results suggest that {task} benefits from {adj} representations.",
    "We hope this work encourages more careful evaluation of {task}.",
    "Our findings point to {method} as a practical default for {task}.",
]
TITLES = ["{Adj} {Task} with {Method}", "Rethinking {Task}: {Adj} Tokens at Scale",
          "{Method} for {Task}", "When {Task} Meets {Method}"]


def _fill(template: str, rng: random.Random) -> str:
    method, method2 = rng.sample(METHODS, 2)
    values = {
        "task": rng.choice(TASKS), "problem": rng.choice(PROBLEMS), "method": method,
        "method2": method2, "adj": rng.choice(ADJECTIVES), "data": rng.choice(DATASETS),
        "gain": rng.choice(GAINS).format(p=rng.randint(8, 45), d=rng.choice(["0.8", "1.5", "2.3"]),
                                         k=rng.randint(2, 9), a=rng.randint(51, 70),
                                         b=rng.randint(71, 92)),
    }
    values |= {"Task": values["task"].title(), "Adj": values["adj"].capitalize(),
               "Method": values["method"].split(" ", 1)[1].title()}
    text = template.format(**values)
    text = re.sub(r"\b([Aa]) ([aeiou])", r"\1n \2", text)
    return re.sub(r"(?<=\w )(Of|For|With|And|The|At)\b", lambda m: m.group(1).lower(), text)


def title(rng: random.Random) -> str:
    """One paper-style title."""
    return _fill(rng.choice(TITLES), rng)


def sentences(rng: random.Random, n: int) -> list[str]:
    """``n`` sentences of an abstract: an opener, body sentences (no repeats), a closer."""
    body = rng.sample(BODY, min(len(BODY), max(0, n - 2)))
    parts = [rng.choice(OPENERS)] + body + [rng.choice(CLOSERS)]
    return [_fill(t, rng) for t in parts[:n]]

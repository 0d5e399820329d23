# Per-item and set-level image metrics of a (model, dataset).


rule image_quality:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status="results/recon/{model}/{dataset}/status.csv",
    output:
        per_item="results/metrics/{model}/{dataset}/image_quality.csv",
        set="results/metrics/{model}/{dataset}/set.csv",
    log:
        "logs/image_quality/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/image_quality/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/image_quality.py"


rule text_metrics:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status="results/recon/{model}/{dataset}/status.csv",
        ocr_original="results/ocr/{ocr}/original/{dataset}.csv",
        ocr_model="results/ocr/{ocr}/{model}/{dataset}.csv",
    output:
        "results/metrics/{model}/{dataset}/text_{ocr}.csv",
    params:
        normalization=config["ocr"]["normalization"],
    log:
        "logs/text_metrics/{ocr}/{model}/{dataset}.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/text_metrics.py"


rule detail_stats:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
    output:
        "results/metrics/original/{dataset}/detail.csv",
    log:
        "logs/detail_stats/{dataset}.log",
    benchmark:
        "results/benchmarks/detail_stats/{dataset}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/detail_stats.py"


rule perceptual:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status="results/recon/{model}/{dataset}/status.csv",
        weights=metric_weights("metrics.lpips") + metric_weights("metrics.fid"),
    output:
        lpips="results/metrics/{model}/{dataset}/lpips.csv",
        distribution="results/metrics/{model}/{dataset}/distribution.csv",
    params:
        lpips=METRICS["lpips"],
        fid=METRICS["fid"],
        cache=METRICS["weights_cache"],
        device=config["run"]["device"],
    log:
        "logs/perceptual/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/perceptual/{model}/{dataset}.tsv"
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=lambda wc: gpu_for_device(),
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/perceptual.py"

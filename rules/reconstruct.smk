# Reconstruction: one job per (model, dataset, shard); per-item status, resumable after a crash.


rule reconstruct:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        weights=model_weights,
    output:
        status="results/recon/{model}/{dataset}/shards/{shard}-of-{nshards}.csv",
    params:
        spec=model_spec,
        protocol=lambda wc: config["datasets"][wc.dataset]["protocol"],
        size=lambda wc: config["datasets"][wc.dataset]["size"],
        device=config["run"]["device"],
        batch_size=config["run"]["batch_size"],
    log:
        "logs/reconstruct/{model}/{dataset}/{shard}-of-{nshards}.log",
    benchmark:
        "results/benchmarks/reconstruct/{model}/{dataset}/{shard}-of-{nshards}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=gpu_for,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/reconstruct.py"


rule merge_status:
    input:
        shard_status_files,
    output:
        "results/recon/{model}/{dataset}/status.csv",
    log:
        "logs/merge_status/{model}/{dataset}.log",
    resources:
        mem_mb=500,
        runtime=5,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/merge_status.py"


rule extract_codes:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        weights=model_weights,
    output:
        tokens="results/recon/{model}/{dataset}/tokens.npz",
        latents="results/recon/{model}/{dataset}/latents.npz",
        codes="results/recon/{model}/{dataset}/codes.csv",
    params:
        spec=model_spec,
        protocol=lambda wc: config["datasets"][wc.dataset]["protocol"],
        size=lambda wc: config["datasets"][wc.dataset]["size"],
        device=config["run"]["device"],
        batch_size=config["run"]["batch_size"],
    log:
        "logs/extract_codes/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/extract_codes/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=gpu_for,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/extract_codes.py"

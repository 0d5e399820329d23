# Datasets: results/datasets/{dataset}/manifest.csv plus the files it names (docs/design.md);
# rendered text sets also write audit.csv, the OCR read-back of each render.


rule build_dataset:
    output:
        "results/datasets/{dataset}/manifest.csv",
    params:
        spec=lambda wc: PLAN.dataset_spec(wc.dataset),
        fingerprint=lambda wc: PLAN.dataset_fingerprint(wc.dataset),
    log:
        "logs/build_dataset/{dataset}.log",
    benchmark:
        "results/benchmarks/build_dataset/{dataset}.tsv"
    threads: lambda wc: PLAN.build_threads(wc.dataset)
    # built first: a few seconds each, and the longest jobs (trainings, the batched
    # reconstruction jobs of the rendered sets) wait on them
    priority: 20
    group:
        "prepare"
    resources:
        mem_mb=4000,
        # API-generated sets wait on image generation (about a minute per image); streamed
        # large sets (webdataset, hf_dataset) decode and write every image of their shards
        runtime=lambda wc: 600 if (config["datasets"][wc.dataset]["type"].startswith("gpt_")
                                   or config["datasets"][wc.dataset]["type"]
                                   in ("webdataset", "hf_dataset")) else 30,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/build_dataset.py"

# Datasets: results/datasets/{dataset}/manifest.csv plus images/ (DESIGN.md contract); the
# rendered text sets (roundtrip.synthesis) also write audit.csv, the OCR read-back of each render.


rule build_dataset:
    output:
        "results/datasets/{dataset}/manifest.csv",
    params:
        spec=dataset_spec,
        fingerprint=dataset_fingerprint,
    log:
        "logs/build_dataset/{dataset}.log",
    benchmark:
        "results/benchmarks/build_dataset/{dataset}.tsv"
    threads: build_threads
    resources:
        mem_mb=4000,
        # API-generated sets wait on image generation (about a minute per image)
        runtime=lambda wc: 600 if config["datasets"][wc.dataset]["type"].startswith("gpt_") else 30,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/build_dataset.py"

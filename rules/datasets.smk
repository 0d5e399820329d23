# Datasets: results/datasets/{dataset}/manifest.csv plus images/ (DESIGN.md contract).


rule build_dataset:
    output:
        "results/datasets/{dataset}/manifest.csv",
    params:
        spec=dataset_spec,
        fingerprint=dataset_fingerprint,
    log:
        "logs/build_dataset/{dataset}.log",
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/build_dataset.py"

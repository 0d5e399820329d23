# Token-space metrics (CHD, CMMS) on the tokens of the reference tokenizer, and the CHD paper's
# sensitivity experiment. Active when metrics.tokens.reference names a discrete model.


rule train_cmms:
    input:
        manifests=cmms_manifests,
        tokenizer=reference_weights,
    output:
        "results/weights/cmms/{reference}/model.pt",
    params:
        spec=lambda wc: spec_of(wc.reference),
        size=TOKENS["size"],
        settings=lambda wc: cmms_settings(),
        device=config["run"]["device"],
    log:
        "logs/train_cmms/{reference}.log",
    benchmark:
        "results/benchmarks/train_cmms/{reference}.tsv"
    # half the cores: the rest of the DAG keeps the others busy (docs/design.md, "Threads")
    threads: max(1, workflow.cores // 2)
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=lambda wc: gpu_for_device(),
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/train_cmms.py"


rule token_metrics:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status="results/recon/{model}/{dataset}/status.csv",
        tokenizer=reference_weights,
        cmms=f"results/weights/cmms/{TOKEN_REFERENCE}/model.pt",
    output:
        per_item="results/metrics/{model}/{dataset}/tokens.csv",
        set="results/metrics/{model}/{dataset}/token_set.csv",
    params:
        spec=lambda wc: spec_of(TOKEN_REFERENCE),
        reference=TOKEN_REFERENCE,
        size=TOKENS["size"],
        device=config["run"]["device"],
    log:
        "logs/token_metrics/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/token_metrics/{model}/{dataset}.tsv"
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=lambda wc: gpu_for_device(),
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/token_metrics.py"


if SENSITIVITY["dataset"]:

    rule token_sensitivity:
        input:
            manifest=f"results/datasets/{SENSITIVITY['dataset']}/manifest.csv",
            tokenizer=reference_weights,
            cmms=f"results/weights/cmms/{TOKEN_REFERENCE}/model.pt",
        output:
            table_files("token_sensitivity"),
            raw="results/metrics/token_sensitivity.csv",
            figure="results/figures/token_sensitivity.png",
        params:
            spec=lambda wc: spec_of(TOKEN_REFERENCE),
            reference=TOKEN_REFERENCE,
            size=TOKENS["size"],
            settings=SENSITIVITY,
            device=config["run"]["device"],
        log:
            "logs/token_sensitivity.log",
        benchmark:
            "results/benchmarks/token_sensitivity.tsv"
        resources:
            mem_mb=3000,
            runtime=60,
            gpu=lambda wc: gpu_for_device(),
        conda:
            "../envs/roundtrip.yaml"
        script:
            "../scripts/token_sensitivity.py"

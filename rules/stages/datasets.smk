# Datasets: results/datasets/{dataset}/manifest.csv plus the files it names (docs/design.md);
# rendered text sets also write audit.csv, the OCR read-back of each render.
rule build_dataset:
    output:
        "results/datasets/{dataset}/manifest.csv",
    wildcard_constraints:
        # sets built in a batched job (below) have no job of their own
        dataset=regex_of([d for d in PLAN.datasets if not PLAN.builds.group(d)]),
    params:
        sets=lambda wc: PLAN.builds.jobs([wc.dataset]),
        fingerprint=lambda wc: PLAN.builds.fingerprint(wc.dataset),
    log:
        "logs/build_dataset/{dataset}.log",
    benchmark:
        "results/benchmarks/build_dataset/{dataset}.tsv"
    threads: lambda wc: PLAN.builds.threads(wc.dataset)
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
        gpu=lambda wc: PLAN.judge_gpu([wc.dataset]),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/build_dataset.py"


# Batched builds: the small sets built from packaged data (Plan.builds.group), one job per kind
# (images, rendered text, volumes). Each set gets the files its own build_dataset job would
# write; a build of a few items is mostly start-up.
for BUILD, BUILD_DATASETS in PLAN.builds.batches():

    rule:
        name:
            BUILD
        output:
            [f"results/datasets/{d}/manifest.csv" for d in BUILD_DATASETS],
        params:
            sets=PLAN.builds.jobs(BUILD_DATASETS),
            fingerprint=[PLAN.builds.fingerprint(d) for d in BUILD_DATASETS],
        log:
            f"logs/{BUILD}.log",
        benchmark:
            f"results/benchmarks/{BUILD}.tsv"
        threads: max(PLAN.builds.threads(d) for d in BUILD_DATASETS)
        priority: PLAN.builds.priority(BUILD_DATASETS)
        group:
            "prepare"
        resources:
            mem_mb=4000,
            runtime=60,
            gpu=PLAN.judge_gpu(BUILD_DATASETS),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/build_dataset.py"

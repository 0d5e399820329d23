# Reconstruction: one job per (model, dataset) reconstructs every image and runs the
# reconstruction scorers of the evaluations that cover the dataset (roundtrip.workflow.recon_job),
# so that a (model, dataset) pays one start-up: image quality, LPIPS/FID, CHD/CMMS, OCR with
# CER/WER, latent utility.
# A rule's outputs are fixed, so there is one rule per distinct set of scorers
# (ReconJobs.variants: reconstruct, reconstruct_tokens, reconstruct_text, ...).
# Volume sets: rules/evals/medibench.smk.


for VARIANT, ALL_DATASETS, VARIANT_SCORERS in PLAN.recon_jobs.variants():
    # sets reconstructed in their models' batched jobs (below) have no job of their own
    VARIANT_DATASETS = PLAN.recon_jobs.unbatched(ALL_DATASETS)
    if not VARIANT_DATASETS:
        continue

    rule:
        name:
            VARIANT
        input:
            manifest="results/datasets/{dataset}/manifest.csv",
            weights=model_weights,
            # datasets.<name>.shards > 1: the shards ran as jobs of their own (reconstruct_shard)
            shards=lambda wc: PLAN.shard_files(wc.model, wc.dataset),
            **PLAN.recon_jobs.inputs(VARIANT_SCORERS, VARIANT_DATASETS),
        output:
            **PLAN.recon_jobs.outputs(VARIANT_SCORERS, VARIANT_DATASETS),
        wildcard_constraints:
            model=regex_of(MODELS),
            dataset=regex_of(VARIANT_DATASETS),
        params:
            spec=model_spec,
            protocol=dataset_param("protocol"),
            size=dataset_param("size"),
            shards=lambda wc: PLAN.shards(wc.dataset),
            device=RUN["device"],
            batch_size=lambda wc: PLAN.recon_jobs.batch_size(wc.model),
            scorers=lambda wc: PLAN.recon_jobs.scorers(wc.dataset),
            # name -> "module:name", imported by the job (evaluations' own scorers)
            scorer_targets=PLAN.recon_jobs.targets(VARIANT_SCORERS),
            # reconstructions written as files (run.keep_reconstructions)
            keep=lambda wc: PLAN.recon_jobs.keep(wc.dataset),
        log:
            "logs/reconstruct/{model}/{dataset}.log",
        benchmark:
            "results/benchmarks/reconstruct/{model}/{dataset}.tsv"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=120,
            gpu=lambda wc: max(PLAN.gpu_for(wc.model), PLAN.ocr_gpu([wc.dataset])),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/reconstruct.py"


# Batched jobs: the small sets built from packaged data (ReconJobs.batched), one job per model
# (and per run-wide file their scorers wait on: ReconJobs.batches). Each set gets the files and
# bytes its own job would write; a job of a few items is mostly start-up.
for BATCH, BATCH_MODELS, BATCH_DATASETS in PLAN.recon_jobs.batches():

    rule:
        name:
            BATCH
        input:
            manifests=[f"results/datasets/{d}/manifest.csv" for d in BATCH_DATASETS],
            weights=model_weights,
            scorer_inputs=PLAN.recon_jobs.batch_inputs(BATCH_DATASETS),
        output:
            PLAN.recon_jobs.batch_outputs(BATCH_DATASETS),
        wildcard_constraints:
            model=regex_of(BATCH_MODELS),
        params:
            spec=model_spec,
            # per set: manifest, outputs, scorers with their options and modules, protocol, size
            jobs=lambda wc, sets=BATCH_DATASETS: PLAN.recon_jobs.batch_jobs(sets, wc.model),
            device=RUN["device"],
            batch_size=lambda wc: PLAN.recon_jobs.batch_size(wc.model),
        log:
            f"logs/{BATCH}/{{model}}.log",
        benchmark:
            f"results/benchmarks/{BATCH}/{{model}}.tsv"
        # the longest batched jobs first
        priority: PLAN.recon_jobs.batch_priority(BATCH_DATASETS)
        threads: 1
        resources:
            mem_mb=4000,
            runtime=120,
            gpu=lambda wc, sets=BATCH_DATASETS: max(PLAN.gpu_for(wc.model), PLAN.ocr_gpu(sets)),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/reconstruct_sets.py"


# One shard of a set cut into datasets.<name>.shards: reconstructed and scored by the set's
# streamed scorers (their records: shards/{shard}-of-{nshards}.scores.pkl), which the set's
# reconstruction job finishes.
rule reconstruct_shard:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        weights=model_weights,
        scorer_inputs=lambda wc: PLAN.recon_jobs.batch_inputs([wc.dataset]),
    output:
        status="results/recon/{model}/{dataset}/shards/{shard}-of-{nshards}.csv",
    params:
        spec=model_spec,
        protocol=dataset_param("protocol"),
        size=dataset_param("size"),
        device=RUN["device"],
        batch_size=lambda wc: PLAN.recon_jobs.batch_size(wc.model),
        scorers=lambda wc: PLAN.recon_jobs.scorers(wc.dataset),
        scorer_targets=lambda wc: PLAN.recon_jobs.targets(PLAN.recon_jobs.scorers(wc.dataset)),
        keep=lambda wc: PLAN.recon_jobs.keep(wc.dataset),
    log:
        "logs/reconstruct_shard/{model}/{dataset}/{shard}-of-{nshards}.log",
    benchmark:
        "results/benchmarks/reconstruct_shard/{model}/{dataset}/{shard}-of-{nshards}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=lambda wc: max(PLAN.gpu_for(wc.model), PLAN.ocr_gpu([wc.dataset])),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/reconstruct_shard.py"


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
        protocol=dataset_param("protocol"),
        size=dataset_param("size"),
        device=RUN["device"],
        batch_size=lambda wc: PLAN.recon_jobs.batch_size(wc.model),
    log:
        "logs/extract_codes/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/extract_codes/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=lambda wc: PLAN.gpu_for(wc.model),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/extract_codes.py"

# MediBench (VAEs in medical imaging): 2D medical sets go through rule reconstruct like any image
# set; volume sets are reconstructed slice-wise (2D models) or natively (3D models) and scored for
# fidelity and structure in one job; latent utility per (model, labeled dataset); the tables.
from roundtrip.core import weights as roundtrip_weights
from roundtrip.evals.medibench.spec import TABLES as MEDIBENCH_TABLES, MediBench

MEDICAL = MediBench.view(PLAN)
MEDICAL_CONFIG = config["medical"]
MEDIBENCH_SUBCATEGORIES = {
    "medibench_2d_fidelity": "Fidelity (Tables 1, 3)",
    "medibench_3d_fidelity": "Fidelity (Tables 1, 3)",
    "medibench_3d_structure": "Clinical structure (Table 4)",
    "medibench_2d_latent": "Latent utility (Tables 2, 5)",
    "medibench_3d_latent": "Latent utility (Tables 2, 5)",
    "medibench_classifiers": "Latent utility (Tables 2, 5)",
}
SEGMENTER = MEDICAL_CONFIG["segmenter"]["type"]
RESNET18 = roundtrip_weights.path_of("resnet18-imagenet", PLAN.metrics["weights_cache"])


# The segmenter on the originals of a volume set; the small sets with no path share one job.
OWN_JOB_VOLUMES = [d for d in MEDICAL.volume_datasets if not MEDICAL.volume_batched(d)]
BATCHED_VOLUMES = [d for d in MEDICAL.volume_datasets if MEDICAL.volume_batched(d)]


rule segment_original:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
    output:
        status=MEDICAL.segmenter_status("{dataset}"),
    wildcard_constraints:
        dataset=regex_of(OWN_JOB_VOLUMES),
    params:
        segmenter=MEDICAL_CONFIG["segmenter"],
        sets=lambda wc: MEDICAL.segment_jobs([wc.dataset]),
    # above the tables (0): long jobs run beside the reconstructions, not last on one core
    priority: 1
    log:
        f"logs/segment_original/{SEGMENTER}/{{dataset}}.log",
    benchmark:
        f"results/benchmarks/segment_original/{SEGMENTER}/{{dataset}}.tsv"
    threads: 1
    group:
        "prepare"
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/segment_original.py"


if BATCHED_VOLUMES:

    rule segment_original_sets:
        input:
            manifests=[f"results/datasets/{d}/manifest.csv" for d in BATCHED_VOLUMES],
        output:
            [MEDICAL.segmenter_status(d) for d in BATCHED_VOLUMES],
        params:
            segmenter=MEDICAL_CONFIG["segmenter"],
            sets=MEDICAL.segment_jobs(BATCHED_VOLUMES),
        priority: 1
        log:
            f"logs/segment_original_sets/{SEGMENTER}.log",
        benchmark:
            f"results/benchmarks/segment_original_sets/{SEGMENTER}.tsv"
        threads: 1
        group:
            "prepare"
        resources:
            mem_mb=4000,
            runtime=60,
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/segment_original.py"


# Volume sets: reconstruction, fidelity and structure in one job per (model, dataset), since all
# read the same pair of volumes; labeled sets also classify the model's latents there (latent
# utility), while the model is loaded (roundtrip.evals.medibench.volume_job). Medical 2D sets:
# rules/stages/reconstruct.smk. Small sets with no path (bundled, synthetic) go to the batched
# jobs below instead.
LABELED_VOLUMES = [d for d in MEDICAL.volume_datasets if d in MEDICAL.latent_datasets]
VOLUME_OUTPUT = MEDICAL.volume_outputs("{dataset}")


rule reconstruct_volumes:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        weights=model_weights,
        seg_status=MEDICAL.segmenter_status("{dataset}"),
    output:
        **VOLUME_OUTPUT,
    wildcard_constraints:
        model=regex_of(MODELS),
        dataset=regex_of([d for d in OWN_JOB_VOLUMES if d not in LABELED_VOLUMES]),
    params:
        spec=model_spec,
        device=RUN["device"],
        # the set's manifest, outputs, the segmenter's files and settings (as a batched job's)
        sets=lambda wc: MEDICAL.volume_jobs([wc.dataset], wc.model),
    # above the tables (0): long jobs run beside the reconstructions, not last on one core
    priority: 1
    log:
        "logs/reconstruct_volumes/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/reconstruct_volumes/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=120,
        gpu=lambda wc: PLAN.gpu_for(wc.model),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/reconstruct_volumes.py"


use rule reconstruct_volumes as reconstruct_volumes_latent_utility with:
    output:
        **VOLUME_OUTPUT,
        latent_utility="results/metrics/{model}/{dataset}/latent_utility.csv",
    wildcard_constraints:
        model=regex_of(MODELS),
        dataset=regex_of([d for d in OWN_JOB_VOLUMES if d in LABELED_VOLUMES]),


# Batched volume jobs: a model's small volume sets (no path: nibabel's bundled volumes, MONAI's
# synthetic ones) in one job, so that they pay one start-up of torch and MONAI (about 8 s); each
# set gets the files and bytes its own reconstruct_volumes job would write.
for VOLUME_BATCH, BATCH_MODELS, BATCH_VOLUMES in MEDICAL.volume_batches():

    rule:
        name:
            VOLUME_BATCH
        input:
            manifests=[f"results/datasets/{d}/manifest.csv" for d in BATCH_VOLUMES],
            weights=model_weights,
            seg_status=[MEDICAL.segmenter_status(d) for d in BATCH_VOLUMES],
        output:
            [f for d in BATCH_VOLUMES for f in MEDICAL.volume_outputs(d).values()],
        wildcard_constraints:
            model=regex_of(BATCH_MODELS),
        params:
            spec=model_spec,
            device=RUN["device"],
            # per set: manifest, outputs, the segmenter's files, settings
            sets=lambda wc, sets=BATCH_VOLUMES: MEDICAL.volume_jobs(sets, wc.model),
        priority: 1
        log:
            f"logs/{VOLUME_BATCH}/{{model}}.log",
        benchmark:
            f"results/benchmarks/{VOLUME_BATCH}/{{model}}.tsv"
        threads: 1
        resources:
            mem_mb=6000,
            runtime=120,
            gpu=lambda wc: PLAN.gpu_for(wc.model),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/reconstruct_volumes.py"


# The image baselines of latent utility (model "original": pixels, ResNet-18, SEResNet).
rule latent_baselines:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        resnet18=[str(RESNET18)] if RESNET18.is_file() else [],
    output:
        "results/metrics/original/{dataset}/latent_utility.csv",
    wildcard_constraints:
        dataset=regex_of(MEDICAL.latent_datasets),
    params:
        kind=lambda wc: "volume" if wc.dataset in MEDICAL.volume_datasets else "image",
        settings=lambda wc: MEDICAL.latent_settings(wc.dataset),
        resnet18_missing=roundtrip_weights.missing_note(
            "resnet18-imagenet", PLAN.metrics["weights_cache"]
        ),
    # above the tables (0): long jobs run beside the reconstructions, not last on one core
    priority: 1
    log:
        "logs/latent_baselines/{dataset}.log",
    benchmark:
        "results/benchmarks/latent_baselines/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/latent_baselines.py"


rule medical_panel:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status=lambda wc: list(MEDICAL.panel_status(wc.dataset).values()),
    output:
        report(
            "results/figures/medical/{dataset}.png",
            caption=caption("medical_panel"),
            category="MediBench",
            subcategory="Reconstructions",
        ),
    wildcard_constraints:
        dataset=regex_of(MEDICAL.datasets),
    params:
        status=lambda wc: MEDICAL.panel_status(wc.dataset),
        axis=MEDICAL_CONFIG["axis"],
    log:
        "logs/medical_panel/{dataset}.log",
    group:
        "tables"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/medical_panel.py"


# The files the tables read, keyed for the script (params.files) and declared as inputs.
MEDIBENCH_TABLE_FILES = MEDICAL.table_files


rule medical_tables:
    input:
        manifests=list(MEDIBENCH_TABLE_FILES["manifests"].values()),
        quality=list(MEDIBENCH_TABLE_FILES["quality"].values()),
        structure=list(MEDIBENCH_TABLE_FILES["structure"].values()),
        latent=list(MEDIBENCH_TABLE_FILES["latent"].values()),
    output:
        [
            f
            for name in MEDIBENCH_TABLES
            for f in report_table(name, "MediBench", MEDIBENCH_SUBCATEGORIES[name])
        ],
    params:
        models=MEDICAL.models,
        specs={m: PLAN.spec_of(m) for m in MEDICAL.models},
        datasets_2d=MEDICAL.medical_2d,
        datasets_3d=MEDICAL.volume_datasets,
        latent_datasets=MEDICAL.latent_datasets,
        modalities={d: config["datasets"][d].get("modality", d) for d in MEDICAL.datasets},
        not_run=PLAN.not_run(MEDICAL.datasets),
        segmenter=MEDICAL_CONFIG["segmenter"],
        pool_modalities=MEDICAL_CONFIG.get("pool_modalities", False),
        sizes={d: config["datasets"][d].get("size") for d in MEDICAL.medical_2d
               if config["datasets"][d].get("protocol") == "fixed"},
        # the split of each labeled set: fidelity is scored on its held-out part
        settings={d: MEDICAL.latent_settings(d) if d in MEDICAL.latent_datasets else None
                  for d in MEDICAL.datasets},
        files=MEDIBENCH_TABLE_FILES,
    log:
        "logs/tables/medibench.log",
    group:
        "tables"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/medical_tables.py"


rule medibench_latent_shapes:
    input:
        [f for m in MEDICAL.models for f in PLAN.weights_of(m)],
    output:
        report_table("medibench_latent_shapes", "MediBench", "Latent shapes (Table 6)"),
    params:
        specs={m: PLAN.spec_of(m) for m in MEDICAL.models},
    # reads only the checkpoints: it runs beside the reconstructions, not in the run's tail
    priority: 1
    log:
        "logs/tables/medibench_latent_shapes.log",
    group:
        "tables"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/medibench_latent_shapes.py"

# MediBench (rules for the medical branch): 2D medical sets go through reconstruct and
# image_quality like any image set; volume sets are reconstructed slice-wise (2D models) or
# natively (3D models), segmented, and scored here; latent utility for both; MediBench tables.
MEDICAL = config["medical"]
SEGMENTER = MEDICAL["segmenter"]["type"]
LATENT_SETTINGS = MEDICAL["latent_utility"]
# Latent utility runs on sets whose items carry labels (2D patch sets always do).
LATENT_DATASETS = [d for d in MEDICAL_DATASETS if dataset_has_labels(d)]
# Table columns: the models run on at least one medical dataset.
MEDICAL_MODELS = [m for m in MODELS if any(m in models_on(d) for d in MEDICAL_DATASETS)]
RESNET18 = roundtrip_weights.path_of("resnet18-imagenet", METRICS["weights_cache"])


ruleorder: reconstruct_volumes > merge_status
ruleorder: volume_metrics > image_quality


rule reconstruct_volumes:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        weights=model_weights,
    output:
        status="results/recon/{model}/{dataset}/status.csv",
    wildcard_constraints:
        dataset=regex_of(VOLUME_DATASETS),
    params:
        spec=model_spec,
        axis=MEDICAL["axis"],
        slice_batch=MEDICAL["slice_batch"],
        roi_size=MEDICAL["roi_size"],
        device=config["run"]["device"],
    log:
        "logs/reconstruct_volumes/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/reconstruct_volumes/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=120,
        gpu=gpu_for,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/reconstruct_volumes.py"


rule segment_original:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
    output:
        status=f"results/segment/{SEGMENTER}/original/{{dataset}}/status.csv",
    params:
        segmenter=MEDICAL["segmenter"],
    log:
        f"logs/segment_original/{SEGMENTER}/{{dataset}}.log",
    benchmark:
        f"results/benchmarks/segment_original/{SEGMENTER}/{{dataset}}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/segment_original.py"


rule volume_metrics:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status="results/recon/{model}/{dataset}/status.csv",
        seg_status=f"results/segment/{SEGMENTER}/original/{{dataset}}/status.csv",
    output:
        per_item="results/metrics/{model}/{dataset}/image_quality.csv",
        structure="results/metrics/{model}/{dataset}/structure.csv",
    wildcard_constraints:
        dataset=regex_of(VOLUME_DATASETS),
    params:
        segmenter=MEDICAL["segmenter"],
        seg_dir=f"results/segment/{SEGMENTER}/{{model}}/{{dataset}}",
    log:
        "logs/volume_metrics/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/volume_metrics/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/volume_metrics.py"


rule latent_utility:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        weights=lambda wc: [] if wc.model == "original" else model_weights(wc),
        resnet18=[str(RESNET18)] if RESNET18.is_file() else [],
    output:
        "results/metrics/{model}/{dataset}/latent_utility.csv",
    wildcard_constraints:
        dataset=regex_of(LATENT_DATASETS),
    params:
        spec=lambda wc: None if wc.model == "original" else spec_of(wc.model),
        kind=lambda wc: "volume" if wc.dataset in VOLUME_DATASETS else "image",
        settings=lambda wc: LATENT_SETTINGS
        | {"patch": config["datasets"][wc.dataset].get("patch"), "axis": MEDICAL["axis"]},
        resnet18_missing=roundtrip_weights.missing_note("resnet18-imagenet", METRICS["weights_cache"]),
        device=config["run"]["device"],
    log:
        "logs/latent_utility/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/latent_utility/{model}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=6000,
        runtime=60,
        gpu=lambda wc: 0 if wc.model == "original" else gpu_for(wc),
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/latent_utility.py"


rule medical_panel:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
        status=lambda wc: pair_files("results/recon/{model}/{dataset}/status.csv", [wc.dataset]),
    output:
        "results/figures/medical/{dataset}.png",
    wildcard_constraints:
        dataset=regex_of(MEDICAL_DATASETS),
    params:
        models=lambda wc: [m for m in MODELS if m in models_on(wc.dataset)],
        axis=MEDICAL["axis"],
    log:
        "logs/medical_panel/{dataset}.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/medical_panel.py"


MEDIBENCH_TABLES = [
    "medibench_2d_fidelity",
    "medibench_2d_latent",
    "medibench_3d_fidelity",
    "medibench_3d_structure",
    "medibench_3d_latent",
    "medibench_classifiers",
    "medibench_latent_shapes",
]


rule medical_tables:
    input:
        manifests=expand("results/datasets/{dataset}/manifest.csv", dataset=MEDICAL_DATASETS),
        quality=pair_files("results/metrics/{model}/{dataset}/image_quality.csv", MEDICAL_DATASETS),
        structure=pair_files("results/metrics/{model}/{dataset}/structure.csv", VOLUME_DATASETS),
        latent=pair_files("results/metrics/{model}/{dataset}/latent_utility.csv", LATENT_DATASETS)
        + expand("results/metrics/original/{dataset}/latent_utility.csv", dataset=LATENT_DATASETS),
        weights=[f for m in MEDICAL_MODELS for f in weights_of(m)],
    output:
        [f for name in MEDIBENCH_TABLES for f in table_files(name)],
    params:
        models=MEDICAL_MODELS,
        specs={m: spec_of(m) for m in MEDICAL_MODELS},
        datasets_2d=MEDICAL_2D,
        datasets_3d=VOLUME_DATASETS,
        latent_datasets=LATENT_DATASETS,
        modalities={d: config["datasets"][d].get("modality", d) for d in MEDICAL_DATASETS},
        not_run=not_run(MEDICAL_DATASETS),
        segmenter=MEDICAL["segmenter"],
    log:
        "logs/tables/medibench.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/medical_tables.py"

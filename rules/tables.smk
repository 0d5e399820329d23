# Tables: results/tables/{name}.{csv,md,tex}, one row per model.


rule reconstruction_table:
    input:
        per_item=pair_files("results/metrics/{model}/{dataset}/image_quality.csv", RECON_DATASETS),
        set=pair_files("results/metrics/{model}/{dataset}/set.csv", RECON_DATASETS),
        lpips=pair_files("results/metrics/{model}/{dataset}/lpips.csv", RECON_DATASETS)
        if LPIPS_RUN
        else [],
        distribution=pair_files("results/metrics/{model}/{dataset}/distribution.csv", RECON_DATASETS)
        if FID_RUN
        else [],
    output:
        table_files("reconstruction"),
    params:
        models=MODELS,
        datasets=RECON_DATASETS,
        not_run=not_run(RECON_DATASETS),
        protocols={d: config["datasets"][d]["protocol"] for d in RECON_DATASETS},
        bootstrap=config["tables"]["bootstrap"],
        lpips=LPIPS_ON,
        fid=FID_ON,
        unavailable=unavailable_metrics(),
    log:
        "logs/tables/reconstruction.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/reconstruction_table.py"


rule text_preservation_table:
    input:
        manifests=expand("results/datasets/{dataset}/manifest.csv", dataset=TEXT_DATASETS),
        per_item=pair_files(
            f"results/metrics/{{model}}/{{dataset}}/text_{TABLE_OCR}.csv", TEXT_DATASETS
        ),
    output:
        table_files("text_preservation"),
    params:
        models=MODELS,
        datasets=TEXT_DATASETS,
        langs={d: config["datasets"][d]["lang"] for d in TEXT_DATASETS},
        not_run=not_run(TEXT_DATASETS),
        ocr=TABLE_OCR,
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/text_preservation.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/text_preservation_table.py"


rule ocr_robustness_table:
    input:
        manifests=expand("results/datasets/{dataset}/manifest.csv", dataset=TEXT_DATASETS),
        per_item=[
            f
            for ocr in OCR_ENGINES
            for f in pair_files(f"results/metrics/{{model}}/{{dataset}}/text_{ocr}.csv", TEXT_DATASETS)
        ],
    output:
        table_files("ocr_robustness"),
        table_files("ocr_rank_agreement"),
    params:
        models=MODELS,
        datasets=TEXT_DATASETS,
        engines=OCR_ENGINES,
        langs={d: config["datasets"][d]["lang"] for d in TEXT_DATASETS},
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/ocr_robustness.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/ocr_robustness_table.py"


rule detail_table:
    input:
        expand("results/metrics/original/{dataset}/detail.csv", dataset=GENERAL_DATASETS),
    output:
        table_files("detail_statistics"),
    params:
        datasets=GENERAL_DATASETS,
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/detail_statistics.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/detail_table.py"


rule model_card:
    input:
        expand("results/weights/{model}/model.pt", model=TRAINED_MODELS),
    output:
        table_files("model_card"),
    params:
        specs={m: spec_of(m) for m in MODELS},
    log:
        "logs/tables/model_card.log",
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/model_card.py"


rule token_table:
    input:
        per_item=pair_files("results/metrics/{model}/{dataset}/tokens.csv", TOKEN_DATASETS),
        set=pair_files("results/metrics/{model}/{dataset}/token_set.csv", TOKEN_DATASETS),
    output:
        table_files("token_metrics"),
    params:
        models=MODELS,
        datasets=TOKEN_DATASETS,
        not_run=not_run(TOKEN_DATASETS),
        reference=TOKEN_REFERENCE,
        size=TOKENS["size"],
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/token_metrics.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/token_table.py"

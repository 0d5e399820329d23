# VTBench: reconstruction quality (Table 1), detail preservation (Table 2, written by the
# reconstruction_table job), detail statistics (App. D, Table 4, one job), text
# preservation through OCR (Task 3, Table 3) and its robustness to the OCR engine (App. G,
# Table 5), and the model card. PSNR/SSIM, LPIPS/FID and the OCR of reconstructions with their
# CER/WER are scored inside the reconstruction job of each (model, dataset) (rules/stages/reconstruct.smk);
# the originals are read once per (engine, dataset) here, at their own size and, for Table 3's
# sets, as the released evaluator reads them (256 px copies at 1024 px); the readability of those
# readings (ocr_readability) is computed by the ocr_robustness_table job from their files.
from roundtrip.evals.vtbench.spec import VTBench

RECONSTRUCTION_TABLES = VTBench.reconstruction_tables(PLAN)


rule ocr_original:
    input:
        manifest="results/datasets/{dataset}/manifest.csv",
    output:
        ocr="results/ocr/{ocr}/original/{dataset}.csv",
        # the released evaluator's reading of the originals (256 px copies read at 1024 px)
        view="results/ocr/{ocr}/original/{dataset}.vtbench.csv",
    wildcard_constraints:
        # small packaged sets are read in their engine's batched job (below)
        dataset=regex_of([d for d in PLAN.datasets if not VTBench.ocr_batched(PLAN, d)]),
    params:
        engine=lambda wc: config["ocr"]["engines"][wc.ocr],
        sets=lambda wc: VTBench.ocr_jobs(PLAN, [wc.dataset], wc.ocr),
    log:
        "logs/ocr/{ocr}/original/{dataset}.log",
    benchmark:
        "results/benchmarks/ocr/{ocr}/original/{dataset}.tsv"
    # the reconstruction jobs of the text sets wait on it
    priority: 20
    threads: lambda wc: PLAN.item_threads(wc.dataset, 2)
    group:
        "prepare"
    # an engine run in process (type: transformers) reads on the run's GPU
    resources:
        mem_mb=2000,
        runtime=60,
        gpu=lambda wc: PLAN.reader_gpu(config["ocr"]["engines"][wc.ocr]),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/ocr.py"


# Batched reading of the originals: the small packaged text sets (VTBench.ocr_batched), one job
# per engine; each set gets the file its own ocr_original job would write.
for OCR_BATCH, OCR_ENGINES, OCR_DATASETS in VTBench.ocr_batches(PLAN):

    rule:
        name:
            OCR_BATCH
        input:
            manifests=[f"results/datasets/{d}/manifest.csv" for d in OCR_DATASETS],
        output:
            [f"results/ocr/{{ocr}}/original/{d}{kind}" for d in OCR_DATASETS
             for kind in (".csv", ".vtbench.csv")],
        wildcard_constraints:
            ocr=regex_of(OCR_ENGINES),
        params:
            engine=lambda wc: config["ocr"]["engines"][wc.ocr],
            sets=lambda wc, sets=OCR_DATASETS: VTBench.ocr_jobs(PLAN, sets, wc.ocr),
        log:
            f"logs/{OCR_BATCH}/{{ocr}}.log",
        benchmark:
            f"results/benchmarks/{OCR_BATCH}/{{ocr}}.tsv"
        priority: 20
        threads: 1
        group:
            "prepare"
        resources:
            mem_mb=2000,
            runtime=60,
            gpu=lambda wc: PLAN.reader_gpu(config["ocr"]["engines"][wc.ocr]),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/ocr.py"


rule reconstruction_table:
    input:
        per_item=PLAN.model_dataset_files(
            "results/metrics/{model}/{dataset}/image_quality.csv", PLAN.recon_datasets
        ),
        set=PLAN.model_dataset_files("results/metrics/{model}/{dataset}/set.csv", PLAN.recon_datasets),
        lpips=PLAN.model_dataset_files("results/metrics/{model}/{dataset}/lpips.csv", PLAN.recon_datasets)
        if PLAN.weighted.lpips_run
        else [],
        distribution=PLAN.model_dataset_files(
            "results/metrics/{model}/{dataset}/distribution.csv", PLAN.recon_datasets
        )
        if PLAN.weighted.fid_run
        else [],
        card="results/tables/model_card.csv",
    output:
        report_table("vtbench_table1", "VTBench", "Reconstruction (Table 1)"),
        [
            f
            for name in RECONSTRUCTION_TABLES
            for f in report_table(
                name, "VTBench",
                "Detail preservation (Table 2)" if name == "reconstruction_detail"
                else "Reconstruction (Table 1)",
            )
        ],
    params:
        models=MODELS,
        tables=RECONSTRUCTION_TABLES,
        not_run=PLAN.not_run(PLAN.recon_datasets),
        protocols={d: config["datasets"][d]["protocol"] for d in PLAN.recon_datasets},
        bootstrap=config["tables"]["bootstrap"],
        lpips=PLAN.metrics["lpips"]["enabled"],
        fid=PLAN.metrics["fid"]["enabled"],
        ssim_scored_size=PLAN.metrics["ssim"]["scored_size"],
        unavailable=PLAN.weighted.unavailable(),
    log:
        "logs/tables/reconstruction.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/reconstruction_table.py"


rule text_preservation_table:
    input:
        manifests=expand("results/datasets/{dataset}/manifest.csv", dataset=PLAN.text_datasets),
        per_item=PLAN.model_dataset_files(
            f"results/metrics/{{model}}/{{dataset}}/text_{PLAN.table_ocr}.csv", PLAN.text_datasets
        ),
        text_set=PLAN.model_dataset_files(
            f"results/metrics/{{model}}/{{dataset}}/text_set_{PLAN.table_ocr}.csv",
            PLAN.text_datasets,
        ),
        quality=PLAN.model_dataset_files(
            "results/metrics/{model}/{dataset}/image_quality.csv", PLAN.text_datasets
        ),
        quality_set=PLAN.model_dataset_files("results/metrics/{model}/{dataset}/set.csv", PLAN.text_datasets),
        lpips=PLAN.model_dataset_files("results/metrics/{model}/{dataset}/lpips.csv", PLAN.text_datasets)
        if PLAN.weighted.lpips_run
        else [],
        distribution=PLAN.model_dataset_files(
            "results/metrics/{model}/{dataset}/distribution.csv", PLAN.text_datasets
        )
        if PLAN.weighted.fid_run
        else [],
        # the table engine's readings of the originals: the references of its CER/WER columns,
        # whose readability flags them (ocr_readability)
        originals=[r["path"] for r in VTBench.references(PLAN, PLAN.table_ocr)],
    output:
        report_table("text_preservation", "VTBench", "Text preservation (Table 3)"),
    params:
        models=MODELS,
        datasets=PLAN.text_datasets,
        langs={d: config["datasets"][d]["lang"] for d in PLAN.text_datasets},
        specs={
            d: {
                k: config["datasets"][d].get(k)
                for k in ("type", "language", "lang", "text_group")
            }
            for d in PLAN.text_datasets
        },
        not_run=PLAN.not_run(PLAN.text_datasets),
        released=[d for d in PLAN.text_datasets if VTBench.released_reading(PLAN, d)],
        ocr=PLAN.table_ocr,
        references=VTBench.references(PLAN, PLAN.table_ocr),
        readability=config["ocr"].get("readability", {}),
        normalization=config["ocr"]["normalization"],
        bootstrap=config["tables"]["bootstrap"],
        lpips=PLAN.metrics["lpips"]["enabled"],
        fid=PLAN.metrics["fid"]["enabled"],
        ssim_scored_size=PLAN.metrics["ssim"]["scored_size"],
        unavailable=PLAN.weighted.unavailable(),
    log:
        "logs/tables/text_preservation.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/text_preservation_table.py"


rule ocr_robustness_table:
    input:
        manifests=expand("results/datasets/{dataset}/manifest.csv", dataset=PLAN.text_datasets),
        per_item=[
            f
            for d in PLAN.text_datasets
            for ocr in PLAN.engines_for(d)
            for f in PLAN.model_dataset_files(f"results/metrics/{{model}}/{{dataset}}/text_{ocr}.csv", [d])
        ],
        text_set=[
            f
            for d in PLAN.text_datasets
            for ocr in PLAN.engines_for(d)
            for f in PLAN.model_dataset_files(
                f"results/metrics/{{model}}/{{dataset}}/text_set_{ocr}.csv", [d]
            )
        ],
        # every engine's readings of the originals, in each view a column scores against
        originals=[r["path"] for r in VTBench.references(PLAN)],
    output:
        report_table("ocr_robustness", "VTBench", "OCR robustness (Table 5)"),
        report_table("ocr_rank_agreement", "VTBench", "OCR robustness (Table 5)"),
        report_table("ocr_readability", "VTBench", "Text preservation (Table 3)"),
    params:
        models=MODELS,
        datasets=PLAN.text_datasets,
        engines={d: PLAN.engines_for(d) for d in PLAN.text_datasets},
        langs={d: config["datasets"][d]["lang"] for d in PLAN.text_datasets},
        not_run=PLAN.not_run(PLAN.text_datasets),
        released=[d for d in PLAN.text_datasets if VTBench.released_reading(PLAN, d)],
        references=VTBench.references(PLAN),
        readability=config["ocr"].get("readability", {}),
        normalization=config["ocr"]["normalization"],
        table_ocr=PLAN.table_ocr,
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/ocr_robustness.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/ocr_robustness_table.py"


# One job computes the detail statistics of every set and the table: a job per set paid more
# start-up than work (12 jobs of about 1 s in the showcase).
rule detail_table:
    input:
        manifests=expand("results/datasets/{dataset}/manifest.csv", dataset=PLAN.general_datasets),
    output:
        report_table("detail_statistics", "VTBench", "Detail statistics (Table 4)"),
        detail=expand("results/metrics/original/{dataset}/detail.csv", dataset=PLAN.general_datasets),
    params:
        datasets=PLAN.general_datasets,
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/detail_statistics.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/detail_table.py"


rule model_card:
    input:
        expand("results/weights/{model}/model.pt", model=PLAN.trained_models),
    output:
        report_table("model_card", "Models", "Model card"),
    params:
        specs={m: PLAN.spec_of(m) for m in MODELS},
    # reads only the checkpoints: it runs beside the reconstructions, not in the run's serial
    # tail before Table 1 (which reads it) and the report
    priority: 1
    log:
        "logs/tables/model_card.log",
    group:
        "tables"
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/model_card.py"

# CHD and CMMS (Evaluating Generative Models via One-Dimensional Code Distributions): token-space
# metrics in the tokens of the reference tokenizer (metrics.tokens.reference), scored inside the
# reconstruction job of the token datasets (scorer "tokens", rules/stages/reconstruct.smk); the
# CMMS regressor; the sensitivity experiment.
from roundtrip.core.compute import job_threads, mode_of
from roundtrip.evals.chd.spec import CHD

TOKEN_PLAN = CHD.view(PLAN)
TOKENS = TOKEN_PLAN.tokens
REFERENCE = TOKEN_PLAN.reference
CMMS_FILE = TOKEN_PLAN.cmms_file
REFERENCE_WEIGHTS = PLAN.weights_of(REFERENCE)
# The reference tokenizer trains first (rule train_reference_tokenizer, rules/stages/train.smk):
# the critical path of the run is reference tokenizer -> CMMS -> every token job.


rule train_cmms:
    input:
        manifests=[f"results/datasets/{d}/manifest.csv" for d in TOKEN_PLAN.cmms_settings()["datasets"]],
        tokenizer=lambda wc: PLAN.weights_of(wc.reference),
    output:
        "results/weights/cmms/{reference}/model.pt",
    params:
        spec=lambda wc: PLAN.spec_of(wc.reference),
        size=TOKENS["size"],
        layout=TOKENS["layout"],
        settings=TOKEN_PLAN.cmms_settings(),
        device=RUN["device"],
    log:
        "logs/train_cmms/{reference}.log",
    benchmark:
        "results/benchmarks/train_cmms/{reference}.tsv"
    # half the cores: the rest of the DAG keeps the others busy (docs/design.md, "Threads");
    # one in reproducibility: portable, which runs every torch job on one thread
    threads: job_threads(mode_of(config), PLAN.half_cores())
    priority: 50
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=PLAN.gpu_for(REFERENCE),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/train_cmms.py"


rule token_table:
    input:
        per_item=PLAN.model_dataset_files("results/metrics/{model}/{dataset}/tokens.csv", TOKEN_PLAN.datasets),
        set=PLAN.model_dataset_files("results/metrics/{model}/{dataset}/token_set.csv", TOKEN_PLAN.datasets),
    output:
        report_table("token_metrics", "CHD and CMMS", "Token metrics"),
    params:
        models=MODELS,
        datasets=TOKEN_PLAN.datasets,
        not_run=PLAN.not_run(TOKEN_PLAN.datasets),
        reference=REFERENCE,
        size=TOKENS["size"],
        cmms_datasets=TOKEN_PLAN.cmms_settings()["datasets"],
        allow_overlap=TOKENS["cmms"].get("allow_overlap", False),
        training=TOKEN_PLAN.cmms_settings(),
        bootstrap=config["tables"]["bootstrap"],
    log:
        "logs/tables/token_metrics.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/token_table.py"


if TOKEN_PLAN.sensitivity_dataset:

    rule token_sensitivity:
        input:
            manifest=f"results/datasets/{TOKEN_PLAN.sensitivity_dataset}/manifest.csv",
            tokenizer=REFERENCE_WEIGHTS,
            cmms=CMMS_FILE,
        output:
            report_table("token_sensitivity", "CHD and CMMS", "Sensitivity (Figure 2)"),
            report_table("token_sensitivity_spearman", "CHD and CMMS", "Sensitivity (Figure 2)"),
            raw="results/metrics/token_sensitivity.csv",
            # the most shifted tokens' frequencies per level (Figure 2's middle panel)
            tokens="results/metrics/token_sensitivity_tokens.csv",
            figure=report(
                "results/figures/token_sensitivity.png",
                caption=caption("token_sensitivity_figure"),
                category="CHD and CMMS",
                subcategory="Sensitivity (Figure 2)",
            ),
        params:
            spec=PLAN.spec_of(REFERENCE),
            reference=REFERENCE,
            size=TOKENS["size"],
            layout=TOKENS["layout"],
            settings=TOKENS["sensitivity"],
            device=RUN["device"],
        # above the tables (0): long jobs run beside the reconstructions, not last on one core
        priority: 1
        log:
            "logs/token_sensitivity.log",
        benchmark:
            "results/benchmarks/token_sensitivity.tsv"
        resources:
            mem_mb=3000,
            runtime=60,
            gpu=PLAN.gpu_for(REFERENCE),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/token_sensitivity.py"

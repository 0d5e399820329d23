# VISTA-Bench: readers (vista.readers) answer every question of the question sets as pure text
# and as visualized text, on the renders and on each model's reconstructions of them (the
# tokenizer axis); Table 1, the font sweeps, rendering-related errors, subfields, the tokenizer
# axis and the gap figure. The reconstructions and their OCR come from the reconstruction jobs
# (rules/stages/reconstruct.smk); the OCR of the renders from ocr_original (rules/evals/vtbench.smk).
from roundtrip.evals.vista.spec import Vista

VISTA = Vista.view(PLAN)


wildcard_constraints:
    reader=regex_of(list(VISTA.readers)),


# The answer jobs: readers on an endpoint and the offline solver in the tables' group (a few
# seconds to minutes of requests); readers run in process (type: transformers) in jobs of
# their own, on the run's GPU, with the memory a model of a few billion parameters takes.
for ANSWER_RULE, ANSWER_READERS, IN_PROCESS_RULE in VISTA.answer_rules():

    rule:
        name:
            ANSWER_RULE
        input:
            unpack(lambda wc: VISTA.inputs(wc.reader, wc.model, wc.dataset)),
        output:
            "results/vista/{reader}/{model}/{dataset}/answers.csv",
        wildcard_constraints:
            reader=regex_of(ANSWER_READERS),
        # the endpoints' transport settings (concurrency, timeouts, retries, backoff) are read
        # from the config by the job, not passed here: changing them reruns nothing. reask
        # changes when a run left errors: the next run asks the failed items again
        params:
            reader=lambda wc: VISTA.reader_params(wc.reader),
            recon_dir=lambda wc: None if wc.model == "original" else f"results/recon/{wc.model}/{wc.dataset}",
            judge=VISTA.judge_params(),
            extraction=VISTA.section.get("extraction", "release"),
            prompt_layout=VISTA.section.get("prompt_layout", "release"),
            reask=lambda wc: VISTA.reask(wc.reader, wc.model, wc.dataset),
            # later runs that ask again a request malformed on every attempt (answers.py)
            max_reask_runs=config["api"]["max_reask_runs"],
        log:
            "logs/vista_answers/{reader}/{model}/{dataset}.log",
        benchmark:
            "results/benchmarks/vista_answers/{reader}/{model}/{dataset}.tsv"
        # above the tables (0): a model's answers run beside the reconstructions
        priority: 1 if IN_PROCESS_RULE else 0
        group:
            None if IN_PROCESS_RULE else "tables"
        # a reader run in process answers on the run's GPU (Plan.reader_gpu)
        resources:
            mem_mb=32000 if IN_PROCESS_RULE else 1000,
            runtime=480 if IN_PROCESS_RULE else 120,
            gpu=lambda wc: PLAN.reader_gpu(VISTA.readers[wc.reader]),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/vista_answers.py"


# The end of a run exits with status 1 where a reader's errors exceed vista.max_error_share
# (rules/common.smk, end_of_run; run.tolerate_reader_errors keeps 0).
RUN_CHECKS.append(VISTA.error_problems)


rule vista_tables:
    input:
        answers=[VISTA.answer_file(*key) for key in VISTA.keys],
    output:
        report_table("vista_accuracy", "VISTA-Bench", "Accuracy and modality gap (Table 1)"),
        report_table("vista_font", "VISTA-Bench", "Font size and style (Figs. 3, 7, 11)"),
        report_table("vista_rendering_errors", "VISTA-Bench", "Rendering-related errors (Sec. 4.3)"),
        report_table("vista_subfield", "VISTA-Bench", "Subfields"),
        report_table("vista_source", "VISTA-Bench", "Source benchmarks (Fig. 2)"),
        report_table("vista_tokenizers", "VISTA-Bench", "Tokenizer axis"),
        figure=report(
            "results/figures/vista_gap.png",
            caption=caption("vista_gap"),
            category="VISTA-Bench",
            subcategory="Font size and style (Figs. 3, 7, 11)",
        ),
    params:
        answer_keys=VISTA.keys,
        sweeps=VISTA.sweeps(),
        bootstrap=config["tables"]["bootstrap"],
        include_failed_audit=VISTA.section.get("include_failed_audit", False),
    log:
        "logs/tables/vista.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/vista_tables.py"

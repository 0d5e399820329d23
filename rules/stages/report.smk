# The report: reconstruction galleries (VTBench Figs. 4, 5), then one PDF with every
# table, figure and the provenance of the run. Each table's provenance record is written by the
# rule that writes the table (report_table in rules/common.smk names it as an output).
from roundtrip.api.endpoint import config_without_transport
from roundtrip.core.config import config_paths
from roundtrip.workflow.verify import RUN_RECORD, TABLES_FOLDER, run_record_text

# The tables' folder is an input of the report: deleting a table changes the folder, which makes
# the report out of date, so `snakemake results/report.pdf` remakes the deleted table and the
# report. (Snakemake remakes a missing file only for a job that runs anyway; without this, the
# report, newer than its other inputs, would not run and it says "Nothing to be done". The
# default target, rule all, names every table itself.) Made here, so that the folder exists
# from the first run on and the report's inputs never change.
Path(TABLES_FOLDER).mkdir(parents=True, exist_ok=True)


rule gallery:
    input:
        **PLAN.galleries.inputs(),
    output:
        figures=[
            report(f, caption=caption("gallery"), category="VTBench", subcategory="Galleries")
            for f in PLAN.galleries.figures
        ],
        lines="results/figures/gallery/lines.csv",
    params:
        sets={d: PLAN.galleries.paths(d) for d in PLAN.galleries.datasets},
        per_dataset=config["report"]["gallery_items"],
    log:
        "logs/gallery.log",
    group:
        "tables"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/gallery.py"


# The config file(s) of the run that wrote the report: `roundtrip verify` re-makes the report
# with them (roundtrip.workflow.verify). A shell job: no Python start-up for one line of JSON.
rule run_record:
    output:
        RUN_RECORD,
    params:
        record=run_record_text(config_paths(workflow.overwrite_configfiles)),
    log:
        "logs/run_record.log",
    localrule: True
    conda:
        "../../envs/roundtrip.yaml"
    shell:
        "printf '%s\\n' {params.record:q} > {output} 2> {log}"


rule report_pdf:
    input:
        tables=[f"results/tables/{n}.md" for n in PLAN.tables],
        csv=[f"results/tables/{n}.csv" for n in PLAN.tables],
        provenance=[f"results/tables/{n}.provenance.json" for n in PLAN.tables],
        figures=PLAN.figures,
        lines="results/figures/gallery/lines.csv",
        manifests=PLAN.galleries.inputs()["manifests"],
        checkpoints=PLAN.checkpoints,
        findings=list(dict.fromkeys(f for fs in PLAN.findings_inputs.values() for f in fs)),
        record=RUN_RECORD,
        tables_folder=TABLES_FOLDER,
        # the comparison (config compare:): page 1's "What changed", its figure and gallery
        compare=PLAN.compare_files,
    output:
        pdf=report("results/report.pdf", caption=caption("report_pdf"), category="Report"),
        # the findings as reST: the front page of `snakemake --report` (report/workflow.rst)
        summary="results/summary.rst",
        headlines=[
            report(f, caption=caption("headline_figure"), category="Summary")
            for f in PLAN.headline_figures.values()
        ],
    params:
        tables=PLAN.tables,
        ran=PLAN.evaluations_run(),
        sections=PLAN.report_sections(),
        findings_files=PLAN.findings_inputs,
        headlines=PLAN.headline_figures,
        config_name=CONFIG_NAMES,
        # read for page 1's failed items; the tables that depend on them are inputs already
        status_files=PLAN.status_files(),
        commit=git_commit(),
        # without the endpoints' transport settings (how answers are fetched, never which):
        # changing them does not remake the report
        config=config_without_transport(config),
        weights_cache=config["metrics"]["weights_cache"],
        galleries={
            d: {"manifest": PLAN.galleries.paths(d)["manifest"], "figure": f}
            for d, f in zip(PLAN.galleries.datasets, PLAN.galleries.figures)
        },
    log:
        "logs/report_pdf.log",
    benchmark:
        "results/benchmarks/report_pdf/report_pdf.tsv"
    group:
        "tables"
    resources:
        mem_mb=1500,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/report_pdf.py"

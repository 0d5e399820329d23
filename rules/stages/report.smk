# The report: reconstruction galleries (VTBench Figs. 4, 5), then one PDF with every
# table, figure and the provenance of the run. Each table's provenance record is written by the
# rule that writes the table (report_table in rules/common.smk names it as an output).


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
        config_name=", ".join(Path(f).name for f in workflow.configfiles) or "config.yaml",
        commit=git_commit(),
        config=config,
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

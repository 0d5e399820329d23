# Checkpoint B against checkpoint A (config compare:; roundtrip.tables.compare, docs/comparing.md):
# one job after the tables, reading every evaluation's per-item files through the evaluations'
# declarations (Evaluation.comparisons) found by the tables' provenance records; it writes the
# tables compare and compare_items, the differences figure, the gallery of the items that
# changed most and that of the OCR and VISTA items that flipped, which the report's "What
# changed" section reads.
from roundtrip.tables.compare import compare_config


if PLAN.compares:

    rule compare:
        input:
            provenance=[f"results/tables/{n}.provenance.json" for n in PLAN.tables],
        output:
            report_table("compare", "Comparison"),
            report_table("compare_items", "Comparison"),
            differences=report(
                "results/figures/compare/differences.png",
                caption=caption("compare_differences"),
                category="Comparison",
            ),
            gallery=report(
                "results/figures/compare/changed.png",
                caption=caption("compare_changed"),
                category="Comparison",
            ),
            flipped=report(
                "results/figures/compare/flipped.png",
                caption=caption("compare_flipped"),
                category="Comparison",
            ),
        params:
            compare=compare_config(config),
            evaluations=config.get("evaluations") or {},
        log:
            "logs/compare.log",
        benchmark:
            "results/benchmarks/compare/compare.tsv"
        group:
            "tables"
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/compare.py"

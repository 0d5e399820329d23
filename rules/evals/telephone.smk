# The Telephone Game (roundtrip.evals.telephone): one job per (pair, chain-input set) makes the
# text-first and image-first chains generation by generation (resumable) and scores them with
# every backbone (and MGG's verdicts on geneval sets); one job writes the tables and figures.
# A chains set (made elsewhere) is scored by the same rule under its own model name.
from roundtrip.evals.telephone.spec import Telephone

TELEPHONE = Telephone.view(PLAN)


wildcard_constraints:
    pair=regex_of(sorted({m for m, _ in TELEPHONE.keys})),


rule telephone_chains:
    input:
        unpack(lambda wc: TELEPHONE.inputs(wc.pair, wc.dataset)),
    output:
        similarity="results/telephone/{pair}/{dataset}/similarity.csv",
        mgg="results/telephone/{pair}/{dataset}/mgg.csv",
    params:
        jobs=lambda wc: TELEPHONE.jobs([wc.pair], wc.dataset),
        dataset_type=lambda wc: config["datasets"][wc.dataset]["type"],
        chains=TELEPHONE.section.get("chains"),
        generations=TELEPHONE.section.get("generations"),
        seed=TELEPHONE.section.get("seed"),
        backbones=TELEPHONE.backbones,
        mgg=TELEPHONE.mgg,
        device=RUN["device"],
    # above the tables (0): long jobs run beside the reconstructions, not last on one core
    priority: 1
    log:
        "logs/telephone_chains/{pair}/{dataset}.log",
    benchmark:
        "results/benchmarks/telephone_chains/{pair}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=lambda wc: TELEPHONE.gpu(wc.pair, wc.dataset),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/telephone_chains.py"


# Batched chains: the offline render_ocr pairs on the built-in captions (TelephonePlan.batched),
# one job per set; each pair gets the files its own telephone_chains job would write (the
# ruleorder gives those files to the batched job, where both rules could make them).
if TELEPHONE.batched_pairs and TELEPHONE.batched_datasets:

    rule telephone_chains_sets:
        input:
            manifest="results/datasets/{dataset}/manifest.csv",
            weights=lambda wc: [f for m in TELEPHONE.batched_pairs
                                for f in TELEPHONE.inputs(m, wc.dataset)["weights"]],
        output:
            [f for m in TELEPHONE.batched_pairs for f in TELEPHONE.files(m, "{dataset}").values()],
        wildcard_constraints:
            dataset=regex_of(TELEPHONE.batched_datasets),
        params:
            jobs=lambda wc: TELEPHONE.jobs(TELEPHONE.batched_pairs, wc.dataset),
            dataset_type=lambda wc: config["datasets"][wc.dataset]["type"],
            chains=TELEPHONE.section.get("chains"),
            generations=TELEPHONE.section.get("generations"),
            seed=TELEPHONE.section.get("seed"),
            backbones=TELEPHONE.backbones,
            mgg=TELEPHONE.mgg,
            device=RUN["device"],
        priority: 1
        log:
            "logs/telephone_chains_sets/{dataset}.log",
        benchmark:
            "results/benchmarks/telephone_chains_sets/{dataset}.tsv"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=240,
            gpu=lambda wc: max(TELEPHONE.gpu(m, wc.dataset) for m in TELEPHONE.batched_pairs),
        conda:
            "../../envs/roundtrip.yaml"
        script:
            "../../scripts/telephone_chains.py"

    ruleorder: telephone_chains_sets > telephone_chains


rule telephone_tables:
    input:
        similarity=[TELEPHONE.files(*key)["similarity"] for key in TELEPHONE.keys],
        mgg=[TELEPHONE.files(*key)["mgg"] for key in TELEPHONE.keys],
    output:
        report_table("telephone_similarity", "The Telephone Game", "S(g) (Eq. 1, Fig. 6)"),
        report_table("telephone_mcd", "The Telephone Game", "MCD (Sec. 3.1)"),
        report_table("telephone_sdr", "The Telephone Game", "SDR (Sec. 3.2, Table 3)"),
        report_table("telephone_sdr_fits", "The Telephone Game", "SDR (Sec. 3.2, Table 3)"),
        report_table("telephone_mgg", "The Telephone Game", "MGG (Sec. 3.3)"),
        report_table("telephone_mgg_grid", "The Telephone Game", "MGG (Sec. 3.3)"),
        similarity_figure=report(
            "results/figures/telephone_similarity.png",
            caption=caption("telephone_similarity_figure"),
            category="The Telephone Game",
            subcategory="S(g) (Eq. 1, Fig. 6)",
        ),
        sdr_figure=report(
            "results/figures/telephone_sdr.png",
            caption=caption("telephone_sdr_figure"),
            category="The Telephone Game",
            subcategory="SDR (Sec. 3.2, Table 3)",
        ),
        mgg_figure=report(
            "results/figures/telephone_mgg.png",
            caption=caption("telephone_mgg_figure"),
            category="The Telephone Game",
            subcategory="MGG (Sec. 3.3)",
        ),
        mgg_mcd_figure=report(
            "results/figures/telephone_mgg_mcd.png",
            caption=caption("telephone_mgg_mcd_figure"),
            category="The Telephone Game",
            subcategory="MGG (Sec. 3.3)",
        ),
        strip_figure=report(
            "results/figures/telephone_strip.png",
            caption=caption("telephone_strip_figure"),
            category="The Telephone Game",
            subcategory="Chains (Figs. 1, 5)",
        ),
    params:
        chain_keys=TELEPHONE.keys,
        roots={f"{m}/{d}": TELEPHONE.chain_root(m, d) for m, d in TELEPHONE.keys},
        generations=TELEPHONE.section.get("generations"),
        bootstrap=config["tables"]["bootstrap"],
        backbones=TELEPHONE.section.get("backbones") or {},
        dataset_types={d: config["datasets"][d].get("type", "") for d in TELEPHONE.datasets},
    log:
        "logs/tables/telephone.log",
    group:
        "tables"
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/telephone_tables.py"

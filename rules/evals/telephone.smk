# The Telephone Game (roundtrip.evals.telephone): one job per (pair, chain-input set) makes the
# text-first and image-first chains generation by generation (resumable) and scores them with
# every backbone (and GenEval's rules on geneval sets); one job writes the tables and figures.
# A chains set (made elsewhere) is scored by the same rule under its own model name.


wildcard_constraints:
    pair=regex_of(sorted({m for m, _ in PLAN.telephone_keys})),


rule telephone_chains:
    input:
        unpack(lambda wc: PLAN.telephone_inputs(wc.pair, wc.dataset)),
    output:
        similarity="results/telephone/{pair}/{dataset}/similarity.csv",
        mgg="results/telephone/{pair}/{dataset}/mgg.csv",
    params:
        pair=lambda wc: PLAN.telephone_pair_spec(wc.pair, wc.dataset),
        dataset_type=lambda wc: config["datasets"][wc.dataset]["type"],
        chain_root=lambda wc: PLAN.telephone_chain_root(wc.pair, wc.dataset),
        chains=PLAN.telephone.get("chains"),
        generations=PLAN.telephone.get("generations"),
        seed=PLAN.telephone.get("seed"),
        backbones=PLAN.telephone_backbones,
        mgg=PLAN.telephone_mgg,
        device=RUN["device"],
    log:
        "logs/telephone_chains/{pair}/{dataset}.log",
    benchmark:
        "results/benchmarks/telephone_chains/{pair}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=lambda wc: PLAN.telephone_gpu(wc.pair, wc.dataset),
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/telephone_chains.py"


rule telephone_tables:
    input:
        similarity=[PLAN.telephone_files(*key)["similarity"] for key in PLAN.telephone_keys],
        mgg=[PLAN.telephone_files(*key)["mgg"] for key in PLAN.telephone_keys],
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
        chain_keys=PLAN.telephone_keys,
        roots={f"{m}/{d}": PLAN.telephone_chain_root(m, d) for m, d in PLAN.telephone_keys},
        generations=PLAN.telephone.get("generations"),
        bootstrap=config["tables"]["bootstrap"],
        backbones=PLAN.telephone.get("backbones") or {},
        dataset_types={d: config["datasets"][d].get("type", "") for d in PLAN.telephone_datasets},
    log:
        "logs/tables/telephone.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/telephone_tables.py"

# OCR of originals (model "original", computed once per dataset) and of reconstructions.


def ocr_inputs(wildcards):
    inputs = {"manifest": f"results/datasets/{wildcards.dataset}/manifest.csv"}
    if wildcards.model != "original":
        inputs["status"] = f"results/recon/{wildcards.model}/{wildcards.dataset}/status.csv"
    return inputs


rule ocr:
    input:
        unpack(ocr_inputs),
    output:
        "results/ocr/{ocr}/{model}/{dataset}.csv",
    params:
        engine=lambda wc: config["ocr"]["engines"][wc.ocr],
        lang=lambda wc: config["datasets"][wc.dataset]["lang"],
    log:
        "logs/ocr/{ocr}/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/ocr/{ocr}/{model}/{dataset}.tsv"
    threads: 2
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/ocr.py"

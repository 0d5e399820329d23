# OCR of originals (model "original", computed once per dataset) and of reconstructions.


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
    threads: item_threads(2)
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/ocr.py"

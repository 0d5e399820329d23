# Training of the small tokenizers (type: small): cached checkpoint, seeded; never retrained
# unless the model's settings change.


rule train_tokenizer:
    input:
        train_manifests,
    output:
        "results/weights/{model}/model.pt",
    params:
        spec=lambda wc: config["models"][wc.model],
        train=train_settings,
    log:
        "logs/train_tokenizer/{model}.log",
    benchmark:
        "results/benchmarks/train_tokenizer/{model}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
    conda:
        "../envs/roundtrip.yaml"
    script:
        "../scripts/train_tokenizer.py"

# Training of the small tokenizers (type: small): cached checkpoint, seeded; never retrained
# unless the model's settings change. Models an evaluation needs before its other jobs
# (Plan.trained_first: the reference tokenizer of the token metrics, which CMMS and the token
# jobs wait on) train first, in a variant of this rule.


rule train_tokenizer:
    input:
        lambda wc: [
            f"results/datasets/{d}/manifest.csv" for d in PLAN.train_settings(wc.model)["datasets"]
        ],
    output:
        "results/weights/{model}/model.pt",
    wildcard_constraints:
        model=regex_of([m for m in PLAN.trained_models if m not in PLAN.trained_first]),
    params:
        spec=lambda wc: config["models"][wc.model],
        train=lambda wc: PLAN.train_settings(wc.model),
    log:
        "logs/train_tokenizer/{model}.log",
    benchmark:
        "results/benchmarks/train_tokenizer/{model}.tsv"
    threads: 1
    # every model's jobs wait on its training: before the jobs that could run beside it
    priority: 10
    resources:
        mem_mb=3000,
        runtime=60,
    conda:
        "../../envs/roundtrip.yaml"
    script:
        "../../scripts/train_tokenizer.py"


if PLAN.trained_first:

    use rule train_tokenizer as train_reference_tokenizer with:
        wildcard_constraints:
            model=regex_of(PLAN.trained_first),
        priority: 50

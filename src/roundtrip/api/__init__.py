"""Transport to OpenAI-compatible endpoints: the client with retries, concurrency limit, response
cache and usage ledger (:mod:`.client`), config resolution of endpoints and prompts
(:mod:`.settings`) and image encoding (:mod:`.images`).

What is asked lives with its user: VLM OCR and the render judge in :mod:`roundtrip.readers.vlm`,
GPT image synthesis in :mod:`roundtrip.datasets.generated`, the GPT-image reconstruction row in
:mod:`roundtrip.models.api_backend`."""

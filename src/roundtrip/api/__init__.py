"""OpenAI-compatible API backends: the client layer (:mod:`.client`), config resolution
(:mod:`.settings`), VLM OCR and render judge (:mod:`.vlm`) and GPT image synthesis
(:mod:`.synthesis`). The GPT-image reconstruction row is ``roundtrip.models.api_backend``."""

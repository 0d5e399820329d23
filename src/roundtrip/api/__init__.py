"""Transport to OpenAI-compatible endpoints, one module per part:

- :mod:`.client`: the client (:class:`~roundtrip.api.client.ApiClient`: requests, retries,
  ``concurrency`` in flight, the response cache, the circuit breaker, usage), one per endpoint
  and process (:func:`~roundtrip.api.client.client_for`), and the usage ledger's lines;
- :mod:`.endpoint`: an ``api.endpoints`` entry, its transport settings, the first check that
  it is there;
- :mod:`.errors`: what went wrong, and how a failed attempt is classified;
- :mod:`.retry`: backoff delays and ``Retry-After``;
- :mod:`.breaker`: the circuit breaker, counting failures of the connection;
- :mod:`.scheduler`: the event loop the requests run on, the slots (due retries first) and the
  pool of worker threads that run a job's items;
- :mod:`.cache`: the response cache on disk;
- :mod:`.usage`: what the requests spent, and the run's ledger;
- :mod:`.images`: image bytes in and out of requests;
- :mod:`.settings`: config resolution of endpoints and prompts.

What is asked lives with its user: VLM OCR and the render judge in :mod:`roundtrip.readers.vlm`,
GPT image synthesis in :mod:`roundtrip.datasets.generated`, the GPT-image reconstruction row in
:mod:`roundtrip.models.api_backend`."""

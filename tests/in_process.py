"""Fixtures of the tests that run tiny models in process (transformers, diffusers): each test
starts as a new job would, on one torch thread. Imported by name into a test module, which
makes them that module's fixtures (``one_thread`` and ``fresh_process`` autouse)."""
import pytest

from roundtrip.api.client import clear_clients
from roundtrip.readers.transformers_vlm import unload_all


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread, as the workflow's jobs run (reproducibility: portable): on a shared
    machine a tiny model's matrix products are slower on two threads than on one."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def fresh_process():
    """Each test starts as a new job would: no model loaded, no usage counted."""
    unload_all()
    clear_clients()
    yield
    unload_all()
    clear_clients()


class Generations(list):
    """The batch size of every ``generate`` call, in call order. ``kill_at = k``: the call
    after ``k`` calls raises ``KeyboardInterrupt`` instead, as a job killed during it would;
    ``None`` (default): no call is killed."""

    kill_at: int | None = None


@pytest.fixture()
def generations(monkeypatch):
    """The tiny Gemma 3's ``generate`` calls (:class:`Generations`)."""
    from transformers import Gemma3ForConditionalGeneration

    calls = Generations()
    real = Gemma3ForConditionalGeneration.generate

    def counted(self, *args, **kwargs):
        if calls.kill_at is not None and len(calls) == calls.kill_at:
            raise KeyboardInterrupt  # the job is killed
        calls.append(int(kwargs["input_ids"].shape[0]))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "generate", counted)
    return calls

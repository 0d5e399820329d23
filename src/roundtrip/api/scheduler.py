"""Keeping an endpoint full: the event loop the requests of a process run on, the slots that hold
``concurrency`` requests in flight with due retries first, and the pool that runs a job's items.

- **One event loop per process** (:func:`event_loop`), in a daemon thread: every client's
  requests are coroutines on it (the ``openai`` SDK's ``AsyncOpenAI``, one connection pool per
  endpoint), so requests in flight cost no thread each.
- **Slots** (:class:`Slots`): at most ``concurrency`` attempts in flight per endpoint. A retry
  waits out its backoff outside them, and once due it takes the next free slot before any fresh
  request, so retries are scheduled by their due time among the fresh items instead of behind
  every one of them.
- **The item pool** (:func:`pool_map`): a job's items on worker threads, where each item's
  request is built (its images read and encoded) and its answer handled, off the event loop.
  With twice as many workers as slots (:func:`item_workers`), items whose requests wait for a
  retry leave enough workers to keep every slot busy. Once the endpoint is found down, the items not yet begun
  are recorded at once without being built.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import os
import threading
from typing import Any, Callable

#: Fresh requests and retries in the slots' queue: a due retry goes first.
RETRY, FRESH = 0, 1


class LoopThread:
    """An asyncio event loop running in a daemon thread.

    Attributes:
        loop: the loop; coroutines are given to it with :meth:`submit`.
    """

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="roundtrip api loop",
                                       daemon=True)
        self.thread.start()

    def submit(self, coro):
        """Run ``coro`` on the loop; returns a ``concurrent.futures.Future`` of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro):
        """Run ``coro`` on the loop and wait for its result (not from the loop's own thread).

        Raises:
            RuntimeError: called from the loop's thread (it would wait on itself).
            Exception: what ``coro`` raised.
        """
        if threading.current_thread() is self.thread:
            raise RuntimeError("LoopThread.run called from the event loop's own thread")
        return self.submit(coro).result()


_LOOP: LoopThread | None = None
_LOOP_PID = 0
_LOOP_LOCK = threading.Lock()


def event_loop() -> LoopThread:
    """The process's event loop thread, started on first use (again in a forked child, whose
    copy of the parent's thread does not run)."""
    global _LOOP, _LOOP_PID
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP_PID != os.getpid() or not _LOOP.thread.is_alive():
            _LOOP, _LOOP_PID = LoopThread(), os.getpid()
        return _LOOP


class Slots:
    """At most ``n`` holders at once, given out in order of priority (:data:`RETRY` before
    :data:`FRESH`), then of arrival. To be used from one event loop only.

    Args:
        n: slots (at least 1).
    """

    def __init__(self, n: int):
        self.free = max(1, int(n))
        self._waiting: list = []  # heap of (priority, arrival, future)
        self._arrival = itertools.count()

    @property
    def waiting(self) -> int:
        """Holders waiting for a slot (cancelled ones included until they are passed over)."""
        return len(self._waiting)

    async def acquire(self, priority: int = FRESH) -> None:
        """Wait for a slot.

        Raises:
            asyncio.CancelledError: cancelled while waiting (no slot is kept).
        """
        if self.free > 0 and not self._waiting:
            self.free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._arrival), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # given a slot, then cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back: to the first holder waiting, else to the free ones."""
        while self._waiting:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():
                fut.set_result(None)
                return
        self.free += 1


def item_workers(concurrency: int) -> int:
    """Worker threads that run a job's items for an endpoint of ``concurrency`` slots: twice as
    many, so that items whose requests wait for a retry leave enough workers to keep every slot
    busy; one at ``concurrency`` 1, so that requests go out in the items' order (a retry then
    waits its backoff with the endpoint idle, as a server that asked for it wants)."""
    n = max(1, int(concurrency))
    return 1 if n == 1 else 2 * n


def pool_map(fn: Callable[[Any], Any], items, workers: int,
             on_done: Callable[[int, Any], None] | None = None,
             stop: Callable[[], BaseException | None] | None = None) -> list:
    """``fn`` over ``items`` on ``workers`` threads; results in the items' order, an exception
    raised by ``fn`` becoming its item's result (one failure does not stop the others).

    Args:
        fn: called with one item (from a worker thread); returns its result.
        items: the items (any iterable; read once).
        workers: threads (at least 1, at most one per item).
        on_done: called from the worker with ``(index, result)`` as each item finishes, in the
            order they finish (a job's progress, answers handled as they arrive).
        stop: asked before each item is begun; once it returns an exception, that is the result
            of the item and, asked again for each, of every item not yet begun, without ``fn``
            being called (an endpoint found down: thousands of items recorded in
            milliseconds).

    Returns:
        list: one result (or exception) per item, in order.
    """
    items = list(items)
    results: list = [None] * len(items)
    if not items:
        return results
    order = iter(range(len(items)))
    lock = threading.Lock()

    def finish(i: int, out) -> None:
        results[i] = out
        if on_done is not None:
            on_done(i, out)

    def work() -> None:
        while True:
            with lock:
                i = next(order, None)
            if i is None:
                return
            halt = stop() if stop is not None else None
            if halt is not None:
                finish(i, halt)
                while True:  # the rest at once (stop() per item: it may count each)
                    with lock:
                        i = next(order, None)
                    if i is None:
                        return
                    finish(i, stop() or halt)
            try:
                out = fn(items[i])
            except Exception as exc:  # noqa: BLE001 - the item's result, recorded by the caller
                out = exc
            finish(i, out)

    n = max(1, min(int(workers), len(items)))
    if n == 1:
        work()
        return results
    threads = [threading.Thread(target=work, name=f"roundtrip pool {k}", daemon=True)
               for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results

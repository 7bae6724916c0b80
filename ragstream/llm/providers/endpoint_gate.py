"""One gate per LLM endpoint, shared by every session in the process.

Sessions in one process (the server's runs, the GUI's, a batch) share an endpoint's rate limit. A
429 seen by one call closes the gate for all of them until its Retry-After, instead of each caller
retrying on its own schedule and keeping the limit tripped; and the calls in flight are bounded, so
eight sessions judging four passages at a time do not open 32 connections at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class EndpointGate:
    def __init__(self, max_in_flight: int) -> None:
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._lock = threading.Lock()
        self._open_at = 0.0
        # Set once a call has been answered: until then an attempt gets the first-call deadline (a local
        # server's first call loads the model).
        self.answered = False

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold one of the endpoint's slots, once the gate is open, for the duration of one call."""
        with self._slots:
            while (wait := self.closed_for()) > 0:
                time.sleep(wait)
            yield

    def closed_for(self) -> float:
        with self._lock:
            return max(0.0, self._open_at - time.monotonic())

    def close_for(self, seconds: float) -> None:
        """No call on this endpoint starts for `seconds` (a later reopening already set stands)."""
        with self._lock:
            self._open_at = max(self._open_at, time.monotonic() + seconds)


_GATES: dict[tuple[str, int], EndpointGate] = {}
_GATES_LOCK = threading.Lock()


def gate_for(endpoint: str, max_in_flight: int) -> EndpointGate:
    """The process's gate for this endpoint (one per configured endpoint: bounded)."""
    with _GATES_LOCK:
        gate = _GATES.get((endpoint, max_in_flight))
        if gate is None:
            gate = _GATES[(endpoint, max_in_flight)] = EndpointGate(max_in_flight)
        return gate

"""Heap snapshots of a running server, for finding what grows per session (`bench/load.py --snapshots`).

A server process cannot be profiled from outside, so with `RAGSTREAM_HEAP_SNAPSHOTS=<folder>` set,
importing the served graph starts `tracemalloc` and a watcher thread: each time a file named `request`
appears in that folder, it writes, after a full collection, a `tracemalloc` snapshot (`heap-N.pickle`)
and the live objects counted by type (`types-N.json`, written last: its presence says the pair is
complete). Unset (always, in normal use), nothing is started and nothing is traced.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ENV = "RAGSTREAM_HEAP_SNAPSHOTS"
FRAMES = 12  # deep enough to reach our code from inside the server's and LangGraph's frames
_started = threading.Lock()


def install_from_env() -> Path | None:
    """Start tracing and the watcher once, when the variable names a folder; the folder, or None."""
    folder = os.environ.get(ENV)
    if not folder or not _started.acquire(blocking=False):
        return None
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(FRAMES)
    threading.Thread(target=_watch, args=(target,), name="ragstream-heap-snapshots", daemon=True).start()
    return target


def take(target: Path, number: int) -> None:
    gc.collect()
    tracemalloc.take_snapshot().dump(str(target / f"heap-{number}.pickle"))
    counts = Counter(type(obj).__qualname__ for obj in gc.get_objects())
    (target / f"types-{number}.json").write_text(json.dumps(dict(counts.most_common(400))))


def _watch(target: Path) -> None:
    request, number = target / "request", 0
    while True:
        if request.exists():
            request.unlink()
            number += 1
            take(target, number)
        time.sleep(0.2)

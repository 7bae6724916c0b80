"""The server's heap-snapshot hook (`RAGSTREAM_HEAP_SNAPSHOTS`, used by `bench/load.py --snapshots`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

CODE = """
import sys, time
from pathlib import Path
from ragstream.telemetry.heap_snapshots import install_from_env
folder = install_from_env()
print(folder)
if folder:
    class Kept:
        def __init__(self):
            self.payload = bytearray(1000)
    kept = [Kept() for _ in range(int(sys.argv[1]))]
    (folder / "request").touch()
    while not (folder / "types-1.json").exists():
        time.sleep(0.1)
"""


def test_a_request_writes_a_heap_snapshot_and_type_counts(tmp_path: Path) -> None:
    import tracemalloc

    folder = tmp_path / "heap"
    env = {**os.environ, "RAGSTREAM_HEAP_SNAPSHOTS": str(folder)}
    done = subprocess.run([sys.executable, "-c", CODE, "3000"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    snapshot = tracemalloc.Snapshot.load(str(folder / "heap-1.pickle"))
    assert sum(s.size for s in snapshot.statistics("filename")) > 3_000_000  # the 3000 kept kB are traced
    assert json.loads((folder / "types-1.json").read_text())["Kept"] == 3000
    assert not (folder / "request").exists()


def test_unset_nothing_is_traced(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAGSTREAM_HEAP_SNAPSHOTS"}
    done = subprocess.run([sys.executable, "-c", CODE, "1"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"

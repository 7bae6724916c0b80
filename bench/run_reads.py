"""How often one `ragstream run` reads the checkpoint back, validates the prompt and scans it for secrets.

The run goes through the CLI in this process (a real SQLite checkpointer under a throwaway data root, the
local provider, a two-file project), so what the surface re-reads after the run counts too. Printed: the
calls to the graph's `get_state`, to the checkpointer's `get_tuple` (what every read of the thread costs),
to `validate_prompt` and to `scan_prompt`, for a run that finishes and for one that pauses at the review.

Run: python bench/run_reads.py
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COUNTED = {
    ("get_state", "pregel"): "graph.get_state",
    ("get_tuple", "sqlite"): "checkpointer.get_tuple",
    ("validate_prompt", "pipeline"): "validate_prompt",
    ("scan_prompt", "scan"): "scan_prompt",
}
PROMPT = (
    "## Task\nExplain how the ingestion manifest decides which files to re-embed.\n"
    "## Context\nkey sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
)


def counted_run(argv: list[str]) -> Counter[str]:
    from ragstream.app.cli import main

    calls: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            key = COUNTED.get((code.co_name, Path(code.co_filename).parent.name.split(".")[0]))
            if key is None:
                key = COUNTED.get((code.co_name, Path(code.co_filename).stem))
            if key:
                calls[key] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)  # the graph may run a node in its executor's threads
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert code == 0, f"ragstream {' '.join(argv)} exited {code}"
    return calls


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="run-reads-"))
    os.environ["RAGSTREAM_DATA_DIR"] = str(work)
    os.environ["RAGSTREAM_LLM_PROVIDER"] = "local"
    os.environ.setdefault("RAGSTREAM_MODELS_DIR", str(ROOT / "data" / "models"))
    docs = work / "doc_raw" / "demo"
    docs.mkdir(parents=True)
    (docs / "manifest.md").write_text("# Manifest\nThe manifest keeps each file's hash; a changed hash re-embeds.\n")
    (docs / "store.md").write_text("# Store\nChroma holds the vectors of each generation, BM25 the terms.\n")
    from ragstream.app.cli import main as cli

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli(["ingest", "demo", "--quiet"]) == 0
    counted_run(["run", PROMPT, "--project", "demo", "--thread", "warm"])  # imports and models load here
    edit = work / "condensed.md"
    edit.write_text("### Facts\n- The manifest compares each file's hash.\n")
    runs = (
        ("finished run", []),
        ("run with --review (run, edit at the review, resume)", ["--review", "--sctx-file", str(edit)]),
    )
    for name, extra in runs:
        calls = counted_run(["run", PROMPT, "--project", "demo", *extra])
        print(f"{name}: " + ", ".join(f"{key} {calls[key]}" for key in COUNTED.values()))


if __name__ == "__main__":
    main()

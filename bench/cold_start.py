"""Cold start: how long a user waits for `ragstream --help`, `ragstream run` on an ingested project, and
`ragstream demo` (an unchanged re-ingest of the sample, then the same run).

Each figure is the wall time of a fresh process (the median of several), with the local provider and
the embedding model already exported (as after the first run or `ragstream models prepare`). Also
lists which heavy modules `ragstream run` imported: none of them is needed to build a prompt.

Run: python bench/cold_start.py [--runs 5] [--work data/bench-cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sentence_transformers", "chromadb", "langchain_openai", "streamlit", "pandas", "transformers")
PROBE = (
    "import runpy, sys; sys.argv = ['ragstream'] + sys.argv[1:]\n"
    "try:\n    runpy.run_module('ragstream.app.cli', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    f"print('heavy:', ','.join(m for m in {HEAVY!r} if m in sys.modules) or 'none', file=sys.stderr)\n"
)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return elapsed, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("data/bench-cold"))
    args = parser.parse_args()
    env = {**os.environ, "RAGSTREAM_LLM_PROVIDER": "local"}
    cli = [sys.executable, "-m", "ragstream.app.cli", "--data-dir", str(args.work)]
    timed([*cli, "demo"], env)  # ingest the sample project and export the model once
    run = [*cli, "run", "--project", "sample", "--file", str(ROOT / "examples" / "prompt.md")]
    helps = [timed([*cli, "--help"], env)[0] for _ in range(args.runs)]
    runs = [timed(run, env)[0] for _ in range(args.runs)]
    demos = [timed([*cli, "demo"], env)[0] for _ in range(args.runs)]
    _, probe = timed([sys.executable, "-c", PROBE, "--data-dir", str(args.work), *run[5:]], env)
    heavy = probe.stderr.strip().splitlines()[-1].removeprefix("heavy: ")
    print(
        f"ragstream --help: median {statistics.median(helps):.2f} s (min {min(helps):.2f}, max {max(helps):.2f}, "
        f"n={args.runs})"
    )
    print(
        f"ragstream run (ingested project, local provider): median {statistics.median(runs):.2f} s "
        f"(min {min(runs):.2f}, max {max(runs):.2f}, n={args.runs})"
    )
    print(
        f"ragstream demo (sample already ingested): median {statistics.median(demos):.2f} s "
        f"(min {min(demos):.2f}, max {max(demos):.2f}, n={args.runs})"
    )
    print(f"heavy modules imported by run: {heavy}")


if __name__ == "__main__":
    main()

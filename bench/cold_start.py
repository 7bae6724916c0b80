"""Cold start: how long a user waits for `ragstream --help`, `ragstream run` on an ingested project (to its
first stage event and to the end), and `ragstream demo` (an unchanged re-ingest of the sample, then the
same run), beside the floor no RAGstream code can go below: a bare `import langgraph.graph`.

Each figure is the wall time of a fresh process (the median of several, taken round by round: each
round runs every command once, so a change of the machine's load touches every row alike), with the
local provider and the embedding model already exported (as after the first run or `ragstream models
prepare`), and its CPU time (user + system, the median): on a shared machine the wall time mostly
measures the wait for a core, the CPU time what the command itself costs. Each row is also given as a
ratio to the floor.
Bytecode is cached as after `pip install` (which compiles every module): the commands run with
PYTHONPYCACHEPREFIX under the work folder even where PYTHONDONTWRITEBYTECODE is set, which would
otherwise make every run compile RAGstream's own sources again (about 0.2 s of CPU that no installed
copy pays). `python -c pass` is the interpreter's own start, the floor of `--help`.

Also lists which modules `ragstream run` imported that a local run does not use (none should be), and
whether it imported LangSmith: LangGraph imports LangChain Core's tracers, which import the LangSmith SDK
at module level (see docs/capacity.md, "Cold start and LLM concurrency").

The first stage event is the first "stage ... done" line `ragstream -v run` logs (PreProcessing's); its CPU
time is read from /proc at that moment.

Run: python bench/cold_start.py [--runs 5] [--work data/bench-cold]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "sentence_transformers",
    "chromadb",
    "langchain_openai",
    "streamlit",
    "pandas",
    "transformers",
    "langgraph_sdk.client",
    "httpx",
    "rich",
    "langsmith.types.run",
)
PROBE = (
    "import runpy, sys; sys.argv = ['ragstream'] + sys.argv[1:]\n"
    "try:\n    runpy.run_module('ragstream.app.cli', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    f"print('heavy:', ','.join(m for m in {HEAVY!r} if m in sys.modules) or 'none', file=sys.stderr)\n"
    "print('langsmith:', 'yes' if 'langsmith' in sys.modules else 'no', file=sys.stderr)\n"
)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds (user + system of the child) and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done


def to_first_stage(command: list[str], env: dict[str, str]) -> tuple[float, float, object]:
    """Wall and CPU seconds of a `-v` run until it logs its first finished stage (then it runs to its end)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stderr is not None
    wall = cpu = None
    for line in proc.stderr:
        if wall is None and " stage " in f" {line}" and " done in " in line:
            wall = time.perf_counter() - started
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    if proc.wait() != 0 or wall is None or cpu is None:
        raise SystemExit(f"{' '.join(command)} failed or logged no stage")
    return wall, cpu, None


def figure(name: str, samples: list[tuple[float, float, object]]) -> str:
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    return (
        f"{name}: median {statistics.median(walls):.2f} s wall (min {min(walls):.2f}, max {max(walls):.2f}), "
        f"{statistics.median(cpus):.2f} s CPU, n={len(samples)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("data/bench-cold"))
    args = parser.parse_args()
    env = {**os.environ, "RAGSTREAM_LLM_PROVIDER": "local", "PYTHONPYCACHEPREFIX": str(args.work.resolve() / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cli = [sys.executable, "-m", "ragstream.app.cli", "--data-dir", str(args.work)]
    timed([*cli, "demo"], env)  # ingest the sample project and export the model once
    run = [*cli, "run", "--project", "sample", "--file", str(ROOT / "examples" / "prompt.md")]
    verbose = [sys.executable, "-m", "ragstream.app.cli", "-v", *run[3:]]
    commands: dict[str, Callable[[], tuple[float, float, object]]] = {
        "python -c pass (the interpreter)": partial(timed, [sys.executable, "-c", "pass"], env),
        "import langgraph.graph (the floor)": partial(timed, [sys.executable, "-c", "import langgraph.graph"], env),
        "ragstream --help": partial(timed, [*cli, "--help"], env),
        "ragstream run to its first stage event": partial(to_first_stage, verbose, env),
        "ragstream run (ingested project, local provider)": partial(timed, run, env),
        "ragstream demo (sample already ingested)": partial(timed, [*cli, "demo"], env),
    }
    samples: dict[str, list[tuple[float, float, object]]] = {name: [] for name in commands}
    for _ in range(args.runs):  # round by round: a change of the machine's load touches every row alike
        for name, command in commands.items():
            samples[name].append(command())
    starts, floors, helps, firsts, runs, demos = samples.values()
    _, _, probe = timed([sys.executable, "-c", PROBE, "--data-dir", str(args.work), *run[5:]], env)
    lines = probe.stderr.strip().splitlines()
    print(figure("python -c pass (the interpreter)", starts))
    print(figure("import langgraph.graph (the floor)", floors))
    print(figure("ragstream --help", helps))
    print(figure("ragstream run to its first stage event", firsts))
    print(figure("ragstream run (ingested project, local provider)", runs))
    floor = statistics.median(s[1] for s in floors)
    for name, samples in (("--help", helps), ("run, first stage", firsts), ("run, to the end", runs)):
        cpu = statistics.median(s[1] for s in samples)
        print(f"above the floor, {name}: {cpu - floor:+.2f} s CPU, {cpu / floor:.2f}x the floor")
    print(figure("ragstream demo (sample already ingested)", demos))
    print(f"unused modules imported by run: {lines[-2].removeprefix('heavy: ')}; {lines[-1]}")


if __name__ == "__main__":
    main()

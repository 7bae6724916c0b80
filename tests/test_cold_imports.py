"""A command imports only what it uses: `ragstream --help` no pipeline at all, a local `run` no model
runtime it does not run, no vector database and no HTTP client (see `ragstream.app.deferred_imports`),
not the `onnx` package that only builds the embedding graph (the graph is on disk after the first run),
and no per-core embedding sessions its few hundred tokens would not repay (`SPREAD_MIN_TOKENS`).

Each check runs the real command in a fresh interpreter and reads its `sys.modules` (and the threads
left running) at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragstream.stages import SKIPPABLE
from ragstream.state.stage import NAMES

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import json, runpy, sys\n"
    "watched = sys.argv.pop(1).split(',')\n"
    "sys.argv = ['ragstream'] + sys.argv[1:]\n"
    "try:\n    runpy.run_module('ragstream.app.cli', run_name='__main__')\n"
    "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
    "import threading\n"
    "print(json.dumps(sorted({t.name.rsplit('_', 1)[0] for t in threading.enumerate()})), file=sys.stderr)\n"
    "print(json.dumps(sorted(m for m in watched if m in sys.modules)), file=sys.stderr)\n"
)
NEVER = ["torch", "sentence_transformers", "transformers", "chromadb", "streamlit", "langchain_openai"]
UNUSED_BY_RUN = [
    "langgraph_sdk.client",
    "httpx",
    "rich",
    "click",
    "websockets",
    "langsmith.types.run",
    "onnx",
    "google.protobuf",
]


def imported(args: list[str], watched: list[str], cwd: Path) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    env_args = [sys.executable, "-c", PROBE, ",".join(watched), *args]
    done = subprocess.run(env_args, capture_output=True, text=True, cwd=cwd, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1]), done


def threads_left(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The names of the threads still alive when the command returned (a pool's workers stay)."""
    return list(json.loads(done.stderr.strip().splitlines()[-2]))


def test_help_imports_no_pipeline(tmp_path: Path) -> None:
    """Not even the stage registry: its modules declare the state's pydantic reports, the settings are pydantic
    too, and building them was two thirds of `--help`'s own time (bench/cold_start.py)."""
    registry = ["ragstream.stages", *(f"ragstream.stages.{name}" for name in NAMES), "ragstream.state"]
    watched = [*NEVER, "langgraph", "langsmith", "langchain_core", "numpy", "pydantic", "ragstream.settings", *registry]
    found, done = imported(["--help"], watched, tmp_path)
    assert "usage: ragstream" in done.stdout
    assert found == []


def test_a_command_lists_its_stage_choices_from_the_registry(tmp_path: Path) -> None:
    """The choices argparse no longer reads while it builds the parser are still the registry's, in the
    command's own help and in its refusal of a stage it does not know."""
    found, done = imported(["run", "--help"], ["ragstream.stages"], tmp_path)
    assert found == ["ragstream.stages"] and f"stages to skip: {', '.join(sorted(SKIPPABLE))}" in done.stdout
    _, done = imported(["step", "--help"], [], tmp_path)
    assert f"the stage: {', '.join(NAMES)}" in " ".join(done.stdout.split())
    refused = subprocess.run(
        [sys.executable, "-m", "ragstream.app.cli", "run", "--skip", "build", "q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert refused.returncode == 2 and "invalid choice: 'build'" in refused.stderr


def test_a_local_run_imports_no_unused_runtime(tmp_path: Path) -> None:
    data = tmp_path / "data"
    demo = subprocess.run(
        ["ragstream", "--data-dir", str(data), "demo"], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert demo.returncode == 0, demo.stderr
    prompt = ROOT / "examples" / "prompt.md"
    args = ["--data-dir", str(data), "run", "--project", "sample", "--file", str(prompt)]
    found, done = imported(args, [*NEVER, *UNUSED_BY_RUN, "langgraph"], tmp_path)
    assert done.stdout.startswith("## System") and "## Condensed context" in done.stdout
    assert found == ["langgraph"]
    assert "ragstream-embed" not in threads_left(done)  # the one session embedded everything


def test_a_deferred_package_is_whole_when_used(tmp_path: Path) -> None:
    code = (
        "import ragstream.app.session, sys\n"
        "assert 'langgraph_sdk.auth.types' in sys.modules and 'langgraph_sdk.client' not in sys.modules\n"
        "import langgraph_sdk\n"
        "from langsmith.types import Run\n"
        "assert callable(langgraph_sdk.get_sync_client) and langgraph_sdk.__version__\n"
        "assert Run.__module__ == 'langsmith.types.run'\n"
        "from langgraph_sdk import Auth\n"
        "print('whole')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "whole"

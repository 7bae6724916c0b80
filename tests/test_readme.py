"""The README's commands are the ones that run.

CI's script runs the README's install and test lines, and every example after the demo runs as written,
in order, in a checkout-like folder with a fresh data root (offline: the local provider).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```$", flags=re.M | re.S)

# Example lines the test does not run, and why. Everything else in a bash or python block runs.
NOT_RUN = {
    r"^python3 -m venv ": "the install: this test runs inside it",
    r"^ruff check ": "the test command: it is what runs this test",
    r"^ragstream gui\b": "a long-running Streamlit server: tests/test_gui_browser.py drives it",
    r"^ragstream send\b": "needs a real LLM (OPENAI_API_KEY or OPENAI_BASE_URL): tests/test_answer.py scripts one",
    r" --web\b": "needs a SearxNG server (tools.web_search.url): tests/test_tools.py serves one",
    r"^langgraph dev\b": "a long-running server: tests/test_langgraph_server.py serves the graph on a free port",
    r"get_sync_client": "a client of that LangGraph server (tests/test_server_users.py runs these calls)",
}


def examples() -> list[tuple[str, str]]:
    """(language, code) of every example in README order: each bash line alone, each python block whole."""
    found: list[tuple[str, str]] = []
    for language, code in _BLOCK.findall(README.read_text(encoding="utf-8")):
        if language == "python":
            found.append((language, code))
        else:
            found.extend((language, line) for line in code.splitlines() if line.strip())
    return found


def not_run(code: str) -> str | None:
    return next((why for pattern, why in NOT_RUN.items() if re.search(pattern, code, flags=re.M)), None)


def section_block(title: str) -> str:
    """The first bash block under a `## title` heading."""
    section = README.read_text(encoding="utf-8").split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return _BLOCK.findall(section)[0][1].strip()


def test_ci_runs_the_readme_install_and_test_commands() -> None:
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.strip()]
    install, test = section_block("Install"), section_block("Test")
    assert ci[-2:] == [install, test]
    assert "pytest" in test and "mypy" in test and "ruff check" in test


def test_every_example_skipped_has_a_reason_and_most_run() -> None:
    ran = [code for _, code in examples() if not_run(code) is None]
    assert ran[0] == "ragstream demo"
    assert len(ran) >= 12, ran


@pytest.mark.slow
def test_readme_examples_run_in_order_after_the_demo(tmp_path: Path) -> None:
    for name in ("examples", "ragstream"):  # what the examples read from the checkout
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        RAGSTREAM_DATA_DIR=str(tmp_path / "data"),
        RAGSTREAM_LLM_PROVIDER="local",
        HF_HUB_OFFLINE="1",
        EDITOR="true",  # `--review` opens the editor: this one leaves the condensed context as it is
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    for language, code in examples():
        if not_run(code):
            continue
        command = ["bash", "-c", code] if language == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-2000:]}"


def test_the_graph_drawing_is_the_graph() -> None:
    from ragstream import build_graph

    drawn = re.search(r"^```mermaid\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.M | re.S)
    assert drawn is not None

    def graph(mermaid: str) -> list[str]:  # the nodes and edges, without the styling
        lines = mermaid.split("graph TD;", 1)[1].splitlines()
        return [line.strip() for line in lines if line.strip() and not line.strip().startswith("classDef")]

    assert graph(drawn.group(1)) == graph(build_graph().get_graph().draw_mermaid())

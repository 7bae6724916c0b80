"""The README's commands are the ones that run.

CI's script runs the README's install and test lines, and every example after the demo runs as written,
in order, in a checkout-like folder with the README's environment: the default relative data root
(`./data`, no `RAGSTREAM_DATA_DIR`), offline (the local provider). `langgraph dev` is started as the
README starts it (no extra flags; `--port` only when 2024 is taken, as the README says), and the SDK
example and `memory show --server` run against it with the token `ragstream users add` printed. The
MCP configuration is started the way a host starts it and driven by the MCP SDK's client.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.servers import free_port, wait_for_http

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
}
SERVER = re.compile(r"^langgraph dev\b")
README_URL, TOKEN = "http://127.0.0.1:2024", "rs_..."  # what the examples say, replaced by what this run got
# What a run prints where the README says what it does (substrings of its stdout and stderr).
EXPECT = {
    r"^ragstream resume\b": "stage built",  # a resume after steps by hand finishes the run
    r"get_sync_client": "## Source excerpts",  # the SDK example prints the final prompt
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
    text = README.read_text(encoding="utf-8")
    for why in NOT_RUN.values():  # the README itself says which test takes a path this one leaves out
        assert all(test in text for test in re.findall(r"tests/test_\w+\.py", why)), why


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def _server(line: str, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """The README's `langgraph dev` line as written (`--port N` only when 2024 is taken); its URL."""
    port = 2024 if _port_free(2024) else free_port()
    argv = shlex.split(line, comments=True) + ([] if port == 2024 else ["--port", str(port)])
    log_path = cwd / "langgraph-dev.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/ok", proc, 180, log_path)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert "BlockingError" not in log_path.read_text(), log_path.read_text()[-3000:]


def _mcp_config() -> dict:
    section = README.read_text(encoding="utf-8").split("\n## MCP", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```json\n(.*?)^```$", section, flags=re.M | re.S)
    assert block is not None
    return json.loads(block.group(1))["mcpServers"]["ragstream"]


async def _as_mcp_host(config: dict, checkout: Path) -> str:
    """What a host does with the README's MCP configuration: start the command, list the tools, build a prompt."""
    from mcp import Client, StdioServerParameters

    venv_bin = Path(sys.executable).parent
    args = [a.replace("/path/to/data", str(checkout / "data")) for a in config["args"]]
    command = config["command"].replace("/path/to/.venv/bin", str(venv_bin))
    params = StdioServerParameters(command=command, args=args, env={**os.environ, **config["env"]}, cwd=str(checkout))
    async with Client(params, read_timeout_seconds=300) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"list_projects", "search_project", "build_superprompt"}
        prompt = (checkout / "examples" / "prompt.md").read_text(encoding="utf-8")
        built = await client.call_tool("build_superprompt", {"prompt": prompt, "project": "sample"})
        assert not built.is_error, built.content
        return built.structured_content["prompt"]


@pytest.mark.slow
def test_readme_examples_run_in_order_after_the_demo(tmp_path: Path) -> None:
    for name in ("examples", "ragstream", "langgraph.json", "graphs"):  # what the examples read from the checkout
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=(ROOT / name).is_dir())
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and k != "RAGSTREAM_DATA_DIR"}
    env.update(
        RAGSTREAM_LLM_PROVIDER="local",
        HF_HUB_OFFLINE="1",
        EDITOR="true",  # `--review` opens the editor: this one leaves the condensed context as it is
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),  # the activated venv
    )
    token, url, served = TOKEN, README_URL, False
    with ExitStack() as servers:
        for language, code in examples():
            if not_run(code):
                continue
            code = code.replace(TOKEN, token).replace(README_URL, url)
            if SERVER.search(code):
                url, served = servers.enter_context(_server(code, tmp_path, env)), True
                continue
            command = ["bash", "-c", code] if language == "bash" else [sys.executable, "-c", code]
            done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            said = f"{code}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-2000:]}"
            assert done.returncode == 0, said
            for pattern, expected in EXPECT.items():
                if re.search(pattern, code, flags=re.M):
                    assert expected in done.stdout + done.stderr, said
            if code.startswith("ragstream users add"):
                token = done.stdout.strip().splitlines()[-1]  # the README: the token is its last line
            if "one more fact" in code:  # the README's edit adds a fact: it lands under Facts
                facts = done.stdout.split("### Facts", 1)[1].split("### Constraints", 1)[0]
                assert "- one more fact" in facts, said
        assert served and token != TOKEN  # the server path ran
    prompt = asyncio.run(_as_mcp_host(_mcp_config(), tmp_path))
    assert "## Source excerpts" in prompt


def test_the_graph_drawing_is_the_graph() -> None:
    from ragstream import build_graph

    drawn = re.search(r"^```mermaid\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.M | re.S)
    assert drawn is not None

    def graph(mermaid: str) -> list[str]:  # the nodes and edges, without the styling
        lines = mermaid.split("graph TD;", 1)[1].splitlines()
        return [line.strip() for line in lines if line.strip() and not line.strip().startswith("classDef")]

    assert graph(drawn.group(1)) == graph(build_graph().get_graph().draw_mermaid())

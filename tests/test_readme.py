"""The README's and the docs pages' commands are the ones that run.

CI's script runs the README's install and test lines, and every example after the demo runs as written:
the README's, then each page of `docs/` in `PAGES` order (a page may use what an earlier one made; an
example already run, word for word, is not run again), in a checkout-like folder with the README's
environment: the default relative data root (`./data`, no `RAGSTREAM_DATA_DIR`), offline (the local
provider). `langgraph dev` is started as docs/server.md starts it (no extra flags; `--port` only when
2024 is taken, as the page says), and the SDK example and `memory show --server` run against it with
the token `ragstream users add` printed. The MCP configuration of docs/mcp.md is started the way a host
starts it and driven by the MCP SDK's client. What is run and what is illustrative is said by the block's
language (bash and python run; text, json and mermaid do not) and by NOT_RUN (docs/contributing.md).
"""

from __future__ import annotations

import asyncio
import importlib
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
# The pages in the order their examples run: the README (its first example is the demo), then docs/.
PAGES = [README] + [
    ROOT / "docs" / f"{name}.md"
    for name in (
        "install",
        "ingestion",
        "cli",
        "review",  # makes the thread t1 that send.md traces
        "stages",
        "retrieval",  # --also code: the README ingested the project code
        "send",
        "evaluation",
        "gui",
        "server",
        "mcp",
        "python",
        "models",
        "configuration",
        "scale-out",
        "capacity",
        "contributing",
    )
]
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```$", flags=re.M | re.S)
_FENCED = re.compile(r"^```.*?^```$", flags=re.M | re.S)

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
# What a run prints where the page says what it does (substrings of its stdout and stderr).
EXPECT = {
    r"^ragstream resume\b": "stage built",  # a resume after steps by hand finishes the run
    r"get_sync_client": "## Source excerpts",  # the SDK example prints the final prompt
    r"export_prompt\(sp, \"xml\"\)": "<document",  # the Python API example prints the XML style
}


def page_examples(page: Path) -> list[tuple[str, str]]:
    """(language, code) of every example of one page in its order: each bash line alone, each python block whole."""
    found: list[tuple[str, str]] = []
    for language, code in _BLOCK.findall(page.read_text(encoding="utf-8")):
        if language == "python":
            found.append((language, code))
        else:
            found.extend((language, line) for line in code.splitlines() if line.strip())
    return found


def examples() -> list[tuple[str, str]]:
    """Every example the docs show, in PAGES order, each once (a later copy of one already shown is not run)."""
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for page in PAGES:
        for language, code in page_examples(page):
            if code not in seen:
                seen.add(code)
                found.append((language, code))
    return found


def not_run(code: str) -> str | None:
    return next((why for pattern, why in NOT_RUN.items() if re.search(pattern, code, flags=re.M)), None)


def section_block(title: str) -> str:
    """The first bash block under a `## title` heading of the README."""
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
    for page in PAGES:  # the page itself says which test takes a path this one leaves out
        text = page.read_text(encoding="utf-8")
        for _, code in page_examples(page):
            why = not_run(code)
            if why is not None:
                assert all(test in text for test in re.findall(r"tests/test_\w+\.py", why)), (page.name, why)


def test_every_page_is_run_and_listed_in_the_readme() -> None:
    pages = {page.name for page in PAGES[1:]}
    assert pages == {path.name for path in (ROOT / "docs").glob("*.md")}
    readme = README.read_text(encoding="utf-8")
    assert all(f"](docs/{name})" in readme for name in pages), sorted(n for n in pages if f"docs/{n}" not in readme)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_pages_leads_somewhere() -> None:
    for page in PAGES:
        prose = _FENCED.sub("", page.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"https?://", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.is_file(), (page.name, target)
            if anchor:
                headings = re.findall(r"^#+ (.*)$", _FENCED.sub("", linked.read_text(encoding="utf-8")), flags=re.M)
                assert anchor in {_slug(h) for h in headings}, (page.name, target)


def test_every_path_and_name_the_pages_give_exists() -> None:
    """A file, folder or Python name a page gives in backticks is there: moving code shows here first."""
    for page in PAGES:
        for code in re.findall(r"`([^`\n]+)`", _FENCED.sub("", page.read_text(encoding="utf-8"))):
            code = code.split("::", 1)[0]
            if re.fullmatch(r"(ragstream|tests|bench|config|examples|graphs|docs)/[^\s<>{}*…]+", code):
                assert (ROOT / code).exists(), (page.name, code)
            elif re.fullmatch(r"ragstream(\.\w+)+", code) and not re.search(r"\.(json|md|py)$", code):
                assert _python_name_exists(code), (page.name, code)


def test_every_prompt_a_page_shows_is_closed_and_cites_files_that_exist() -> None:
    """A page's code blocks are closed, and an excerpt it shows (`excerpt source="..."`, abridged output of a
    run on this repo's `ragstream/` folder) cites a file that is there: docs/ingestion.md once ended inside an
    unclosed block showing an excerpt of a module that had been moved away."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert len(re.findall(r"^```", text, flags=re.M)) % 2 == 0, (page.name, "a code block is never closed")
        for source in re.findall(r'excerpt source="([^"]+\.py)"', text):
            assert (ROOT / "ragstream" / source).is_file(), (page.name, source)


def test_every_setting_the_pages_name_is_a_setting() -> None:
    """A dotted setting a page gives in backticks (`llm.max_concurrency`, `gate.strong_evidence`) is one."""
    from ragstream.settings import load_settings

    settings = load_settings().model_dump()
    named = 0
    for page in PAGES:
        for code in re.findall(r"`([^`\n]+)`", _FENCED.sub("", page.read_text(encoding="utf-8"))):
            for dotted in re.findall(r"^([a-z_0-9]+(?:\.[a-z_0-9]+)+)(?:[:= ]|$)", code):
                node, parts = settings, dotted.split(".")
                if parts[0] not in settings:  # a state field (`extras.a3.judged_by`), not a setting
                    continue
                named += 1
                for part in parts:
                    assert isinstance(node, dict) and part in node, (page.name, dotted)
                    node = node[part]
    assert named > 20


def test_the_layout_drawn_is_the_layout() -> None:
    """Every folder and module docs/contributing.md's tree names exists where the tree puts it."""
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    tree = re.search(r"^```text\n(.*?)^```$", page, flags=re.M | re.S)
    assert tree is not None
    drawn = []
    for line in tree.group(1).splitlines():
        if line.startswith("    "):  # a description's second line
            continue
        under = ROOT / "ragstream" if line.startswith("  ") else ROOT
        drawn += [under / name for name in re.split(r"\s{2,}", line.strip())[0].split()]
    assert len(drawn) > 20 and all(path.exists() for path in drawn), [str(p) for p in drawn if not p.exists()]


def _python_name_exists(dotted: str) -> bool:
    """The longest importable module of `dotted`, then the attributes after it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def _server(line: str, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """The page's `langgraph dev` line as written (`--port N` only when 2024 is taken); its URL."""
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
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    block = re.search(r"^```json\n(.*?)^```$", page, flags=re.M | re.S)
    assert block is not None
    return json.loads(block.group(1))["mcpServers"]["ragstream"]


async def _as_mcp_host(config: dict, checkout: Path) -> str:
    """What a host does with the page's MCP configuration: start the command, list the tools, build a prompt."""
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
def test_the_examples_of_every_page_run_in_order_after_the_demo(tmp_path: Path) -> None:
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
                token = done.stdout.strip().splitlines()[-1]  # the page: the token is its last line
            if "one more fact" in code:  # the review page's edit adds a fact: it lands under Facts
                facts = done.stdout.split("### Facts", 1)[1].split("### Constraints", 1)[0]
                assert "- one more fact" in facts, said
        assert served and token != TOKEN  # the server path ran
    prompt = asyncio.run(_as_mcp_host(_mcp_config(), tmp_path))
    assert "## Source excerpts" in prompt


def test_the_graph_drawing_is_the_graph() -> None:
    from ragstream import build_graph

    page = (ROOT / "docs" / "review.md").read_text(encoding="utf-8")
    drawn = re.search(r"^```mermaid\n(.*?)^```$", page, flags=re.M | re.S)
    assert drawn is not None

    def graph(mermaid: str) -> list[str]:  # the nodes and edges, without the styling
        lines = mermaid.split("graph TD;", 1)[1].splitlines()
        return [line.strip() for line in lines if line.strip() and not line.strip().startswith("classDef")]

    assert graph(drawn.group(1)) == graph(build_graph().get_graph().draw_mermaid())


ASKED_OF_THIS_REPO = "How are compound identifiers like best_match made searchable by their words?"


@pytest.mark.slow
def test_the_abridged_run_a_page_shows_is_what_ragstream_prints(tmp_path: Path) -> None:
    """The README and docs/ingestion.md show, abridged, what `ragstream run` prints for one question once this
    repository's `ragstream/` folder is ingested: every line they show is a line of that output (an excerpt that
    grew by its neighbours showed a line range the run no longer printed)."""
    shown = {
        page.name: block
        for page in PAGES
        for block in re.findall(r"^```text\n(.*?)^```$", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        if "excerpt source=" in block and ASKED_OF_THIS_REPO in page.read_text(encoding="utf-8").replace("\n", " ")
    }
    assert {"README.md", "ingestion.md"} <= set(shown)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(RAGSTREAM_DATA_DIR=str(tmp_path / "data"), RAGSTREAM_LLM_PROVIDER="local", HF_HUB_OFFLINE="1")
    (tmp_path / "ragstream").symlink_to(ROOT / "ragstream", target_is_directory=True)
    run = [str(Path(sys.executable).parent / "ragstream")]  # the command the pages give, from the venv
    subprocess.run([*run, "ingest", "code", "--path", "ragstream", "--quiet"], cwd=tmp_path, env=env, check=True)
    done = subprocess.run(
        [*run, "run", "--project", "code", ASKED_OF_THIS_REPO], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    printed = set(done.stdout.splitlines())
    for name, block in shown.items():
        missing = [line for line in block.splitlines() if line not in ("...", "") and line not in printed]
        assert not missing, (name, missing)

"""The same end-to-end run on existing engines: PostgreSQL checkpoints and a Chroma server; and a deployment
with no shared folder: one ingest worker and two query processes on three data roots, sharing only
PostgreSQL (index generations, manifest, checkpoints, memory) and the Chroma server (the vector store)."""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from ragstream.app.controller import AppController
from ragstream.app.workspace import Workspace
from ragstream.gate.calibration import NULL_FILE
from ragstream.index import catalog
from ragstream.index.manifest import generation_dir
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import open_checkpointer
from ragstream.rendering.styles import export_prompt
from ragstream.services import Services
from ragstream.settings import load_settings
from ragstream.tenancy.projects import project_paths
from tests.fixtures_docs import make_project
from tests.servers import free_port, langgraph_dev, wait_for_http
from tests.test_gui import _app

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

PROMPT = "# Task\nHow are changed documents re-embedded, and how are excerpts fenced?"
PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


@pytest.fixture(scope="module")
def postgres_url():
    if not PG_BIN:
        pytest.skip("PostgreSQL server binaries are not installed (apt-get install postgresql; .ci/run does this)")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no 'postgres' system user to run the server as")
    bin_dir = PG_BIN[-1]
    root = Path(tempfile.mkdtemp(prefix="ragstream-pg-"))
    root.chmod(0o755)
    shutil.chown(root, "postgres", "postgres")
    port = free_port()
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run(
        [*as_pg, f"{bin_dir}/initdb", "-D", str(root / "data"), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_pg,
            f"{bin_dir}/pg_ctl",
            "-D",
            str(root / "data"),
            "-l",
            str(root / "log"),
            "-w",
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    subprocess.run(
        [*as_pg, f"{bin_dir}/pg_ctl", "-D", str(root / "data"), "-m", "immediate", "stop"], capture_output=True
    )
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory):
    port = free_port()
    folder = tmp_path_factory.mktemp("chroma-server")
    chroma = str(Path(sys.executable).parent / "chroma")
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for_http(f"{url}/api/v2/heartbeat", proc, 60)
    yield url
    proc.terminate()
    proc.wait(timeout=20)


def _end_to_end(tmp_path: Path, **overrides: str) -> str:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local", **overrides})
    make_project(settings.data_dir / "doc_raw" / "demo", awkward=False)
    IngestionManager(settings).ingest("demo")
    ctl = AppController(settings, checkpointer=open_checkpointer(settings), services=Services(settings))
    ctl.select_project("demo")
    ctl.run_full_pipeline(PROMPT)
    ctl.edit(s_ctx_md="### Facts\n- reviewed")
    resumed = AppController(
        settings, checkpointer=open_checkpointer(settings), services=Services(settings), thread_id=ctl.thread_id
    )  # a second controller picks the thread up
    resumed.select_project("demo")
    return resumed.resume().prompt_ready


def test_postgres_checkpoints_and_chroma_server_give_the_same_prompt(
    postgres_url: str, chroma_url: str, tmp_path: Path
) -> None:
    embedded = _end_to_end(tmp_path / "embedded")
    scaled = _end_to_end(tmp_path / "scaled", checkpoint_url=postgres_url, chroma_url=chroma_url)
    assert scaled == embedded
    assert "- reviewed" in scaled and 'excerpt source="ingestion.md"' in scaled
    from langgraph.checkpoint.postgres import PostgresSaver

    settings = load_settings(overrides={"checkpoint_url": postgres_url})
    assert isinstance(open_checkpointer(settings), PostgresSaver)


REPO = Path(__file__).resolve().parents[1]
ROTATION = "# Key rotation\n\nThe signing key rotates every 90 days; the cron job keyrotor does it.\n"
ASK_ROTATION = "# Task\nHow often does the signing key rotate, and what rotates it?"
ARCHIVE = "# Archive\n\nOld exports move to cold storage after 400 days; the job coldmover does it.\n"
ASK_ARCHIVE = "# Task\nWhen do old exports move to cold storage, and which job moves them?"


class QueryProcess:
    """`ragstream mcp` on its own data root, spoken to in MCP's JSON-RPC over stdio (so the test holds its pid)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragstream.app.cli", "--data-dir", str(root), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=REPO,
            text=True,
        )
        self.next_id = 0
        self.call(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        wanted = self.request(method, params)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("id") == wanted:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"the query process exited ({self.proc.poll()}) before answering")

    def final_prompt(self, prompt: str) -> str:
        result = self.call(
            "tools/call", {"name": "build_superprompt", "arguments": {"prompt": prompt, "project": "demo"}}
        )
        assert not result.get("isError"), result
        return str(result["structuredContent"]["prompt"])

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _ingest(root: Path, docs: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "ragstream.app.cli", "--data-dir", str(root), "ingest", "demo", "--path", str(docs)],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
    )


def _generation_files(root: Path, generation: int) -> dict[str, bytes]:
    """The generation's files as ingested; A3's corpus calibration is a cache each root computes for itself."""
    folder = root / "chroma_db" / "demo" / "index" / f"g{generation:06d}"
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != NULL_FILE
    }


def _embedded_prompts(tmp_path: Path, docs: Path, prompts: list[str], project: str = "demo") -> list[str]:
    """The same prompts on the embedded default (one data root, no servers), after the same ingest."""
    settings = load_settings(overrides={"data_dir": str(tmp_path / "embedded"), "llm.provider": "local"})
    IngestionManager(settings).ingest(project, source=docs)
    ctl = AppController(settings, checkpointer=open_checkpointer(settings), services=Services(settings))
    return [export_prompt(ctl.run_full_pipeline(p, project=project, pause_after="none"), "markdown") for p in prompts]


def test_a_deployment_shares_no_folder(postgres_url: str, chroma_url: str, tmp_path: Path) -> None:
    """An ingest worker and two query processes on three data roots: identical final prompts, a re-ingest seen
    by both without a restart, one killed while loading a new generation and the other still serving."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "RAGSTREAM_LLM_PROVIDER": "local",
        "RAGSTREAM_DATABASE_URL": postgres_url,
        "RAGSTREAM_CHROMA_URL": chroma_url,
    }
    env.pop("RAGSTREAM_DATA_DIR", None)
    docs = make_project(tmp_path / "docs", awkward=False)
    worker, first, second = tmp_path / "worker", tmp_path / "query-a", tmp_path / "query-b"
    _ingest(worker, docs, env)
    a, b = QueryProcess(first, env), QueryProcess(second, env)
    try:
        embedded = _embedded_prompts(tmp_path / "before", docs, [PROMPT, ASK_ROTATION])
        assert [a.final_prompt(PROMPT), a.final_prompt(ASK_ROTATION)] == embedded
        assert [b.final_prompt(PROMPT), b.final_prompt(ASK_ROTATION)] == embedded
        assert "keyrotor" not in embedded[1]
        for root in (first, second):  # each holds a downloaded copy of the generation, nothing else of the index
            assert not (root / "chroma_db" / "demo" / "manifest.json").exists()
            assert _generation_files(root, 1) == _generation_files(worker, 1)  # the same bytes: the same scores

        (docs / "rotation.md").write_text(ROTATION, encoding="utf-8")
        _ingest(worker, docs, env)  # the query processes are not told
        rotation = a.final_prompt(ASK_ROTATION)
        assert "keyrotor" in rotation and 'excerpt source="rotation.md"' in rotation
        assert b.final_prompt(ASK_ROTATION) == rotation
        assert _embedded_prompts(tmp_path / "after", docs, [ASK_ROTATION]) == [rotation]

        (docs / "archive.md").write_text(ARCHIVE, encoding="utf-8")
        _ingest(worker, docs, env)
        pending = a.request(
            "tools/call", {"name": "build_superprompt", "arguments": {"prompt": ASK_ARCHIVE, "project": "demo"}}
        )
        index = first / "chroma_db" / "demo" / "index"
        deadline = time.monotonic() + 120  # a bound on waiting for the download to start, not a speed assertion
        while time.monotonic() < deadline and not any(index.glob(".download-*")) and not (index / "g000003").exists():
            time.sleep(0.005)
        a.proc.send_signal(signal.SIGKILL)  # mid-load: its query for generation 3 is in flight
        assert a.proc.wait(timeout=30) == -signal.SIGKILL and pending
        archive = b.final_prompt(ASK_ARCHIVE)
        assert "coldmover" in archive
        restarted = QueryProcess(first, env)  # the killed root recovers: a half-written download is discarded
        try:
            assert restarted.final_prompt(ASK_ARCHIVE) == archive
            assert not any(index.glob(".download-*"))
        finally:
            restarted.close()
    finally:
        a.close()
        b.close()


def test_users_and_memory_live_in_postgres(postgres_url: str, tmp_path: Path) -> None:
    """Two data roots on one database: a user added on one authenticates on the other, and the local user's
    memory written by one is read by the other (LangGraph's PostgresStore)."""
    from ragstream.memory.conversation import LOCAL_USER, memory_store, namespace
    from ragstream.tenancy.users import PostgresUsers, UserRegistry

    one, other = (
        load_settings(overrides={"data_dir": str(tmp_path / name), "database_url": postgres_url})
        for name in ("one", "other")
    )
    token = UserRegistry.of(one).add("alice", ["demo"])
    found = UserRegistry.of(other).authenticate(token)
    assert isinstance(UserRegistry.of(other), PostgresUsers) and found is not None and found.projects == ("demo",)
    assert not (tmp_path / "one" / "users.json").exists()
    memory_store(one).put(namespace(LOCAL_USER, "demo", "memory"), "state", {"summary": "shared"})
    read = (  # another process on the other data root
        "from ragstream.memory.conversation import LOCAL_USER, memory_store, namespace\n"
        "from ragstream.settings import load_settings\n"
        f"settings = load_settings(overrides={{'data_dir': {str(tmp_path / 'other')!r}}})\n"
        "print(memory_store(settings).get(namespace(LOCAL_USER, 'demo', 'memory'), 'state').value['summary'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAGSTREAM_DATABASE_URL": postgres_url}
    done = subprocess.run([sys.executable, "-c", read], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "shared" and not (tmp_path / "other" / "memory").exists()
    UserRegistry.of(one).remove("alice")
    assert UserRegistry.of(other).get("alice") is None


def test_a_query_root_lists_the_projects_postgres_holds(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data root that never ingested lists what the worker committed to PostgreSQL, with the worker's file and
    chunk counts: `ragstream projects`, the Workspace (the MCP server's `list_projects`) and the GUI's list."""
    roots = {name: tmp_path / name for name in ("worker", "query")}
    worker, query = (
        load_settings(overrides={"data_dir": str(root), "database_url": postgres_url, "llm.provider": "local"})
        for root in roots.values()
    )
    IngestionManager(worker).ingest("listed", source=make_project(tmp_path / "docs", awkward=False))
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAGSTREAM_DATABASE_URL": postgres_url}
    printed = {
        name: subprocess.run(
            [sys.executable, "-m", "ragstream.app.cli", "--data-dir", str(root), "projects"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        for name, root in roots.items()
    }
    overview = Workspace(query).project_overview("listed")
    line = f"{'listed':24s} {len(overview['files'])} files, {overview['chunks']} chunks"
    assert overview["ingested"] and overview["chunks"] and line in printed["query"] and line in printed["worker"]
    assert Workspace(query).projects() == Workspace(worker).projects()
    assert not (roots["query"] / "chroma_db" / "listed").exists()
    monkeypatch.setenv("RAGSTREAM_DATABASE_URL", postgres_url)
    gui = _app(roots["query"], monkeypatch)
    assert "listed" in gui.selectbox(key="project").options


def test_the_langgraph_server_serves_a_data_root_that_never_ingested(postgres_url: str, tmp_path: Path) -> None:
    """`langgraph dev` with `RAGSTREAM_DATABASE_URL` on an empty data root: a user added on the worker's root is
    let in (the users table), and a run on the project the worker ingested (its generation in PostgreSQL) gives
    the embedded default's final prompt."""
    from langgraph_sdk import get_sync_client

    from ragstream.tenancy.users import UserRegistry

    docs = make_project(tmp_path / "docs", awkward=False)
    options = {"database_url": postgres_url, "llm.provider": "local"}
    worker = load_settings(overrides={"data_dir": str(tmp_path / "worker"), **options})
    IngestionManager(worker).ingest("served", source=docs)
    token = UserRegistry.of(worker).add("served-user", ["served"])
    (expected,) = _embedded_prompts(tmp_path / "embedded", docs, [PROMPT], project="served")
    root = tmp_path / "served-root"
    env = {"RAGSTREAM_DATA_DIR": str(root), "RAGSTREAM_LLM_PROVIDER": "local", "RAGSTREAM_DATABASE_URL": postgres_url}
    (tmp_path / "lgdev").mkdir()
    with langgraph_dev(tmp_path / "lgdev", env) as (url, _):
        client = get_sync_client(url=url, headers={"Authorization": f"Bearer {token}"})
        thread = client.threads.create()["thread_id"]
        context = {"project": "served", "pause_after": "none"}
        client.runs.wait(thread, "ragstream", input={"prompt": PROMPT}, context=context)
        values = client.threads.get_state(thread)["values"]
    assert values["stage"] == "built" and values["prompt_ready"] == expected
    assert 'excerpt source="ingestion.md"' in expected and not (root / "users.json").exists()


def test_a_generation_pruned_before_a_query_fetches_it_is_not_a_missing_index(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query process read the committed generation's number, then the worker committed two more, pruning it,
    before the query fetched it: the query reads the number again and serves the newest generation, neither
    "no index yet" nor an empty copy of the pruned one."""
    monkeypatch.setattr(catalog, "_FRESH_SECONDS", 3600.0)  # the query keeps trusting the number it read
    docs = make_project(tmp_path / "docs", awkward=False)
    worker = load_settings(overrides={"data_dir": str(tmp_path / "worker"), "database_url": postgres_url})
    IngestionManager(worker).ingest("pruned", source=docs)
    worker_paths = project_paths(worker, "pruned")
    first = catalog.committed_generation(catalog.catalog_of(worker), worker_paths)
    upload = (generation_dir(worker_paths.index_dir, first) / catalog._ID_FILE).read_text(encoding="utf-8")
    reader = catalog.PostgresCatalog(postgres_url)  # the query process's own catalog
    paths = project_paths(load_settings(overrides={"data_dir": str(tmp_path / "query")}), "pruned")
    assert reader.summary(paths).generation == first
    for n in (1, 2):
        (docs / f"added{n}.md").write_text(f"# Added {n}\n\nNote number {n}.\n", encoding="utf-8")
        IngestionManager(worker).ingest("pruned", source=docs)
    assert reader.summary(paths).generation == first  # the number read before the two ingests
    snapshot = catalog.committed_snapshot(reader, paths)
    assert snapshot is not None and snapshot.generation == first + 2 and "added2.md" in snapshot.files
    pruned = generation_dir(paths.index_dir, first)
    assert not reader._download(paths, first, upload, pruned)  # the narrower window: pruned between two reads
    assert not pruned.exists() and not any(paths.index_dir.glob(".download-*"))

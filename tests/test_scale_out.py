"""The same end-to-end run on existing engines: PostgreSQL checkpoints and a Chroma server."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import open_checkpointer
from ragstream.services import Services
from ragstream.settings import load_settings
from tests.fixtures_docs import make_project
from tests.servers import free_port, wait_for_http

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
    ctl.edit(S_CTX_MD="### Facts\n- reviewed")
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

"""`langgraph dev` serves the graph; the LangGraph SDK drives it to the A4 pause, edits, resumes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from ragstream.settings import Settings
from tests.servers import free_port, wait_for_http

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

ROOT = Path(__file__).resolve().parents[1]
PROMPT = (ROOT / "examples" / "prompt.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def server(indexed: Settings, tmp_path_factory: pytest.TempPathFactory):
    port = free_port()
    workdir = tmp_path_factory.mktemp("lgdev")
    for name in ("langgraph.json", "graphs"):
        (workdir / name).symlink_to(ROOT / name)
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(indexed.data_dir), "RAGSTREAM_LLM_PROVIDER": "local",
           "RAGSTREAM_CONFIG_DIR": str(ROOT / "config"), "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    log = (workdir / "server.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
        cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for_http(f"{url}/ok", proc, 180, workdir / "server.log")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_sdk_runs_to_pause_edits_and_resumes(server: str) -> None:
    client = get_sync_client(url=server)
    thread = client.threads.create()
    tid = thread["thread_id"]
    client.runs.wait(tid, "ragstream", input={"prompt": PROMPT}, context={"project": "demo"})
    state = client.threads.get_state(tid)
    assert state["next"] == ["a5"]
    assert state["values"]["stage"] == "a4"
    original = state["values"]["S_CTX_MD"]
    assert "### Facts" in original

    client.threads.update_state(tid, {"S_CTX_MD": "### Facts\n- EDITED THROUGH THE SDK"}, as_node="a4")
    client.runs.wait(tid, "ragstream", input=None, context={"project": "demo"})
    final = client.threads.get_state(tid)["values"]
    assert final["stage"] == "build"
    assert "EDITED THROUGH THE SDK" in final["prompt_ready"]
    assert original not in final["prompt_ready"]
    assert final["history_of_stages"].count("a4") == 1


def test_stage_events_arrive_over_the_server_sse_stream(server: str) -> None:
    client = get_sync_client(url=server)
    tid = client.threads.create()["thread_id"]
    events = [
        part.data
        for part in client.runs.stream(
            tid, "ragstream", input={"prompt": PROMPT}, context={"project": "demo"}, stream_mode="custom"
        )
        if part.event.startswith("custom")
    ]
    stages = [(e["event"], e["stage"]) for e in events if e.get("event", "").startswith("stage_")]
    expected = [(kind, s) for s in ("preprocess", "a2", "retrieval", "rerank", "a3", "a4") for kind in ("stage_start", "stage_finish")]
    assert stages == expected  # the server pauses after A4
    assert any(e.get("event") == "llm_call" for e in events)

"""`langgraph dev` serves the graph; the LangGraph SDK drives it to the review interrupt after A4, answers
it with `Command(resume=...)`, and sees real errors for bad input and bad answers while the thread stays as
it was. The server runs with strict msgpack."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

from ragstream.settings import Settings
from ragstream.state import RunMetadata
from ragstream.tenancy.users import UserRegistry
from tests.servers import langgraph_dev

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

ROOT = Path(__file__).resolve().parents[1]
PROMPT = (ROOT / "examples" / "prompt.md").read_text(encoding="utf-8")


@dataclass
class Server:
    url: str
    log: Path


HEADERS: dict[str, str] = {}


def _client(url: str):
    return get_sync_client(url=url, headers=HEADERS)


@pytest.fixture(scope="module", autouse=True)
def tester(indexed: Settings) -> None:
    """The server requires a user (custom auth): one allowed on every project these tests name."""
    registry = UserRegistry.of(indexed)
    if registry.get("tester"):
        registry.remove("tester")
    HEADERS["Authorization"] = "Bearer " + registry.add("tester", ["demo", "unindexed", "nowhere"])


@pytest.fixture(scope="module")
def server_process(indexed: Settings, tmp_path_factory: pytest.TempPathFactory):
    (indexed.data_dir / "doc_raw" / "unindexed").mkdir(parents=True, exist_ok=True)
    env = {"RAGSTREAM_DATA_DIR": str(indexed.data_dir), "RAGSTREAM_LLM_PROVIDER": "local"}
    with langgraph_dev(tmp_path_factory.mktemp("lgdev"), env) as (url, log):
        yield Server(url, log)


@pytest.fixture()
def server(server_process: Server) -> str:
    return server_process.url


def _review(client, tid: str) -> dict:
    state = client.threads.get_state(tid)
    assert state["next"] == ["review"]
    assert len(state["interrupts"]) == 1
    return state["interrupts"][0]["value"]


def test_sdk_review_interrupt_keeps_one_of_n_chunks_refuses_unknown_ids_and_resumes(server: str) -> None:
    client = _client(server)
    tid = client.threads.create()["thread_id"]
    context = {"project": "demo", "skip": ["a3"]}  # the review is the subject: every reranked chunk reaches it
    client.runs.wait(tid, "ragstream", input={"prompt": PROMPT}, context=context)
    review = _review(client, tid)
    assert review["kind"] == "review" and review["after"] == "a4"
    chunks = review["chunks"]
    assert len(chunks) > 1 and all(c["source"] and c["preview"] for c in chunks)
    assert review["S_CTX_MD"] == client.threads.get_state(tid)["values"]["s_ctx_md"]
    keep = chunks[1]["id"]
    edited = f"### Facts\n- EDITED THROUGH THE SDK [{keep}]"

    for bad, message in (
        ({"final_selection_ids": [keep, "nowhere.md@0123456789#0"]}, "unknown chunk ids"),
        ({"S_CTX_MD": 42}, "S_CTX_MD"),
        ({"stage": "build"}, "cannot be edited"),
    ):
        with pytest.raises(Exception) as info:
            client.runs.wait(tid, "ragstream", command={"resume": bad}, context=context)
        assert "InputError" in str(info.value) and message in str(info.value), str(info.value)
        assert _review(client, tid)["chunks"] == chunks  # refused: the review still waits, unchanged

    client.runs.wait(
        tid, "ragstream", command={"resume": {"final_selection_ids": [keep], "S_CTX_MD": edited}}, context=context
    )
    final = client.threads.get_state(tid)
    values = final["values"]
    assert final["next"] == [] and values["stage"] == "built"
    assert values["final_selection_ids"] == [keep]
    assert values["prompt_ready"].count("excerpt source=") == 1 and f'chunk="{keep}"' in values["prompt_ready"]
    assert "EDITED THROUGH THE SDK" in values["prompt_ready"]
    assert values["history_of_stages"].count("a4") == 1
    assert [(e["stage"], e["fields"]) for e in values["extras"]["edits"]] == [
        ("a4", ["S_CTX_MD", "final_selection_ids"])
    ]
    meta = RunMetadata.model_validate(values["run_metadata"])  # the SDK reads the same typed record
    assert (
        meta.trace_id == tid
        and meta.stage == "built"
        and meta.retrieval is not None
        and "excerpts" in meta.context_budget
    )


def test_sdk_update_state_of_a_derived_field_is_refused(server: str) -> None:
    client = _client(server)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "ragstream", input={"prompt": PROMPT}, context={"project": "demo"})
    before = _values(client, tid)
    for forged in ({"stage": "build", "prompt_ready": "FORGED"}, {"final_selection_ids": []}):
        with pytest.raises(Exception) as info:
            client.threads.update_state(tid, forged, as_node="a4")
        assert "cannot be written directly" in str(info.value), str(info.value)
    assert _values(client, tid) == before
    client.runs.wait(tid, "ragstream", command={"resume": {"accept": True}}, context={"project": "demo"})
    assert client.threads.get_state(tid)["values"]["stage"] == "built"


def test_sdk_strict_mode_asks_about_an_unknown_header_once(server: str) -> None:
    client = _client(server)
    header = f"Zorblat {uuid.uuid4().hex[:6]}"
    prompt = f"# Task\nHow are changed documents re-embedded?\n# {header}\nQUUXLINE the manifest keeps each sha256.\n"
    context = {"project": "demo", "strict": True, "pause_after": "none"}
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "ragstream", input={"prompt": prompt}, context=context)
    state = client.threads.get_state(tid)
    assert state["next"] == ["decide_headers"] and state["values"]["stage"] == "preprocessed"
    question = state["interrupts"][0]["value"]
    assert question["kind"] == "headers" and [h["header"] for h in question["headers"]] == [header]
    assert question["headers"][0]["preview"].startswith("QUUXLINE") and "keep" in question["headers"][0]["choices"]
    with pytest.raises(Exception) as info:
        client.runs.wait(tid, "ragstream", command={"resume": {"decisions": {header: "BOGUS"}}}, context=context)
    assert "InputError" in str(info.value) and "unknown choices" in str(info.value)
    assert client.threads.get_state(tid)["interrupts"][0]["value"] == question  # still waiting

    client.runs.wait(tid, "ragstream", command={"resume": {"decisions": {header: "CONTEXT"}}}, context=context)
    values = client.threads.get_state(tid)["values"]
    assert values["stage"] == "built" and "## Context\nQUUXLINE" in values["prompt_ready"]
    assert values["extras"]["preprocess"]["decisions"] == {header: "CONTEXT"}

    again = client.threads.create()["thread_id"]
    client.runs.wait(again, "ragstream", input={"prompt": prompt}, context=context)
    state = client.threads.get_state(again)
    assert state["next"] == [] and state["values"]["stage"] == "built"  # not asked again


def test_stage_events_arrive_over_the_server_sse_stream(server: str) -> None:
    client = _client(server)
    tid = client.threads.create()["thread_id"]
    events = [
        part.data
        for part in client.runs.stream(
            tid, "ragstream", input={"prompt": PROMPT}, context={"project": "demo"}, stream_mode="custom"
        )
        if part.event.startswith("custom")
    ]
    stages = [(e["event"], e["stage"]) for e in events if e.get("event", "").startswith("stage_")]
    expected = [
        (kind, s)
        for s in ("preprocess", "a2", "retrieval", "rerank", "a3", "a4")
        for kind in ("stage_start", "stage_finish")
    ]
    assert stages == expected  # the server pauses after A4
    assert any(e.get("event") == "offline_step" for e in events)  # the local provider: no LLM calls


BAD_RUNS = {
    "empty prompt": ({"prompt": "   "}, {"project": "demo"}, "EmptyPromptError: the prompt is empty"),
    "unknown project": ({"prompt": PROMPT}, {"project": "nowhere"}, "ProjectError: no project 'nowhere'"),
    "unindexed project": (
        {"prompt": PROMPT},
        {"project": "unindexed"},
        "ProjectError: project 'unindexed' has no index yet",
    ),
    "path trick": ({"prompt": PROMPT}, {"project": "../../etc"}, "ProjectError: invalid project name"),
    "unknown strategy": (
        {"prompt": PROMPT},
        {"project": "demo", "strategy": "BOGUS"},
        "InputError: unknown retrieval strategy 'BOGUS': use one of",
    ),
    "unknown skip": ({"prompt": PROMPT}, {"project": "demo", "skip": ["a4"]}, "InputError: cannot skip ['a4']"),
}
KEPT = (
    "raw_prompt",
    "stage",
    "history_of_stages",
    "base_context_chunks",
    "s_ctx_md",
    "prompt_ready",
    "final_selection_ids",
)


def _values(client, tid: str) -> dict:
    values = client.threads.get_state(tid)["values"]
    return {k: values[k] for k in KEPT}


@pytest.mark.parametrize("paused", [False, True], ids=["finished", "paused at A4"])
@pytest.mark.parametrize("bad", list(BAD_RUNS))
def test_a_bad_run_shows_its_error_and_leaves_the_thread_as_it_was(bad: str, paused: bool, server: str) -> None:
    client = _client(server)
    tid = client.threads.create()["thread_id"]
    context = {"project": "demo"}
    client.runs.wait(tid, "ragstream", input={"prompt": PROMPT}, context=context)
    if not paused:
        client.runs.wait(tid, "ragstream", input=None, context=context)
    before = _values(client, tid)
    graph_input, bad_context, message = BAD_RUNS[bad]
    with pytest.raises(httpx.HTTPStatusError) as info:  # refused before the run exists
        client.runs.wait(tid, "ragstream", input=graph_input, context=bad_context)
    assert info.value.response.status_code == 422 and message in info.value.response.text, info.value.response.text
    assert _values(client, tid) == before  # no stage ran, nothing was overwritten
    if paused:  # the review still waits: answer it and the run finishes as answered
        assert _review(client, tid)["after"] == "a4"
        client.runs.wait(
            tid,
            "ragstream",
            command={"resume": {"S_CTX_MD": "### Facts\n- EDITED AFTER A FAILED RUN"}},
            context=context,
        )
        final = client.threads.get_state(tid)["values"]
        assert final["stage"] == "built" and "EDITED AFTER A FAILED RUN" in final["prompt_ready"]


def test_strict_msgpack_server_logged_no_unregistered_type(server_process: Server) -> None:
    log = server_process.log.read_text(encoding="utf-8")
    assert "unregistered type" not in log and "Blocked deserialization" not in log


@pytest.fixture(scope="module")
def llm_server(indexed: Settings, tmp_path_factory: pytest.TempPathFactory):
    """A second `langgraph dev`, whose LLM is a local OpenAI-protocol server that drafts twice."""
    from tests.openai_server import FakeOpenAIServer
    from tests.test_answer import Model

    with FakeOpenAIServer() as model_server:
        model_server.responder = Model()
        env = {
            "RAGSTREAM_DATA_DIR": str(indexed.data_dir),
            "RAGSTREAM_LLM_PROVIDER": "openai",
            "OPENAI_BASE_URL": model_server.url,
            "OPENAI_API_KEY": "sk-test-local-server-0000",
        }
        with langgraph_dev(tmp_path_factory.mktemp("lgdev-llm"), env) as (url, _log):
            yield url


def test_sending_from_the_sdk_streams_tokens_over_sse_and_the_critic_loops_once(llm_server: str) -> None:
    client = _client(llm_server)
    tid = client.threads.create()["thread_id"]
    context = {"project": "demo", "send": True}
    client.runs.wait(
        tid, "ragstream", input={"prompt": "# Task\nHow are changed documents re-embedded?"}, context=context
    )
    assert client.threads.get_state(tid)["next"] == ["review"]  # the review comes first
    tokens, nodes = [], []
    for part in client.runs.stream(
        tid,
        "ragstream",
        command={"resume": {"accept": True}},
        context=context,
        stream_mode=["messages-tuple", "updates"],
    ):
        if part.event == "messages":
            chunk, metadata = part.data
            if metadata.get("langgraph_node") == "answer" and chunk.get("content"):
                tokens.append(chunk["content"])
        elif part.event == "updates":
            nodes += list(part.data)
    assert "".join(tokens) == "First draft without citations" + "Second draft [ingestion.md@x#0]"
    assert nodes[-4:] == ["answer", "critic", "answer", "critic"]
    values = client.threads.get_state(tid)["values"]
    assert values["stage"] == "built" and values["answer"]["done"] and len(values["answer"]["attempts"]) == 2
    meta = RunMetadata.model_validate(values["run_metadata"])
    assert meta.critic is not None and (meta.critic.attempts, meta.critic.retries) == (2, 1)
    assert meta.usage["answer"].calls == 2 and meta.usage["critic"].calls == 2

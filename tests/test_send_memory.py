"""Send with a critic against the local OpenAI-protocol server, and conversation memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import LLMNotConfiguredError
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages.options import RunOptions
from tests.openai_server import Reply
from tests.servers import link_indexed_project

PROMPT = "# Task\nHow are changed documents re-embedded?"
OK = {"grounded": "yes", "complete": "yes", "follows_format": "yes", "feedback": ""}
BAD = {"grounded": "no", "complete": "yes", "follows_format": "yes", "feedback": "cite the excerpt ids"}


def _built(settings: Settings) -> AppController:
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    ctl.run_full_pipeline(PROMPT, pause_after="none")
    return ctl


@pytest.fixture()
def server_settings(openai_on_indexed):
    return openai_on_indexed(**{"llm.timeout_s": 5, "llm.max_retries": 0, "send.critic_max_retries": 2})


def test_send_streams_then_critic_rejection_regenerates(server_settings) -> None:
    server, settings = server_settings
    ctl = _built(settings)
    server.script.clear()
    server.push(
        Reply(content="First draft without citations"),
        Reply(content=json.dumps(BAD)),
        Reply(content="Revised answer [ingestion.md@x#0]"),
        Reply(content=json.dumps(OK)),
    )
    tokens: list[str] = []
    answer = ctl.send(on_token=tokens.append)
    assert "".join(tokens) == "First draft without citations" + "Revised answer [ingestion.md@x#0]"
    assert len(tokens) > 2  # token by token
    assert answer.text == "Revised answer [ingestion.md@x#0]"
    assert (answer.retries, answer.accepted, answer.done) == (1, True, True)
    assert [a.critique["grounded"] for a in answer.attempts] == ["no", "yes"]
    regenerate = [r for r in server.requests if r.get("stream")][1]
    assert regenerate["stream"] is True and "cite the excerpt ids" in regenerate["messages"][-1]["content"]
    assert ctl.sp.answer == answer and ctl.sp.stage.value == "built"
    event = [e for e in ctl.trace() if e["event"] == "answer"][-1]
    assert event["retries"] == 1 and event["input_tokens"] > 0
    assert [t.answer for t in ctl.services.memory.turns("demo")] == [answer.text]


def test_retry_limit_is_honoured(server_settings) -> None:
    server, settings = server_settings
    ctl = _built(settings)
    server.script.clear()
    for i in range(3):
        server.push(Reply(content=f"draft {i}"), Reply(content=json.dumps(BAD)))
    answer = ctl.send()
    assert (answer.retries, answer.accepted, answer.done) == (2, False, True)
    assert answer.text == "draft 2"
    assert sum(1 for r in server.requests if r.get("stream")) == 3


def test_a_regeneration_repeating_its_draft_keeps_the_verdict_unasked_and_ends_the_loop(server_settings) -> None:
    """Issue 40: with a real 0.5B model every regeneration repeated the rejected answer word for word, and the
    critic was asked again about the same text."""
    server, settings = server_settings
    ctl = _built(settings)
    server.script.clear()
    server.push(Reply(content="The same draft."), Reply(content=json.dumps(BAD)), Reply(content="The same draft."))
    answer = ctl.send()
    assert (answer.retries, answer.accepted, answer.done) == (1, False, True)
    assert sum(1 for r in server.requests if r.get("stream")) == 2  # not 3: the loop ended
    critic = [
        r for r in server.requests if r.get("response_format", {}).get("json_schema", {}).get("name") == "CRITIC_v1"
    ]
    assert len(critic) == 1
    last = answer.attempts[-1].critique
    assert last["grounded"] == "no" and "repeated the previous attempt word for word" in last["repeated"]


def test_send_without_llm_says_so(indexed: Settings) -> None:
    ctl = _built(indexed)
    with pytest.raises(LLMNotConfiguredError, match="the SuperPrompt itself is the product"):
        ctl.send()
    assert ctl.sp.stage.value == "built" and ctl.sp.prompt_ready


def test_legacy_history_logs_migrate_to_the_local_user_once_torn_lines_skipped(tmp_path: Path) -> None:
    data = tmp_path / "d"
    (data / "history").mkdir(parents=True)
    good = [
        json.dumps({"ts": 1, "thread": "t1", "prompt": "first question about BM25", "answer": "BM25 is lexical."}),
        '{"ts": 2, "prompt": "torn by a cra',  # killed mid-append by an earlier version
        json.dumps({"ts": 3, "thread": "t2", "prompt": "second question", "answer": "Dense vectors complement BM25."}),
    ]
    (data / "history" / "demo.jsonl").write_text("\n".join(good) + "\n")
    (data / "history" / "demo.memory.json").write_text(
        json.dumps({"notes": [{"kind": "facts", "text": "We deploy on Fridays.", "last_seen": 1}]})
    )
    settings = load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})
    memory = Services(settings).memory
    assert [t.prompt for t in memory.turns("demo")] == ["first question about BM25", "second question"]
    assert [n["text"] for n in memory.notes("demo")] == ["We deploy on Fridays."]
    assert sorted(p.name for p in (data / "history").iterdir()) == ["demo.jsonl.migrated", "demo.memory.json.migrated"]
    memory.record("demo", "third question", "Fusion weights are cross-validated.")
    assert [t.prompt for t in Services(settings).memory.turns("demo")][-1] == "third question"
    memory.clear("demo")
    assert memory.turns("demo") == [] and memory.context("demo") == []
    off = load_settings(overrides={"data_dir": str(tmp_path / "d2"), "llm.provider": "local", "memory.persist": False})
    assert Services(off).memory.record("demo", "q", "a") is False
    assert Services(off).memory.turns("demo") == []


def test_each_user_has_their_own_memory_of_a_project(tmp_path: Path) -> None:
    from langgraph.store.memory import InMemoryStore

    settings = load_settings(overrides={"data_dir": str(tmp_path / "d"), "llm.provider": "local"})
    services, server_store = Services(settings), InMemoryStore()
    alice, bob = services.memory_of("alice", server_store), services.memory_of("bob", server_store)
    alice.record("demo", "Remember: my API budget code is ZETA-4471. I prefer answers in French.", "Noted.")
    assert bob.turns("demo") == [] and bob.notes("demo") == [] and bob.context("demo") == []
    assert services.memory.turns("demo") == []  # the local user is another user, in another store
    assert [n["text"] for n in alice.notes("demo")] == [
        "Remember: my API budget code is ZETA-4471.",
        "I prefer answers in French.",
    ]
    assert server_store.search(("bob",)) == [] and {i.namespace[:2] for i in server_store.search(("alice",))} == {
        ("alice", "demo")
    }


def test_summary_replaces_old_turns_once_over_budget(tmp_path: Path) -> None:
    settings = load_settings(
        overrides={
            "data_dir": str(tmp_path / "d"),
            "llm.provider": "local",
            "memory.keep_turns": 2,
            "memory.summary_budget": 60,
        }
    )
    memory = Services(settings).memory
    for i in range(5):
        memory.record(
            "demo",
            f"Question {i}: how does stage {i} of the pipeline work in detail?",
            f"Answer {i}. Stage {i} transforms the SuperPrompt and records its outputs for review.",
        )
    state = memory.state("demo")
    assert state["summary"] and state["summarized_until"] >= 2
    context = memory.context("demo")
    assert context[0].role == "summary"
    verbatim = [t.content for t in context if t.role == "user"]
    assert len(verbatim) <= 2 and verbatim[-1].startswith("Question 4")
    assert not any(t.role == "note" for t in context)  # no sentence said "remember", "I prefer", "always", "never"


def test_offline_salience_notes_come_only_from_explicit_cues_one_kind_each(tmp_path: Path) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "d"), "llm.provider": "local"})
    memory = Services(settings).memory
    memory.record(
        "demo",
        "I prefer short answers with code. Remember that we deploy on Fridays. How does BM25 work?",
        "BM25 scores terms. You should always test it. Never deploy untested code.",
    )
    notes = {(n["kind"], n["text"]) for n in memory.notes("demo")}
    assert notes == {
        ("preferences", "I prefer short answers with code."),
        ("facts", "Remember that we deploy on Fridays."),
    }


def test_relevant_history_joins_retrieval_when_asked(indexed: Settings, tmp_path: Path) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    link_indexed_project(settings, indexed)
    services = Services(settings)
    services.memory.record(
        "demo", "How do we re-embed changed documents?", "Only files whose sha256 changed are re-embedded."
    )
    services.memory.record("demo", "What colour is the logo?", "The logo is teal.")
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=services)
    ctl.select_project("demo")
    ctl.options = RunOptions(history_profile="relevant")
    ctl.preprocess(PROMPT)
    assert [t.role for t in ctl.sp.recent_conversation][-2:] == ["user", "assistant"]
    sp = ctl.run_retrieval()
    history = [c for c in sp.base_context_chunks if c.metadata.get("kind") == "history"]
    assert history and "sha256 changed" in history[0].text
    assert all("teal" not in c.text for c in history[:1])
    assert "## Earlier conversation\n~~~~earlier-conversation" in sp.prompt_ready

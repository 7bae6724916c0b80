"""Stage events (stream = invoke), the per-thread trace, tokens and cost, and secrets kept out."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import StageOrderError
from ragstream.orchestration.checkpoint import memory_checkpointer, sqlite_checkpointer
from ragstream.orchestration.graph import build_graph
from ragstream.orchestration.review import review_name
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages.options import RunOptions
from ragstream.stages.rules import NAMES, ORDER
from ragstream.state import SuperPrompt
from ragstream.telemetry.trace import summarize
from tests.conftest import FAKE_KEY
from tests.openai_server import FakeOpenAIServer, schema_responder

PROMPT = (Path(__file__).resolve().parents[1] / "examples" / "prompt.md").read_text(encoding="utf-8")


def test_stream_and_invoke_end_in_the_same_superprompt_with_ordered_events(indexed: Settings) -> None:
    services = Services(indexed)
    context = RunOptions(project="demo", pause_after="none", services=services)
    invoked_graph = build_graph(memory_checkpointer())
    invoked = invoked_graph.invoke({"prompt": PROMPT}, {"configurable": {"thread_id": "i"}}, context=context)
    streamed_graph = build_graph(memory_checkpointer())
    events = list(
        streamed_graph.stream(
            {"prompt": PROMPT}, {"configurable": {"thread_id": "s"}}, context=context, stream_mode="custom"
        )
    )
    streamed = streamed_graph.get_state({"configurable": {"thread_id": "s"}}).values

    def clean(values: dict) -> dict:
        data = json.loads(SuperPrompt.model_validate(values).model_dump_json())
        data["extras"]["retrieval"].pop("timings_ms")
        data["run_metadata"].pop("trace_id")  # the thread: "i" and "s"
        return data

    assert clean(invoked) == clean(streamed)
    stage_events = [(e["event"], e["stage"]) for e in events if e["event"].startswith("stage_")]
    expected = [(kind, stage.node) for stage in ORDER[1:] for kind in ("stage_start", "stage_finish")]
    assert stage_events == expected
    finish = {e["stage"]: e for e in events if e["event"] == "stage_finish"}
    figures = finish["retrieval"]["retrieval"]
    assert {k: figures[k] for k in ("strategy", "rung")} == {"strategy": "HYBRID", "rung": "hybrid"}
    assert 0.0 <= figures["confidence"] <= 1.0 and figures["attempts"] >= 1
    assert finish["a4"]["counts"]["candidates"] > 0 and finish["build"]["prompt_tokens"] > 0
    assert all(e["duration_ms"] >= 0 for e in finish.values())


def test_trace_has_tokens_and_cost_and_no_secret(indexed: Settings, tmp_path: Path, monkeypatch, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeOpenAIServer() as server:
        server.responder = schema_responder
        settings = load_settings(
            overrides={
                "data_dir": str(indexed.data_dir),
                "llm.provider": "openai",
                "llm.base_url": server.url,
                "llm.timeout_s": 5,
                "llm.max_retries": 0,
                "preprocessing.use_agent00": True,
            }
        )
        db = tmp_path / "ck.sqlite"
        ctl = AppController(settings, checkpointer=sqlite_checkpointer(db), services=Services(settings))
        ctl.select_project("demo")
        ctl.run_full_pipeline(PROMPT + "\n# Misc notes\nsomething", pause_after="none")
        assert server.requests, "the LLM stages called the server"
        events = ctl.trace()
    calls = [e for e in events if e["event"] == "llm_call"]
    assert calls and all(e["provider"] == "openai" and e["model"] == "gpt-4.1-mini" for e in calls)
    total = ctl.sp.run_metadata.total  # the run's metadata record spent what the trace says
    assert (total.calls, total.tokens_in, total.tokens_out) == (len(calls), 11 * len(calls), 7 * len(calls))
    assert total.cost_usd == pytest.approx(sum(e["cost_usd"] for e in calls))
    assert all(e["tokens_in"] == 11 and e["tokens_out"] == 7 for e in calls)
    assert all(e["cost_usd"] == pytest.approx(11 * 0.40 / 1e6 + 7 * 1.60 / 1e6) for e in calls)
    summary = summarize(events)
    assert summary["llm"]["calls"] == len(calls) and list(summary["stages"]) == [s.node for s in ORDER[1:]]

    trace_text = ctl.traces.path(ctl.thread_id).read_text()
    state_text = ctl.sp.model_dump_json()
    rows = sqlite3.connect(db).execute("select checkpoint from checkpoints").fetchall()
    blob = b"".join(r[0] for r in rows)
    writes = b"".join(r[0] for r in sqlite3.connect(db).execute("select value from writes").fetchall())
    for haystack in (trace_text, state_text, caplog.text):
        assert FAKE_KEY not in haystack
    assert FAKE_KEY.encode() not in blob and FAKE_KEY.encode() not in writes
    assert server.headers[0]["authorization"] == f"Bearer {FAKE_KEY}"  # it was used, just never stored


def test_failures_are_in_the_trace(indexed: Settings) -> None:
    ctl = AppController(indexed, checkpointer=memory_checkpointer(), services=Services(indexed))
    with pytest.raises(StageOrderError):
        ctl.run_a4()
    assert ctl.trace()[-1]["event"] == "call_error"
    assert "cannot run now" in ctl.trace()[-1]["message"]


def test_trace_survives_a_torn_last_line(indexed: Settings) -> None:
    ctl = AppController(indexed, checkpointer=memory_checkpointer(), services=Services(indexed))
    ctl.select_project("demo")
    ctl.preprocess(PROMPT)
    with open(ctl.traces.path(ctl.thread_id), "a", encoding="utf-8") as handle:
        handle.write('{"event": "stage_start", "sta')  # a crash mid-write
    assert [e["event"] for e in ctl.trace()] == ["stage_start", "stage_finish"]


def test_graph_nodes_are_the_registry_the_strict_question_the_review_then_the_answer_loop() -> None:
    assert [n for n in build_graph().get_graph().nodes if not n.startswith("__")] == [
        *NAMES,
        "decide_headers",
        *(review_name(stage) for stage in ORDER[1:]),
        "answer",
        "critic",
    ]


def test_otel_spans_per_stage_and_secret_patterns(indexed: Settings) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragstream.telemetry.otel import OtelSpans

    exporter = InMemorySpanExporter()
    ctl = AppController(indexed, checkpointer=memory_checkpointer(), services=Services(indexed))
    ctl.spans = OtelSpans(exporter)
    ctl.select_project("demo")
    ctl.run_full_pipeline(PROMPT + "\n# Context\npassword: hunter2-very-secret", pause_after="none")
    ctl.spans.flush()
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "ragstream.run_full_pipeline")
    stages = [s for s in spans if s.name.startswith("stage.")]
    assert [s.name for s in stages] == [f"stage.{s.node}" for s in ORDER[1:]]
    assert all(s.parent.span_id == root.context.span_id for s in stages)  # one trace: the run, then its stages
    a2 = next(s for s in stages if s.name == "stage.a2")
    steps = [s for s in spans if s.name.startswith("offline.")]  # the local provider: no "llm." spans
    assert (
        steps
        and any(s.parent.span_id == a2.context.span_id for s in steps)
        and not any(s.name.startswith("llm.") for s in spans)
    )
    retrieval = next(s for s in stages if s.name == "stage.retrieval")
    assert retrieval.attributes["ragstream.retrieval.strategy"] == "HYBRID"
    ctl.traces.append(ctl.thread_id, [{"event": "note", "message": "password: hunter2-very-secret"}])
    assert "hunter2" not in ctl.traces.path(ctl.thread_id).read_text()

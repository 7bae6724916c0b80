"""Token counts say what they are: the tokenizer, exact or estimate, per section and excerpt; offline is no LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.app.cli import main
from ragstream.app.controller import AppController
from ragstream.orchestration.token_report import token_breakdown
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.telemetry.trace import summarize
from ragstream.tokens.budget import ContextBudget
from tests.openai_server import FakeOpenAIServer, schema_responder
from tests.servers import link_indexed_project

PROMPT = "# Task\nHow are changed documents re-embedded during ingestion?"


def test_an_estimate_is_called_an_estimate_and_names_its_tokenizer(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-encodings-here"))
    from ragstream.tokens import budget as budget_module

    budget_module._tiktoken_count.cache_clear()
    try:
        openai_model = ContextBudget(settings)
        assert not openai_model.exact and openai_model.tokenizer == "MiniLM WordPiece x1"
        assert openai_model.label == (
            "estimate (MiniLM WordPiece x1): gpt-4.1-mini's encoding o200k_base is not on "
            "this machine (tiktoken would download it)"
        )
        other = ContextBudget(
            settings.model_copy(update={"send": settings.send.model_copy(update={"model": "llama3.1:8b"})})
        )
        assert not other.exact and "llama3.1:8b is not a model whose tokenizer is on this machine" in other.label
    finally:
        budget_module._tiktoken_count.cache_clear()


def test_breakdown_per_section_and_excerpt_in_run_and_trace(
    indexed: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    ctl = AppController(indexed, services=Services(indexed))
    sp = ctl.run_full_pipeline(PROMPT, project="demo", pause_after="none")
    report = ctl.token_breakdown(sp)
    assert [s["section"] for s in report["sections"]] == ["system", "ask", "condensed context", "excerpts"]
    assert [e["chunk"] for e in report["excerpts"]] == sp.extras.build.budget.kept
    budget = ctl.services.budget
    assert report["total"] == budget.count(sp.prompt_ready) and report["label"] == budget.label
    assert abs(sum(s["tokens"] for s in report["sections"]) - report["total"]) <= 0.05 * report["total"]
    assert all(e["tokens"] > 0 for e in report["excerpts"])

    events = ctl.trace()
    traced = [e for e in events if e["event"] == "prompt_tokens"]
    assert traced and traced[-1]["total"] == report["total"] and traced[-1]["excerpts"] == report["excerpts"]
    summary = summarize(events)
    assert summary["llm"]["calls"] == 0 and summary["offline_steps"] > 0  # the local provider is no LLM
    assert not any(e["event"] == "llm_call" for e in events) and sp.run_metadata.total.calls == 0

    assert main(["--data-dir", str(indexed.data_dir), "run", PROMPT, "--project", "demo", "--tokens"]) == 0
    err = capsys.readouterr().err
    assert f"({budget.label})" in err and "condensed context" in err and sp.extras.build.budget.kept[0] in err
    thread = next(line.split()[1].rstrip(":") for line in err.splitlines() if line.startswith("thread "))
    assert main(["--data-dir", str(indexed.data_dir), "trace", "--thread", thread]) == 0
    out = capsys.readouterr().out
    assert "LLM: none (offline:" in out and "~$" not in out and f"({budget.label})" in out


def test_a_server_that_tokenizes_gives_the_exact_count(indexed: Settings, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.responder = schema_responder
        server.tokenize = True
        online = load_settings(
            overrides={
                "data_dir": str(tmp_path / "data"),
                "llm.provider": "openai",
                "llm.base_url": server.url,
                "llm.api_key": "sk-test-local-server-0000",
                "send.model": "my-local-model",
            }
        )
        link_indexed_project(online, indexed)
        ctl = AppController(online)
        sp = ctl.run_full_pipeline(PROMPT, project="demo", pause_after="none")
        report = token_breakdown(sp, ctl.services.budget, online)
        assert report["server"] == {
            "total": len(sp.prompt_ready.split()),
            "exact": True,
            "label": "exact for my-local-model (the server's /tokenize)",
        }
        assert not report["exact"]  # the local count is an estimate for a model tiktoken does not know
        server.tokenize = False
        assert "server" not in token_breakdown(sp, ctl.services.budget, online)
        assert summarize(ctl.trace())["llm"]["calls"] > 0

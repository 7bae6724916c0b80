"""How the schema reaches the server (probed once per endpoint and cached), pricing by the model the
server reports, and a connection error that names the URL: the `openai` provider on a real HTTP server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragstream.errors import LLMCallError
from ragstream.llm.client import LLMClient
from ragstream.llm.factory import AgentFactory
from ragstream.llm.runner import AgentRunner
from ragstream.settings import Settings, load_settings
from ragstream.telemetry.cost import cost_estimate
from tests.openai_server import FakeOpenAIServer, Reply, completion
from tests.servers import free_port

PAYLOAD = {"task": "Write a CSV parser in Python", "purpose": "", "context": ""}
LABELS = {
    "system": "Python_Programmer",
    "audience": "unknown",
    "tone": "unknown",
    "response_depth": "unknown",
    "confidence": "high",
    "reasons": {"system": "Python", "audience": "", "tone": "", "response_depth": "", "confidence": ""},
}


def _settings(tmp_path: Path, url: str, mode: str = "auto") -> Settings:
    return load_settings(
        overrides={
            "data_dir": str(tmp_path / "data"),
            "llm.provider": "openai",
            "llm.base_url": url,
            "llm.api_key": "sk-test-0000",
            "llm.structured_output": mode,
            "llm.timeout_s": 2.0,
            "llm.max_retries": 0,
        }
    )


def _run(settings: Settings):
    runner = AgentRunner(AgentFactory(settings.agents_dir), LLMClient.from_settings(settings))
    return runner.run("A2", PAYLOAD)


def _refuse(kinds: set[str]):
    def fault(request: dict[str, Any]) -> Reply | None:
        kind = request.get("response_format", {}).get("type")
        return Reply(status=400, content=None) if kind in kinds else None

    return fault


def test_a_server_refusing_json_schema_is_probed_once_and_used_in_json_object_mode(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.fault = _refuse({"json_schema"})
        server.responder = lambda r: (
            '{"ok": true}' if r["messages"][0]["content"].startswith("Reply with this") else json.dumps(LABELS)
        )
        settings = _settings(tmp_path, server.url)
        assert _run(settings).output["system"] == "Python_Programmer"
        kinds = [r.get("response_format", {}).get("type") for r in server.requests]
        assert kinds == ["json_schema", "json_object", "json_object"]  # probe, probe, the agent's call
        agent_call = server.requests[-1]
        assert (
            "valid against this JSON schema" in agent_call["messages"][-1]["content"]
        )  # the schema travels in the prompt
        cached = json.loads((settings.cache_dir / "structured_output.json").read_text())
        assert cached == {f"{server.url}|gpt-4.1-mini": "json_object"}
        server.requests.clear()
        _run(_settings(tmp_path, server.url))  # a new client, the same data root: no probe again
        assert [r.get("response_format", {}).get("type") for r in server.requests] == ["json_object"]


def test_a_server_that_takes_no_response_format_gets_the_schema_in_the_prompt_and_is_validated(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.fault = _refuse({"json_schema", "json_object"})
        server.responder = lambda r: "Sure! " + json.dumps({**LABELS, "system": "python programmer"})
        call = _run(_settings(tmp_path, server.url))
        assert [r.get("response_format", {}).get("type") for r in server.requests] == [
            "json_schema",
            "json_object",
            None,
        ]
        assert "response_format" not in server.requests[-1]
        assert call.output["system"] == "Python_Programmer" and call.outcome == "repaired"
        assert "system: 'python programmer' read as 'Python_Programmer'" in call.notes


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "prompt"])
def test_a_configured_mode_is_used_without_probing(tmp_path: Path, mode: str) -> None:
    with FakeOpenAIServer() as server:
        server.responder = lambda r: json.dumps(LABELS)
        _run(_settings(tmp_path, server.url, mode))
        assert len(server.requests) == 1
        assert server.requests[0].get("response_format", {}).get("type") == (None if mode == "prompt" else mode)
        assert ("valid against this JSON schema" in server.requests[0]["messages"][-1]["content"]) is (
            mode != "json_schema"
        )


def test_the_cost_is_priced_by_the_model_the_server_reports(tmp_path: Path) -> None:
    prices = load_settings().llm.prices
    assert cost_estimate(prices, "gpt-4.1-mini-2025-04-14", 1_000_000, 0) == pytest.approx(0.40)
    assert cost_estimate(prices, "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 1000, 1000) is None
    with FakeOpenAIServer() as server:
        body = completion("/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", json.dumps(LABELS))
        server.push(Reply(raw_body=json.dumps(body)))
        settings = _settings(tmp_path, server.url, "json_schema")
        events: list[dict[str, Any]] = []
        from unittest.mock import patch

        with patch("ragstream.llm.client.emit", events.append):
            reply = LLMClient.from_settings(settings).call("gpt-4.1-mini", [{"role": "user", "content": "hi"}])
        assert reply.model.endswith(".gguf")
        (event,) = [e for e in events if e["event"] == "llm_call"]
        assert (event["cost_usd"], event["priced"], event["requested_model"]) == (0.0, False, "gpt-4.1-mini")


def test_a_server_that_is_down_is_one_typed_error_naming_the_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMCallError, match=f"cannot connect to {url}"):
        _run(_settings(tmp_path, url, "json_schema"))

"""The `openai` provider against a real HTTP server on 127.0.0.1 speaking the chat-completions protocol."""

from __future__ import annotations

import json
import logging
import time

import pytest

from ragstream.errors import AgentPromptValidationError, LLMCallError, LLMTimeoutError
from ragstream.llm.client import LLMClient
from ragstream.llm.factory import AgentFactory
from ragstream.settings import Settings
from tests.conftest import FAKE_KEY
from tests.openai_server import FakeOpenAIServer, Reply

PAYLOAD = {"task": "Write a CSV parser in Python", "purpose": "", "context": ""}
LABELS = {
    "system": "Python_Programmer",
    "audience": "Developer",
    "tone": "direct",
    "response_depth": "short",
    "confidence": "high",
}
VALID = {**LABELS, "reasons": {k: "because" for k in LABELS}}


def _call(settings: Settings, model: str | None = None):
    prompt = AgentFactory(settings.agents_dir).create("A2", "v1", PAYLOAD)
    messages, response_format = prompt.compose(PAYLOAD)
    client = LLMClient.from_settings(settings)
    reply = client.call(
        model or prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens
    )
    return prompt, reply


def test_success_request_carries_schema_model_and_key(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.push(Reply(content=json.dumps(VALID)))
    prompt, reply = _call(openai_settings)
    assert prompt.parse_and_validate(reply) == VALID
    assert (reply.provider, reply.attempts) == ("openai", 1)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (11, 7)
    request = openai_server.requests[0]
    assert request["model"] == "gpt-4.1-mini"
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema"
    assert schema["properties"]["tone"]["enum"] == ["direct", "friendly", "formal", "unknown"]
    assert "x-value-descriptions" not in json.dumps(request) and "x-cues" not in json.dumps(
        request
    )  # offline hints never sent
    assert request["messages"][1]["content"].startswith("Input:")
    assert openai_server.headers[0]["authorization"] == f"Bearer {FAKE_KEY}"


def test_fine_tuned_model_id_is_passed_through(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Reply(content=json.dumps(VALID)))
    model = "ft:gpt-4.1-mini-2025-04-14:personal:a2-promptshaper-v1:XXXX"
    _call(openai_settings, model)
    assert openai_server.requests[0]["model"] == model


def test_429_then_success_honours_retry_after(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Reply(status=429, headers={"retry-after": "0.15"}), Reply(content=json.dumps(VALID)))
    started = time.monotonic()
    prompt, reply = _call(openai_settings)
    assert time.monotonic() - started >= 0.15
    assert reply.attempts == 2 and len(openai_server.requests) == 2
    assert prompt.parse_and_validate(reply) == VALID


def test_repeated_500_gives_clear_error_after_configured_retries(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.push(*[Reply(status=500)] * 5)
    with pytest.raises(LLMCallError) as info:
        _call(openai_settings)
    assert len(openai_server.requests) == 3  # 1 + max_retries(2)
    assert info.value.status == 500 and info.value.attempts == 3
    assert "HTTP 500" in str(info.value) and "gave up after 3 attempts" in str(info.value)


def test_client_errors_are_not_retried(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(
        Reply(status=401, raw_body=json.dumps({"error": {"message": f"Incorrect API key provided: {FAKE_KEY}"}}))
    )
    with pytest.raises(LLMCallError) as info:
        _call(openai_settings)
    assert len(openai_server.requests) == 1
    assert info.value.status == 401
    assert FAKE_KEY not in str(info.value)


def test_timeout_is_a_typed_error(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(*[Reply(content=json.dumps(VALID), delay_s=2.5)] * 3)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match=r"no answer within 1s, then 2s \(2 attempts\)"):
        _call(openai_settings)
    # not sent a third time at the same deadline, though max_retries (2) would allow it
    assert len(openai_server.requests) == 2
    assert time.monotonic() - started < 1 + 2 + 2  # bounded by the deadlines, no hang


def test_a_timed_out_call_is_sent_again_with_twice_the_deadline(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.push(*[Reply(content=json.dumps(VALID), delay_s=1.4)] * 2)
    _, reply = _call(openai_settings)
    assert reply.attempts == 2 and len(openai_server.requests) == 2  # 1 s timed out; 2 s was enough


def test_the_first_call_to_an_endpoint_gets_the_first_call_deadline(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    """A local server's first call loads the model: it has `first_call_timeout_s`, later calls `timeout_s`."""
    settings = openai_settings.model_copy(
        update={"llm": openai_settings.llm.model_copy(update={"first_call_timeout_s": 3.0, "timeout_retries": 0})}
    )
    openai_server.push(*[Reply(content=json.dumps(VALID), delay_s=1.4)] * 2)
    _, first = _call(settings)
    assert first.attempts == 1  # 1.4 s is within the first call's 3 s
    with pytest.raises(LLMTimeoutError, match=r"no answer within 1s \(1 attempt\)"):
        _call(settings)  # the endpoint has answered: 1 s now, and no retry with timeout_retries 0
    assert len(openai_server.requests) == 2


def test_malformed_json_reply(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Reply(content='{"system": "Python_Programmer", "audience": '))
    prompt, reply = _call(openai_settings)
    with pytest.raises(AgentPromptValidationError, match="no JSON object"):
        prompt.parse_and_validate(reply)


def test_schema_violating_json_reply(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Reply(content=json.dumps({**VALID, "audience": "Aliens"})))
    prompt, reply = _call(openai_settings)
    with pytest.raises(AgentPromptValidationError, match="field 'audience'"):
        prompt.parse_and_validate(reply)


def test_non_json_http_body_is_retried_then_typed(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(*[Reply(status=502, raw_body="<html>bad gateway</html>")] * 3)
    with pytest.raises(LLMCallError, match="HTTP 502"):
        _call(openai_settings)


def test_key_never_in_logs(
    openai_settings: Settings, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    openai_server.push(Reply(status=500), Reply(content=json.dumps(VALID)))
    _call(openai_settings)
    assert caplog.records, "the client logs its calls"
    assert FAKE_KEY not in caplog.text


def test_base_url_without_key_selects_openai_provider(tmp_path, openai_server: FakeOpenAIServer, monkeypatch) -> None:
    from ragstream.settings import load_settings

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = load_settings(overrides={"data_dir": str(tmp_path), "llm.base_url": openai_server.url})
    assert settings.llm.resolved_provider == "openai"
    openai_server.push(Reply(content=json.dumps(VALID)))
    _, reply = _call(settings)
    assert reply.provider == "openai"

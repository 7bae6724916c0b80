"""AgentPrompt: neutral composition per mode, and validation of fake LLM outputs."""

from __future__ import annotations

import json

import pytest

from ragstream.errors import AgentPromptValidationError
from ragstream.llm.agent_prompt import AgentPrompt, parse_payload_block
from ragstream.llm.factory import AgentFactory

PAYLOAD = {"task": "Write a CSV parser", "purpose": "tooling", "context": 'line one\nwith "quotes"'}


@pytest.fixture(scope="module")
def a2() -> AgentPrompt:
    return AgentFactory().create("A2", "v1", PAYLOAD)


def _writer(mode: str) -> AgentPrompt:
    return AgentPrompt(
        agent_name="W",
        version="v1",
        mode=mode,
        system_text="sys",
        purpose_text="purpose",
        output_schema={
            "type": "object",
            "required": ["summary"],
            "properties": {"summary": {"type": "string", "description": "two sentences"}, "n": {"type": "integer"}},
        },
        enums={},
        defaults={},
        model_name="m",
        temperature=0.0,
        max_output_tokens=100,
    )


def test_chooser_compose(a2: AgentPrompt) -> None:
    messages, response_format = a2.compose(PAYLOAD)
    system, user = messages[0]["content"], messages[1]["content"]
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert "A2 v1 (Chooser)" in system and a2.purpose_text in system
    assert 'task = "Write a CSV parser"' in user
    assert "Choose tone from [direct, friendly, formal, unknown]." in user
    assert "  - formal: " in user
    assert user.rstrip().endswith("Reply with a single JSON object only, no extra text, matching the schema.")
    assert parse_payload_block(user) == PAYLOAD
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"]["properties"]["tone"]["enum"] == [
        "direct",
        "friendly",
        "formal",
        "unknown",
    ]
    assert a2.compose(PAYLOAD) == (messages, response_format)  # deterministic


@pytest.mark.parametrize(
    ("mode", "phrase"), [("Writer", "Fill summary: two sentences"), ("Extractor", "Extract from the input summary")]
)
def test_writer_and_extractor_compose(mode: str, phrase: str) -> None:
    messages, response_format = _writer(mode).compose({"text": "abc"})
    assert phrase in messages[1]["content"]
    assert response_format["json_schema"]["strict"] is False  # not every property required


LABELS = {
    "system": "Python_Programmer",
    "audience": "Developer",
    "tone": "direct",
    "response_depth": "short",
    "confidence": "high",
}
VALID = {**LABELS, "reasons": {k: "because" for k in LABELS}}


def test_valid_output(a2: AgentPrompt) -> None:
    assert a2.parse_and_validate(json.dumps(VALID)) == VALID


def test_extra_text_and_fences_around_json(a2: AgentPrompt) -> None:
    wrapped = f"Sure! Here it is:\n```json\n{json.dumps(VALID)}\n```\nAnything else?"
    assert a2.parse_and_validate(wrapped) == VALID


def test_missing_field_filled_from_defaults() -> None:
    a5 = AgentFactory().create("A5", "v1", {"format": "a table", "depth": "", "audience": "", "tone": ""})
    assert a5.parse_and_validate(json.dumps({"kind": "table"})) == {"kind": "table", "sections": [], "reason": ""}


def test_missing_field_without_default_is_an_error(a2: AgentPrompt) -> None:
    partial = {k: v for k, v in VALID.items() if k != "system"}
    with pytest.raises(AgentPromptValidationError, match="'system' is a required property"):
        a2.parse_and_validate(json.dumps(partial))


def test_wrong_enum(a2: AgentPrompt) -> None:
    with pytest.raises(AgentPromptValidationError, match="field 'tone'.*'shouty'"):
        a2.parse_and_validate(json.dumps({**VALID, "tone": "shouty"}))


def test_wrong_type(a2: AgentPrompt) -> None:
    with pytest.raises(AgentPromptValidationError, match="field 'confidence'"):
        a2.parse_and_validate(json.dumps({**VALID, "confidence": 0.9}))


def test_extra_field_in_closed_schema(a2: AgentPrompt) -> None:
    with pytest.raises(AgentPromptValidationError, match="Additional properties"):
        a2.parse_and_validate(json.dumps({**VALID, "mood": "x"}))


def test_extra_field_in_open_schema_is_dropped() -> None:
    assert _writer("Writer").parse_and_validate('{"summary": "s", "junk": 1}') == {"summary": "s"}


@pytest.mark.parametrize("raw", ["", "no json here", "{truncated", "[1, 2]"])
def test_no_json_object(raw: str, a2: AgentPrompt) -> None:
    with pytest.raises(AgentPromptValidationError, match="no JSON object"):
        a2.parse_and_validate(raw)


def test_non_text_output(a2: AgentPrompt) -> None:
    with pytest.raises(AgentPromptValidationError, match="expected text"):
        a2.parse_and_validate(42)

"""The offline `local` provider: schema-valid and byte-identical for every shipped agent config."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ragstream.llm.client import LLMClient
from ragstream.llm.factory import AgentFactory
from ragstream.settings import Settings

SAMPLE_TEXT = (
    "Write a Python function that parses CSV files with quoted fields. "
    "It must run offline. Our team maintains a data pipeline in Python. "
    "The result goes into the onboarding guide for new developers."
)


def _payload_for(keys: list[str] | None) -> dict[str, Any]:
    return {key: SAMPLE_TEXT for key in keys or ["input"]}


def _run_all(settings: Settings) -> dict[str, str]:
    factory = AgentFactory(settings.agents_dir)
    client = LLMClient.from_settings(settings)
    out: dict[str, str] = {}
    for name, version in factory.list_agents():
        cfg = factory.load_config(name, version)
        payload = _payload_for(cfg.input_keys)
        prompt = factory.create(name, version, payload)
        messages, response_format = prompt.compose(payload)
        reply = client.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)
        Draft202012Validator(cfg.output_schema).validate(json.loads(reply.text))
        prompt.parse_and_validate(reply)
        out[f"{name}/{version}"] = reply.text
    return out


@pytest.mark.slow  # starts a second process
def test_local_output_valid_for_every_agent_and_identical_across_processes(base_settings: Settings) -> None:
    first = _run_all(base_settings)
    assert first == _run_all(base_settings)
    script = (
        "import json\n"
        "from ragstream.settings import load_settings\n"
        "from tests.test_local_provider import _run_all\n"
        "print(json.dumps(_run_all(load_settings(overrides={'llm.provider': 'local'}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == first


@pytest.mark.parametrize(
    ("task", "audience"),
    [
        ("Summarize the outage for managers and stakeholders.", "Manager"),
        ("Explain closures to students who are new to JavaScript.", "Student"),
        ("Explain for a non-technical audience what an application context is.", "Non-technical"),
        ("Summarize the outage for non-technical stakeholders.", "Manager"),
        ("Which settings help non-technical users of our admin page?", "unknown"),
    ],
)
def test_chooser_follows_the_input(task: str, audience: str, base_settings: Settings) -> None:
    payload = {"task": task, "purpose": "", "context": ""}
    prompt = AgentFactory(base_settings.agents_dir).create("A2", "v1", payload)
    messages, response_format = prompt.compose(payload)
    reply = LLMClient.from_settings(base_settings).call(prompt.model_name, messages, response_format)
    assert prompt.parse_and_validate(reply)["audience"] == audience


def test_writer_fields_are_extractive(base_settings: Settings) -> None:
    schema = {
        "type": "object",
        "properties": {
            "constraints": {"type": "array", "items": {"type": "string"}, "description": "requirements that must hold"},
            "summary": {"type": "string"},
            "count": {"type": "integer", "minimum": 1},
            "done": {"type": "boolean"},
        },
    }
    messages = [{"role": "user", "content": f"Input:\n<<<INPUT\ntext = {json.dumps(SAMPLE_TEXT)}\nINPUT>>>"}]
    reply = LLMClient.from_settings(base_settings).call(
        "m", messages, {"type": "json_schema", "json_schema": {"name": "w", "schema": schema}}
    )
    data = json.loads(reply.text)
    Draft202012Validator(schema).validate(data)
    assert data["constraints"] and all(sentence in SAMPLE_TEXT for sentence in data["constraints"])
    assert data["count"] == 1 and data["done"] is False

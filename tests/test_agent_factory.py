"""AgentFactory: every validation rule names the file and the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ragstream.errors import AgentConfigError, AgentInputError, ConfigError, UnknownAgentConfigError
from ragstream.llm.factory import AgentFactory
from ragstream.settings import default_config_dir

BASE = json.loads((default_config_dir() / "agents" / "A2" / "v1.json").read_text())


def _factory_with(tmp_path: Path, config: dict[str, Any] | str, name: str = "A2", version: str = "v1") -> AgentFactory:
    folder = tmp_path / "agents" / name
    folder.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / f"{version}.json").write_text(text)
    return AgentFactory(tmp_path / "agents")


def _mutated(change) -> dict[str, Any]:
    cfg = copy.deepcopy(BASE)
    change(cfg)
    return cfg


PAYLOAD = {"task": "t", "purpose": "p", "context": "c"}


def test_shipped_configs_are_valid() -> None:
    factory = AgentFactory()
    pairs = factory.list_agents()
    assert ("A2", "v1") in pairs and ("A00", "v1") in pairs
    for name, version in pairs:
        assert factory.load_config(name, version).agent_name == name


def test_create_returns_configured_prompt(tmp_path: Path) -> None:
    prompt = _factory_with(tmp_path, BASE).create("A2", "v1", PAYLOAD)
    assert (prompt.agent_name, prompt.version, prompt.mode) == ("A2", "v1", "Chooser")
    assert prompt.enums["tone"] == ["direct", "friendly", "formal", "unknown"]
    assert prompt.defaults == {}
    assert prompt.model_name == "gpt-4.1-mini"


def test_unknown_agent_or_version(tmp_path: Path) -> None:
    factory = _factory_with(tmp_path, BASE)
    with pytest.raises(UnknownAgentConfigError, match="A9"):
        factory.create("A9", "v1", PAYLOAD)
    with pytest.raises(UnknownAgentConfigError, match="v7.json does not exist"):
        factory.create("A2", "v7", PAYLOAD)


@pytest.mark.parametrize("name", ["../A2", "A2/../../x", "/etc/passwd", "..", ""])
def test_path_tricks_in_agent_names_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(UnknownAgentConfigError, match="invalid agent name"):
        _factory_with(tmp_path, BASE).create(name, "v1", PAYLOAD)


def test_invalid_json_names_file_and_position(tmp_path: Path) -> None:
    with pytest.raises(AgentConfigError, match=r"v1\.json: invalid JSON at line 1"):
        _factory_with(tmp_path, "{not json").create("A2", "v1", PAYLOAD)


@pytest.mark.parametrize(
    "key", ["agent_name", "version", "mode", "system_text", "purpose_text", "output_schema", "model_name"]
)
def test_each_required_key(key: str, tmp_path: Path) -> None:
    cfg = _mutated(lambda c: c.pop(key))
    with pytest.raises(AgentConfigError, match=rf"v1\.json: field '{key}': is required"):
        _factory_with(tmp_path, cfg).create("A2", "v1", PAYLOAD)


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (lambda c: c.update(agent_name="A3"), "agent_name", "file is for 'A2'"),
        (lambda c: c.update(version="v2"), "version", "file is for 'v1'"),
        (lambda c: c.update(mode="Poet"), "mode", "Chooser"),
        (lambda c: c.update(temperature="hot"), "temperature", "number"),
        (lambda c: c.update(unexpected=1), "unexpected", "Extra inputs"),
        (lambda c: c["enums"].update(tone=["direct", "formal"]), "enums.tone", "differs from output_schema enum"),
        (lambda c: c["enums"].pop("tone"), "output_schema.properties.tone.enum", "missing from 'enums'"),
        (lambda c: c["enums"].update(mood=["x"]), "enums.mood", "no matching property"),
        (lambda c: c["defaults"].update(tone="shouty"), "defaults.tone", "not valid"),
        (lambda c: c["defaults"].update(color="red"), "defaults.color", "no matching property"),
        (lambda c: c["value_descriptions"]["tone"].update(shouty="loud"), "value_descriptions.tone", "not in enums"),
        (lambda c: c["output_schema"].update(type="array"), "output_schema", "object schema"),
        (lambda c: c["output_schema"]["properties"]["tone"].update(type="strung"), "output_schema/", ""),
        (lambda c: c["output_schema"]["required"].append("ghost"), "output_schema.required.ghost", "no property"),
    ],
)
def test_config_consistency_errors_name_file_and_field(change, field: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(AgentConfigError) as info:
        _factory_with(tmp_path, _mutated(change)).create("A2", "v1", PAYLOAD)
    message = str(info.value)
    assert "v1.json" in message and field in message and problem in message
    assert isinstance(info.value, ConfigError)


def test_chooser_without_enums_is_rejected(tmp_path: Path) -> None:
    cfg = _mutated(lambda c: c.update(enums={}, value_descriptions={}))
    for prop in cfg["output_schema"]["properties"].values():
        prop.pop("enum", None)
    with pytest.raises(AgentConfigError, match="Chooser agent needs"):
        _factory_with(tmp_path, cfg).create("A2", "v1", PAYLOAD)


def test_input_payload_checks(tmp_path: Path) -> None:
    factory = _factory_with(tmp_path, BASE)
    with pytest.raises(AgentInputError, match="must be a dict"):
        factory.create("A2", "v1", ["task"])  # type: ignore[arg-type]
    with pytest.raises(AgentInputError, match=r"missing keys \['context'\]"):
        factory.create("A2", "v1", {"task": "t", "purpose": "p"})


def test_new_version_needs_only_a_new_file(tmp_path: Path) -> None:
    v2 = _mutated(lambda c: c.update(version="v2", model_name="ft:gpt-4.1-mini-2025-04-14:personal:a2:XYZ"))
    factory = _factory_with(tmp_path, BASE)
    _factory_with(tmp_path, v2, version="v2")
    assert factory.create("A2", "v2", PAYLOAD).model_name.startswith("ft:")
    assert factory.create("A2", "v1", PAYLOAD).model_name == "gpt-4.1-mini"


def test_an_edited_config_is_validated_again(tmp_path: Path) -> None:
    """Validated configs are remembered (each agent call loads one), but by the file's text: an edit that
    breaks the file fails at once, and the repaired file loads with its new values."""
    factory = _factory_with(tmp_path, BASE)
    assert factory.load_config("A2", "v1").temperature == BASE["temperature"]
    _factory_with(tmp_path, _mutated(lambda c: c["output_schema"].update(type="array")))
    with pytest.raises(AgentConfigError, match="output_schema"):
        factory.load_config("A2", "v1")
    with pytest.raises(AgentConfigError, match="output_schema"):  # a failure is never remembered as valid
        factory.create("A2", "v1", PAYLOAD)
    _factory_with(tmp_path, _mutated(lambda c: c.update(temperature=0.7)))
    assert factory.load_config("A2", "v1").temperature == 0.7

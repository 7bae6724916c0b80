"""AgentFactory: from (agent name, version) to a validated, configured AgentPrompt.

Knows nothing about any particular agent: a new agent or version is a new JSON file under
`config/agents/<agent>/<version>.json`. Every error names the file and the field.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from ragstream.errors import AgentConfigError, AgentInputError, UnknownAgentConfigError
from ragstream.llm.agent_prompt import AgentPrompt
from ragstream.settings import default_config_dir

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
REQUIRED_KEYS = ("agent_name", "version", "mode", "system_text", "purpose_text", "output_schema", "model_name")


class AgentConfig(BaseModel):
    """The agent config file, typed (Agent Stack spec §3.3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_name: str
    version: str
    mode: Literal["Chooser", "Writer", "Extractor"]
    system_text: str
    purpose_text: str
    output_schema: dict[str, Any]
    enums: dict[str, list[str]] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(default_factory=dict)
    value_descriptions: dict[str, dict[str, str]] = Field(default_factory=dict)
    # A key is a payload field's name: an empty or spaced name can never be given, so it is the file's mistake.
    input_keys: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] | None = None
    model_name: str
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_output_tokens: int = Field(default=256, gt=0)
    description: str = ""


def _fail(path: Path, field: str, problem: str) -> AgentConfigError:
    return AgentConfigError(f"{path}: field '{field}': {problem}")


def _check_schema_and_enums(path: Path, cfg: AgentConfig) -> None:
    schema = cfg.output_schema
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise _fail(path, f"output_schema/{where}", exc.message) from None
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise _fail(path, "output_schema", "must be an object schema with 'properties'")
    props: dict[str, Any] = schema["properties"]
    for name in schema.get("required", []):
        if name not in props:
            raise _fail(path, f"output_schema.required.{name}", "is required but has no property")
    for field, values in cfg.enums.items():
        prop = props.get(field)
        if prop is None:
            raise _fail(path, f"enums.{field}", "has no matching property in output_schema")
        if "enum" in prop and list(prop["enum"]) != list(values):
            raise _fail(path, f"enums.{field}", f"{values} differs from output_schema enum {prop['enum']}")
    for field, prop in props.items():
        if isinstance(prop, dict) and "enum" in prop and field not in cfg.enums:
            raise _fail(path, f"output_schema.properties.{field}.enum", "is missing from 'enums'")
    for field, value in cfg.defaults.items():
        if field not in props:
            raise _fail(path, f"defaults.{field}", "has no matching property in output_schema")
        errors = list(Draft202012Validator(props[field]).iter_errors(value))
        if errors:
            raise _fail(path, f"defaults.{field}", f"{value!r} is not valid: {errors[0].message}")
    for field, described in cfg.value_descriptions.items():
        allowed = cfg.enums.get(field, [])
        unknown = set(described) - set(allowed)
        if unknown:
            raise _fail(path, f"value_descriptions.{field}", f"describes values not in enums: {sorted(unknown)}")
    if cfg.mode == "Chooser" and not cfg.enums:
        raise _fail(path, "enums", "a Chooser agent needs at least one enum field")


@functools.lru_cache(maxsize=64)
def _validated(path: Path, text: str, agent_name: str, version: str) -> AgentConfig:
    """The config in `text`, validated. Checking the output schema costs tens of milliseconds and every
    agent call loads its config, so a validated config is remembered by the file's exact text: an edited
    file is validated again, and a file that fails is never remembered (the error is raised each time)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AgentConfigError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise _fail(path, "(top level)", "must be a JSON object")
    for key in REQUIRED_KEYS:
        if key not in data:
            raise _fail(path, key, "is required")
    try:
        cfg = AgentConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise _fail(path, ".".join(str(p) for p in err["loc"]), err["msg"]) from None
    if cfg.agent_name != agent_name:
        raise _fail(path, "agent_name", f"is '{cfg.agent_name}' but the file is for '{agent_name}'")
    if cfg.version != version:
        raise _fail(path, "version", f"is '{cfg.version}' but the file is for '{version}'")
    _check_schema_and_enums(path, cfg)
    return cfg


class AgentFactory:
    """Stateless: each call depends only on its arguments and the JSON file's contents."""

    def __init__(self, agents_dir: Path | None = None) -> None:
        self.agents_dir = Path(agents_dir) if agents_dir else default_config_dir() / "agents"

    def config_path(self, agent_name: str, version: str) -> Path:
        for label, value in (("agent name", agent_name), ("version", version)):
            if not isinstance(value, str) or not _NAME.match(value) or ".." in value:
                raise UnknownAgentConfigError(f"invalid {label} {value!r}: use letters, digits, '_', '-', '.'")
        return self.agents_dir / agent_name / f"{version}.json"

    def load_config(self, agent_name: str, version: str) -> AgentConfig:
        path = self.config_path(agent_name, version)
        if not path.is_file():
            raise UnknownAgentConfigError(
                f"no config for agent '{agent_name}' version '{version}': {path} does not exist"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AgentConfigError(f"{path}: cannot read: {exc}") from exc
        return _validated(path, text, agent_name, version)

    def create(self, agent_name: str, version: str, input_payload: dict[str, Any]) -> AgentPrompt:
        cfg = self.load_config(agent_name, version)
        if not isinstance(input_payload, dict):
            raise AgentInputError(
                f"agent {agent_name}/{version}: input_payload must be a dict, got {type(input_payload).__name__}"
            )
        missing = [k for k in cfg.input_keys or [] if k not in input_payload]
        if missing:
            raise AgentInputError(f"agent {agent_name}/{version}: input_payload is missing keys {missing}")
        # AgentPrompt holds exactly the config's prompt fields; the rest is for the factory and listings.
        return AgentPrompt(**cfg.model_dump(exclude={"input_keys", "description"}))

    def list_agents(self) -> list[tuple[str, str]]:
        """(agent, version) pairs present on disk, sorted."""
        if not self.agents_dir.is_dir():
            return []
        return sorted((p.parent.name, p.stem) for p in self.agents_dir.glob("*/*.json"))

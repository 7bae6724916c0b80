"""How an OpenAI-compatible endpoint takes an agent's output schema, and the schema as prompt text.

Servers differ: OpenAI and llama.cpp's `llama-server` enforce a `json_schema` response format (by
grammar on llama.cpp), some servers accept only `json_object` (any JSON), others reject or ignore
both. `llm.structured_output` names the mode; `auto` sends one tiny probe per endpoint and model
(json_schema, then json_object; the first the server accepts with a JSON reply wins, else `prompt`)
and caches the answer in `<data root>/cache/structured_output.json`. OpenAI itself (no base URL) is
json_schema without a probe. Outside json_schema the schema goes into the prompt; in every mode the
reply is validated (and repaired or re-asked) by the agent runner.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragstream.llm.agent_prompt import extract_json_object
from ragstream.storage.atomic import write_atomic

MODES = ("json_schema", "json_object", "prompt")
PROBE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["ok"],
    "properties": {"ok": {"type": "boolean"}},
}
PROBE_MESSAGES = [{"role": "user", "content": 'Reply with this JSON object and nothing else: {"ok": true}'}]
_LOCK = threading.Lock()
_KNOWN: dict[str, str] = {}


def probe_format(mode: str) -> dict[str, Any]:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "probe", "schema": PROBE_SCHEMA, "strict": True}}
    return {"type": "json_object"}


def response_format_for(mode: str, response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """What to send as `response_format` in this mode (None: send none)."""
    if not response_format or mode == "prompt":
        return None
    return response_format if mode == "json_schema" else {"type": "json_object"}


def with_schema_in_prompt(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """The messages with the schema appended to the last user message (for servers that do not enforce it)."""
    note = "\n\nThe reply must be one JSON object valid against this JSON schema:\n" + json.dumps(
        schema, ensure_ascii=False
    )
    last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if last is None:
        return [*messages, {"role": "user", "content": note.strip()}]
    return [*messages[:last], {**messages[last], "content": messages[last]["content"] + note}, *messages[last + 1 :]]


class ModeCache:
    """The probed mode per endpoint and model, in memory and in one JSON file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def _load(self) -> dict[str, str]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in data.items() if v in MODES} if isinstance(data, dict) else {}

    def get(self, key: str) -> str | None:
        with _LOCK:
            if key not in _KNOWN:
                _KNOWN.update(self._load())
            return _KNOWN.get(key)

    def put(self, key: str, mode: str) -> None:
        with _LOCK:
            _KNOWN[key] = mode
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self.path, json.dumps({**self._load(), key: mode}, indent=1, sort_keys=True))


def probe(send: Callable[[dict[str, Any]], str | None]) -> str:
    """The first mode the endpoint accepts and answers with JSON; `send` returns the reply text, or None when
    refused."""
    for mode in ("json_schema", "json_object"):
        text = send(probe_format(mode))
        if text is None:
            continue
        try:
            extract_json_object(text)
        except ValueError:
            continue
        return mode
    return "prompt"

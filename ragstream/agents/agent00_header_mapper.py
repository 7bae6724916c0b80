"""Agent 00: maps headers the alias table does not know, plugged into PreProcessing Task 2.

Only the header name goes to the LLM; a 300-character body snippet follows only for headers that
are still UNKNOWN after that. Accepted mappings are cached on disk and reused without a call.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from ragstream.agents.runner import AgentRunner
from ragstream.preprocessing import UnmappedHeader
from ragstream.preprocessing.schema import PromptSchema

AGENT = "A00"


class HeaderMappingCache:
    """normalized header -> accepted canon, persisted as JSON and replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def store(self, normalized: str, record: dict[str, Any]) -> None:
        with self._lock:
            data = self.load()
            data[normalized] = record
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)


class Agent00HeaderMapper:
    """A `HeaderMapper` backed by the A00 agent config and any llm_client provider."""

    def __init__(self, runner: AgentRunner, cache: HeaderMappingCache, version: str = "v1") -> None:
        self.runner = runner
        self.cache = cache
        self.version = version
        self.calls = 0

    def _ask(self, payload: dict[str, str]) -> str:
        self.calls += 1
        return str(self.runner.run(AGENT, payload, self.version).output["canon"])

    def map_headers(
        self, headers: list[UnmappedHeader], schema: PromptSchema, missing_must: list[str]
    ) -> dict[str, str | None]:
        cached = self.cache.load()
        result: dict[str, str | None] = {}
        for header in headers:
            hit = cached.get(header.normalized, {}).get("canon")
            if hit in schema.canon:
                result[header.normalized] = hit
                continue
            canon, via = self._ask({"header": header.name}), "name"
            if canon not in schema.canon and header.body_snippet.strip():
                canon, via = self._ask({"header": header.name, "body_snippet": header.body_snippet}), "snippet"
            if canon in schema.canon:
                self.cache.store(
                    header.normalized,
                    {"canon": canon, "via": via, "agent": f"{AGENT}/{self.version}", "provider": self.runner.provider_name},
                )
                result[header.normalized] = canon
            else:
                result[header.normalized] = None
        return result

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

from ragstream.llm.runner import AgentRunner
from ragstream.preprocessing import UnmappedHeader
from ragstream.preprocessing.schema import PromptSchema

AGENT = "A00"


PERSON = "person|"  # cache keys of a person's decisions (strict mode), which no model's mapping overrides


class HeaderMappingCache:
    """normalized header -> accepted canon, persisted as JSON and replaced atomically.

    A person's decisions in strict mode (a canonical name, `keep` or `drop`) live here too, under
    `person|<normalized header>`, so the same header is not asked again, whatever model is configured.
    """

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

    def decisions(self) -> dict[str, str]:
        """normalized header -> what a person decided for it."""
        return {
            key.removeprefix(PERSON): str(record.get("decision"))
            for key, record in self.load().items()
            if key.startswith(PERSON) and isinstance(record, dict)
        }

    def store_decision(self, normalized: str, decision: str) -> None:
        self.store(PERSON + normalized, {"decision": decision, "via": "person"})


class Agent00HeaderMapper:
    """A `HeaderMapper` backed by the A00 agent config and any llm_client provider.

    All headers are asked at once (by name, concurrently), then those still unknown once more with
    their snippet. Accepted mappings are cached per provider and model, so a mapping one model made
    (say, the offline heuristic) is never served when another model is configured.
    """

    def __init__(self, runner: AgentRunner, cache: HeaderMappingCache, version: str = "v1") -> None:
        self.runner = runner
        self.cache = cache
        self.version = version
        self.calls = 0

    def _key(self, normalized: str) -> str:
        model = self.runner.factory.load_config(AGENT, self.version).model_name
        return f"{self.runner.provider_name}/{model}|{normalized}"

    def _ask(self, payloads: list[dict[str, str]]) -> list[str]:
        self.calls += len(payloads)
        return [str(call.output["canon"]) for call in self.runner.run_many(AGENT, payloads, self.version)]

    def map_headers(
        self, headers: list[UnmappedHeader], schema: PromptSchema, missing_must: list[str]
    ) -> dict[str, str | None]:
        cached = self.cache.load()
        result: dict[str, str | None] = {}
        asked: list[UnmappedHeader] = []
        for header in headers:
            hit = cached.get(self._key(header.normalized), {}).get("canon")
            if hit in schema.canon:
                result[header.normalized] = hit
            else:
                asked.append(header)
        answers = {
            h.normalized: (canon, "name")
            for h, canon in zip(asked, self._ask([{"header": h.name} for h in asked]), strict=False)
        }
        again = [h for h in asked if answers[h.normalized][0] not in schema.canon and h.body_snippet.strip()]
        snippets = self._ask([{"header": h.name, "body_snippet": h.body_snippet} for h in again])
        answers.update({h.normalized: (canon, "snippet") for h, canon in zip(again, snippets, strict=False)})
        for header in asked:
            canon, via = answers[header.normalized]
            if canon in schema.canon:
                self.cache.store(
                    self._key(header.normalized),
                    {
                        "canon": canon,
                        "via": via,
                        "agent": f"{AGENT}/{self.version}",
                        "provider": self.runner.provider_name,
                    },
                )
                result[header.normalized] = canon
            else:
                result[header.normalized] = None
        return result

"""How the offline provider fills a response schema from an input payload, field by field.

- enum fields: the allowed value whose text (name plus optional `x-value-descriptions`) is most
  similar to the input under the MiniLM embedding; `x-fallback` is chosen instead when the best
  similarity is below `x-min-similarity`;
- string fields: copied from an input key of the same name, else the input sentences most similar
  to the field's name and description, in their original order (`x-source` limits the sentences to
  one input key);
- arrays of strings: those sentences one per item; numbers, booleans, objects: minimal valid values;
- fields with `x-cues`, `x-states` or `x-explains`: by the keyword rules (keyword_rules.py), where a judgment
  must rest on the user's own words rather than on similarity.

The output always validates against the schema and is the same for the same payload.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ragstream.embedding.embedder import Embedder
from ragstream.llm.providers.keyword_rules import cued_choice, cued_sentences, explained
from ragstream.llm.providers.payload import LIST_ITEMS, flatten, sentences

STRING_CHARS = 600


def _humanize(value: str) -> str:
    return re.sub(r"[_\-]+", " ", value)


class SchemaFiller:
    """Fills a response schema from an input payload (the rules in the module docstring)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def fill_object(self, schema: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        whole = flatten(payload)
        needs_vectors = any(not {"x-cues", "x-states", "x-explains"} & set(p) for p in props.values())
        units = sentences(whole)
        unit_vectors = self.embedder.embed(units) if units and needs_vectors else None
        doc_vector = self.embedder.embed([whole[:4000]])[0] if whole.strip() and needs_vectors else None
        out: dict[str, Any] = {}
        evidence: dict[str, str] = {}
        taken: set[str] = set()
        for name, prop in props.items():
            if ("x-cues" in prop or "x-states" in prop) and "enum" in prop:
                out[name], evidence[name] = cued_choice(prop, payload)
            elif "x-cues" in prop:
                out[name] = cued_sentences(prop, payload, taken)
            elif "x-explains" in prop:
                out[name] = explained(prop, evidence)
            else:
                out[name] = self._fill(name, prop, payload, units, unit_vectors, doc_vector)
        return out

    def _fill(
        self,
        name: str,
        prop: dict[str, Any],
        payload: dict[str, Any],
        units: list[str],
        unit_vectors: np.ndarray | None,
        doc_vector: np.ndarray | None,
    ) -> Any:
        kind = prop.get("type")
        if "enum" in prop:
            return self._choose(prop, doc_vector)
        if "x-source" in prop:
            units = sentences(flatten(payload.get(prop["x-source"], "")))
            unit_vectors = self.embedder.embed(units) if units else None
        if kind == "string":
            if isinstance(payload.get(name), str) and payload[name].strip():
                return payload[name][: prop.get("maxLength", STRING_CHARS)]
            picked = self._rank(name, prop, payload, units, unit_vectors, LIST_ITEMS)
            return " ".join(picked)[: prop.get("maxLength", STRING_CHARS)]
        if kind == "array":
            items = prop.get("items", {})
            if items.get("type") == "string" and "enum" not in items:
                limit = min(prop.get("maxItems", LIST_ITEMS), LIST_ITEMS)
                return self._rank(name, prop, payload, units, unit_vectors, limit)
            if "enum" in items:
                return [self._choose(items, doc_vector)]
            return []
        if kind == "object":
            return self.fill_object(prop, payload)
        if kind in ("integer", "number"):
            return prop.get("minimum", 0)
        if kind == "boolean":
            return False
        return None

    def _choose(self, prop: dict[str, Any], doc_vector: np.ndarray | None) -> Any:
        values: list[Any] = list(prop["enum"])
        fallback = prop.get("x-fallback")
        candidates = [v for v in values if v != fallback] or values
        if doc_vector is None:
            return fallback if fallback is not None else candidates[0]
        described: dict[str, str] = prop.get("x-value-descriptions", {})
        texts = [f"{_humanize(str(v))}: {described[v]}" if v in described else _humanize(str(v)) for v in candidates]
        scores = self.embedder.embed(texts) @ doc_vector
        best = int(np.argmax(scores))
        if fallback is not None and float(scores[best]) < float(prop.get("x-min-similarity", 0.0)):
            return fallback
        return candidates[best]

    def _rank(
        self,
        name: str,
        prop: dict[str, Any],
        payload: dict[str, Any],
        units: list[str],
        unit_vectors: np.ndarray | None,
        limit: int,
    ) -> list[str]:
        """The `limit` input sentences most similar to the field, kept in input order."""
        if not units or unit_vectors is None:
            return []
        query = f"{_humanize(name)}. {prop.get('description', '')}"
        scores = unit_vectors @ self.embedder.embed([query])[0]
        top = sorted(np.argsort(-scores, kind="stable")[:limit])
        return [units[i] for i in top]

"""The `local` provider: an offline, deterministic, heuristic stand-in for an LLM.

It is not a language model. It reads the INPUT block of the user message and fills the response
schema field by field:

- enum fields: the allowed value whose text (name plus optional `x-value-descriptions`) is most
  similar to the input under the MiniLM embedding; `x-fallback` is chosen instead when the best
  similarity is below `x-min-similarity`;
- string fields: copied from an input key of the same name, else the input sentences most similar
  to the field's name and description, in their original order (`x-source` limits the sentences to
  one input key);
- arrays of strings: those sentences one per item; numbers, booleans, objects: minimal valid values;
- keyword rules instead of similarity, where a judgment must rest on the user's own words:
  enum fields with `x-cues` ({value: [phrases]}) take the first value whose phrase occurs in the
  input (as whole words), else `x-fallback`; arrays of strings with `x-cues` ([phrases]) take only
  the sentences containing one, each sentence going to the first such field (one kind per note);
  an object with `x-explains` reports, per field, the phrase each cue-based choice rested on.

The output always validates against the schema and is byte-identical for identical calls.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_core.utils.pydantic import is_basemodel_subclass

from ragstream.agents.agent_prompt import parse_payload_block
from ragstream.agents.providers.base import LLMResponse, TokenUsage
from ragstream.embedding import Embedder, query_embedder
from ragstream.settings import EmbeddingSettings
from ragstream.text.sentences import WRAPPED, split

_MIN_WORDS = 3
_STRING_CHARS = 600
_LIST_ITEMS = 5


def sentences(text: str) -> list[str]:
    """Sentences of `text` (split as wrapped prose: see ragstream/text/sentences.py) in order, without
    duplicates; fragments under three words are not sentences."""
    return list(dict.fromkeys(s for s in split(text, WRAPPED) if len(s.split()) >= _MIN_WORDS))


def _flatten(value: Any) -> str:
    """The payload's text content; keys are schema words, not content, so they are left out."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(_flatten(v) for v in value.values())
    return json.dumps(value)


def _humanize(value: str) -> str:
    return re.sub(r"[_\-]+", " ", value)


def _phrase(cue: str) -> re.Pattern[str]:
    """A cue as whole words (so 'lesson' does not match 'lessons learned' and 's3' not 'aws3x')."""
    return re.compile(r"(?<![\w])" + re.escape(cue.lower()) + r"(?![\w])")


def _cued_choice(prop: dict[str, Any], payload: dict[str, Any]) -> tuple[Any, str]:
    """The first enum value one of whose cue phrases occurs in the input, with where; else the fallback."""
    fields = {key: _flatten(value).lower() for key, value in payload.items()}
    for value in prop["enum"]:
        for cue in prop["x-cues"].get(value, []):
            for key, text in fields.items():
                if _phrase(cue).search(text):
                    return value, f"'{cue}' in {key}"
    return prop.get("x-fallback", prop["enum"][-1]), "no keyword rule applies"


def _cued_sentences(prop: dict[str, Any], payload: dict[str, Any], taken: set[str]) -> list[str]:
    """Input sentences containing one of the cue phrases, each used by one field only, in order."""
    source = payload.get(prop["x-source"], "") if "x-source" in prop else payload
    found = []
    for sentence in sentences(_flatten(source)):
        if sentence not in taken and any(_phrase(cue).search(sentence.lower()) for cue in prop["x-cues"]):
            taken.add(sentence)
            found.append(sentence)
    return found[: prop.get("maxItems", _LIST_ITEMS)]


class LocalProvider:
    """The offline provider behind llm_client: calls go through `LocalChatModel`, like any chat model."""

    name = "local"

    def __init__(self, embedding: EmbeddingSettings, models_dir: Path) -> None:
        self._embedding = embedding
        self._models_dir = models_dir

    def complete(
        self,
        model: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
    ) -> LLMResponse:
        started = time.monotonic()
        chat = LocalChatModel(embedding=self._embedding, models_dir=self._models_dir, model_name=model)
        reply = chat.invoke(messages, response_format=response_format)
        usage = reply.usage_metadata or {}
        return LLMResponse(
            text=str(reply.content),
            model=f"local:{model}",
            provider=self.name,
            usage=TokenUsage(input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0)),
            latency_s=time.monotonic() - started,
        )


NO_MODEL_REPLY = (
    "This is RAGstream's offline provider, not a language model (no LLM is configured), and it found no "
    "sentence in your message to answer with. Set OPENAI_API_KEY or OPENAI_BASE_URL for real answers."
)


class LocalChatModel(BaseChatModel):
    """The offline provider as a LangChain chat model (no model behind it: see the module docstring).

    A plain message gets an extractive reply: the message's own sentences, or, when it has none, a
    statement of what this is. It honours `with_structured_output` (a JSON schema, a pydantic v1 or v2
    model, a TypedDict; `include_raw` too) and the `response_format` binding that agents use, streams
    its reply word by word (a structured reply as one piece: partial JSON is no use), and reports its
    model name and usage on every reply, so it composes like any chat model.
    """

    embedding: EmbeddingSettings
    models_dir: Path
    model_name: str = "local"

    @property
    def _llm_type(self) -> str:
        return "ragstream-local"

    @property
    def _reported_model(self) -> str:
        return f"local:{self.model_name}"

    def _reply(self, messages: list[BaseMessage], response_format: dict[str, Any] | None) -> tuple[str, UsageMetadata]:
        user = next((m.text for m in reversed(messages) if m.type == "human"), "")
        payload = parse_payload_block(user) or {"input": user}
        schema = (response_format or {}).get("json_schema", {}).get("schema") or (response_format or {}).get("schema")
        filler = SchemaFiller(query_embedder(self.embedding, self.models_dir))
        if schema:
            text = json.dumps(filler.fill_object(schema, payload), ensure_ascii=False, sort_keys=False)
        else:
            text = "\n".join(sentences(_flatten(payload))[:_LIST_ITEMS]) or NO_MODEL_REPLY
        words_in = sum(len(m.text.split()) for m in messages)
        words_out = len(text.split())
        return text, UsageMetadata(input_tokens=words_in, output_tokens=words_out, total_tokens=words_in + words_out)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text, usage = self._reply(messages, kwargs.get("response_format"))
        message = AIMessage(content=text, usage_metadata=usage, response_metadata={"model_name": self._reported_model})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        text, usage = self._reply(messages, kwargs.get("response_format"))
        pieces = [text] if kwargs.get("response_format") else re.findall(r"\S+\s*", text) or [text]
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            message = AIMessageChunk(
                content=piece,
                usage_metadata=usage if last else None,
                response_metadata={"model_name": self._reported_model} if last else {},
                chunk_position="last" if last else None,
            )
            chunk = ChatGenerationChunk(message=message)
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: str = "json_schema",
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable:
        """A runnable whose output is the parsed object: a model for a pydantic class, else a dict.

        Every method gives the same result: the reply is filled from the schema, so it always follows
        it (`strict` holds either way).
        """
        if kwargs:
            raise ValueError(f"unsupported arguments for the local provider: {sorted(kwargs)}")
        json_schema = schema if isinstance(schema, dict) else convert_to_json_schema(schema)  # a dict is one already
        is_model = isinstance(schema, type) and is_basemodel_subclass(schema)
        bound = self.bind(
            response_format={
                "type": "json_schema",
                "json_schema": {"name": json_schema.get("title", "output"), "schema": json_schema},
            },
            ls_structured_output_format={"kwargs": {"method": method}, "schema": schema},
        )
        parser = PydanticOutputParser(pydantic_object=schema) if is_model else JsonOutputParser()
        if not include_raw:
            return bound | parser
        parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
        unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=bound) | parsed.with_fallbacks([unparsed], exception_key="parsing_error")


class SchemaFiller:
    """Fills a response schema from an input payload (the rules in the module docstring)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def fill_object(self, schema: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        whole = _flatten(payload)
        needs_vectors = any("x-cues" not in p and "x-explains" not in p for p in props.values())
        units = sentences(whole)
        unit_vectors = self.embedder.embed(units) if units and needs_vectors else None
        doc_vector = self.embedder.embed([whole[:4000]])[0] if whole.strip() and needs_vectors else None
        out: dict[str, Any] = {}
        evidence: dict[str, str] = {}
        taken: set[str] = set()
        for name, prop in props.items():
            if "x-cues" in prop and "enum" in prop:
                out[name], evidence[name] = _cued_choice(prop, payload)
            elif "x-cues" in prop:
                out[name] = _cued_sentences(prop, payload, taken)
            elif "x-explains" in prop:
                out[name] = {
                    field: evidence.get(field, "no keyword rule applies") for field in prop.get("properties", {})
                }
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
            units = sentences(_flatten(payload.get(prop["x-source"], "")))
            unit_vectors = self.embedder.embed(units) if units else None
        if kind == "string":
            if isinstance(payload.get(name), str) and payload[name].strip():
                return payload[name][: prop.get("maxLength", _STRING_CHARS)]
            picked = self._rank(name, prop, payload, units, unit_vectors, _LIST_ITEMS)
            return " ".join(picked)[: prop.get("maxLength", _STRING_CHARS)]
        if kind == "array":
            items = prop.get("items", {})
            if items.get("type") == "string" and "enum" not in items:
                limit = min(prop.get("maxItems", _LIST_ITEMS), _LIST_ITEMS)
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

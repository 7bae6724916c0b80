"""The `local` provider: an offline, deterministic, heuristic stand-in for an LLM, as a LangChain chat model.

It is not a language model. It reads the INPUT block of the user message (payload.py) and fills the
response schema field by field (schema_filler.py: similarity to the input, and the keyword rules of
keyword_rules.py where the agent's config declares `x-cues`); a plain message gets the message's own
sentences. The output always validates against the schema and is byte-identical for identical calls.

It is the offline behaviour of the agents that declare theirs in their config (A00, A2, A5, SAL); the
stages whose offline behaviour needs the pipeline's own data decide it in code (see
ragstream/services.py `Services.offline`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel

from ragstream.embedding.embedder import query_embedder
from ragstream.llm.agent_prompt import parse_payload_block
from ragstream.llm.providers.base import LLMResponse, TokenUsage
from ragstream.llm.providers.payload import LIST_ITEMS, flatten, sentences
from ragstream.llm.providers.schema_filler import SchemaFiller
from ragstream.settings import EmbeddingSettings


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
        usage = reply.usage_metadata
        return LLMResponse(
            text=str(reply.content),
            model=f"local:{model}",
            provider=self.name,
            usage=TokenUsage(
                input_tokens=usage["input_tokens"] if usage else 0, output_tokens=usage["output_tokens"] if usage else 0
            ),
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
            text = "\n".join(sentences(flatten(payload))[:LIST_ITEMS]) or NO_MODEL_REPLY
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
        parser = (
            PydanticOutputParser(pydantic_object=cast("type[BaseModel]", schema)) if is_model else JsonOutputParser()
        )
        if not include_raw:
            return bound | parser
        parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
        unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=bound) | parsed.with_fallbacks([unparsed], exception_key="parsing_error")

"""LangChain's own conformance suites (`langchain-tests`) against the parts RAGstream offers LangChain apps.

The capability flags say what each part really does: the offline chat model has no tool calling and
no image, audio or PDF input; it does structured output (JSON schema, pydantic, TypedDict) and reports
usage. The retriever and the chat model run on the real ONNX embedder and a real Chroma index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import (
    ChatModelIntegrationTests,
    EmbeddingsIntegrationTests,
    RetrieversIntegrationTests,
)
from langchain_tests.unit_tests import ChatModelUnitTests, EmbeddingsUnitTests

from ragstream import RagstreamEmbeddings, RagstreamRetriever
from ragstream.llm.providers.local_provider import LocalChatModel
from ragstream.settings import Settings, load_settings

_SETTINGS: dict[str, Settings] = {}


@pytest.fixture(autouse=True)
def _indexed_project(indexed: Settings) -> None:
    """The standard suites build parts from properties: they read the session's indexed settings from here."""
    _SETTINGS["indexed"] = indexed


def _settings() -> Settings:
    return _SETTINGS.get("indexed") or load_settings(overrides={"llm.provider": "local"})


class TestEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[RagstreamEmbeddings]:
        return RagstreamEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"settings": _settings()}


class TestEmbeddingsIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[RagstreamEmbeddings]:
        return RagstreamEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"settings": _settings()}


class TestRetrieverIntegration(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RagstreamRetriever]:
        return RagstreamRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"project": "demo", "settings": _settings()}

    @property
    def retriever_query_example(self) -> str:
        return "How are documents ingested, chunked and retrieved?"


class _LocalChatFlags:
    """What the offline chat model is: no tools, text only, structured output, usage in every reply."""

    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        settings = _settings()
        return {"embedding": settings.embedding, "models_dir": Path(settings.models_dir), "model_name": "local"}

    @property
    def has_tool_calling(self) -> bool:
        return False

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def structured_output_kwargs(self) -> dict[str, Any]:
        return {"method": "json_schema"}

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supported_usage_metadata_details(self) -> dict[str, list[str]]:
        return {"invoke": [], "stream": []}


class TestLocalChatModelUnit(_LocalChatFlags, ChatModelUnitTests):
    pass


class TestLocalChatModelIntegration(_LocalChatFlags, ChatModelIntegrationTests):
    pass

"""llm_client: the one low-level door to an LLM, with providers chosen by settings.

`call(model, messages, response_format, temperature, max_tokens)` returns an `LLMResponse` whose
`text` is the model's raw reply (JSON text when a schema was given); AgentPrompt parses it.
It knows nothing about agents, configs or the SuperPrompt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragstream.settings import Settings, default_settings

log = logging.getLogger("ragstream.llm")


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class LLMResponse:
    text: str
    model: str
    provider: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    attempts: int = 1
    latency_s: float = 0.0


class Provider(Protocol):
    name: str

    def complete(
        self,
        model: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
    ) -> LLMResponse: ...


class LLMClient:
    """Routes calls to the provider the settings select; holds no per-call state."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient:
        if settings.llm.resolved_provider == "openai":
            from ragstream.agents.providers.openai_provider import OpenAIProvider

            return cls(OpenAIProvider(settings.llm))
        from ragstream.agents.providers.local_provider import LocalProvider

        return cls(LocalProvider(settings.embedding))

    @property
    def provider_name(self) -> str:
        return self.provider.name

    def call(
        self,
        model: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        response = self.provider.complete(model, messages, response_format, temperature, max_tokens)
        log.info(
            "llm call provider=%s model=%s attempts=%d tokens_in=%d tokens_out=%d latency=%.3fs",
            response.provider,
            response.model,
            response.attempts,
            response.usage.input_tokens,
            response.usage.output_tokens,
            response.latency_s,
        )
        return response


def call(
    model: str,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> LLMResponse:
    """Module-level convenience with the process's default settings."""
    return LLMClient.from_settings(default_settings()).call(model, messages, response_format, temperature, max_tokens)

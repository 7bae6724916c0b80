"""llm_client: the one low-level door to an LLM, with providers chosen by settings.

`call(model, messages, response_format, temperature, max_tokens)` returns an `LLMResponse` whose
`text` is the model's raw reply (JSON text when a schema was given); AgentPrompt parses it.
It knows nothing about agents, configs or the SuperPrompt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ragstream.errors import LLMError, LLMNotConfiguredError
from ragstream.llm.providers.base import LLMResponse, Provider, TokenUsage
from ragstream.settings import Prices, Settings, default_settings
from ragstream.telemetry.cost import cost_estimate
from ragstream.telemetry.events import emit

log = logging.getLogger("ragstream.llm")


class LLMClient:
    """Routes calls to the provider the settings select; holds no per-call state.

    Each call is reported as an `llm_call` (or `llm_error`) telemetry event with tokens and a cost
    estimate from the price table; outside a graph run the event goes nowhere.
    """

    def __init__(self, provider: Provider, prices: Prices | None = None) -> None:
        self.provider = provider
        self.prices = prices or {}

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient:
        if settings.llm.resolved_provider == "openai":
            from ragstream.llm.providers.openai_provider import OpenAIProvider

            return cls(OpenAIProvider(settings.llm, settings.cache_dir), settings.llm.prices)
        return cls.offline(settings)

    @classmethod
    def offline(cls, settings: Settings) -> LLMClient:
        """The offline provider, whatever the settings select: what a stage falls back to."""
        from ragstream.llm.providers.local_provider import LocalProvider

        return cls(LocalProvider(settings.embedding, settings.models_dir), settings.llm.prices)

    @property
    def provider_name(self) -> str:
        return self.provider.name

    @property
    def has_model(self) -> bool:
        """False for the offline provider, which is no model: the one test of "offline" (Services.offline)."""
        return self.provider.name != "local"

    def call(
        self,
        model: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        try:
            response = self.provider.complete(model, messages, response_format, temperature, max_tokens)
        except LLMError as exc:
            emit(
                {
                    "event": "llm_error",
                    "provider": self.provider.name,
                    "model": model,
                    "error": type(exc).__name__,
                    "message": str(exc),
                }
            )
            raise
        self._report(model, response)
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

    def stream(
        self,
        model: str,
        messages: list[dict[str, str]],
        on_token: Callable[[str], None],
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        """A free-text answer streamed token by token; only real providers can stream."""
        streamer = getattr(self.provider, "stream", None)
        if streamer is None:
            raise LLMNotConfiguredError(
                "no LLM is configured (set OPENAI_API_KEY or OPENAI_BASE_URL): the offline provider cannot "
                "answer prompts; the SuperPrompt itself is the product, copy it from prompt_ready"
            )
        response = streamer(model, messages, temperature, max_tokens, on_token)
        self._report(model, response)
        return response

    def _report(self, model: str, response: LLMResponse) -> None:
        """An `llm_call` event for a model's work, priced by the model the server says answered (a local
        server's model is free unless priced in config); the offline provider's deterministic steps are no
        LLM calls and cost nothing, so they are `offline_step` events without tokens or cost."""
        if response.provider == "local":
            emit(
                {
                    "event": "offline_step",
                    "provider": "local",
                    "model": response.model,
                    "latency_ms": round(response.latency_s * 1000, 2),
                }
            )
            return
        cost = cost_estimate(self.prices, response.model, response.usage.input_tokens, response.usage.output_tokens)
        emit(
            {
                "event": "llm_call",
                "provider": response.provider,
                "model": response.model,
                "requested_model": model,
                "tokens_in": response.usage.input_tokens,
                "tokens_out": response.usage.output_tokens,
                "cost_usd": cost if cost is not None else 0.0,
                "priced": cost is not None,
                "latency_ms": round(response.latency_s * 1000, 2),
                "attempts": response.attempts,
            }
        )


__all__ = ["LLMClient", "LLMResponse", "Provider", "TokenUsage", "call"]


def call(
    model: str,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> LLMResponse:
    """Module-level convenience with the process's default settings."""
    return LLMClient.from_settings(default_settings()).call(model, messages, response_format, temperature, max_tokens)

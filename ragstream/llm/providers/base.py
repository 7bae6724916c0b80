"""What every LLM provider speaks: the response type and the provider protocol.

Kept apart from `llm_client` so the client and the providers both import it and not each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


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
    finish_reason: str = ""  # "length": the reply was cut at the token cap


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


class StreamingProvider(Provider, Protocol):
    def stream(
        self,
        model: str,
        messages: list[dict[str, str]],
        temperature: float,
        max_tokens: int | None,
        on_token: Callable[[str], None],
    ) -> LLMResponse: ...

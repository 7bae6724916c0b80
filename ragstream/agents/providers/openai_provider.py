"""The `openai` provider: langchain-openai's ChatOpenAI against OpenAI or any compatible server.

Retries are ours, not the SDK's, and the only retry layer in RAGstream (graph nodes do not retry):
their number, jittered exponential backoff and Retry-After handling follow settings, and every
attempt has a deadline. Error messages are redacted: the key never leaves.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

import openai
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from ragstream.agents.providers.base import LLMResponse, TokenUsage
from ragstream.errors import LLMCallError, LLMTimeoutError
from ragstream.redact import redact
from ragstream.settings import LLMSettings

log = logging.getLogger("ragstream.llm")

_NO_KEY = "not-needed"


def strip_extensions(schema: Any) -> Any:
    """Drop `x-` keywords (hints for the offline provider) before a schema goes to a real API."""
    if isinstance(schema, dict):
        return {k: strip_extensions(v) for k, v in schema.items() if not str(k).startswith("x-")}
    if isinstance(schema, list):
        return [strip_extensions(v) for v in schema]
    return schema


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAIProvider:
    name = "openai"

    def __init__(self, llm: LLMSettings) -> None:
        self.settings = llm
        self._key = llm.api_key.get_secret_value() if llm.api_key else None

    def _model(self, model: str, temperature: float, max_tokens: int | None) -> ChatOpenAI:
        return ChatOpenAI(
            model=model,
            api_key=self._key or _NO_KEY,
            base_url=self.settings.base_url,
            timeout=self.settings.timeout_s,
            max_retries=0,
            temperature=temperature,
            max_tokens=max_tokens,
        )

    def _safe(self, text: str) -> str:
        return redact(text, [self._key])

    def _backoff(self, attempt: int, hint: float | None) -> float:
        """Exponential backoff with jitter (half fixed, half random), never below the server's Retry-After.

        The jitter spreads out clients that a rate limit stopped at the same moment.
        """
        ceiling = min(self.settings.backoff_initial_s * (2**attempt), self.settings.backoff_max_s)
        delay = ceiling / 2 + random.uniform(0, ceiling / 2)
        if hint is not None:
            delay = max(delay, min(hint, self.settings.backoff_max_s))
        return delay

    def complete(
        self,
        model: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
    ) -> LLMResponse:
        # An agent's structured reply is not for a reader: one whole response, kept out of LangGraph's
        # token stream (a `messages` stream would otherwise make LangChain stream it).
        chat = self._model(model, temperature, max_tokens).model_copy(update={"disable_streaming": True})
        kwargs = {"response_format": strip_extensions(response_format)} if response_format else {}
        return self._with_retries(model, lambda: chat.invoke(messages, config={"tags": ["nostream"]}, **kwargs))

    def stream(
        self,
        model: str,
        messages: list[dict[str, str]],
        temperature: float,
        max_tokens: int | None,
        on_token: Callable[[str], None],
    ) -> LLMResponse:
        """Stream the answer token by token; a transient failure before the first token is retried."""
        chat = self._model(model, temperature, max_tokens).model_copy(update={"stream_usage": True})

        def run() -> AIMessage:
            merged = None
            for chunk in chat.stream(messages):
                text = chunk.content if isinstance(chunk.content, str) else ""
                if text:
                    on_token(text)
                merged = chunk if merged is None else merged + chunk
            return AIMessage(
                content=merged.content if merged else "",
                usage_metadata=merged.usage_metadata if merged else None,
                response_metadata=merged.response_metadata if merged else {},
            )

        return self._with_retries(model, run)

    def _with_retries(self, model: str, attempt_call: Callable[[], AIMessage]) -> LLMResponse:
        attempts = self.settings.max_retries + 1
        started = time.monotonic()
        last: LLMCallError | None = None
        for attempt in range(attempts):
            hint: float | None = None
            try:
                reply = attempt_call()
            except openai.APITimeoutError:
                last = LLMTimeoutError(
                    f"{model}: no answer within {self.settings.timeout_s:g}s", attempts=attempt + 1
                )
            except openai.APIConnectionError as exc:
                last = LLMCallError(f"{model}: cannot connect: {self._safe(str(exc))}", attempts=attempt + 1)
            except openai.APIStatusError as exc:
                status = exc.status_code
                message = self._safe(f"{model}: HTTP {status}: {exc.message}")
                if status != 429 and status < 500:
                    raise LLMCallError(message, status=status, attempts=attempt + 1) from None
                hint = _retry_after(exc)
                last = LLMCallError(message, status=status, attempts=attempt + 1)
            except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
                raise LLMCallError(f"{model}: {self._safe(str(exc))}", attempts=attempt + 1) from None
            except (openai.APIResponseValidationError, ValueError, KeyError, TypeError, AttributeError) as exc:
                # A truncated or non-JSON HTTP body: worth another attempt, then a typed error.
                last = LLMCallError(
                    f"{model}: malformed response ({type(exc).__name__}: {self._safe(str(exc))[:200]})", attempts=attempt + 1
                )
            else:
                return self._response(reply, model, attempt + 1, time.monotonic() - started)
            if attempt + 1 < attempts:
                delay = self._backoff(attempt, hint)
                log.warning("llm retry %d/%d in %.2fs: %s", attempt + 1, attempts - 1, delay, last)
                time.sleep(delay)
        assert last is not None
        last.args = (f"{last.args[0]} (gave up after {attempts} attempts)",)
        last.attempts = attempts
        raise last

    def _response(self, reply: AIMessage, model: str, attempts: int, latency: float) -> LLMResponse:
        content = reply.content if isinstance(reply.content, str) else "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in reply.content
        )
        usage = reply.usage_metadata or {}
        return LLMResponse(
            text=content,
            model=str(reply.response_metadata.get("model_name") or model),
            provider=self.name,
            usage=TokenUsage(usage.get("input_tokens", 0), usage.get("output_tokens", 0)),
            attempts=attempts,
            latency_s=latency,
        )

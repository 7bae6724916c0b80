"""The `openai` provider: langchain-openai's ChatOpenAI against OpenAI or any compatible server.

Retries are ours, not the SDK's, and the only retry layer in RAGstream (graph nodes do not retry):
their number, jittered exponential backoff and Retry-After handling follow settings, and every
attempt has a deadline. Until an endpoint has answered once in this process its deadline is
`llm.first_call_timeout_s` (a local server's first call can take minutes: it loads or warms the
model). A time-out is not a transient error to hammer: sending the same request again at the same
deadline to a server still busy with the first would time out the same way, so it is retried at most
`llm.timeout_retries` times, each with twice the deadline. Calls pass an endpoint gate shared by the
process (see `endpoint_gate`). Error messages are redacted: the key never leaves.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from ragstream.errors import LLMCallError, LLMTimeoutError
from ragstream.llm.providers.base import LLMResponse, TokenUsage
from ragstream.llm.providers.endpoint_gate import gate_for
from ragstream.llm.providers.structured_mode import (
    PROBE_MESSAGES,
    ModeCache,
    probe,
    response_format_for,
    with_schema_in_prompt,
)
from ragstream.secrets.redact import redact
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

    def __init__(self, llm: LLMSettings, cache_dir: Path | None = None) -> None:
        self.settings = llm
        self._key = llm.api_key.get_secret_value() if llm.api_key else None
        self.endpoint = llm.base_url or "https://api.openai.com/v1"
        self.gate = gate_for(self.endpoint, llm.max_in_flight)
        self._modes = ModeCache(cache_dir / "structured_output.json" if cache_dir else None)

    def structured_mode(self, model: str) -> str:
        """How this endpoint takes a schema (`structured_mode` module): configured, cached, or probed once."""
        if self.settings.structured_output != "auto":
            return self.settings.structured_output
        if self.settings.base_url is None:
            return "json_schema"  # OpenAI itself enforces schemas
        key = f"{self.endpoint}|{model}"
        mode = self._modes.get(key)
        if mode is None:
            mode = probe(lambda fmt: self._probe_once(model, fmt))
            log.info("llm endpoint %s takes schemas as %s (probed, cached)", self.endpoint, mode)
            self._modes.put(key, mode)
        return mode

    def _probe_once(self, model: str, fmt: dict[str, Any]) -> str | None:
        """The probe's reply text, or None when the server refuses this response format."""
        try:
            reply = self._with_retries(
                model,
                lambda timeout: self._model(model, 0.0, 24, timeout).model_copy(update={"disable_streaming": True}),
                lambda chat: chat.invoke(PROBE_MESSAGES, config={"tags": ["nostream"]}, response_format=fmt),
            )
        except LLMCallError as exc:
            if exc.status is not None and 400 <= exc.status < 600 and exc.status != 429:
                return None
            raise
        return reply.text

    def _model(self, model: str, temperature: float, max_tokens: int | None, timeout: float) -> ChatOpenAI:
        return ChatOpenAI(
            model=model,
            api_key=self._key or _NO_KEY,
            base_url=self.settings.base_url,
            timeout=timeout,
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
        mode = self.structured_mode(model) if response_format else "json_schema"
        fmt = response_format_for(mode, strip_extensions(response_format))
        if response_format and mode != "json_schema":
            messages = with_schema_in_prompt(messages, strip_extensions(response_format["json_schema"]["schema"]))
        kwargs: dict[str, Any] = {"response_format": fmt} if fmt else {}
        return self._with_retries(
            model,
            lambda timeout: self._model(model, temperature, max_tokens, timeout).model_copy(
                update={"disable_streaming": True}
            ),
            lambda chat: chat.invoke(messages, config={"tags": ["nostream"]}, **kwargs),
        )

    def stream(
        self,
        model: str,
        messages: list[dict[str, str]],
        temperature: float,
        max_tokens: int | None,
        on_token: Callable[[str], None],
    ) -> LLMResponse:
        """Stream the answer token by token; a transient failure before the first token is retried."""

        def run(chat: ChatOpenAI) -> AIMessage:
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

        return self._with_retries(
            model,
            lambda timeout: self._model(model, temperature, max_tokens, timeout).model_copy(
                update={"stream_usage": True}
            ),
            run,
        )

    def _deadline(self) -> float:
        """An attempt's deadline: longer until the endpoint has answered once (its first call loads the model)."""
        first = self.settings.first_call_timeout_s
        if first is None or self.gate.answered:
            return self.settings.timeout_s
        return max(first, self.settings.timeout_s)

    def _with_retries(
        self, model: str, chat_for: Callable[[float], ChatOpenAI], attempt_call: Callable[[ChatOpenAI], AIMessage]
    ) -> LLMResponse:
        """Transient failures are retried `max_retries` times; rate limits are waited out; time-outs are
        retried `timeout_retries` times (within `max_retries`), each with twice the deadline before.

        A 429 is the server saying "later", not "broken": it does not use up a retry while the call
        has been waiting less than `rate_limit_patience_s`, and it closes the endpoint's gate for
        every session in the process until the Retry-After has passed.
        """
        allowed = self.settings.max_retries + 1
        chats = {self._deadline(): chat_for(self._deadline())}  # a client per deadline, the first built up front
        started = time.monotonic()
        failures = limited = timeouts = 0
        deadlines: list[float] = []
        while True:
            deadline = deadlines[-1] * 2 if timeouts else self._deadline()
            chat = chats.get(deadline) or chats.setdefault(deadline, chat_for(deadline))
            outcome, hint = self._attempt(model, attempt_call, chat, failures + limited + 1, deadline)
            if isinstance(outcome, AIMessage):
                self.gate.answered = True
                return self._response(outcome, model, failures + limited + 1, time.monotonic() - started)
            error = outcome
            if isinstance(error, LLMTimeoutError):
                deadlines.append(deadline)
                timeouts += 1
                if timeouts > self.settings.timeout_retries or failures + 1 >= allowed:
                    waited = ", then ".join(f"{d:g}s" for d in deadlines)
                    plural = "s" if timeouts > 1 else ""
                    error.args = (f"{model}: no answer within {waited} ({timeouts} attempt{plural})",)
                    raise error
                log.info("llm timed out after %gs; retrying with %gs", deadline, deadline * 2)
                failures += 1
                continue
            if error.status == 429:
                delay = self._backoff(limited, hint)
                limited += 1
                if time.monotonic() - started + delay <= self.settings.rate_limit_patience_s:
                    log.info("llm rate limited, waiting %.2fs: %s", delay, error)
                    self.gate.close_for(delay)
                    continue
                error.args = (f"{error.args[0]} (still rate limited after {time.monotonic() - started:.0f}s)",)
                raise error
            failures += 1
            if failures >= allowed:
                error.args = (f"{error.args[0]} (gave up after {allowed} attempt{'s' if allowed > 1 else ''})",)
                raise error
            delay = self._backoff(failures - 1, hint)
            log.info(
                "llm retry %d/%d in %.2fs: %s", failures, allowed - 1, delay, error
            )  # the final error says how many
            time.sleep(delay)

    def _attempt(
        self,
        model: str,
        attempt_call: Callable[[ChatOpenAI], AIMessage],
        chat: ChatOpenAI,
        attempt: int,
        deadline: float,
    ) -> tuple[AIMessage | LLMCallError, float | None]:
        """One call through the endpoint's gate: the reply, or the retryable error and any Retry-After."""
        try:
            with self.gate.turn():
                return attempt_call(chat), None
        except openai.APITimeoutError:
            return LLMTimeoutError(f"{model}: no answer within {deadline:g}s", attempts=attempt), None
        except openai.APIConnectionError as exc:
            return LLMCallError(
                f"{model}: cannot connect to {self.endpoint}: {self._safe(str(exc))}", attempts=attempt
            ), None
        except openai.APIStatusError as exc:
            status = exc.status_code
            error = LLMCallError(self._safe(f"{model}: HTTP {status}: {exc.message}"), status=status, attempts=attempt)
            if status != 429 and status < 500:
                raise error from None
            return error, _retry_after(exc)
        except openai.LengthFinishReasonError as exc:
            # A reply cut at the token cap is a reply (the agent runner re-asks for a shorter one), not a failure.
            choice = exc.completion.choices[0] if exc.completion and exc.completion.choices else None
            text = (choice.message.content or "") if choice else ""
            usage = exc.completion.usage if exc.completion else None
            return AIMessage(
                content=text,
                usage_metadata={
                    "input_tokens": usage.prompt_tokens,
                    "output_tokens": usage.completion_tokens,
                    "total_tokens": usage.total_tokens,
                }
                if usage
                else None,
                response_metadata={
                    "model_name": exc.completion.model if exc.completion else model,
                    "finish_reason": "length",
                },
            ), None
        except openai.ContentFilterFinishReasonError as exc:
            raise LLMCallError(f"{model}: {self._safe(str(exc))}", attempts=attempt) from None
        except (openai.APIResponseValidationError, ValueError, KeyError, TypeError, AttributeError) as exc:
            # A truncated or non-JSON HTTP body: worth another attempt, then a typed error.
            detail = f"{type(exc).__name__}: {self._safe(str(exc))[:200]}"
            return LLMCallError(f"{model}: malformed response ({detail})", attempts=attempt), None

    def _response(self, reply: AIMessage, model: str, attempts: int, latency: float) -> LLMResponse:
        content = (
            reply.content
            if isinstance(reply.content, str)
            else "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in reply.content)
        )
        usage = reply.usage_metadata
        return LLMResponse(
            text=content,
            model=str(reply.response_metadata.get("model_name") or model),
            provider=self.name,
            usage=TokenUsage(usage.get("input_tokens", 0), usage.get("output_tokens", 0)) if usage else TokenUsage(),
            attempts=attempts,
            latency_s=latency,
            finish_reason=str(reply.response_metadata.get("finish_reason") or ""),
        )

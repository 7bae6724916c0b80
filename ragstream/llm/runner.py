"""AgentRunner: the one way to call an agent (create -> compose -> call -> parse, repair, validate).

A real model's reply is checked against the agent's schema. What can be mended is mended and noted
(JSON inside prose, an enum value spelt differently, extra keys, over-long lists); a reply still
invalid (no JSON, a value outside the schema, empty, cut at the token cap) gets one re-ask carrying
the validation error. When that fails too, the call falls back to the offline behaviour: by default
the same agent on the offline provider (its documented keyword rules), or what the caller gives,
and the reason is kept. So a weak model never aborts a run and never passes an invalid value on;
every call's outcome (valid / repaired / fell_back) is in the `AgentCall` and the `agent_call` event.
Transport failures (the server down, timeouts after the provider's retries) are not reply problems:
they stay typed errors.

`run_many` judges many items with the same agent on a bounded thread pool: results come back in
input order, and every call runs in a copy of the caller's context, so telemetry events still reach
the graph's stream from pool threads.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from ragstream.errors import AgentPromptValidationError, AgentReplyError
from ragstream.llm.agent_prompt import AgentPrompt
from ragstream.llm.client import LLMClient
from ragstream.llm.factory import AgentFactory
from ragstream.llm.providers.base import LLMResponse, TokenUsage
from ragstream.telemetry.events import emit

VALID, REPAIRED, FELL_BACK = "valid", "repaired", "fell_back"
_ECHO_CHARS = 1500  # how much of a rejected reply the re-ask shows the model

# What a failed call gives instead: True = the agent on the offline provider; False = raise
# AgentReplyError (the caller falls back itself); a function = the output to use.
Fallback = bool | Callable[[AgentReplyError], dict[str, Any]]


@dataclass(frozen=True)
class AgentCall:
    """One agent answer, the reply it came from (provider, model, usage) and how it was obtained."""

    output: dict[str, Any]
    reply: LLMResponse
    outcome: str = VALID
    notes: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return f"{self.reply.provider}:{self.reply.model}"


def _merged(first: LLMResponse, second: LLMResponse) -> LLMResponse:
    """The re-ask's reply, carrying both calls' tokens, attempts and time."""
    usage = TokenUsage(
        first.usage.input_tokens + second.usage.input_tokens, first.usage.output_tokens + second.usage.output_tokens
    )
    return replace(
        second, usage=usage, attempts=first.attempts + second.attempts, latency_s=first.latency_s + second.latency_s
    )


def _problem(error: AgentPromptValidationError, reply: LLMResponse, max_tokens: int) -> str:
    if reply.finish_reason == "length":
        return f"your reply was cut off at the {max_tokens}-token limit; answer much shorter"
    if not reply.text.strip():
        return "your reply was empty"
    return str(error)


class AgentRunner:
    def __init__(
        self,
        factory: AgentFactory,
        llm: LLMClient,
        max_concurrency: int = 1,
        offline: Callable[[], LLMClient] | None = None,
    ) -> None:
        self.factory = factory
        self.llm = llm
        self.max_concurrency = max(1, max_concurrency)
        self.offline = offline

    @property
    def provider_name(self) -> str:
        return self.llm.provider_name

    def run(self, agent: str, payload: dict[str, Any], version: str = "v1", fallback: Fallback = True) -> AgentCall:
        prompt = self.factory.create(agent, version, payload)
        messages, response_format = prompt.compose(payload)
        started = time.monotonic()
        try:
            call = self._ask(prompt, messages, response_format)
        except AgentReplyError as exc:
            if fallback is False or not self.llm.has_model:
                self._record(
                    agent,
                    version,
                    FELL_BACK,
                    (f"{exc} (the caller's offline behaviour stands in)",),
                    _spent(exc),
                    started,
                )
                raise
            output = fallback(exc) if callable(fallback) else None
            call = self._offline(prompt, messages, response_format, output, exc)
            self._record(agent, version, call.outcome, call.notes, _spent(exc), started)  # the tokens the model spent
            return call
        self._record(agent, version, call.outcome, call.notes, call.reply, started)
        return call

    def run_many(
        self,
        agent: str,
        payloads: list[dict[str, Any]],
        version: str = "v1",
        fallback: bool | Callable[[int, AgentReplyError], dict[str, Any]] = True,
    ) -> list[AgentCall]:
        """One call per payload, at most `max_concurrency` at a time, in input order.

        A function `fallback` gets the payload's index with the error, so each item can fall back on its own.
        """

        def one(i: int) -> AgentCall:
            item_fallback: Fallback = (lambda exc: fallback(i, exc)) if callable(fallback) else fallback
            return self.run(agent, payloads[i], version, item_fallback)

        if len(payloads) <= 1 or self.max_concurrency == 1:
            return [one(i) for i in range(len(payloads))]
        self.factory.load_config(agent, version)  # a bad config fails once, before any call
        pool = ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(payloads)))
        try:
            futures = [pool.submit(contextvars.copy_context().run, one, i) for i in range(len(payloads))]
            return [future.result() for future in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # after a failure, calls not yet started never start

    def _call(
        self, prompt: AgentPrompt, messages: list[dict[str, str]], response_format: dict[str, Any]
    ) -> LLMResponse:
        return self.llm.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)

    def _ask(self, prompt: AgentPrompt, messages: list[dict[str, str]], response_format: dict[str, Any]) -> AgentCall:
        """The model's answer, mended where it can be, re-asked once with the validation error."""
        reply = self._call(prompt, messages, response_format)
        repairs: list[str] = []
        try:
            output = prompt.parse_and_validate(reply, repairs)
            return AgentCall(output, reply, REPAIRED if repairs else VALID, tuple(repairs))
        except AgentPromptValidationError as first:
            problem = _problem(first, reply, prompt.max_output_tokens)
        again = [
            *messages,
            {"role": "assistant", "content": reply.text[:_ECHO_CHARS] or "(empty reply)"},
            {
                "role": "user",
                "content": f"That reply is not valid: {problem}. Reply again with one JSON object only, "
                "matching the schema, with short values.",
            },
        ]
        second = _merged(reply, self._call(prompt, again, response_format))
        repairs = [f"re-asked once: {problem}"]
        try:
            return AgentCall(prompt.parse_and_validate(second, repairs), second, REPAIRED, tuple(repairs))
        except AgentPromptValidationError as exc:
            retry_problem = _problem(exc, second, prompt.max_output_tokens)
            raise AgentReplyError(f"{problem}; after one re-ask: {retry_problem}", reply=second) from None

    def _offline(
        self,
        prompt: AgentPrompt,
        messages: list[dict[str, str]],
        response_format: dict[str, Any],
        output: dict[str, Any] | None,
        error: AgentReplyError,
    ) -> AgentCall:
        """The call's offline answer: the caller's, else the same agent on the offline provider."""
        note = (f"the model's reply was invalid ({error}); used the offline behaviour",)
        if output is not None:
            return AgentCall(output, LLMResponse(text="", model="offline", provider="local"), FELL_BACK, note)
        if self.offline is None:
            raise error
        reply = self.offline().call(
            prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens
        )
        return AgentCall(prompt.parse_and_validate(reply), reply, FELL_BACK, note)

    def _record(
        self, agent: str, version: str, outcome: str, notes: tuple[str, ...], reply: LLMResponse | None, started: float
    ) -> None:
        emit(
            {
                "event": "agent_call",
                "agent": f"{agent}/{version}",
                "outcome": outcome,
                "notes": list(notes),
                "latency_ms": round((time.monotonic() - started) * 1000, 2),
                "tokens_in": reply.usage.input_tokens if reply else 0,
                "tokens_out": reply.usage.output_tokens if reply else 0,
            }
        )


def _spent(error: AgentReplyError) -> LLMResponse | None:
    """The invalid reply whose tokens were spent (the error carries it untyped: errors sit below the agents)."""
    return error.reply if isinstance(error.reply, LLMResponse) else None

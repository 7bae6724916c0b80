"""AgentRunner: the one way to call an agent (create -> compose -> call -> parse and validate).

`run_many` judges many items with the same agent on a bounded thread pool: results come back in
input order, each call is retried by the provider (the only retry layer), and the first failure is
raised as the typed error it is. Every call runs in a copy of the caller's context, so telemetry
events still reach the graph's stream from pool threads.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ragstream.agents.agent_factory import AgentFactory
from ragstream.agents.llm_client import LLMClient
from ragstream.agents.providers.base import LLMResponse


@dataclass(frozen=True)
class AgentCall:
    """One validated agent answer and the reply it came from (provider, model, usage)."""

    output: dict[str, Any]
    reply: LLMResponse

    @property
    def source(self) -> str:
        return f"{self.reply.provider}:{self.reply.model}"


class AgentRunner:
    def __init__(self, factory: AgentFactory, llm: LLMClient, max_concurrency: int = 1) -> None:
        self.factory = factory
        self.llm = llm
        self.max_concurrency = max(1, max_concurrency)

    @property
    def provider_name(self) -> str:
        return self.llm.provider_name

    def run(self, agent: str, payload: dict[str, Any], version: str = "v1") -> AgentCall:
        prompt = self.factory.create(agent, version, payload)
        messages, response_format = prompt.compose(payload)
        reply = self.llm.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)
        return AgentCall(prompt.parse_and_validate(reply), reply)

    def run_many(self, agent: str, payloads: list[dict[str, Any]], version: str = "v1") -> list[AgentCall]:
        """One call per payload, at most `max_concurrency` at a time, in input order."""
        if len(payloads) <= 1 or self.max_concurrency == 1:
            return [self.run(agent, payload, version) for payload in payloads]
        self.factory.load_config(agent, version)  # a bad config fails once, before any call
        pool = ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(payloads)))
        try:
            futures = [
                pool.submit(contextvars.copy_context().run, self.run, agent, payload, version) for payload in payloads
            ]
            return [future.result() for future in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # after a failure, calls not yet started never start

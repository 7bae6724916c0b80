"""Send: the built prompt to the configured LLM, streamed, then checked by a critic agent.

A critic rejection (not grounded, incomplete, or off-format) triggers a regeneration with the
critic's feedback, at most `critic_max_retries` times. With no LLM configured this says so plainly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragstream.agents.agent_factory import AgentFactory
from ragstream.agents.llm_client import LLMClient, LLMResponse
from ragstream.errors import InputError
from ragstream.orchestration.budget import ContextBudget
from ragstream.settings import SendSettings
from ragstream.state import Stage, SuperPrompt

CHECKS = ("grounded", "complete", "follows_format")


def _critique(factory: AgentFactory, llm: LLMClient, prompt_text: str, answer: str) -> tuple[dict[str, Any], LLMResponse]:
    payload = {"prompt": prompt_text, "answer": answer}
    prompt = factory.create("CRITIC", "v1", payload)
    messages, response_format = prompt.compose(payload)
    reply = llm.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)
    return prompt.parse_and_validate(reply), reply


def send(
    sp: SuperPrompt,
    llm: LLMClient,
    factory: AgentFactory,
    budget: ContextBudget,
    settings: SendSettings,
    on_token: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The answer, every critique and the number of regenerations (what lands in extras["send"])."""
    if sp.stage is not Stage.BUILT:
        raise InputError("build the prompt before sending it (stage must be 'built')")
    tokens = budget.count(sp.prompt_ready)
    if tokens > budget.ceiling("send"):
        raise InputError(f"the prompt has ~{tokens} tokens, over the send ceiling of {budget.ceiling('send')}")
    messages = [{"role": "user", "content": sp.prompt_ready}]
    attempts: list[dict[str, Any]] = []
    usage = {"input_tokens": 0, "output_tokens": 0}
    for attempt in range(settings.critic_max_retries + 1):
        reply = llm.stream(settings.model, messages, on_token or (lambda _t: None), settings.temperature, settings.max_tokens)
        verdict, critic_reply = _critique(factory, llm, sp.prompt_ready, reply.text)
        for r in (reply, critic_reply):
            usage["input_tokens"] += r.usage.input_tokens
            usage["output_tokens"] += r.usage.output_tokens
        accepted = all(verdict[check] == "yes" for check in CHECKS)
        attempts.append({"answer": reply.text, "critique": verdict, "accepted": accepted, "model": reply.model})
        if accepted:
            break
        messages = [
            *messages,
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": f"A reviewer found problems: {verdict['feedback']} Revise your answer; follow the prompt above."},
        ]
    final = attempts[-1]
    return {
        "answer": final["answer"],
        "accepted": final["accepted"],
        "retries": len(attempts) - 1,
        "attempts": attempts,
        "usage": usage,
        "prompt_tokens": tokens,
    }

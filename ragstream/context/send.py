"""Send: the built prompt to the configured LLM, streamed, then checked by a critic agent.

A critic rejection (not grounded, incomplete, or off-format) triggers a regeneration with the
critic's feedback, at most `critic_max_retries` times. With no LLM configured this says so plainly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragstream.context.budget import ContextBudget
from ragstream.context.memory import Agents
from ragstream.errors import InputError
from ragstream.settings import SendSettings
from ragstream.stages import Stage
from ragstream.state import SuperPrompt

CHECKS = ("grounded", "complete", "follows_format")


def send(
    sp: SuperPrompt,
    llm: Any,
    agents: Agents,
    budget: ContextBudget,
    settings: SendSettings,
    on_token: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The answer, every critique and the number of regenerations (what lands in extras["send"])."""
    if sp.stage is not Stage.BUILD:
        raise InputError("build the prompt before sending it (stage must be 'built')")
    tokens = budget.count(sp.prompt_ready)
    if tokens > budget.ceiling("send"):
        raise InputError(f"the prompt has ~{tokens} tokens, over the send ceiling of {budget.ceiling('send')}")
    messages = [{"role": "user", "content": sp.prompt_ready}]
    attempts: list[dict[str, Any]] = []
    usage = {"input_tokens": 0, "output_tokens": 0}
    for attempt in range(settings.critic_max_retries + 1):
        reply = llm.stream(settings.model, messages, on_token or (lambda _t: None), settings.temperature, settings.max_tokens)
        critic = agents.run("CRITIC", {"prompt": sp.prompt_ready, "answer": reply.text})
        verdict = critic.output
        for r in (reply, critic.reply):
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

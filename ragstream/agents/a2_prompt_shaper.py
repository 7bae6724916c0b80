"""A2 PromptShaper: labels the prompt (system role, audience, tone, depth, confidence).

Values the user wrote in the prompt win over A2's labels; A2 only fills what is missing, and records
every decision. Re-running A2 after later stages relabels the body and leaves retrieval untouched.
"""

from __future__ import annotations

from typing import Any

from ragstream.agents.agent_factory import AgentFactory
from ragstream.agents.llm_client import LLMClient
from ragstream.prompt_view import render_prompt
from ragstream.state import Stage, SuperPrompt, advance

AGENT = "A2"
# A2 output field -> SuperPrompt body field.
LABEL_TO_BODY = {
    "system": "system",
    "audience": "audience",
    "tone": "tone",
    "response_depth": "depth",
    "confidence": "confidence",
}


def _user_given_fields(sp: SuperPrompt) -> set[str]:
    if sp.preprocessing is None:
        return set()
    return {e.canon.lower() for e in sp.preprocessing.canon_entries if e.canon}


def _body_value(field: str, label: str) -> str:
    if field == "system":
        return f"You are an expert {label.replace('_', ' ')}."
    return label.replace("_", " ")


def run_a2(sp: SuperPrompt, factory: AgentFactory, llm: LLMClient, version: str = "v1") -> SuperPrompt:
    payload = {key: getattr(sp.body, key) or "" for key in ("task", "purpose", "context")}
    prompt = factory.create(AGENT, version, payload)
    messages, response_format = prompt.compose(payload)
    reply = llm.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)
    labels = prompt.parse_and_validate(reply)

    user_fields = _user_given_fields(sp)
    body_update: dict[str, Any] = {}
    applied: dict[str, str] = {}
    for label_field, body_field in LABEL_TO_BODY.items():
        if body_field in user_fields:
            applied[label_field] = "kept_user_value"
        else:
            body_update[body_field] = _body_value(body_field, labels[label_field])
            applied[label_field] = "a2"
    extras = {
        **sp.extras,
        "a2": {
            "labels": labels,
            "decisions": applied,
            "confidence": labels.get("confidence"),
            "agent": f"{AGENT}/{version}",
            "model": reply.model,
            "provider": reply.provider,
            "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
        },
    }
    updated = sp.model_copy(
        update={"body": sp.body.model_copy(update=body_update), "extras": extras, **advance(sp, Stage.A2)}
    )
    return updated.model_copy(update={"prompt_ready": render_prompt(updated)})

"""A2 PromptShaper: labels the prompt (system role, audience, tone, depth, confidence).

Values the user wrote in the prompt, and labels a person edited, win over A2's labels: A2 only
fills what is missing and records every decision. Re-running A2 relabels the body and keeps
retrieval through A4 (only A5 and the build read the labels).
"""

from __future__ import annotations

from ragstream.agents.runner import AgentRunner
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import A2Report, PromptBody, SuperPrompt, Usage

AGENT = "A2"
# A2 output field -> SuperPrompt body field.
LABEL_TO_BODY = {
    "system": "system",
    "audience": "audience",
    "tone": "tone",
    "response_depth": "depth",
    "confidence": "confidence",
}


def _body_value(field: str, label: str) -> str:
    if field == "system":
        return f"You are an expert {label.replace('_', ' ')}."
    return label.replace("_", " ")


def shape(body: PromptBody, fixed: dict[str, str], runner: AgentRunner, version: str = "v1") -> tuple[PromptBody, A2Report]:
    """The body relabelled, leaving `fixed` fields (field -> why: 'user' or 'edited') as they are."""
    payload = {key: getattr(body, key) or "" for key in ("task", "purpose", "context")}
    call = runner.run(AGENT, payload, version)
    labels = call.output
    update: dict[str, str] = {}
    decisions: dict[str, str] = {}
    for label_field, body_field in LABEL_TO_BODY.items():
        if body_field in fixed:
            decisions[label_field] = f"kept_{fixed[body_field]}_value"
        else:
            update[body_field] = _body_value(body_field, labels[label_field])
            decisions[label_field] = "a2"
    report = A2Report(
        agent=f"{AGENT}/{version}",
        provider=call.reply.provider,
        model=call.reply.model,
        labels={k: str(v) for k, v in labels.items()},
        decisions=decisions,
        usage=Usage(input_tokens=call.reply.usage.input_tokens, output_tokens=call.reply.usage.output_tokens),
    )
    return body.model_copy(update=update), report


def fixed_fields(sp: SuperPrompt) -> dict[str, str]:
    """Body fields A2 must not touch: those the prompt gave, and labels a person edited."""
    given = {e.canon.lower(): "user" for e in (sp.preprocessing.canon_entries if sp.preprocessing else []) if e.canon}
    edited = {name: "edited" for name in sp.extras.edited_fields() if name in LABEL_TO_BODY.values()}
    return {**given, **edited}


def stage(sp: SuperPrompt, env: StageEnv) -> StageOutput:
    body, report = shape(sp.body, fixed_fields(sp), env.services.runner)
    return StageOutput(updates={"body": body}, report=report)

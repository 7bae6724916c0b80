"""A2 PromptShaper: labels the prompt (system role, audience, tone, depth) and assesses its clarity.

A label is set only when something supports it: the model's reason with an LLM, a documented keyword
rule offline (`x-cues` in the agent config; the phrase that matched is recorded). A label with no
basis stays unset, and the final prompt then says nothing about it. Values the user wrote, and
labels a person edited, win and are never replaced. Confidence (how clearly the prompt says what
it wants) is A2's assessment, recorded in its report; it reaches the prompt only when the user wrote
it. Re-running A2 relabels the body and keeps retrieval through A4 (only A5 and the build read labels).
"""

from __future__ import annotations

from ragstream.agents.runner import AgentRunner
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import A2Report, PromptBody, SuperPrompt, Usage

AGENT = "A2"
UNKNOWN = "unknown"
# A2 output field -> SuperPrompt body field; confidence is assessed, not applied.
LABEL_TO_BODY = {"system": "system", "audience": "audience", "tone": "tone", "response_depth": "depth"}


def _body_value(field: str, label: str) -> str:
    if field == "system":
        return f"You are an expert {label.replace('_', ' ')}."
    return label.replace("_", " ")


def shape(body: PromptBody, fixed: dict[str, str], runner: AgentRunner, version: str = "v1") -> tuple[PromptBody, A2Report]:
    """The body with supported labels filled in; `fixed` fields (field -> 'user' or 'edited') stay as they are."""
    payload = {key: getattr(body, key) or "" for key in ("task", "purpose", "context")}
    call = runner.run(AGENT, payload, version)
    labels = {k: v for k, v in call.output.items() if k != "reasons"}
    reasons = dict(call.output.get("reasons", {}))
    update: dict[str, str | None] = {}
    decisions: dict[str, str] = {}
    for label_field, body_field in LABEL_TO_BODY.items():
        if body_field in fixed:
            decisions[label_field] = f"kept_{fixed[body_field]}_value"
        elif labels[label_field] == UNKNOWN:
            update[body_field] = None
            decisions[label_field] = "unset: no basis in the prompt"
        else:
            update[body_field] = _body_value(body_field, labels[label_field])
            decisions[label_field] = "a2"
    decisions["confidence"] = "assessed (not a response requirement)"
    report = A2Report(
        agent=f"{AGENT}/{version}",
        provider=call.reply.provider,
        model=call.reply.model,
        labels={k: str(v) for k, v in labels.items()},
        decisions=decisions,
        reasons=reasons,
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

"""A2 PromptShaper: labels the prompt (system role, audience, tone, depth) and assesses its clarity.

A label is set only when words of the prompt state it as a wish about the answer ("explain it to new
developers", "briefly", "in a formal tone", "act as a data scientist"): the stating patterns are
`x-states` in the agent config, and the words that matched are recorded as the evidence. A topic word
states nothing: a question about researchers has no audience, one about Python no role. Offline the
patterns decide. With a model, its label is used only when the prompt's words state that same label;
otherwise the offline result stands (the stated label, or none) and the report says why, quoting the
model's choice. Values the user wrote, and labels a person edited, win and are never replaced.
Confidence (how clearly the prompt says what it wants) is A2's assessment, recorded in its report; it
reaches the prompt only when the user wrote it. Re-running A2 relabels the body and keeps retrieval
through A4 (only A5 and the build read labels).
"""

from __future__ import annotations

from typing import Any

from ragstream.llm.providers.keyword_rules import stated_choice
from ragstream.llm.runner import FELL_BACK, AgentRunner
from ragstream.state import A2Report, LLMOutcomes, PromptBody, SuperPrompt, Usage

AGENT = "A2"
UNKNOWN = "unknown"
# A2 output field -> SuperPrompt body field; confidence is assessed, not applied.
LABEL_TO_BODY = {"system": "system", "audience": "audience", "tone": "tone", "response_depth": "depth"}


def _body_value(field: str, label: str) -> str:
    if field == "system":
        return f"You are an expert {label.replace('_', ' ')}."
    return label.replace("_", " ")


def _decide(field: str, chosen: str, prop: dict[str, Any], asked: dict[str, str], by_model: bool) -> tuple[str, str]:
    """The label to apply (or UNKNOWN) and the decision with its evidence: a model's label needs the
    prompt's words to state it, else what they state (or nothing) stands."""
    stated, words = stated_choice(prop, asked)
    if not by_model:
        return chosen, f"stated by {words}" if chosen != UNKNOWN else f"unset: {words}"
    if chosen == stated:
        return chosen, f"stated by {words}" if chosen != UNKNOWN else "unset: no words of the prompt state it"
    if stated != UNKNOWN:
        return stated, f"the model chose {chosen}; {words} states {stated}, which stands"
    return UNKNOWN, f"unset: the model chose {chosen}, but no words of the prompt state the {field.replace('_', ' ')}"


def shape(
    body: PromptBody, fixed: dict[str, str], runner: AgentRunner, version: str = "v1"
) -> tuple[PromptBody, A2Report]:
    """The body with stated labels filled in; `fixed` fields (field -> 'user' or 'edited') stay as they are."""
    payload = {key: getattr(body, key) or "" for key in ("task", "purpose", "context")}
    call = runner.run(AGENT, payload, version)
    labels = {k: v for k, v in call.output.items() if k != "reasons"}
    reasons = dict(call.output.get("reasons", {}))
    schema = runner.factory.load_config(AGENT, version).output_schema["properties"]
    asked = {key: value.lower() for key, value in payload.items()}
    by_model = call.reply.provider != "local" and call.outcome != FELL_BACK  # else the stating rules chose
    update: dict[str, str | None] = {}
    decisions: dict[str, str] = {}
    for label_field, body_field in LABEL_TO_BODY.items():
        if body_field in fixed:
            decisions[label_field] = f"kept_{fixed[body_field]}_value"
            continue
        label, decisions[label_field] = _decide(label_field, labels[label_field], schema[label_field], asked, by_model)
        update[body_field] = None if label == UNKNOWN else _body_value(body_field, label)
    decisions["confidence"] = "assessed (not a response requirement)"
    report = A2Report(
        agent=f"{AGENT}/{version}",
        provider=call.reply.provider,
        model=call.reply.model,
        labels={k: str(v) for k, v in labels.items()},
        decisions=decisions,
        reasons=reasons,
        usage=Usage(input_tokens=call.reply.usage.input_tokens, output_tokens=call.reply.usage.output_tokens),
        llm=LLMOutcomes.of([call]) if call.reply.provider != "local" or call.outcome == FELL_BACK else None,
    )
    return body.model_copy(update=update), report


def fixed_fields(sp: SuperPrompt) -> dict[str, str]:
    """Body fields A2 must not touch: those the prompt gave, and labels a person edited."""
    given = {e.canon.lower(): "user" for e in (sp.preprocessing.canon_entries if sp.preprocessing else []) if e.canon}
    edited = {name: "edited" for name in sp.extras.edited_fields() if name in LABEL_TO_BODY.values()}
    return {**given, **edited}

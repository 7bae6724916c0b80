"""A2 PromptShaper: labels the prompt (system role, audience, tone, depth) and assesses its clarity.

A label is set only when something supports it: with an LLM, a reason that quotes the prompt (one
that only repeats the label, or quotes nothing, leaves the label unset), a documented keyword
rule offline (`x-cues` in the agent config; the phrase that matched is recorded). A label with no
basis stays unset, and the final prompt then says nothing about it. Values the user wrote, and
labels a person edited, win and are never replaced. Confidence (how clearly the prompt says what
it wants) is A2's assessment, recorded in its report; it reaches the prompt only when the user wrote
it. Re-running A2 relabels the body and keeps retrieval through A4 (only A5 and the build read labels).
"""

from __future__ import annotations

import re

from ragstream.agents.runner import FELL_BACK, AgentRunner
from ragstream.state import A2Report, LLMOutcomes, PromptBody, SuperPrompt, Usage

AGENT = "A2"
UNKNOWN = "unknown"
# A2 output field -> SuperPrompt body field; confidence is assessed, not applied.
LABEL_TO_BODY = {"system": "system", "audience": "audience", "tone": "tone", "response_depth": "depth"}
_WORD = re.compile(r"[\w'/-]+")
# Words any reason may use without quoting the prompt: they say where the words are, not what they are.
_NOT_EVIDENCE = frozenset(
    "the a an and or of to in on for with is are be it this that prompt task purpose context user asks asked ask "
    "label reason request requests requested answer question text words mentions mention says given based wants "
    "about from into there their which what when unknown".split()
)


def supported(reason: str, label: str, prompt: str) -> bool:
    """True when the model's reason quotes a word of the prompt that is not just the label's own name.

    A reason that only repeats the label ("short"), or talks about the prompt without quoting it,
    is no basis: such a label is not applied.
    """
    label_words = {w.lower() for w in re.split(r"[_\s]+", label)}
    asked = {w.lower() for w in _WORD.findall(prompt)}
    quoted = {w.lower() for w in _WORD.findall(reason)} - _NOT_EVIDENCE - label_words
    return any(len(w) > 2 and w in asked for w in quoted)


def _body_value(field: str, label: str) -> str:
    if field == "system":
        return f"You are an expert {label.replace('_', ' ')}."
    return label.replace("_", " ")


def shape(
    body: PromptBody, fixed: dict[str, str], runner: AgentRunner, version: str = "v1"
) -> tuple[PromptBody, A2Report]:
    """The body with supported labels filled in; `fixed` fields (field -> 'user' or 'edited') stay as they are."""
    payload = {key: getattr(body, key) or "" for key in ("task", "purpose", "context")}
    call = runner.run(AGENT, payload, version)
    labels = {k: v for k, v in call.output.items() if k != "reasons"}
    reasons = dict(call.output.get("reasons", {}))
    asked = " ".join(payload.values())
    checked = call.reply.provider != "local" and call.outcome != FELL_BACK  # keyword rules quote the prompt themselves
    update: dict[str, str | None] = {}
    decisions: dict[str, str] = {}
    for label_field, body_field in LABEL_TO_BODY.items():
        if body_field in fixed:
            decisions[label_field] = f"kept_{fixed[body_field]}_value"
        elif labels[label_field] == UNKNOWN:
            update[body_field] = None
            decisions[label_field] = "unset: no basis in the prompt"
        elif checked and not supported(reasons.get(label_field, ""), labels[label_field], asked):
            update[body_field] = None
            decisions[label_field] = (
                f"unset: the model chose {labels[label_field]} but its reason quotes nothing from the prompt"
            )
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
        llm=LLMOutcomes.of([call]) if call.reply.provider != "local" or call.outcome == FELL_BACK else None,
    )
    return body.model_copy(update=update), report


def fixed_fields(sp: SuperPrompt) -> dict[str, str]:
    """Body fields A2 must not touch: those the prompt gave, and labels a person edited."""
    given = {e.canon.lower(): "user" for e in (sp.preprocessing.canon_entries if sp.preprocessing else []) if e.canon}
    edited = {name: "edited" for name in sp.extras.edited_fields() if name in LABEL_TO_BODY.values()}
    return {**given, **edited}

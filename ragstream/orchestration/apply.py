"""The one place where stage outputs and a person's edits become SuperPrompt updates.

Every write goes through `settle`, which enforces the state's invariants:

- no output of a stage after the frontier (`SuperPrompt.stage`) is in the state or the prompt, and an
  answer exists only for the built prompt it answered (any new output or edit discards it);
- `final_selection_ids` is the view of the latest valid selecting stage;
- every chunk cited in `s_ctx_md` is in `final_selection_ids` (a line whose every citation was
  withdrawn is withdrawn with it; lines a person wrote without citations stay);
- `prompt_ready` is the render of the state;
- `run_metadata` describes the valid outputs (see `metadata`).

Functions here return the fields to write (the node's return value, or the values of an
`update_state`), never whole models, so a checkpoint stores only what changed; `to_channels` turns
them into plain JSON values, so a checkpoint holds no custom type and any LangGraph server reads it
without an allow-list (strict msgpack included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.channels import LastValue

from ragstream.errors import InputError
from ragstream.orchestration.metadata import describe, usage_of, with_usage
from ragstream.preprocessing import validate_prompt
from ragstream.rendering.view import render_prompt
from ragstream.stages import REGISTRY, Stage, stage_module
from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.rules import check_stage_allowed, frontier_after, rank
from ragstream.stages.spec import CONDENSED, FORMAT, LABELS, SELECTION
from ragstream.state import EditRecord, PromptBody, StageUsage, SuperPrompt
from ragstream.state.stage import SELECTING
from ragstream.state.superprompt import SEED_NAMES
from ragstream.telemetry.events import collect_llm_calls
from ragstream.text.chunk_ids import prune_citations

LABEL_FIELDS = ("system", "audience", "tone", "depth", "confidence")
# Each renamed field's public name, the seed's: what a person edits, a review shows and an edit record keeps.
PUBLIC: dict[str, str] = {field: seed for seed, field in SEED_NAMES.items()}
CONDENSED_FIELD = PUBLIC["s_ctx_md"]
# Fields a person may edit (by their public names), and the facet each belongs to (what it invalidates follows
# from the registry).
EDITABLE: dict[str, str] = {
    CONDENSED_FIELD: CONDENSED,
    "final_selection_ids": SELECTION,
    "format": FORMAT,
    **{name: LABELS for name in LABEL_FIELDS},
}


def _default(name: str) -> Any:
    return SuperPrompt.model_fields[name].get_default(call_default_factory=True)


def settle(sp: SuperPrompt) -> dict[str, Any]:
    """The updates that make `sp` consistent (see the module docstring); empty when it already is."""
    frontier = sp.stage
    updates: dict[str, Any] = {}
    invalid = [spec for spec in REGISTRY if rank(spec.name) > rank(frontier)]
    for spec in invalid:
        for name in spec.fields:
            if getattr(sp, name) != _default(name):
                updates[name] = _default(name)
    views = {k: v for k, v in sp.views_by_stage.items() if k in SELECTING and rank(k) <= rank(frontier)}
    if views != sp.views_by_stage:
        updates["views_by_stage"] = views
    extras = sp.extras.model_copy(
        update={
            **{spec.name: None for spec in invalid},
            "edits": [e for e in sp.extras.edits if rank(e.stage) <= rank(frontier)],
        }
    )
    if extras != sp.extras:
        updates["extras"] = extras
    if sp.answer is not None and frontier is not Stage.BUILD:
        updates["answer"] = None
    settled = sp.model_copy(update=updates)
    view = settled.current_view()
    selection = list(view[1]) if view else []
    if selection != sp.final_selection_ids:
        updates["final_selection_ids"] = selection
    condensed, _ = prune_citations(settled.s_ctx_md, selection)
    if condensed != settled.s_ctx_md:
        updates["s_ctx_md"] = condensed
    settled = sp.model_copy(update=updates)
    rendered = render_prompt(settled)
    if rendered != sp.prompt_ready:
        updates["prompt_ready"] = rendered
    metadata = describe(settled)
    if metadata != sp.run_metadata:
        updates["run_metadata"] = metadata
    return updates


SETTLED = "__settled__"


def to_channels(sp: SuperPrompt, updates: dict[str, Any]) -> dict[str, Any]:
    """`updates` to `sp` as plain JSON values, each marked as settled here, ready for the graph's channels.

    The graph's state channels take only marked values (`SettledValue`), so a raw `update_state` from a
    client (`{"stage": "built", "prompt_ready": "FORGED"}`) is refused instead of kept as written: edits go
    through the review's `Command(resume=...)` or `RunSession.edit`, both of which end here.
    """
    plain = sp.model_copy(update=updates).model_dump(mode="json", include=set(updates), by_alias=False)
    return {name: {SETTLED: value} for name, value in plain.items()}


class SettledValue(LastValue):
    """A state channel that takes only values `to_channels` marked, and refuses any other write."""

    def update(self, values: Sequence[Any]) -> bool:
        for value in values:
            if not (isinstance(value, dict) and set(value) == {SETTLED}):
                raise InputError(
                    f"{self.key} cannot be written directly: the state is written by its stages and by the review "
                    "(resume the review interrupt with Command(resume={...}), or use RunSession.edit)"
                )
        return super().update([value[SETTLED] for value in values])


def apply_output(
    sp: SuperPrompt, stage: Stage, output: StageOutput, usage: StageUsage | None = None, trace_id: str | None = None
) -> dict[str, Any]:
    """A stage's output applied: its fields, its report, its view, the new frontier and history, settled.

    `usage` is what the stage spent on LLM calls, `trace_id` the thread whose trace holds its events.
    """
    updates: dict[str, Any] = dict(output.updates)
    updates["run_metadata"] = with_usage(sp, stage.node, usage or StageUsage(), trace_id)
    updates["answer"] = None  # it answered the prompt as it was
    updates["stage"] = frontier_after(sp.stage, stage)
    updates["history_of_stages"] = [*sp.history_of_stages, stage]
    extras = updates.get("extras", sp.extras)
    updates["extras"] = extras.model_copy(update={stage.node: output.report})
    if output.selection is not None:
        updates["views_by_stage"] = {**sp.views_by_stage, stage.value: list(output.selection)}
    applied = sp.model_copy(update=updates)
    return {**updates, **settle(applied)}


def _edit_owner(sp: SuperPrompt, facet: str) -> Stage:
    """The stage whose output an edit of `facet` changes, given the frontier."""
    if facet == SELECTION:
        view = sp.current_view()
        if view is None:
            raise InputError("there is no chunk selection to edit yet: run retrieval first")
        return Stage(view[0])
    if facet == CONDENSED:
        if rank(sp.stage) < rank(Stage.A4):
            raise InputError("there is no condensed context to edit yet: run the A4 Condenser first")
        return Stage.A4
    if facet == LABELS and sp.extras.a2 is not None:
        return Stage.A2
    return Stage.PREPROCESS


def apply_edit(sp: SuperPrompt, fields: dict[str, Any]) -> tuple[dict[str, Any], Stage]:
    """A person's edits as updates, and the stage they are recorded under (the new frontier).

    An edit invalidates what depends on it, exactly like a re-run of the stage that owns the field:
    editing the condensed context after the build re-opens the build; editing a label or the format
    re-opens A5. Prompt content (task, context, purpose) is not editable here: it is the prompt,
    and changing it means running PreProcessing on the changed prompt.
    """
    if sp.stage is Stage.RAW:
        raise InputError("nothing to edit yet: preprocess a prompt first")
    flat = {PUBLIC.get(name, name): value for name, value in fields.items()}  # either name of a renamed field
    body = flat.pop("body", None)
    if body is not None:
        flat.update(body.model_dump(exclude_unset=True) if isinstance(body, PromptBody) else dict(body))
    unknown = sorted(set(flat) - set(EDITABLE))
    if unknown:
        raise InputError(
            f"{unknown} cannot be edited; editable: {sorted(EDITABLE)} (to change the task, context or purpose, "
            "edit the prompt and run PreProcessing again)"
        )
    frontier: Stage = sp.stage
    for name in flat:
        owner = _edit_owner(sp, EDITABLE[name])
        frontier = min(frontier, frontier_after(sp.stage, owner, frozenset({EDITABLE[name]})), key=rank)
    updates: dict[str, Any] = {"stage": frontier, "answer": None}
    labels = {k: v for k, v in flat.items() if k in PromptBody.model_fields}
    if labels:
        updates["body"] = sp.body.model_copy(update=labels)
    if CONDENSED_FIELD in flat:
        if not isinstance(flat[CONDENSED_FIELD], str):
            raise InputError(f"{CONDENSED_FIELD} must be text")
        updates["s_ctx_md"] = flat[CONDENSED_FIELD]
    withdrawn: list[str] = []
    if "final_selection_ids" in flat:
        chosen = list(flat["final_selection_ids"])
        known = {c.id for c in sp.base_context_chunks}
        strangers = [cid for cid in chosen if cid not in known]
        if strangers:
            raise InputError(f"unknown chunk ids in final_selection_ids: {strangers}")
        owner = _edit_owner(sp, SELECTION)
        updates["views_by_stage"] = {**sp.views_by_stage, owner.value: chosen}
        _, withdrawn = prune_citations(updates.get("s_ctx_md", sp.s_ctx_md), chosen)
    record = EditRecord(stage=frontier.value, fields=sorted(flat), withdrawn_lines=withdrawn)
    updates["extras"] = sp.extras.model_copy(update={"edits": [*sp.extras.edits, record]})
    edited = sp.model_copy(update=updates)
    return {**updates, **settle(edited)}, frontier


def run_alone(sp: SuperPrompt, stage: Stage, env: StageEnv) -> SuperPrompt:
    """One stage on a SuperPrompt outside any graph run (`ragstream preprocess`, `ragstream a2 < sp.json`).

    The same rules and the same application as the graph node, without a checkpoint.
    """
    if stage is not Stage.PREPROCESS:
        check_stage_allowed(sp, stage)
    else:
        validate_prompt(env.prompt if env.prompt is not None else sp.raw_prompt, env.services.settings)
    with collect_llm_calls() as calls:
        output = stage_module(stage).run(sp, env)
    return sp.model_copy(update=apply_output(sp, stage, output, usage_of(calls)))

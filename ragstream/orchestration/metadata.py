"""The run-metadata record: one typed summary of what a run decided and spent, derived from the state.

`describe` rebuilds it from the valid stage reports whenever the state settles, so it can never
describe an output that is no longer valid. Only two things in it are not derivable from the
reports: the trace id (the checkpoint thread, whose events `ragstream trace` reads) and the LLM
usage each node measured while its stage ran; both are carried over from the previous record, the
usage only for stages whose output is still valid.
"""

from __future__ import annotations

from typing import Any

from ragstream.stages import SPECS, Stage
from ragstream.stages.rules import rank
from ragstream.state import (
    Answer,
    CriticSummary,
    RetrievalMode,
    RunMetadata,
    SectionBudget,
    StageUsage,
    SuperPrompt,
)

ANSWER_KEYS = ("answer", "critic")


def usage_of(calls: list[dict[str, Any]]) -> StageUsage:
    """The totals of `llm_call` events (see `telemetry.collect_llm_calls`)."""
    return StageUsage(
        calls=len(calls),
        tokens_in=sum(int(c.get("tokens_in") or 0) for c in calls),
        tokens_out=sum(int(c.get("tokens_out") or 0) for c in calls),
        cost_usd=round(sum(float(c.get("cost_usd") or 0.0) for c in calls), 8),
    )


def _valid_usage(sp: SuperPrompt) -> dict[str, StageUsage]:
    def valid(key: str) -> bool:
        if key in ANSWER_KEYS:
            return sp.answer is not None
        return key in SPECS and rank(key) <= rank(sp.stage)

    return {key: usage for key, usage in sp.run_metadata.usage.items() if valid(key)}


def _critic(answer: Answer | None) -> CriticSummary | None:
    if answer is None or not answer.attempts:
        return None
    return CriticSummary(
        attempts=len(answer.attempts),
        accepted=answer.accepted,
        retries=answer.retries,
        verdicts=[{k: v for k, v in a.critique.items()} for a in answer.attempts if a.critique],
    )


def describe(sp: SuperPrompt) -> RunMetadata:
    """The record for `sp` (its frontier, valid reports and answer), keeping trace id and valid usage."""
    extras = sp.extras
    retrieval = extras.retrieval if sp.stage is not Stage.RAW else None
    plan = retrieval.plan if retrieval is not None else None
    budgets: dict[str, SectionBudget] = {}
    if extras.a4 is not None and extras.a4.budget is not None:
        budgets["condensed"] = SectionBudget(
            ceiling=extras.a4.budget.ceiling, used=extras.a4.budget.used, dropped=len(extras.a4.dropped_for_budget)
        )
    if extras.build is not None and extras.build.budget is not None:
        budgets["excerpts"] = SectionBudget(
            ceiling=extras.build.budget.ceiling, used=extras.build.budget.used, dropped=len(extras.build.budget.removed)
        )
    selection = extras.preprocess.memory if extras.preprocess is not None else None
    if selection is not None:
        budgets["memory"] = SectionBudget(
            ceiling=selection.budget_ceiling,
            used=selection.budget_used,
            dropped=selection.turns_dropped + selection.snippets_dropped + selection.notes_dropped,
        )
    usage = _valid_usage(sp)
    total = StageUsage()
    for part in usage.values():
        total = total.plus(part)
    return RunMetadata(
        trace_id=sp.run_metadata.trace_id,
        project=extras.project,
        stage=sp.stage.value,
        route=plan.intent if plan is not None else None,
        plan=plan,
        retrieval=RetrievalMode(
            strategy=retrieval.strategy,
            rung=retrieval.rung,
            candidates=len(sp.base_context_chunks),
            confidence=retrieval.confidence,
            attempts=[attempt.strategy for attempt in retrieval.attempts],
            failure=retrieval.failure,
        )
        if retrieval is not None
        else None,
        context_budget=budgets,
        summary_selection=selection,
        critic=_critic(sp.answer),
        usage=usage,
        total=total,
    )


def with_usage(
    sp: SuperPrompt, key: str, usage: StageUsage, trace_id: str | None, accumulate: bool = False
) -> RunMetadata:
    """The record with `key`'s usage set (or, for the answer loop, added) and the trace id kept or set."""
    previous = sp.run_metadata.usage.get(key) if accumulate else None
    spent = previous.plus(usage) if previous is not None else usage
    return sp.run_metadata.model_copy(
        update={"usage": {**sp.run_metadata.usage, key: spent}, "trace_id": trace_id or sp.run_metadata.trace_id}
    )


def summary_lines(meta: RunMetadata) -> list[str]:
    """The record as lines a person reads (`ragstream trace`, the GUI)."""
    lines = [f"run: trace {meta.trace_id or '-'}, project {meta.project or '-'}, stage {meta.stage}"]
    if meta.plan is not None:
        plan = meta.plan
        action = (
            f"retrieve {plan.strategy or 'by the strategy rules'}, {plan.candidates} candidates"
            if plan.retrieve
            else "no retrieval"
        )
        lines.append(
            f"plan: {plan.intent} ({plan.source}, confidence {plan.confidence:.2f}): {action}; {plan.reason}"
            + (f"; escalated: {plan.escalated}" if plan.escalated else "")
        )
    if meta.retrieval is not None:
        r = meta.retrieval
        lines.append(
            f"retrieval: {r.strategy}/{r.rung}, {r.candidates} candidates"
            + (f", confidence {r.confidence:.2f}" if r.confidence is not None else "")
            + (f", re-run with {', '.join(r.attempts[1:])}" if len(r.attempts) > 1 else "")
            + (f", failed: {r.failure}" if r.failure else "")
        )
    for section, budget in meta.context_budget.items():
        lines.append(f"budget {section}: {budget.used}/{budget.ceiling} tokens, {budget.dropped} dropped")
    if meta.summary_selection is not None:
        sel = meta.summary_selection
        lines.append(
            f"memory: {sel.turns_kept} turns, {sel.snippets_kept} summary snippets, {sel.notes_kept} notes kept; "
            f"{sel.turns_dropped + sel.snippets_dropped + sel.notes_dropped} dropped, {sel.echoes_stripped} echoes "
            "stripped"
        )
    if meta.critic is not None:
        last = meta.critic.verdicts[-1] if meta.critic.verdicts else {}
        verdict = (
            f"not judged ({last['not_judged']})"
            if "not_judged" in last
            else "accepted"
            if meta.critic.accepted
            else "not accepted"
        )
        lines.append(f"critic: {verdict} after {meta.critic.attempts} attempt(s)")
    total = meta.total
    lines.append(
        f"usage: {total.calls} LLM calls, {total.tokens_in} tokens in, {total.tokens_out} out, ~${total.cost_usd:.6f}"
        if total.calls
        else "usage: no LLM calls"
    )
    return lines

"""Strict mode (run option `strict`): headers PreProcessing could not map wait for a person's decision.

Right after PreProcessing, the `decide_headers` node interrupts with one entry per unknown header (the
header, a body preview, Agent 00's verdict, the choices) and resumes with
`Command(resume={"decisions": {"<header>": "<CANONICAL>|keep|drop"}})`. The decisions go to Agent 00's
mapping cache (so the same header is not asked again) and PreProcessing runs again with them: they
apply to the segment table, the query pieces and the prompt, and are recorded in
`extras.preprocess.decisions`. Until every unknown header is decided no later stage runs.

Whether a run is strict is part of the thread's state (`extras.preprocess.strict`, recorded by
PreProcessing from the run's options), not of the process that started it: a step or resume from
another process on the same thread meets the same gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict

from ragstream.errors import InputError, StageOrderError
from ragstream.orchestration.apply import apply_output, to_channels
from ragstream.orchestration.review import ask, checked
from ragstream.preprocessing.canonicalize import DROP, KEEP
from ragstream.preprocessing.schema import load_prompt_schema, normalize_header
from ragstream.services import Services, default_services
from ragstream.stages import Stage, preprocess
from ragstream.stages.io import StageEnv
from ragstream.stages.options import RunOptions
from ragstream.state import SuperPrompt
from ragstream.text.previews import preview

DECIDE = "decide_headers"
PREVIEW_CHARS = 300


class HeaderDecisions(BaseModel):
    """A person's answer: one choice per waiting header (its text as shown)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    decisions: dict[str, str]


def waiting_headers(sp: SuperPrompt) -> list[str]:
    """Headers PreProcessing left unmapped that no person has decided on yet."""
    report = sp.extras.preprocess
    return list(report.unknown_attributes) if report is not None and Stage.PREPROCESS in sp.history_of_stages else []


def strict_waiting(sp: SuperPrompt) -> list[str]:
    """The headers a strict run waits on: none unless the thread's own run asked for strict mode."""
    report = sp.extras.preprocess
    return waiting_headers(sp) if report is not None and report.strict else []


def check_decided(sp: SuperPrompt, stage: Stage) -> None:
    """In a strict run a stage after PreProcessing waits until every unknown header is decided."""
    waiting = strict_waiting(sp) if stage is not Stage.PREPROCESS else []
    if waiting:
        raise StageOrderError(
            stage.node, sp.stage.value, f"strict mode: decide the headers PreProcessing could not map first: {waiting}"
        )


def choices(services: Services) -> list[str]:
    return [*load_prompt_schema(services.settings.prompt_schema_path).canon, KEEP, DROP]


def headers_payload(sp: SuperPrompt, services: Services) -> dict[str, Any]:
    pre = sp.preprocessing
    entries = {e.original_header: e for e in pre.canon_entries} if pre is not None else {}
    agent = (
        "Agent 00 found no canonical header for it"
        if services.header_mapper is not None
        else ("Agent 00 is off (preprocessing.use_agent00): only the alias table was asked")
    )
    rows = []
    for header in waiting_headers(sp):
        entry = entries.get(header)
        body = pre.headers[entry.section_index].body if pre is not None and entry is not None else ""
        rows.append(
            {
                "header": header,
                "preview": preview(body, PREVIEW_CHARS),
                "suggestion": "UNKNOWN",
                "reason": agent,
                "choices": choices(services),
            }
        )
    return {
        "kind": "headers",
        "headers": rows,
        "resume": 'Command(resume={"decisions": {"<header>": "<CANONICAL>|keep|drop", ...}})',
    }


def check_decisions(sp: SuperPrompt, services: Services) -> Callable[[HeaderDecisions], None]:
    def check(answer: HeaderDecisions) -> None:
        waiting = waiting_headers(sp)
        strangers = sorted(set(answer.decisions) - set(waiting))
        if strangers:
            raise InputError(f"no header {strangers} waits for a decision; waiting: {waiting}")
        missing = [h for h in waiting if h not in answer.decisions]
        if missing:
            raise InputError(f"decide every waiting header: {missing} are missing")
        allowed = choices(services)
        bad = {h: c for h, c in answer.decisions.items() if c not in allowed}
        if bad:
            raise InputError(f"unknown choices {bad}: use one of {allowed}")

    return check


def decide_node(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    """Ask, cache the decisions, and run PreProcessing again with them."""
    ctx = RunOptions.coerce(runtime.context)
    services = ctx.services or default_services()
    if not waiting_headers(state):
        return {}
    answer = ask(headers_payload(state, services), checked(HeaderDecisions, check_decisions(state, services)))
    for header, decision in answer.decisions.items():
        services.header_cache.store_decision(normalize_header(header), decision)
    # The run stays strict whichever process answers (a resume from another process has its own options).
    output = preprocess.run(state, StageEnv(services, ctx.model_copy(update={"strict": True}), None))
    return to_channels(state, apply_output(state, Stage.PREPROCESS, output))

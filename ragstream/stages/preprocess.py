"""The PreProcessing stage: a new prompt starts a new run (Tasks 1-4, plus the project's memory).

One path: PreProcessing calls a model only through the header mapper (A00), whose offline judgment is the
local provider's (`services.runner`), so the stage has no offline branch of its own.
"""

from __future__ import annotations

from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import FORMAT, LABELS, PROMPT, stage_spec
from ragstream.state import ConversationTurn, Extras, PreprocessReport, SummarySelection, SuperPrompt

SPEC = stage_spec(
    "preprocess",
    "PreProcessing",
    None,
    "PreProcessing starts a new run on a prompt",
    set(),
    {PROMPT, LABELS, FORMAT},
    method="preprocess",
)
REPORT = PreprocessReport


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[PreprocessReport]:
    """The prompt from the run's input (or the thread's own, when re-run), preprocessed, with the headers
    a person decided on (strict mode) as they decided.

    The project's conversation memory, chosen by relevance to the prompt (see `memory.selection`),
    joins the prompt unless the history profile is `none`.
    """
    from ragstream.memory.selection import select_memory
    from ragstream.preprocessing.pipeline import preprocess
    from ragstream.secrets.scan import redacted_in, scan_prompt

    services, ctx = env.services, env.context
    text = env.prompt if env.prompt is not None else sp.raw_prompt
    if isinstance(text, str) and not ctx.prompt_admitted:  # a door that did not redact (the LangGraph server)
        text = scan_prompt(text, services.settings.secrets).text
    done = preprocess(
        text,
        services.settings,
        mapper=services.header_mapper,
        include_undecided=ctx.include_undecided,
        chunker=services.chunker,
        decisions=services.header_cache.decisions(),
    )
    project = ctx.project or sp.extras.project
    memory: list[ConversationTurn] = []
    selection: SummarySelection | None = None
    if project and ctx.history_profile != "none":
        ask = "\n".join(t for t in (done.body.task, done.body.purpose) if t)
        memory, selection = select_memory(
            env.memory, project, ask, services.embedder, services.budget, services.settings.memory
        )
    secrets = [f.to_dict() for f in redacted_in(done.raw_prompt)]
    report = done.report.model_copy(
        update={"memory_turns": len(memory), "secrets_redacted": secrets, "memory": selection, "strict": ctx.strict}
    )
    return StageOutput(
        updates={
            "raw_prompt": done.raw_prompt,
            "body": done.body,
            "preprocessing": done.preprocessing,
            "recent_conversation": memory,
            "extras": Extras(project=project),
        },
        report=report,
    )

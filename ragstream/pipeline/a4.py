"""The A4 Condenser stage: the selection condensed into cited lines within the context budget."""

from __future__ import annotations

from ragstream.agents.a3_nli_gate import asking_parts
from ragstream.agents.a4_condenser import (
    a3_evidence,
    addressed_to_reader,
    condense,
    condense_offline,
    extracted,
    nothing_to_condense,
    render_sctx,
    uncovered,
)
from ragstream.agents.a4_support import SupportCheck
from ragstream.agents.extractive import Evidence
from ragstream.pipeline.a3 import ask_rarity
from ragstream.rendering.ask import normalized_ask
from ragstream.retrieval.chunks import query_pieces
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import A4Report, LLMOutcomes, Stage, SuperPrompt
from ragstream.text.sentences import TYPED, split


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A4Report]:
    by_id = sp.chunk_by_id()
    selection = [by_id[cid] for cid in sp.selection_before(Stage.A4) if cid in by_id]
    services = env.services
    if not selection:  # A3 dropped every candidate: the documents do not cover the ask, and the prompt says so
        missing = uncovered(sp, selection) if sp.extras.a3 is not None and sp.extras.a3.decisions else []
        text = render_sctx({}, missing) if missing else nothing_to_condense(sp)
        return StageOutput(
            updates={"S_CTX_MD": text}, report=A4Report(agent="none (no excerpts)", uncovered=missing), selection=[]
        )
    missing = uncovered(sp, selection)
    # The covered clauses of a multi-part ask are pieces too: a line answering one clause is relevant to it
    # even when the whole sentence, about something the documents lack as well, is not.
    covered = [c for c in asking_parts(sp, services.settings) if not any(c in part for part in missing)]
    pieces = list(dict.fromkeys([q.text for q in query_pieces(sp)] + covered)) or [normalized_ask(sp)]

    parts = asking_parts(sp, services.settings)  # the clauses of the ask, in order: the answer's skeleton
    project = env.context.project or sp.extras.project

    def evidence() -> Evidence:
        return a3_evidence(services.settings.gate, ask_rarity([*pieces, *parts], env, project)[1])

    def offline(why: str = "") -> tuple[str, list[str], A4Report]:
        text, kept, report = condense_offline(
            pieces,
            selection,
            services.embedder,
            services.budget,
            services.settings.condenser,
            missing,
            parts,
            evidence(),
        )
        if why:
            report = report.model_copy(update={"llm": LLMOutcomes(fell_back=1, notes=[why])})
        return text, kept, report

    if services.offline:
        text, kept, report = offline()
    else:

        def weigh(text: str) -> dict[str, float]:
            return ask_rarity([text], env, project)[1]

        check = SupportCheck(services.settings.condenser.support, services.embedder.embed_together, weigh)
        lines, _, _ = extracted(
            pieces, selection, services.embedder, services.budget, services.settings.condenser, parts, evidence()
        )
        extraction = [
            (line.section, line.text, [line.chunk_id]) for line in lines if not addressed_to_reader(line.text)
        ]
        text, kept, report = condense(
            normalized_ask(sp),
            selection,
            services.runner,
            services.budget,
            offline,
            check,
            split(normalized_ask(sp), TYPED) + parts,
            uncovered=missing,
            standing=extraction,
        )
    return StageOutput(updates={"S_CTX_MD": text}, report=report, selection=kept)

"""Prompt Builder: the final prompt's parts, with the excerpts that fit the prompt budget, in Markdown.

Every piece of document-derived text is fenced: the condensed context, and each excerpt in its own
fence that names its source path, chunk id, line range and span (and, for code, its language). A fence
is longer than any run of fence characters inside its text, so no document can close it and pose as
instructions; the system block says so explicitly. The parts are made once (rendering/parts.py);
Markdown and the export styles are serializers of them (rendering/styles.py).
"""

from __future__ import annotations

from ragstream.rendering.excerpts import Sources, whole_excerpts
from ragstream.rendering.parts import head_parts, with_excerpts
from ragstream.rendering.styles import fence, markdown
from ragstream.state import BudgetReport, BuildReport, SuperPrompt
from ragstream.tokens.budget import ContextBudget


def build(sp: SuperPrompt, budget: ContextBudget, sources: Sources | None = None) -> tuple[dict[str, str], BuildReport]:
    """System block, the ask with its output format, and the excerpts that fit the prompt budget (the
    plan's, when it set one), whole (hydrated from `sources`, the project's documents; see
    rendering/excerpts.py). Grounding instructions only when there is something to ground in. The
    condensed context is counted whole; shown, it cites only the excerpts kept (rendering/parts.py).
    Returns the Markdown blocks the state keeps (system_md, prompt_md, attachments_md) and the report."""
    by_id = sp.chunk_by_id()
    selection = [by_id[cid] for cid in sp.final_selection_ids if cid in by_id]
    head = head_parts(sp)
    counted = markdown(head)
    plan = sp.extras.retrieval.plan if sp.extras.retrieval is not None else None
    reserve = sum(budget.count(part) for part in (counted.system, counted.ask, counted.condensed))
    sources = sources or Sources(None, budget.settings)
    kept, trim, records = whole_excerpts(
        selection,
        sources,
        budget,
        fence,
        reserve,
        budget.settings.excerpts,
        ceiling=plan.budget if plan is not None and plan.budget else None,
    )
    shown = with_excerpts(head, kept, {cid for record in records for cid in record.chunks})
    final = markdown(shown)
    blocks = {"system_md": final.system, "prompt_md": final.ask, "attachments_md": final.attachments}
    return blocks, BuildReport(budget=BudgetReport(**trim.as_dict(), method=budget.method), excerpts=records)

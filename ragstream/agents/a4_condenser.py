"""A4 Condenser: the selected chunks, within a token budget, condensed into S_CTX_MD.

S_CTX_MD has three parts (Facts, Constraints, Open issues); every line cites the chunk ids it
rests on. Citations the model gives are checked against the selection; a line without a valid
citation is matched to the chunk that contains it (or shares most words with it), and a line that
matches nothing is dropped as unsupported.
"""

from __future__ import annotations

import re
from typing import Any

from ragstream.agents.agent_factory import AgentFactory
from ragstream.agents.llm_client import LLMClient
from ragstream.orchestration.budget import ContextBudget
from ragstream.prompt_view import normalized_ask, render_prompt
from ragstream.state import Chunk, Stage, SuperPrompt, advance

AGENT = "A4"
SECTIONS = (("facts", "Facts"), ("constraints", "Constraints"), ("open_issues", "Open issues"))
_CITATION = re.compile(r"\[([^\[\]]+)\]")
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def cite(line: str, chunks: list[Chunk]) -> tuple[str, list[str]]:
    """The line without citation brackets, and the selected chunk ids it rests on (maybe none)."""
    ids = {c.id for c in chunks}
    cited = [c for c in _CITATION.findall(line) if c in ids]
    text = " ".join(_CITATION.sub(lambda m: "" if m.group(1) in ids else m.group(0), line).split())
    if cited:
        return text, list(dict.fromkeys(cited))
    flat = " ".join(text.split()).lower()
    containing = [c.id for c in chunks if flat and flat in " ".join(c.text.split()).lower()]
    if containing:
        return text, containing[:1]
    mine = _words(text)
    best = max(chunks, key=lambda c: (len(mine & _words(c.text)), -chunks.index(c)), default=None)
    if best is not None and mine and len(mine & _words(best.text)) / len(mine) >= 0.5:
        return text, [best.id]
    return text, []


def render_sctx(sections: dict[str, list[tuple[str, list[str]]]]) -> str:
    blocks = []
    for key, title in SECTIONS:
        lines = [f"- {text} " + " ".join(f"[{cid}]" for cid in ids) for text, ids in sections.get(key, [])]
        blocks.append(f"### {title}\n" + ("\n".join(lines) if lines else "- none found in the selected excerpts"))
    return "\n\n".join(blocks)


def run_a4(
    sp: SuperPrompt, factory: AgentFactory, llm: LLMClient, budget: ContextBudget, version: str = "v1"
) -> SuperPrompt:
    by_id = sp.chunk_by_id()
    selection = [by_id[cid] for cid in sp.final_selection_ids if cid in by_id]
    ask = normalized_ask(sp)
    kept, trim = budget.fit("a4", selection, key=lambda c: c.id, text=lambda c: c.text, reserve=budget.count(ask))
    payload = {"ask": ask, "excerpts": {c.id: c.text for c in kept}}
    prompt = factory.create(AGENT, version, payload)
    messages, response_format = prompt.compose(payload)
    reply = llm.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)
    written = prompt.parse_and_validate(reply)

    sections: dict[str, list[tuple[str, list[str]]]] = {}
    unsupported: list[str] = []
    seen: set[str] = set()
    for key, _ in SECTIONS:
        for line in written.get(key, []):
            text, ids = cite(line, kept)
            if text in seen:
                continue
            seen.add(text)
            if text and ids:
                sections.setdefault(key, []).append((text, ids))
            elif text:
                unsupported.append(text)
    kept_ids = [c.id for c in kept]
    extras: dict[str, Any] = {
        **sp.extras,
        "a4": {
            "budget": {**trim.as_dict(), "method": budget.method},
            "dropped_for_budget": trim.removed,
            "unsupported_lines": unsupported,
            "agent": f"{AGENT}/{version}",
            "provider": reply.provider,
        },
    }
    updated = sp.model_copy(
        update={
            "S_CTX_MD": render_sctx(sections),
            "final_selection_ids": kept_ids,
            "views_by_stage": {**sp.views_by_stage, Stage.A4.value: kept_ids},
            "extras": extras,
            **advance(sp, Stage.A4),
        }
    )
    return updated.model_copy(update={"prompt_ready": render_prompt(updated)})

"""A3 NLI Gate: keep or drop each candidate chunk against the normalized ask.

Near-duplicates are removed deterministically first (word 5-gram Jaccard similarity), so the
LLM never spends a call on them and the better-ranked copy always survives.
"""

from __future__ import annotations

import re
from typing import Any

from ragstream.agents.agent_factory import AgentFactory
from ragstream.agents.llm_client import LLMClient
from ragstream.prompt_view import normalized_ask, render_prompt
from ragstream.state import Stage, SuperPrompt, advance

AGENT = "A3"
SHINGLE = 5
DUPLICATE_JACCARD = 0.8
_WORD = re.compile(r"\w+")


def shingles(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < SHINGLE:
        return {tuple(words)}
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def near_duplicates(texts: list[tuple[str, str]]) -> dict[str, str]:
    """id -> id of the earlier (better-ranked) chunk it duplicates."""
    kept: list[tuple[str, set[tuple[str, ...]]]] = []
    dupes: dict[str, str] = {}
    for cid, text in texts:
        mine = shingles(text)
        for other_id, other in kept:
            union = len(mine | other)
            if union and len(mine & other) / union >= DUPLICATE_JACCARD:
                dupes[cid] = other_id
                break
        else:
            kept.append((cid, mine))
    return dupes


def run_a3(sp: SuperPrompt, factory: AgentFactory, llm: LLMClient, version: str = "v1") -> SuperPrompt:
    chunks = sp.chunk_by_id()
    candidates = [cid for cid in sp.final_selection_ids if cid in chunks]
    dupes = near_duplicates([(cid, chunks[cid].text) for cid in candidates])
    ask = normalized_ask(sp)
    decisions: dict[str, dict[str, Any]] = {}
    for cid in candidates:
        if cid in dupes:
            decisions[cid] = {"decision": "drop_duplicate", "reason": f"near-duplicate of {dupes[cid]}"}
            continue
        payload = {"ask": ask, "passage": chunks[cid].text}
        prompt = factory.create(AGENT, version, payload)
        messages, response_format = prompt.compose(payload)
        reply = llm.call(prompt.model_name, messages, response_format, prompt.temperature, prompt.max_output_tokens)
        decision = prompt.parse_and_validate(reply)["decision"]
        decisions[cid] = {"decision": decision, "reason": f"{reply.provider}:{reply.model}"}
    kept = [cid for cid in candidates if decisions[cid]["decision"] == "keep"]
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d["decision"]] = counts.get(d["decision"], 0) + 1
    extras = {**sp.extras, "a3": {"decisions": decisions, "counts": counts, "agent": f"{AGENT}/{version}"}}
    updated = sp.model_copy(
        update={
            "views_by_stage": {**sp.views_by_stage, Stage.A3.value: kept},
            "final_selection_ids": kept,
            "extras": extras,
            **advance(sp, Stage.A3),
        }
    )
    return updated.model_copy(update={"prompt_ready": render_prompt(updated)})

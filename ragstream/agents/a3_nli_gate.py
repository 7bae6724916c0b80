"""A3 NLI Gate: keep or drop each candidate chunk against the normalized ask.

Near-duplicates are removed deterministically first (word 5-gram Jaccard similarity), so the
LLM never spends a call on them and the better-ranked copy always survives.
"""

from __future__ import annotations

import re

from ragstream.agents.runner import AgentRunner
from ragstream.prompt_view import normalized_ask
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.stages import Stage
from ragstream.state import A3Report, Chunk, ChunkDecision, SuperPrompt

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


def gate(ask: str, candidates: list[Chunk], runner: AgentRunner, version: str = "v1") -> tuple[list[str], A3Report]:
    """The candidates kept for the ask (in their order), with one decision and reason per candidate."""
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    judged = [c for c in candidates if c.id not in dupes]
    calls = runner.run_many(AGENT, [{"ask": ask, "passage": c.text} for c in judged], version)
    decisions = {cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}") for cid, other in dupes.items()}
    for chunk, call in zip(judged, calls):
        decisions[chunk.id] = ChunkDecision(decision=call.output["decision"], reason=call.source)
    kept = [c.id for c in candidates if decisions[c.id].decision == "keep"]
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    report = A3Report(agent=f"{AGENT}/{version}", provider=runner.provider_name,
                      decisions={c.id: decisions[c.id] for c in candidates}, counts=counts)
    return kept, report


def stage(sp: SuperPrompt, env: StageEnv) -> StageOutput:
    chunks = sp.chunk_by_id()
    candidates = [chunks[cid] for cid in sp.selection_before(Stage.A3) if cid in chunks]
    kept, report = gate(normalized_ask(sp), candidates, env.services.runner)
    return StageOutput(report=report, selection=kept)

"""A3 NLI Gate: keep or drop each candidate chunk against the normalized ask.

Near-duplicates are removed deterministically first (word 5-gram Jaccard similarity), so the
LLM never spends a call on them and the better-ranked copy always survives. With an LLM, each
remaining candidate is judged by the A3 agent (concurrently, results in input order), which gives its
reason; the offline evidence below is weighed too, decides a candidate whose reply stays invalid, and
overrules the model by a stated rule when it drops every candidate the evidence rates relevant.
Offline, the gate decides from evidence the pipeline already has, calibrated against the best candidate:

- the best cosine similarity of the chunk's stored embedding to the prompt's query pieces ("meaning":
  what retrieval measured), and
- the share of the query pieces' content terms (stemmed, function words removed) the chunk contains
  ("words").

A candidate is dropped when it shares no term with the ask and its cosine is under
`gate.min_similarity`, or when it is below `gate.meaning_floor` of the best candidate's cosine and
below `gate.words_floor` of its shared terms. Every decision records these numbers as its reason.
"""

from __future__ import annotations

import re

import numpy as np

from ragstream.agents.runner import FELL_BACK, AgentRunner
from ragstream.context.telemetry import emit
from ragstream.ingestion.snapshot import bm25_tokens
from ragstream.settings import GateSettings
from ragstream.prompt_view import normalized_ask
from ragstream.retrieval.stage import query_pieces
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.stages import Stage
from ragstream.state import A3Report, Chunk, ChunkDecision, LLMOutcomes, SuperPrompt

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


def gate(
    ask: str, candidates: list[Chunk], runner: AgentRunner, evidence: A3Report, best: str | None = None, version: str = "v1"
) -> tuple[list[str], A3Report]:
    """The candidates the model keeps for the ask (in their order), each decision with the model's reason.

    `evidence` is the offline gate's report on the same candidates and `best` the candidate it rates
    closest to the ask. A candidate whose reply stays invalid takes the offline decision. Two stated
    rules overrule the model, and the report says when: if it drops every candidate the offline
    evidence keeps, those are kept; and the best candidate is not dropped as merely irrelevant (a
    conflict the model names stands). A weak judge alone never leaves the prompt without its best
    grounding.
    """
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    judged = [c for c in candidates if c.id not in dupes]

    def offline(i: int, error: Exception) -> dict[str, str]:
        found = evidence.decisions[judged[i].id]
        return {"decision": found.decision, "reason": f"offline evidence: {found.reason}"}

    calls = runner.run_many(AGENT, [{"ask": ask, "passage": c.text} for c in judged], version, fallback=offline)
    decisions = {cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}") for cid, other in dupes.items()}
    for chunk, call in zip(judged, calls):
        why = call.output.get("reason") or "no reason given"
        source = "offline fallback" if call.outcome == FELL_BACK else call.source
        decisions[chunk.id] = ChunkDecision(decision=call.output["decision"], reason=f"{why} ({source})")
    overruled = ""
    relevant = [c.id for c in judged if evidence.decisions[c.id].decision == "keep"]
    if relevant and all(decisions[cid].decision != "keep" for cid in relevant):
        overruled = (f"the model dropped all {len(relevant)} candidates the offline evidence rates relevant; "
                     "rule: those are kept, so the prompt is not left without grounding on the model's word alone")
    elif best in relevant and decisions[best].decision == "drop_irrelevant":
        relevant = [best]
        overruled = (f"the model called {best}, the candidate the offline evidence rates closest to the ask, "
                     "irrelevant; rule: the best candidate is kept unless the model names a conflict")
    if overruled:
        for cid in relevant:
            if decisions[cid].decision != "keep":
                decisions[cid] = ChunkDecision(decision="keep", reason=f"kept by rule (model: {decisions[cid].reason}); "
                                                                        f"offline evidence: {evidence.decisions[cid].reason}")
        emit({"event": "stage_warning", "stage": "a3", "message": overruled})
    kept = [c.id for c in candidates if decisions[c.id].decision == "keep"]
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    report = A3Report(agent=f"{AGENT}/{version}", provider=runner.provider_name,
                      decisions={c.id: decisions[c.id] for c in candidates}, counts=counts,
                      llm=LLMOutcomes.of(calls), overruled=overruled)
    return kept, report


def weigh(
    pieces: list[str], candidates: list[Chunk], vectors: np.ndarray, piece_vectors: np.ndarray, settings: GateSettings
) -> tuple[list[str], A3Report]:
    """The offline gate: keep/drop from meaning and shared words, relative to the best candidate.

    `pieces` are the prompt's query pieces (what retrieval searched with): meaning is a chunk's best
    cosine to any of them, words are the content terms it shares with all of them.
    """
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    ask_terms = set(bm25_tokens([" ".join(pieces)])[0]) - set(bm25_tokens([" ".join(settings.function_words)])[0])
    judged = [i for i, c in enumerate(candidates) if c.id not in dupes]
    cosine = (vectors @ piece_vectors.T).max(axis=1) if len(candidates) and len(piece_vectors) else np.zeros(len(candidates))
    shared = [sorted(ask_terms & set(bm25_tokens([c.text])[0])) for c in candidates]
    coverage = [len(s) / len(ask_terms) if ask_terms else 0.0 for s in shared]
    best_cosine = max((float(cosine[i]) for i in judged), default=0.0)
    best_coverage = max((coverage[i] for i in judged), default=0.0)
    decisions = {cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}") for cid, other in dupes.items()}
    for i in judged:
        c, words = float(cosine[i]), coverage[i]
        rel_c = c / best_cosine if best_cosine > 0 else 0.0
        rel_w = words / best_coverage if best_coverage > 0 else 0.0
        evidence = (f"cosine {c:.2f} ({rel_c:.2f} of best), shares {len(shared[i])}/{len(ask_terms)} ask terms"
                    + (f" ({', '.join(shared[i][:6])})" if shared[i] else ""))
        if not shared[i] and c < settings.min_similarity:
            decision, why = "drop_irrelevant", f"no shared term and cosine under {settings.min_similarity:g}"
        elif rel_c < settings.meaning_floor and rel_w < settings.words_floor:
            decision, why = "drop_irrelevant", (
                f"under {settings.meaning_floor:g} of the best candidate's meaning and {settings.words_floor:g} of its words"
            )
        else:
            decision, why = "keep", "close enough to the best candidate in meaning or words"
        decisions[candidates[i].id] = ChunkDecision(decision=decision, reason=f"{evidence}: {why}")
    kept = [c.id for c in candidates if decisions[c.id].decision == "keep"]
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    report = A3Report(agent="offline evidence (no model)", provider="local",
                      decisions={c.id: decisions[c.id] for c in candidates}, counts=counts)
    return kept, report


def candidate_vectors(sp: SuperPrompt, candidates: list[Chunk], env: StageEnv) -> np.ndarray:
    """Stored embeddings of the candidates (history turns, which the store does not hold, are embedded)."""
    services = env.services
    project = env.context.project or sp.extras.project
    stored = services.retrieval(project).snapshot().vectors_of([c.id for c in candidates]) if project else {}
    missing = [c for c in candidates if c.id not in stored]
    fresh = dict(zip((c.id for c in missing), services.embedder.embed([c.text for c in missing])))
    return np.asarray([stored.get(c.id, fresh.get(c.id)) for c in candidates], dtype=np.float32).reshape(len(candidates), -1)


def stage(sp: SuperPrompt, env: StageEnv) -> StageOutput:
    chunks = sp.chunk_by_id()
    candidates = [chunks[cid] for cid in sp.selection_before(Stage.A3) if cid in chunks]
    ask = normalized_ask(sp)
    if not candidates:  # the plan retrieved nothing, or retrieval failed and the run continues
        return StageOutput(report=A3Report(agent="none (no candidates)"), selection=[])
    pieces = [q.text for q in query_pieces(sp)] or [ask]
    vectors = candidate_vectors(sp, candidates, env)
    piece_vectors = env.services.embedder.embed(pieces)
    kept, report = weigh(pieces, candidates, vectors, piece_vectors, env.services.settings.gate)
    if not env.services.offline:
        ids = [c.id for c in candidates]
        cosine = (vectors @ piece_vectors.T).max(axis=1) if kept else []
        best = max(kept, key=lambda cid: float(cosine[ids.index(cid)]), default=None)
        kept, report = gate(ask, candidates, env.services.runner, report, best)
    return StageOutput(report=report, selection=kept)

"""A3 NLI Gate: keep or drop each candidate chunk against the normalized ask.

Near-duplicates are removed deterministically first (word 5-gram Jaccard similarity), so the
LLM never spends a call on them and the better-ranked copy always survives. With an LLM, each
remaining candidate is judged by the A3 agent (concurrently, results in input order), which gives its
reason; the offline evidence below is weighed too, decides a candidate whose reply stays invalid, and
overrules the model by a stated rule when it drops every candidate the evidence rates relevant.
Offline, the gate decides from absolute evidence the pipeline already has, never relative to the best
candidate (a ratio keeps the best of a bad lot, so an ask the documents do not cover still got "evidence"):

- the best cosine similarity of the chunk's stored embedding to the prompt's query pieces ("meaning":
  what retrieval measured), and
- the share of the ask's content-term weight the chunk holds ("words"), each term weighted by its
  rarity in the project (idf), so a name on every page is no evidence.

A candidate under `gate.min_similarity` is dropped; otherwise it is kept when its evidence, cosine +
`gate.words_weight` x words, reaches `gate.min_evidence` (so strong meaning, or fair meaning with the
ask's distinctive words, keeps it). bench/gate_eval.py measures the thresholds on SciFact. Every decision records these
numbers as its reason. Offline, the report also
names the parts of the ask (its asking sentences, or words no document contains) that no kept chunk
covers: A4 turns them into Open issues and the Prompt Builder tells the model to say so.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ragstream.agents.runner import FELL_BACK, AgentRunner
from ragstream.ingestion.snapshot import bm25_tokens
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.prompt_view import normalized_ask
from ragstream.settings import GateSettings, Settings
from ragstream.state import A3Report, Chunk, ChunkDecision, LLMOutcomes, SuperPrompt
from ragstream.telemetry.events import emit
from ragstream.text.asking import asking_sentences

AGENT = "A3"
SHINGLE = 5
DUPLICATE_JACCARD = 0.8
_WORD = re.compile(r"\w+")
_NAME = re.compile(r"(?<=\w[ ,;:(])[A-Z][\w.+-]*\w")  # a capitalized word that does not open the sentence


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
            shared = len(mine & other)
            union = len(mine) + len(other) - shared  # no union set built: this loop is quadratic in candidates
            if union and shared / union >= DUPLICATE_JACCARD:
                dupes[cid] = other_id
                break
        else:
            kept.append((cid, mine))
    return dupes


def gate(
    ask: str,
    candidates: list[Chunk],
    runner: AgentRunner,
    evidence: A3Report,
    best: str | None = None,
    version: str = "v1",
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
    decisions = {
        cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}")
        for cid, other in dupes.items()
    }
    for chunk, call in zip(judged, calls, strict=False):
        why = call.output.get("reason") or "no reason given"
        source = "offline fallback" if call.outcome == FELL_BACK else call.source
        decisions[chunk.id] = ChunkDecision(decision=call.output["decision"], reason=f"{why} ({source})")
    overruled = ""
    relevant = [c.id for c in judged if evidence.decisions[c.id].decision == "keep"]
    if relevant and all(decisions[cid].decision != "keep" for cid in relevant):
        overruled = (
            f"the model dropped all {len(relevant)} candidates the offline evidence rates relevant; "
            "rule: those are kept, so the prompt is not left without grounding on the model's word alone"
        )
    elif best in relevant and decisions[best].decision == "drop_irrelevant":
        relevant = [best]
        overruled = (
            f"the model called {best}, the candidate the offline evidence rates closest to the ask, "
            "irrelevant; rule: the best candidate is kept unless the model names a conflict"
        )
    if overruled:
        for cid in relevant:
            if decisions[cid].decision != "keep":
                decisions[cid] = ChunkDecision(
                    decision="keep",
                    reason=f"kept by rule (model: {decisions[cid].reason}); "
                    f"offline evidence: {evidence.decisions[cid].reason}",
                )
        emit({"event": "stage_warning", "stage": "a3", "message": overruled})
    kept = [c.id for c in candidates if decisions[c.id].decision == "keep"]
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    report = A3Report(
        agent=f"{AGENT}/{version}",
        provider=runner.provider_name,
        decisions={c.id: decisions[c.id] for c in candidates},
        counts=counts,
        llm=LLMOutcomes.of(calls),
        overruled=overruled,
    )
    return kept, report


def stemmed_terms(text: str, settings: GateSettings) -> set[str]:
    """Content terms (stemmed, function words removed), as BM25 indexes them."""
    return set(bm25_tokens([text])[0]) - _function_stems(tuple(settings.function_words))


@functools.lru_cache(maxsize=8)
def _function_stems(words: tuple[str, ...]) -> frozenset[str]:
    """The configured function words as BM25 stems (tokenized once per configuration, not per term set)."""
    return frozenset(bm25_tokens([" ".join(words)])[0])


def rarity_of(frequency: dict[str, int], chunks: int) -> dict[str, float]:
    """BM25 idf of each term over the project's chunks: a word on every page (the product's own name)
    weighs next to nothing as evidence; a word on no page weighs most."""
    return {t: float(np.log(1 + (chunks - n + 0.5) / (n + 0.5))) for t, n in frequency.items()}


def _word_share(terms: set[str], found: set[str], rarity: dict[str, float]) -> float:
    """The share of the terms' weight (idf) found: the product's name, on every page, counts for little."""
    total = sum(rarity.get(t, 0.0) for t in terms)
    return sum(rarity.get(t, 0.0) for t in terms & found) / total if total > 0 else 0.0


def _judge(cosine: float, words: float, settings: GateSettings) -> tuple[bool, str]:
    if cosine < settings.min_similarity:
        return False, f"cosine under {settings.min_similarity:g}"
    evidence = cosine + settings.words_weight * words
    if evidence >= settings.min_evidence:
        return True, f"evidence {evidence:.2f} at least {settings.min_evidence:g}"
    return False, f"evidence {evidence:.2f} under {settings.min_evidence:g}"


def weigh(
    pieces: list[str],
    candidates: list[Chunk],
    vectors: np.ndarray,
    piece_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float] | None = None,
) -> tuple[list[str], A3Report]:
    """The offline gate: keep/drop each candidate from absolute evidence, the same for every corpus.

    `pieces` are the prompt's query pieces (what retrieval searched with): meaning is a chunk's best
    cosine to any of them; words are the largest share of one piece's content-term weight the chunk
    holds, each term weighted by its rarity in the project (`Snapshot.rarity`; equal weights without one). Neither
    is relative to the best candidate, so when nothing is relevant nothing is kept.
    """
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    piece_terms = [stemmed_terms(p, settings) for p in pieces]
    ask_terms = set().union(*piece_terms)
    rarity = rarity if rarity is not None else dict.fromkeys(ask_terms, 1.0)
    judged = [i for i, c in enumerate(candidates) if c.id not in dupes]
    cosine = (
        (vectors @ piece_vectors.T).max(axis=1) if len(candidates) and len(piece_vectors) else np.zeros(len(candidates))
    )
    decisions = {
        cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}")
        for cid, other in dupes.items()
    }
    tokens = bm25_tokens([candidates[i].text for i in judged])  # one call: bm25s pays a fixed cost per call
    for i, held in zip(judged, tokens, strict=True):
        shared = sorted(ask_terms & set(held))
        words = max((_word_share(terms, set(shared), rarity) for terms in piece_terms), default=0.0)
        keep, why = _judge(float(cosine[i]), words, settings)
        evidence = f"cosine {float(cosine[i]):.2f}, {words:.2f} of the ask's word weight" + (
            f" ({', '.join(shared[:6])})" if shared else ""
        )
        decisions[candidates[i].id] = ChunkDecision(
            decision="keep" if keep else "drop_irrelevant", reason=f"{evidence}: {why}"
        )
    kept = [c.id for c in candidates if decisions[c.id].decision == "keep"]
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    report = A3Report(
        agent="offline evidence (no model)",
        provider="local",
        decisions={c.id: decisions[c.id] for c in candidates},
        counts=counts,
    )
    return kept, report


def uncovered_parts(
    parts: list[str],
    part_vectors: np.ndarray,
    kept: list[Chunk],
    kept_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float],
    absent: set[str],
) -> list[str]:
    """The parts of the ask (its asking sentences) no kept chunk covers, judged like a candidate; then,
    in covered parts, names (capitalized inside a sentence, as the user wrote them) no document contains."""
    if not kept:
        return list(parts)
    texts = [set(tokens) for tokens in bm25_tokens([c.text for c in kept])]
    cosine = part_vectors @ kept_vectors.T
    missing: list[str] = []
    for p, part in enumerate(parts):
        terms = stemmed_terms(part, settings)
        if not any(
            _judge(float(cosine[p, k]), _word_share(terms, texts[k], rarity), settings)[0] for k in range(len(kept))
        ):
            missing.append(part)
            continue
        for word in dict.fromkeys(_NAME.findall(part)):
            stems = stemmed_terms(word, settings)
            if stems and stems <= absent:
                missing.append(word)
    return missing


def asking_parts(sp: SuperPrompt, settings: Settings) -> list[str]:
    """The sentences of the task that ask for something (each judged for coverage); the task when none does."""
    task = sp.body.task or normalized_ask(sp)
    openers = load_prompt_schema(settings.prompt_schema_path).ask_openers
    found = asking_sentences(task, openers)
    return found or [" ".join(task.split())]

"""A3 NLI Gate: keep or drop each candidate chunk against the normalized ask.

Near-duplicates are removed deterministically first (word 5-gram Jaccard similarity), so the
LLM never spends a call on them and the better-ranked copy always survives. With an LLM, the offline
evidence below is weighed first and the model decides only within its band: a candidate with strong
evidence is kept and one with weak evidence keeps its offline decision, unasked; the rest are judged by
the A3 agent a few passages per call (a verdict and a reason per numbered passage). A passage without a
valid verdict takes the offline decision, and a stated rule keeps the offline choice when the model
would leave nothing kept.
Offline, the gate decides from absolute evidence the pipeline already has, never relative to the best
candidate (a ratio keeps the best of a bad lot, so an ask the documents do not cover still got "evidence").
The ask is taken apart first: the query pieces, and each asking clause of the task (a multi-part
question is several asks, canonicalize.clauses), so a chunk that answers one clause is evidence for it
even when the other clause is about something no document covers. For each piece:

- the cosine similarity of the chunk's stored embedding to the piece ("meaning": what retrieval
  measured), and
- the share of the piece's content-term weight the chunk holds ("words"), each term weighted by its
  rarity in the project (idf), so a name on every page is no evidence.

A piece under `gate.min_similarity` is no evidence; otherwise the chunk is kept when its evidence for
the piece, cosine + `gate.words_weight` x words, reaches `gate.min_evidence` (so strong meaning, or fair
meaning with the ask's distinctive words, keeps it). A dropped candidate is also kept when a kept chunk
names its file in words about the ask (documents point to each other; the pointer is evidence the
text may lack). bench/gate_eval.py measures the thresholds on SciFact, `ragstream eval` on the
documentation sets of the quality suite. Every decision records these numbers, and the piece, as its
reason. Offline, the report also names the clauses of the ask (or words no document contains) that no
kept chunk covers: A4 turns them into Open issues and the Prompt Builder tells the model to say so.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ragstream.agents.runner import FELL_BACK, AgentCall, AgentRunner
from ragstream.ingestion.snapshot import Snapshot, bm25_tokens
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.rendering.ask import normalized_ask
from ragstream.settings import GateSettings, Settings
from ragstream.state import A3Report, Chunk, ChunkDecision, LLMOutcomes, SuperPrompt
from ragstream.telemetry.events import emit
from ragstream.text.asking import clauses
from ragstream.text.sentences import MARKDOWN, split

AGENT = "A3"
SHINGLE = 5
DUPLICATE_JACCARD = 0.8
_WORD = re.compile(r"\w+")
_NAME = re.compile(r"(?<=\w[ ,;:(])[A-Z][\w.+-]*\w")  # a capitalized word that does not open the sentence
# A word shaped like a name whatever its case: an inner capital, a digit, or an inner - _ . (gRPC, i18next,
# cargo-tarpaulin, vercel.json): users write tools and files this way, and a corpus that never holds one
# does not cover it.
_IDENTIFIER = re.compile(
    r"(?<![\w.+-])(?=[\w.+-]*(?:[a-z][A-Z]|\d|[A-Za-z0-9][-_.][A-Za-z]))[A-Za-z_][\w.+-]*[A-Za-z0-9]"
)


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


def _band(score: float, settings: GateSettings) -> str:
    """Where a candidate's offline evidence puts it: 'strong' (kept unasked), 'weak' (the offline decision
    stands unasked) or 'model' (the model decides)."""
    if score >= settings.strong_evidence:
        return "strong"
    return "model" if score >= settings.weak_evidence else "weak"


def _verdicts(call: AgentCall, size: int) -> dict[int, dict[str, str]]:
    """The batch's verdicts by passage number (1-based); a number outside the batch or given twice counts once."""
    found: dict[int, dict[str, str]] = {}
    for verdict in call.output.get("verdicts", []):
        if 1 <= verdict["n"] <= size and verdict["n"] not in found:
            found[verdict["n"]] = verdict
    return found


def gate(
    ask: str,
    candidates: list[Chunk],
    runner: AgentRunner,
    weighed: Weighed,
    settings: GateSettings,
    version: str = "v2",
) -> tuple[list[str], A3Report]:
    """The candidates kept with a model: it decides only within the evidence band, in batched calls.

    `weighed` is the offline gate's finding on the same candidates. A candidate whose evidence reaches
    `gate.strong_evidence` is kept and one under `gate.weak_evidence` keeps its offline decision, neither
    sent to the model: a small model's word never outweighs strong evidence either way. The others go to the
    A3 agent `gate.model_batch` at a time (one call per batch, a verdict per numbered passage with its
    reason); a passage the reply gives no verdict for, or a batch whose reply stays invalid, takes the
    offline decision. One stated rule overrules the model, and the report says so: when it drops every
    candidate it was asked about that the offline evidence keeps, those are kept beside whatever it chose
    (a small model that calls every answering passage irrelevant, and keeps an off-topic one or leaves
    only what strong evidence or a fallback kept, is not a second opinion on them). `judged_by`
    records who decided each candidate. Kept ids come in the offline order (best evidence first), then the
    model's additions in retrieval order.
    """
    evidence = weighed.report
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    judged = [c for c in candidates if c.id not in dupes]
    decisions = {
        cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}")
        for cid, other in dupes.items()
    }
    judged_by = dict.fromkeys(dupes, "duplicate")
    asked: list[Chunk] = []
    for chunk in judged:
        offline = evidence.decisions[chunk.id]
        band = _band(weighed.evidence.get(chunk.id, 0.0), settings)
        if band == "model":
            asked.append(chunk)
            continue
        judged_by[chunk.id] = f"evidence ({band})"
        note = "strong evidence, kept without asking the model" if band == "strong" else "weak evidence, not asked"
        decisions[chunk.id] = ChunkDecision(
            decision="keep" if band == "strong" else offline.decision, reason=f"{note}: {offline.reason}"
        )
    batches = [asked[i : i + settings.model_batch] for i in range(0, len(asked), settings.model_batch)]

    def offline_batch(i: int, error: Exception) -> dict[str, Any]:
        return {
            "verdicts": [
                {"n": n, "decision": evidence.decisions[c.id].decision, "reason": "offline evidence"}
                for n, c in enumerate(batches[i], 1)
            ]
        }

    payloads = [
        {"ask": ask, "passages": [{"n": n, "passage": c.text} for n, c in enumerate(batch, 1)]} for batch in batches
    ]
    calls = runner.run_many(AGENT, payloads, version, fallback=offline_batch)
    for batch, call in zip(batches, calls, strict=True):
        verdicts = _verdicts(call, len(batch))
        for n, chunk in enumerate(batch, 1):
            offline = evidence.decisions[chunk.id]
            verdict = verdicts.get(n)
            if call.outcome == FELL_BACK or verdict is None:
                why = "the model's reply was invalid" if call.outcome == FELL_BACK else "the model gave no verdict"
                judged_by[chunk.id] = "offline fallback"
                decisions[chunk.id] = ChunkDecision(
                    decision=offline.decision, reason=f"{why}; offline evidence: {offline.reason}"
                )
                continue
            judged_by[chunk.id] = "model"
            reason = verdict["reason"].strip() or "no reason given"
            decisions[chunk.id] = ChunkDecision(
                decision=verdict["decision"],
                reason=f"{reason} ({call.source}; offline evidence: {offline.reason})",
            )
    overruled = ""
    relevant = [c.id for c in judged if evidence.decisions[c.id].decision == "keep" and judged_by[c.id] == "model"]
    if relevant and all(decisions[cid].decision != "keep" for cid in relevant):
        overruled = (
            f"the model dropped all {len(relevant)} candidates it was asked about that the offline evidence rates "
            "relevant; rule: those are kept, so the prompt is not left without grounding on the model's word alone"
        )
        for cid in relevant:
            judged_by[cid] = "model, overruled by rule"
            decisions[cid] = ChunkDecision(decision="keep", reason=f"kept by rule (model: {decisions[cid].reason})")
        emit({"event": "stage_warning", "stage": "a3", "message": overruled})
    order = {cid: i for i, cid in enumerate(weighed.kept)}
    position = {c.id: i for i, c in enumerate(candidates)}
    kept = sorted(
        (c.id for c in candidates if decisions[c.id].decision == "keep"),
        key=lambda cid: (order.get(cid, len(order)), position[cid]),
    )
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
        judged_by={c.id: judged_by[c.id] for c in candidates},
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


@dataclass(frozen=True)
class Weighed:
    """The offline gate's finding: kept ids (closest first), the report, and per judged candidate its evidence
    and the cosine to the piece that earned it."""

    kept: list[str]
    report: A3Report
    evidence: dict[str, float]
    cosine: dict[str, float]


def weigh_all(
    pieces: list[str],
    candidates: list[Chunk],
    vectors: np.ndarray,
    piece_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float] | None = None,
) -> Weighed:
    """The offline gate: keep/drop each candidate from absolute evidence, the same for every corpus.

    `pieces` are what the chunk may answer: the prompt's query pieces (what retrieval searched with) and
    each asking clause. A chunk's evidence for a piece is its cosine to it plus `gate.words_weight` x the
    share of the piece's content-term weight the chunk holds, each term weighted by its rarity in the
    project (`Snapshot.rarity`; equal weights without one); its evidence is that of its best piece, so a
    chunk that answers one clause of a multi-part ask is kept for that clause. Neither measure is
    relative to the best candidate, so when nothing is relevant nothing is kept. Kept ids come closest
    first (the cosine to the piece that earned the keep), since A4 and the Prompt Builder fill their
    budgets in that order: the word share decides whether a chunk is on topic, but it saturates (every
    chunk naming the ask's rare words holds all of it), so meaning ranks (on the quality suite's docs,
    the answering file is first for 30 of 35 covered asks this way, 29 by evidence, 26 by retrieval's order).
    """
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    piece_terms = [stemmed_terms(p, settings) for p in pieces]
    ask_terms = set().union(*piece_terms)
    rarity = rarity if rarity is not None else dict.fromkeys(ask_terms, 1.0)
    judged = [i for i, c in enumerate(candidates) if c.id not in dupes]
    cosine = vectors @ piece_vectors.T if len(candidates) and len(piece_vectors) else np.zeros((len(candidates), 1))
    decisions = {
        cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}")
        for cid, other in dupes.items()
    }
    scores: dict[str, float] = {}
    meaning: dict[str, float] = {}
    tokens = bm25_tokens([candidates[i].text for i in judged])  # one call: bm25s pays a fixed cost per call
    for i, held in zip(judged, tokens, strict=True):
        shared = sorted(ask_terms & set(held))
        words = [_word_share(terms, set(shared), rarity) for terms in piece_terms] or [0.0]
        score = [float(cosine[i, p]) + settings.words_weight * words[p] for p in range(len(words))]
        valid = [p for p in range(len(words)) if cosine[i, p] >= settings.min_similarity]
        best = max(valid, key=lambda p: score[p]) if valid else int(np.argmax(cosine[i, : len(words)]))
        keep, why = _judge(float(cosine[i, best]), words[best], settings)
        scores[candidates[i].id], meaning[candidates[i].id] = score[best], float(cosine[i, best])
        evidence = f"cosine {float(cosine[i, best]):.2f}, {words[best]:.2f} of the ask's word weight" + (
            f" ({', '.join(shared[:6])})" if shared else ""
        )
        part = f" for '{_shorten(pieces[best])}'" if len(pieces) > 1 else ""
        decisions[candidates[i].id] = ChunkDecision(
            decision="keep" if keep else "drop_irrelevant", reason=f"{evidence}{part}: {why}"
        )
    kept = sorted((c.id for c in candidates if decisions[c.id].decision == "keep"), key=lambda cid: -meaning[cid])
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    report = A3Report(
        agent="offline evidence (no model)",
        provider="local",
        decisions={c.id: decisions[c.id] for c in candidates},
        counts=counts,
    )
    return Weighed(kept, report, scores, meaning)


def null_evidence(
    snapshot: Snapshot,
    embed: Callable[[list[str]], np.ndarray],
    questions: list[str],
    settings: GateSettings,
) -> list[float]:
    """Each off-topic question's best evidence on this corpus: its dense and BM25 hits (`gate.null_hits`
    each) judged as candidates, exactly as `weigh_all` judges a prompt's. What a question the corpus does not
    treat still finds here: a corpus of how-to pages answers any "how do I" a little, code answers any
    question that names a common identifier."""
    if not questions or not snapshot.chunks or snapshot.vectors is None:
        return []
    asked = embed(questions)
    if snapshot.dense_fault(asked.shape[1]):  # a damaged index calibrates nothing: the absolute floor stands
        return []
    terms = set().union(*(stemmed_terms(q, settings) for q in questions))
    rarity = rarity_of(snapshot.document_frequency(terms), len(snapshot.chunks))
    best: list[float] = []
    for question, vector in zip(questions, asked, strict=True):
        hits = [cid for cid, _ in snapshot.vector_search(vector, settings.null_hits)]
        hits += [cid for cid, _ in snapshot.bm25_search(question, settings.null_hits)]
        candidates = [snapshot.chunk(cid) for cid in dict.fromkeys(hits)]
        stored = snapshot.vectors_of([c.id for c in candidates])
        vectors = np.asarray([stored[c.id] for c in candidates], dtype=np.float32).reshape(len(candidates), -1)
        found = weigh_all([question], candidates, vectors, np.asarray([vector]), settings, rarity)
        best.append(max(found.evidence.values(), default=0.0))
    return best


@dataclass(frozen=True)
class Calibration:
    """The evidence a chunk needs on this corpus: above what questions it does not treat reach here (the null's
    median plus `gate.null_z` robust spreads), never under the absolute `gate.min_evidence`."""

    min_evidence: float
    median: float = 0.0
    spread: float = 0.0
    questions: int = 0

    def describe(self) -> str:
        if not self.questions:
            return f"absolute: min evidence {self.min_evidence:.2f} (no off-topic calibration)"
        return (
            f"off-topic questions ({self.questions}) reach evidence {self.median:.2f} (median, spread "
            f"{self.spread:.2f}) on this corpus: min evidence {self.min_evidence:.2f}"
        )


def calibrated(null: list[float], settings: GateSettings) -> Calibration:
    """The corpus's threshold from its null evidence (median and 1.4826 x median absolute deviation: a few
    off-topic questions that happen to be on topic here do not move it)."""
    if not null:
        return Calibration(settings.min_evidence)
    median = statistics.median(null)
    spread = max(1.4826 * statistics.median(abs(x - median) for x in null), settings.null_min_spread)
    return Calibration(max(settings.min_evidence, median + settings.null_z * spread), median, spread, len(null))


_NULLS: dict[tuple[str, int, str], list[float]] = {}
_NULLS_LOCK = threading.Lock()
NULL_FILE = "a3_null.json"


def corpus_null(
    snapshot: Snapshot,
    folder: Path | None,
    embed: Callable[[list[str]], np.ndarray],
    questions: list[str],
    settings: GateSettings,
) -> list[float]:
    """`null_evidence` for this index generation, computed once: cached in memory and, when the generation's
    folder is given, in a file beside the index (keyed by the questions and the gate's evidence settings, so a
    change to either recomputes it; a new ingest is a new generation)."""
    recipe = json.dumps(
        [questions, settings.words_weight, settings.min_similarity, settings.null_hits, settings.function_words]
    )
    key = (str(folder), snapshot.generation, hashlib.sha256(recipe.encode()).hexdigest())
    with _NULLS_LOCK:
        if key in _NULLS:
            return _NULLS[key]
    path = folder / NULL_FILE if folder is not None and folder.is_dir() else None
    null: list[float] | None = None
    if path is not None and path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            null = [float(x) for x in stored["null"]] if stored.get("key") == key[2] else None
        except (OSError, ValueError, KeyError, TypeError):
            null = None
    if null is None:
        null = null_evidence(snapshot, embed, questions, settings)
        if path is not None:
            try:
                temp = path.with_suffix(f".{os.getpid()}.tmp")
                temp.write_text(json.dumps({"key": key[2], "null": null}), encoding="utf-8")
                temp.replace(path)
            except OSError:
                pass  # a read-only index is calibrated in memory only
    with _NULLS_LOCK:
        _NULLS[key] = null
    return null


_TEXTS: dict[tuple[int, int], str] = {}


def unmentioned(frequency: dict[str, int], snapshot: Snapshot | None) -> set[str]:
    """The terms no chunk holds, as an index term or anywhere inside its text: "embed" is absent from an index
    whose text says "embeds" and "re-embed" (other stems), but the corpus mentions it; "tarpaulin" it does not."""
    absent = {t for t, n in frequency.items() if n == 0}
    if snapshot is None or not absent:
        return absent
    key = (id(snapshot), snapshot.generation)
    if key not in _TEXTS:
        _TEXTS.clear()  # one corpus's text at a time: the newest asked for
        _TEXTS[key] = "\n".join(c.text for c in snapshot.chunks).lower()
    return {t for t in absent if t not in _TEXTS[key]}


def off_topic_questions(config_dir: Path, settings: GateSettings) -> list[str]:
    """The configured off-topic questions (`gate.off_topic_questions`, a file in config/)."""
    found = json.loads((config_dir / settings.off_topic_questions).read_text(encoding="utf-8"))
    return [str(q) for q in found["questions"]]


def weigh(
    pieces: list[str],
    candidates: list[Chunk],
    vectors: np.ndarray,
    piece_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float] | None = None,
) -> tuple[list[str], A3Report]:
    """`weigh_all`'s kept ids (best evidence first) and report."""
    found = weigh_all(pieces, candidates, vectors, piece_vectors, settings, rarity)
    return found.kept, found.report


def _shorten(text: str, words: int = 12) -> str:
    found = text.split()
    return " ".join(found[:words]) + (" ..." if len(found) > words else "")


def uncovered_parts(
    parts: list[str],
    part_vectors: np.ndarray,
    kept: list[Chunk],
    kept_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float],
    absent: set[str],
    model_kept: frozenset[str] = frozenset(),
) -> list[str]:
    """The parts of the ask (its asking sentences) no kept chunk covers, judged like a candidate; then,
    in covered parts, names (capitalized inside a sentence, as the user wrote them) no document contains, and
    identifier-shaped words (gRPC, cargo-tarpaulin, vercel.json) with a word no document contains.

    A chunk in `model_kept` (the model read it against the ask and kept it) covers a part whose evidence
    reaches `gate.weak_evidence`, the band where the model's word decides: a clause the fenced excerpt
    answers is not named as uncovered beside it. Under that band the model's keep counts for nothing."""
    if not kept:
        return list(parts)
    texts = [set(tokens) for tokens in bm25_tokens([c.text for c in kept])]
    cosine = part_vectors @ kept_vectors.T
    banded = settings.model_copy(update={"min_evidence": min(settings.min_evidence, settings.weak_evidence)})
    judged_with = [banded if c.id in model_kept else settings for c in kept]
    missing: list[str] = []
    for p, part in enumerate(parts):
        terms = stemmed_terms(part, settings)
        if not any(
            _judge(float(cosine[p, k]), _word_share(terms, texts[k], rarity), judged_with[k])[0]
            for k in range(len(kept))
        ):
            missing.append(part)
            continue
        for word in dict.fromkeys(_NAME.findall(part)):
            stems = stemmed_terms(word, settings)
            if stems and stems <= absent:
                missing.append(word)
        for word in dict.fromkeys(_IDENTIFIER.findall(part)):
            if word not in missing and {t for t in stemmed_terms(word, settings) if len(t) > 2} & absent:
                missing.append(word)
    return missing


# A word that leans on the rest of its sentence ("... and what can change before it is sent"): such a
# clause is not named on its own as uncovered.
_BACK_REFERENCE = re.compile(r"\b(?:it|its|they|them|their|this|these|those)\b", re.IGNORECASE)


def asking_parts(sp: SuperPrompt, settings: Settings, standalone: bool = False) -> list[str]:
    """The asks of the task, one per clause (canonicalize.clauses): "How are X found, and how are Y ranked?"
    is two asks, so a chunk answering either is evidence and an unanswered one can be named. A clause
    must name at least two content terms of its own; with `standalone`, also no word that leans on the
    rest of its sentence (the parts judged for coverage, named in Open issues). The task when none asks."""
    task = sp.body.task or normalized_ask(sp)
    openers = load_prompt_schema(settings.prompt_schema_path).ask_openers

    def substantive(clause: str) -> bool:
        return len(stemmed_terms(clause, settings.gate)) >= 2 and not (standalone and _BACK_REFERENCE.search(clause))

    return clauses(task, openers, substantive) or [" ".join(task.split())]


def referenced(kept: list[Chunk], others: list[Chunk]) -> list[tuple[Chunk, str, str]]:
    """(kept chunk, file name, the words naming it): each mention of a candidate's file in a kept chunk's
    sentence ("See retrieval.md for how chunks are found and ingestion.md for ..."), with the words from the
    sentence's start (first mention) or from the mention up to the next one, which say what the file is for."""
    names = {PurePosixPath(c.source_path).name for c in others}
    found: list[tuple[Chunk, str, str]] = []
    for chunk in kept:
        for sentence in split(chunk.text, MARKDOWN):
            mentions = sorted(
                (m.start(), name)
                for name in names
                for m in re.finditer(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", sentence)
            )
            for k, (start, name) in enumerate(mentions):
                end = mentions[k + 1][0] if k + 1 < len(mentions) else len(sentence)
                found.append((chunk, name, " ".join(sentence[0 if k == 0 else start : end].split())))
    return found


def keep_referenced(
    weighed: Weighed,
    candidates: list[Chunk],
    pieces: list[str],
    piece_vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    settings: GateSettings,
) -> Weighed:
    """A candidate dropped for weak evidence of its own is kept when a kept chunk names its file for (part of)
    the ask: the words naming it reach `gate.min_reference_similarity` cosine to a piece. Documents point to
    each other ("See retrieval.md for how chunks are found"), and the pointer is evidence its text may
    lack (other words, or none of the ask's). The file's best-rated candidate is kept, after the others."""
    by_id = {c.id: c for c in candidates}
    decisions = weighed.report.decisions
    dropped = [c for c in candidates if decisions[c.id].decision == "drop_irrelevant"]
    kept_files = {PurePosixPath(by_id[cid].source_path).name for cid in weighed.kept}
    dropped_files = {PurePosixPath(c.source_path).name for c in dropped} - kept_files
    mentions = [m for m in referenced([by_id[cid] for cid in weighed.kept], candidates) if m[1] in dropped_files]
    if not mentions:
        return weighed
    similarity = embed([words for _, _, words in mentions]) @ piece_vectors.T
    added: dict[str, tuple[float, str]] = {}
    for (chunk, name, words), row in zip(mentions, similarity, strict=True):
        best = int(np.argmax(row))
        if row[best] < settings.min_reference_similarity or name in added:
            continue
        target = max(
            (c for c in dropped if PurePosixPath(c.source_path).name == name), key=lambda c: weighed.evidence[c.id]
        )
        added[name] = (float(row[best]), target.id)
        decisions[target.id] = ChunkDecision(
            decision="keep",
            reason=f"{decisions[target.id].reason}; named in {chunk.id}, which is kept: '{_shorten(words)}' "
            f"(cosine {float(row[best]):.2f} to '{_shorten(pieces[best])}'): kept by reference",
        )
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    weighed.report.counts = counts
    extra = [cid for _, cid in sorted(added.values(), key=lambda a: -a[0])]
    return Weighed([*weighed.kept, *extra], weighed.report, weighed.evidence, weighed.cosine)

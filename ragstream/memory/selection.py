"""Memory chosen by relevance: which parts of a project's conversation go into the prompt.

Following the orchestration spec's context pipeline, the prompt carries, each part under its own
token budget (`memory` in config):

1. the latest `keep_turns` turns, newest first: the newest always (a "thanks, that helped" is about
   it), the others when they are about the current prompt (cosine of the turn to the ask at least
   `min_similarity`, the embeddings the project is searched with);
2. the `max_snippets` snippets most similar to the ask, from the rolling summary (its sentences) and
   the older turns it does not cover yet (those are carried as turns, in their order);
3. the freshest salience notes (their weight decays with the turns since they were last seen).

Assistant echoes are stripped: a sentence of an assistant turn that the prompt, an earlier turn or
a kept snippet already says is left out, and a turn with nothing new left loses its assistant part.
Everything left out is named in the selection statistics with why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragstream.memory.conversation import Embeds
from ragstream.settings import MemorySettings
from ragstream.state import ConversationTurn, SummarySelection
from ragstream.text.sentences import TYPED, spans
from ragstream.tokens.budget import ContextBudget

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


class MemorySource(Protocol):
    """What selection needs of the memory store (`ConversationMemory`)."""

    def turns(self, project: str) -> list[Any]: ...
    def state(self, project: str) -> dict[str, Any]: ...
    def notes(self, project: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class _Candidate:
    name: str
    text: str
    score: float
    turn: Any = None  # an older turn, when the snippet is one (rendered as the turn, echoes stripped)


def sentences(text: str) -> list[str]:
    """Sentences and bullet lines of `text`, without their bullet markers."""
    return [s for s in (_BULLET.sub("", text[a:b]).strip() for a, b in spans(text, TYPED)) if s]


def _key(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", sentence.lower()))


def select_memory(
    source: MemorySource, project: str, ask: str, embedder: Embeds, budget: ContextBudget, settings: MemorySettings
) -> tuple[list[ConversationTurn], SummarySelection]:
    """The conversation turns the prompt carries, and the statistics of what was kept and dropped."""
    state = source.state(project)
    covered = int(state.get("summarized_until", 0))
    open_turns = source.turns(project)[covered:]
    recent = open_turns[-settings.keep_turns :] if settings.keep_turns else []
    older = open_turns[: len(open_turns) - len(recent)]
    snippet_texts = [(f"summary sentence {i + 1}", s, None) for i, s in enumerate(sentences(state.get("summary", "")))]
    snippet_texts += [(f"turn {t.index + 1}", t.text(), t) for t in older]
    texts = [t.text() for t in recent] + [text for _, text, _ in snippet_texts]
    scores = _similarities(ask, texts, embedder)
    recent_scores, snippet_scores = scores[: len(recent)], scores[len(recent) :]
    stats = SummarySelection(budget_ceiling=settings.recent_budget + settings.snippet_budget + settings.notes_budget)
    dropped: dict[str, str] = {}

    seen = {_key(s) for s in sentences(ask)}
    kept_turns: list[tuple[Any, str]] = []
    used = 0
    for position, turn in reversed(list(enumerate(recent))):
        score = recent_scores[position]
        name = f"turn {turn.index + 1}"
        newest = position == len(recent) - 1
        if not newest and score < settings.min_similarity:
            dropped[name] = f"off topic: similarity {score:.2f} < {settings.min_similarity:.2f}"
            continue
        cost = budget.count(turn.text())
        if used + cost > settings.recent_budget and kept_turns:
            dropped[name] = f"over the recent-turns budget ({settings.recent_budget} tokens)"
            continue
        used += cost
        kept_turns.append((turn, "newest turn" if newest else f"similarity {score:.2f}"))
    kept_turns.sort(key=lambda pair: pair[0].index)

    ranked = sorted(
        (_Candidate(name, text, snippet_scores[i], turn) for i, (name, text, turn) in enumerate(snippet_texts)),
        key=lambda c: -c.score,
    )
    snippets: list[_Candidate] = []
    snippet_used = 0
    for candidate in ranked:
        if candidate.score < settings.min_similarity:
            dropped[candidate.name] = f"off topic: similarity {candidate.score:.2f} < {settings.min_similarity:.2f}"
        elif len(snippets) >= settings.max_snippets:
            dropped[candidate.name] = (
                f"not among the {settings.max_snippets} most similar (similarity {candidate.score:.2f})"
            )
        elif snippet_used + budget.count(candidate.text) > settings.snippet_budget:
            dropped[candidate.name] = f"over the snippet budget ({settings.snippet_budget} tokens)"
        else:
            snippets.append(candidate)
            snippet_used += budget.count(candidate.text)

    notes: list[dict[str, Any]] = []
    notes_used = 0
    all_notes = state.get("notes", [])
    for note in source.notes(project):
        text = f"{note['kind']}: {note['text']}"
        if notes_used + budget.count(text) > settings.notes_budget:
            dropped[f"note '{note['text'][:40]}'"] = f"over the notes budget ({settings.notes_budget} tokens)"
            continue
        notes.append(note)
        notes_used += budget.count(text)
    stale = max(len(all_notes) - len(source.notes(project)), 0)

    out: list[ConversationTurn] = []
    echoes = 0
    for snippet in snippets:
        if snippet.turn is None:
            seen.add(_key(snippet.text))
            out.append(ConversationTurn(role="summary", content=snippet.text))
    out += [ConversationTurn(role="note", content=f"{n['kind']}: {n['text']}") for n in notes]
    older_kept = [(c.turn, f"similarity {c.score:.2f}") for c in snippets if c.turn is not None]
    for turn, _ in sorted(older_kept + kept_turns, key=lambda pair: pair[0].index):
        seen |= {_key(s) for s in sentences(turn.prompt)}
        fresh = [s for s in sentences(turn.answer) if _key(s) not in seen]
        echoes += len(sentences(turn.answer)) - len(fresh)
        seen |= {_key(s) for s in fresh}
        out.append(ConversationTurn(role="user", content=turn.prompt))
        if fresh:
            out.append(ConversationTurn(role="assistant", content=" ".join(fresh)))
    stats = stats.model_copy(
        update={
            "turns_kept": len(kept_turns),
            "turns_dropped": len(recent) - len(kept_turns),
            "snippets_kept": len(snippets),
            "snippets_dropped": len(snippet_texts) - len(snippets),
            "notes_kept": len(notes),
            "notes_dropped": len(all_notes) - len(notes) if all_notes else 0,
            "echoes_stripped": echoes,
            "dropped": dropped,
            "budget_used": used + snippet_used + notes_used,
        }
    )
    if stale:
        stats.dropped["older notes"] = f"{stale} note(s) weaker than the freshest {settings.max_notes}"
    return out, stats


def _similarities(ask: str, texts: list[str], embedder: Embeds) -> list[float]:
    """Cosine of each text to the ask (the embedder's vectors are normalized); none to compute, none."""
    if not texts:
        return []
    if not ask.strip():
        return [0.0] * len(texts)
    vectors = np.asarray(embedder.embed([ask, *texts]), dtype=np.float32)
    return [float(v) for v in vectors[1:] @ vectors[0]]

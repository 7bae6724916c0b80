"""Conversation memory per project: an append-only log, a rolling summary and salience notes.

- The log (`<data root>/history/<project>.jsonl`) gets one fsync'd line per prompt/answer pair; a line
  torn by a crash is skipped on reading and never glued to the next one.
- The latest `keep_turns` pairs stay verbatim. Once the older pairs exceed `summary_budget` tokens,
  the summarizer agent folds them into the rolling summary, which then replaces them.
- The salience agent extracts facts, preferences and open questions from each pair; each note's
  weight decays with the number of turns since it was last seen.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing import Protocol

from ragstream.atomic import write_atomic
from ragstream.context.budget import ContextBudget
from ragstream.projects import validate_project_name
from ragstream.secret_scan import scan as scan_secrets
from ragstream.settings import MemorySettings, SecretsSettings
from ragstream.state import Chunk, ConversationTurn, Span


class Agents(Protocol):
    """What memory needs of the agent layer (an `AgentRunner`), without importing it."""

    def run(self, agent: str, payload: dict[str, Any], version: str = "v1") -> Any: ...


class Embeds(Protocol):
    def embed(self, texts: list[str]) -> Any: ...


@dataclass(frozen=True)
class Turn:
    index: int
    prompt: str
    answer: str
    thread: str

    def text(self) -> str:
        return f"User: {self.prompt}\nAssistant: {self.answer}"


class ConversationMemory:
    def __init__(
        self, folder: Path, settings: MemorySettings, agents: Agents, budget: ContextBudget, secrets: SecretsSettings | None = None
    ) -> None:
        self.folder = folder
        self.settings = settings
        self.secrets = secrets or SecretsSettings()
        self.agents = agents
        self.budget = budget
        self._lock = threading.Lock()

    def _log(self, project: str) -> Path:
        return self.folder / f"{validate_project_name(project)}.jsonl"

    def _state_file(self, project: str) -> Path:
        return self.folder / f"{validate_project_name(project)}.memory.json"

    def turns(self, project: str) -> list[Turn]:
        try:
            lines = self._log(project).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        turns = []
        for line in lines:
            try:
                row = json.loads(line)
                turns.append(Turn(len(turns), row["prompt"], row["answer"], row.get("thread", "")))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
        return turns

    def state(self, project: str) -> dict[str, Any]:
        try:
            data = json.loads(self._state_file(project).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _agent(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.agents.run(name, payload).output

    def record(self, project: str, prompt: str, answer: str, thread: str = "") -> bool:
        """Append a pair and update summary and notes; False when history is switched off."""
        if not self.settings.persist:
            return False
        prompt, answer = (scan_secrets(text, "turn.md", self.secrets).text for text in (prompt, answer))  # never kept
        line = json.dumps({"ts": round(time.time(), 3), "thread": thread, "prompt": prompt, "answer": answer}, ensure_ascii=False)
        path = self._log(project)
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a+b") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell():
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":  # a torn line from a crash: never glue onto it
                        handle.write(b"\n")
                handle.write(line.encode("utf-8") + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            self._update(project, prompt, answer)
        return True

    def _update(self, project: str, prompt: str, answer: str) -> None:
        state = self.state(project)
        turns = self.turns(project)
        covered = int(state.get("summarized_until", 0))
        older = turns[covered : max(len(turns) - self.settings.keep_turns, covered)]
        if older and self.budget.count("\n\n".join(t.text() for t in older)) > self.settings.summary_budget:
            summary = self._agent("SUM", {"previous_summary": state.get("summary", ""), "turns": "\n\n".join(t.text() for t in older)})
            state["summary"] = summary["summary"]
            state["summarized_until"] = older[-1].index + 1
        notes = self._agent("SAL", {"prompt": prompt, "answer": answer})
        known = {(n["kind"], n["text"]): n for n in state.get("notes", [])}
        for kind in ("facts", "preferences", "open_questions"):
            for text in notes.get(kind, []):
                known[(kind, text)] = {"kind": kind, "text": text, "last_seen": len(turns) - 1}
        state["notes"] = list(known.values())
        write_atomic(self._state_file(project), json.dumps(state, ensure_ascii=False, indent=1))

    def notes(self, project: str) -> list[dict[str, Any]]:
        """Salience notes with their decayed weight, strongest first."""
        now = len(self.turns(project))
        scored = [
            {**n, "weight": round(0.5 ** ((now - 1 - n["last_seen"]) / self.settings.salience_half_life_turns), 4)}
            for n in self.state(project).get("notes", [])
        ]
        return sorted(scored, key=lambda n: -n["weight"])[: self.settings.max_notes]

    def context(self, project: str) -> list[ConversationTurn]:
        """What goes into `recentConversation`: the summary, salient notes, then the latest turns verbatim."""
        state = self.state(project)
        out: list[ConversationTurn] = []
        if state.get("summary"):
            out.append(ConversationTurn(role="summary", content=state["summary"]))
        out += [ConversationTurn(role="note", content=f"{n['kind']}: {n['text']}") for n in self.notes(project)]
        covered = int(state.get("summarized_until", 0))
        for turn in self.turns(project)[covered:][-self.settings.keep_turns :]:
            out += [ConversationTurn(role="user", content=turn.prompt), ConversationTurn(role="assistant", content=turn.answer)]
        return out

    def relevant_chunks(self, project: str, ask: str, embedder: Embeds, k: int, min_similarity: float) -> list[Chunk]:
        """Past turns most similar to the ask, as chunks that cite the history log (for retrieval)."""
        turns = self.turns(project)
        if not turns or not ask.strip():
            return []
        vectors = embedder.embed([ask] + [t.text() for t in turns])
        scores = vectors[1:] @ vectors[0]
        ranked = sorted(range(len(turns)), key=lambda i: -float(scores[i]))[:k]
        log_name = f"history/{self._log(project).name}"
        return [
            Chunk(
                id=f"{log_name}#turn{turns[i].index}",
                source_path=log_name,
                sha256="",
                chunk_index=turns[i].index,
                text=turns[i].text(),
                span=Span(start=0, end=len(turns[i].text())),
                metadata={"kind": "history", "thread": turns[i].thread},
                scores={"history": round(float(scores[i]), 4)},
            )
            for i in ranked
            if float(scores[i]) >= min_similarity
        ]

    def clear(self, project: str) -> None:
        for path in (self._log(project), self._state_file(project)):
            path.unlink(missing_ok=True)

"""Conversation memory per (user, project): turns, a rolling summary and salience notes, in a LangGraph Store.

Where it lives: on the LangGraph server, in the Store the server provides (`runtime.store`); locally
(CLI, GUI, Python), in a SQLite store under `<data root>/memory/store.sqlite`, or in LangGraph's
`PostgresStore` when `database_url` is set (every machine of a deployment then sees it), the same layout. The local
user is one user (`LOCAL_USER`). Namespaces (a project label cannot hold '.', which the Store's HTTP
API reserves, so '.' is written `%2E`):

- `(user, project, "turns")`: one item per prompt/answer pair, keyed so keys sort in recording order;
- `(user, project, "memory")`, key `state`: the rolling summary, how many turns it covers, the notes.

A `ConversationMemory` is bound to one store and one user, so nothing of one user's memory can reach
another user's state, prompt, LLM request or retrieval. The latest `keep_turns` pairs stay verbatim;
once the older pairs exceed `summary_budget` tokens the summarizer agent folds them into the rolling
summary. The salience agent extracts facts, preferences and open questions from each pair; each
note's weight decays with the number of turns since it was last seen.

The log files of earlier versions (`<data root>/history/<project>.jsonl` and `<project>.memory.json`)
are migrated into the local user's memory the first time the local store is opened, then renamed to
`*.migrated` (kept, never read again).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore

from ragstream.secrets.scan import scan as scan_secrets
from ragstream.settings import MemorySettings, SecretsSettings, Settings
from ragstream.state import Chunk, ConversationTurn, Span
from ragstream.tenancy.projects import validate_project_name
from ragstream.text.chunk_ids import turn_id
from ragstream.tokens.budget import ContextBudget

LOCAL_USER = "local"
_PAGE = 500


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


def namespace(user: str, project: str, kind: str) -> tuple[str, str, str]:
    """The Store namespace of one kind of a user's memory of a project."""
    return (user, validate_project_name(project).replace(".", "%2E"), kind)


class ConversationMemory:
    def __init__(
        self,
        store: BaseStore,
        settings: MemorySettings,
        agents: Agents,
        budget: ContextBudget,
        secrets: SecretsSettings | None = None,
        user: str = LOCAL_USER,
    ) -> None:
        self.store = store
        self.settings = settings
        self.secrets = secrets or SecretsSettings()
        self.agents = agents
        self.budget = budget
        self.user = user
        self._lock = threading.Lock()

    def turns(self, project: str) -> list[Turn]:
        items, offset = [], 0
        while True:
            page = self.store.search(namespace(self.user, project, "turns"), limit=_PAGE, offset=offset)
            items += page
            offset += len(page)
            if len(page) < _PAGE:
                break
        items.sort(key=lambda item: item.key)
        return [
            Turn(i, item.value["prompt"], item.value["answer"], item.value.get("thread", ""))
            for i, item in enumerate(items)
        ]

    def state(self, project: str) -> dict[str, Any]:
        item = self.store.get(namespace(self.user, project, "memory"), "state")
        return dict(item.value) if item is not None else {}

    def _agent(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.agents.run(name, payload).output

    def record(self, project: str, prompt: str, answer: str, thread: str = "") -> bool:
        """Keep a pair and update summary and notes; False when history is switched off."""
        if not self.settings.persist:
            return False
        prompt, answer = (scan_secrets(text, "turn.md", self.secrets).text for text in (prompt, answer))  # never kept
        key = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        with self._lock:
            self.store.put(
                namespace(self.user, project, "turns"),
                key,
                {"ts": round(time.time(), 3), "thread": thread, "prompt": prompt, "answer": answer},
            )
            self._update(project, prompt, answer)
        return True

    def _update(self, project: str, prompt: str, answer: str) -> None:
        state = self.state(project)
        turns = self.turns(project)
        covered = int(state.get("summarized_until", 0))
        older = turns[covered : max(len(turns) - self.settings.keep_turns, covered)]
        if older and self.budget.count("\n\n".join(t.text() for t in older)) > self.settings.summary_budget:
            summary = self._agent(
                "SUM", {"previous_summary": state.get("summary", ""), "turns": "\n\n".join(t.text() for t in older)}
            )
            state["summary"] = summary["summary"]
            state["summarized_until"] = older[-1].index + 1
        notes = self._agent("SAL", {"prompt": prompt, "answer": answer})
        known = {(n["kind"], n["text"]): n for n in state.get("notes", [])}
        for kind in ("facts", "preferences", "open_questions"):
            for text in notes.get(kind, []):
                known[(kind, text)] = {"kind": kind, "text": text, "last_seen": len(turns) - 1}
        state["notes"] = list(known.values())
        self.store.put(namespace(self.user, project, "memory"), "state", state)

    def notes(self, project: str) -> list[dict[str, Any]]:
        """Salience notes with their decayed weight, strongest first."""
        now = len(self.turns(project))
        scored = [
            {**n, "weight": round(0.5 ** ((now - 1 - n["last_seen"]) / self.settings.salience_half_life_turns), 4)}
            for n in self.state(project).get("notes", [])
        ]
        return sorted(scored, key=lambda n: -n["weight"])[: self.settings.max_notes]

    def context(self, project: str) -> list[ConversationTurn]:
        """What goes into `recent_conversation`: the summary, salient notes, then the latest turns verbatim."""
        state = self.state(project)
        out: list[ConversationTurn] = []
        if state.get("summary"):
            out.append(ConversationTurn(role="summary", content=state["summary"]))
        out += [ConversationTurn(role="note", content=f"{n['kind']}: {n['text']}") for n in self.notes(project)]
        covered = int(state.get("summarized_until", 0))
        for turn in self.turns(project)[covered:][-self.settings.keep_turns :]:
            out += [
                ConversationTurn(role="user", content=turn.prompt),
                ConversationTurn(role="assistant", content=turn.answer),
            ]
        return out

    def relevant_chunks(self, project: str, ask: str, embedder: Embeds, k: int, min_similarity: float) -> list[Chunk]:
        """Past turns most similar to the ask, as chunks that cite the history log (for retrieval)."""
        turns = self.turns(project)
        if not turns or not ask.strip():
            return []
        vectors = embedder.embed([ask] + [t.text() for t in turns])
        scores = vectors[1:] @ vectors[0]
        ranked = sorted(range(len(turns)), key=lambda i: -float(scores[i]))[:k]
        log_name = f"memory/{project}"
        return [
            Chunk(
                id=turn_id(log_name, turns[i].index),
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
        for kind in ("turns", "memory"):
            ns = namespace(self.user, project, kind)
            while page := self.store.search(ns, limit=_PAGE):
                for item in page:
                    self.store.delete(ns, item.key)


_STORES: dict[Path, SqliteStore] = {}
_STORES_LOCK = threading.Lock()


def local_store(data_dir: Path) -> SqliteStore:
    """The local user's store under the data root, opened once per process (the GUI's sessions share it);
    legacy history logs found there are migrated into it first."""
    path = (data_dir / "memory" / "store.sqlite").resolve()
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=10000")  # the CLI and the GUI may write at once
            store = _STORES[path] = SqliteStore(conn)
            store.setup()
            migrate_history(data_dir / "history", store)
        return store


_PG_STORES: dict[str, BaseStore] = {}


def memory_store(settings: Settings) -> BaseStore:
    """The local user's store: LangGraph's PostgresStore on the deployment's database when `database_url` is
    set (tables created on first use), else the SQLite store under the data root."""
    if not settings.database_url:
        return local_store(settings.data_dir)
    from langgraph.store.postgres import PostgresStore

    from ragstream.storage.postgres import pool

    with _STORES_LOCK:
        store = _PG_STORES.get(settings.database_url)
        if store is None:
            store = PostgresStore(pool(settings.database_url))
            store.setup()
            _PG_STORES[settings.database_url] = store
        return store


def migrate_history(folder: Path, store: BaseStore) -> None:
    """`history/<project>.jsonl` (+ `.memory.json`) of earlier versions into the local user's memory.

    A line torn by a crash is skipped; the files are renamed to `*.migrated` once copied, so a second
    run (or a second process) never imports them twice."""
    if not folder.is_dir():
        return
    for log in sorted(folder.glob("*.jsonl")):
        project = log.stem
        try:
            validate_project_name(project)
        except ValueError:
            continue
        rows = []
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                rows.append(
                    {
                        "ts": row.get("ts", 0),
                        "thread": row.get("thread", ""),
                        "prompt": row["prompt"],
                        "answer": row["answer"],
                    }
                )
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                continue
        for i, row in enumerate(rows):
            store.put(namespace(LOCAL_USER, project, "turns"), f"{0:020d}-{i:08d}", row)  # before any new turn
        state_file = folder / f"{project}.memory.json"
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            if isinstance(state, dict):
                store.put(namespace(LOCAL_USER, project, "memory"), "state", state)
            state_file.rename(state_file.with_name(state_file.name + ".migrated"))
        except (OSError, ValueError):
            pass
        log.rename(log.with_name(log.name + ".migrated"))

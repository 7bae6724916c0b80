"""Checkpointers for the SuperPrompt graph, with a serializer that knows our state types.

The serializer allow-lists exactly the state classes, so checkpoints round-trip our Pydantic
models without LangGraph's "unregistered type" warnings and without accepting arbitrary types.

Every saver also reads checkpoints written before the state's fields were renamed to snake_case (issue
#39): LangGraph keys a checkpoint's channels by the state schema's field names, never by their aliases, so a
channel stored under its seed name (`S_CTX_MD`) would load into no channel at all. `SeedNames` renames such
channels, their versions and pending writes as the checkpoint is read; the next checkpoint is written under
the new names.
"""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from ragstream import stages, state
from ragstream.errors import ConfigError
from ragstream.settings import Settings
from ragstream.state.superprompt import SEED_NAMES
from ragstream.storage.postgres import pool


def state_types() -> list[tuple[str, str]]:
    """Every type a checkpoint of the SuperPrompt may hold: the state's models and the Stage enum.

    Each is listed under the module that defines it and under `ragstream.state`, which re-exports it: earlier
    versions defined them all there, and their checkpoints name them so. `Stage` is also listed under
    `ragstream.stages`, where the versions between defined it.
    """
    types = [
        (module, name)
        for name, obj in inspect.getmembers(state, inspect.isclass)
        if obj.__module__.startswith(f"{state.__name__}.") and (issubclass(obj, BaseModel) or obj is state.Stage)
        for module in (obj.__module__, state.__name__)
    ]
    return [*types, (stages.__name__, "Stage")]


def state_serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=state_types())


def renamed(saved: CheckpointTuple | None) -> CheckpointTuple | None:
    """`saved` with its channels under today's field names (a checkpoint written under the seed's names)."""
    if saved is None:
        return None
    checkpoint, writes = saved.checkpoint, saved.pending_writes or []
    if not (SEED_NAMES.keys() & checkpoint["channel_versions"].keys() or any(w[1] in SEED_NAMES for w in writes)):
        return saved

    def keyed(values: dict[str, Any]) -> dict[str, Any]:
        return {SEED_NAMES.get(channel, channel): value for channel, value in values.items()}

    moved: Checkpoint = {
        **checkpoint,
        "channel_values": keyed(checkpoint["channel_values"]),
        "channel_versions": keyed(checkpoint["channel_versions"]),
        "versions_seen": {node: keyed(seen) for node, seen in checkpoint["versions_seen"].items()},
    }
    return saved._replace(
        checkpoint=moved, pending_writes=[(task, SEED_NAMES.get(ch, ch), value) for task, ch, value in writes]
    )


class SeedNames(BaseCheckpointSaver):
    """Reads checkpoints through `renamed`; put before a saver class (`class S(SeedNames, SqliteSaver)`)."""

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return renamed(super().get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for saved in super().list(config, filter=filter, before=before, limit=limit):
            yield renamed(saved) or saved

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return renamed(await super().aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for saved in super().alist(config, filter=filter, before=before, limit=limit):
            yield renamed(saved) or saved


class MemorySaver(SeedNames, InMemorySaver):
    """LangGraph's in-memory saver, reading checkpoints under the seed's names too."""


class SqliteCheckpointer(SeedNames, SqliteSaver):
    """LangGraph's SQLite saver, reading checkpoints under the seed's names too."""


def memory_checkpointer() -> InMemorySaver:
    """For tests and throwaway sessions."""
    return MemorySaver(serde=state_serializer())


def sqlite_checkpointer(path: Path) -> SqliteSaver:
    """A SQLite saver on `path`, shared safely across threads (SqliteSaver locks internally).

    A run commits about twenty times (a checkpoint and its writes per step). In WAL mode,
    `synchronous=NORMAL` syncs the log when it is folded into the database, not at every commit: a killed
    process loses nothing and the database never corrupts; only a power cut may lose the last commits.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return SqliteCheckpointer(conn, serde=state_serializer())


def postgres_checkpointer(url: str) -> BaseCheckpointSaver:
    """A PostgresSaver on the process's pool for `url` (tables created on first use, the pool closed at exit)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        raise ConfigError(f"checkpoint_url is PostgreSQL but its driver is missing: {exc}") from exc

    class PostgresCheckpointer(SeedNames, PostgresSaver):
        """LangGraph's PostgreSQL saver, reading checkpoints under the seed's names too."""

    saver = PostgresCheckpointer(pool(url), serde=state_serializer())
    saver.setup()
    return saver


def open_checkpointer(settings: Settings) -> BaseCheckpointSaver:
    """SQLite under the data root by default; `sqlite:///path` or `postgresql://…` when configured, else the
    deployment's `database_url`."""
    url = settings.checkpoint_url or settings.database_url
    if not url:
        return sqlite_checkpointer(settings.data_dir / "checkpoints.sqlite")
    if url.startswith("sqlite:///"):
        return sqlite_checkpointer(Path(url.removeprefix("sqlite:///")))
    if url.startswith(("postgresql://", "postgres://")):
        return postgres_checkpointer(url)
    raise ConfigError(
        f"checkpoint_url '{url.split('://', 1)[0]}://…' is not supported (sqlite:///path or postgresql://…)"
    )

"""Checkpointers for the SuperPrompt graph, with a serializer that knows our state types.

The serializer allow-lists exactly the state classes, so checkpoints round-trip our Pydantic
models without LangGraph's "unregistered type" warnings and without accepting arbitrary types.
"""

from __future__ import annotations

import inspect
import sqlite3
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from ragstream import stages, state
from ragstream.errors import ConfigError
from ragstream.settings import Settings
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


def memory_checkpointer() -> InMemorySaver:
    """For tests and throwaway sessions."""
    return InMemorySaver(serde=state_serializer())


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
    return SqliteSaver(conn, serde=state_serializer())


def postgres_checkpointer(url: str) -> BaseCheckpointSaver:
    """A PostgresSaver on the process's pool for `url` (tables created on first use, the pool closed at exit)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        raise ConfigError(f"checkpoint_url is PostgreSQL but its driver is missing: {exc}") from exc
    saver = PostgresSaver(pool(url), serde=state_serializer())
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

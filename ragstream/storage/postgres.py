"""One connection pool per PostgreSQL URL and process, closed when the process exits.

Everything a deployment's machines share lives in PostgreSQL when `database_url` is set: LangGraph's
checkpoints and Store (memory), the index generations and manifests, the users. They all borrow from
the same small pool, so a process holds a handful of connections whatever it opens; the pools are
closed at exit, not left for the garbage collector (an open pool collected at shutdown warns).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ragstream.errors import ConfigError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

_POOLS: dict[str, ConnectionPool[Any]] = {}
_LOCK = threading.Lock()


def is_postgres(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def pool(url: str) -> ConnectionPool[Any]:
    """The process's pool for `url`: autocommit connections with dict rows, as LangGraph's savers need."""
    with _LOCK:
        found = _POOLS.get(url)
        if found is not None and not found.closed:
            return found
        try:
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise ConfigError(f"a PostgreSQL URL is configured but its driver is missing: {exc}") from exc
        found = _POOLS[url] = ConnectionPool(
            url,
            min_size=1,
            max_size=8,
            open=True,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        return found


@contextmanager
def connection(url: str, timeout: float = 10.0) -> Iterator[Any]:
    """A pooled connection; a ConfigError naming the server (never the password) when it cannot be reached."""
    from psycopg import OperationalError
    from psycopg_pool import PoolTimeout

    try:
        with pool(url).connection(timeout=timeout) as conn:
            yield conn
    except (OperationalError, PoolTimeout) as exc:
        where = url.rsplit("@", 1)[-1].split("/", 1)[0]
        raise ConfigError(f"PostgreSQL at {where} (database_url) cannot be reached: {exc}") from exc


def close_pools() -> None:
    """Close every pool this process opened (registered to run at exit)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for each in pools:
        each.close()


atexit.register(close_pools)

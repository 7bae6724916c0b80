"""The users of a shared LangGraph server: names, the projects each may use, their bearer tokens.

Kept in `<data root>/users.json`, or in PostgreSQL when `database_url` is set. A token is shown once,
when the user is added, and stored only as its SHA-256 (a token is 256 random bits, so a fast hash is
as good as a slow one); a presented token is compared with every stored digest in constant time. Local
use (CLI, GUI, Python) has no users: it is the one local user and needs no token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragstream.errors import InputError, ProjectError
from ragstream.settings import Settings
from ragstream.storage.atomic import write_atomic
from ragstream.storage.postgres import connection
from ragstream.tenancy.projects import validate_project_name

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
TOKEN_PREFIX = "rs_"


@dataclass(frozen=True)
class User:
    name: str
    projects: tuple[str, ...]

    def require_project(self, project: str | None) -> None:
        """A user may run on, and read the memory of, only the projects they were added with."""
        if project is not None and validate_project_name(project) not in self.projects:
            raise ProjectError(
                f"user '{self.name}' is not allowed on project '{project}' (allowed: {list(self.projects)})"
            )


def validate_user_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(
            f"invalid user name {name!r}: use 1-64 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return name


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class UserRegistry:
    """Users in `<data root>/users.json` (one machine); `PostgresUsers` keeps them in a deployment's database."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, settings: Settings) -> UserRegistry:
        """PostgreSQL when `database_url` is set (every server of a deployment sees the same users), else the file."""
        if settings.database_url:
            return PostgresUsers(settings.database_url)
        return cls(settings.data_dir / "users.json")

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return data if isinstance(data, dict) else {}

    def _insert(self, name: str, row: dict[str, Any]) -> bool:
        """Store a new user; False when the name is taken."""
        users = self._read()
        if name in users:
            return False
        users[name] = row
        write_atomic(self.path, json.dumps(users, indent=1))
        self.path.chmod(0o600)
        return True

    def _delete(self, name: str) -> bool:
        users = self._read()
        if users.pop(name, None) is None:
            return False
        write_atomic(self.path, json.dumps(users, indent=1))
        return True

    def add(self, name: str, projects: list[str]) -> str:
        """Create the user and return their bearer token (shown once, never stored in clear)."""
        validate_user_name(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = {"token_sha256": _digest(token), "projects": sorted({validate_project_name(p) for p in projects})}
        if not self._insert(name, row):
            raise InputError(f"user '{name}' exists: remove it first to issue a new token")
        return token

    def remove(self, name: str) -> None:
        if not self._delete(name):
            raise InputError(f"no user '{name}'")

    def list(self) -> list[User]:
        return [User(name, tuple(row.get("projects", []))) for name, row in sorted(self._read().items())]

    def get(self, name: str) -> User | None:
        row = self._read().get(name)
        return User(name, tuple(row.get("projects", []))) if row else None

    def authenticate(self, token: str) -> User | None:
        """The user holding this token, comparing with every stored digest in constant time."""
        presented = _digest(token)
        found = None
        for name, row in self._read().items():
            if hmac.compare_digest(presented, str(row.get("token_sha256", ""))):
                found = User(name, tuple(row.get("projects", [])))
        return found


class PostgresUsers(UserRegistry):
    """The users in PostgreSQL's `ragstream_user` table: same rows, same digests, shared by every machine."""

    def __init__(self, url: str) -> None:  # no file: the base class's file primitives are all replaced
        self.url = url
        with connection(url) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS ragstream_user (name text PRIMARY KEY, row jsonb NOT NULL)")

    def _read(self) -> dict[str, dict[str, Any]]:
        with connection(self.url) as conn:
            return {str(r["name"]): dict(r["row"]) for r in conn.execute("SELECT name, row FROM ragstream_user")}

    def _insert(self, name: str, row: dict[str, Any]) -> bool:
        with connection(self.url) as conn:
            from psycopg.types.json import Jsonb

            done = conn.execute(
                "INSERT INTO ragstream_user VALUES (%s, %s) ON CONFLICT (name) DO NOTHING", (name, Jsonb(row))
            )
            return bool(done.rowcount == 1)

    def _delete(self, name: str) -> bool:
        with connection(self.url) as conn:
            return bool(conn.execute("DELETE FROM ragstream_user WHERE name = %s", (name,)).rowcount == 1)


def require_project(settings: Settings, user: str | None, project: str | None) -> None:
    """Refuse a served user's run on a project they may not use (the local user may use every project)."""
    if not user:
        return
    found = UserRegistry.of(settings).get(user)
    if found is None:
        raise ProjectError(f"user '{user}' no longer exists")
    found.require_project(project)

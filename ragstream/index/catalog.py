"""Where a project's committed index lives: the manifest (the commit point) and its index generations.

- `FileCatalog` (the default, one machine): `manifest.json` and `index/g<N>/` under the project's store folder.
- `PostgresCatalog` (`database_url`, many machines, no shared folder): the manifest is a row and every file of
  every generation (chunk table, vectors, the bm25s index, links) is stored in PostgreSQL. Ingestion writes
  the generation locally as before, then uploads its files and the manifest row in one transaction: that
  transaction is the commit. A query process asks PostgreSQL for the committed generation on every query
  (one indexed row), and the first time it meets a generation it downloads the files into its own data
  root and loads them with the same code as a local index, so its scores are the very scores of the
  embedded default. A re-ingest is seen on the next query, without a restart.

Why the bm25s files and not PostgreSQL's full-text search or Chroma's: `ts_rank` ranks by term frequency
without any corpus statistics (no inverse document frequency), so it is not BM25 and would change every
lexical ranking; Chroma's full-text search (`where_document` `$contains`/`$regex`) filters and does not
rank, and its BM25 sparse vectors use their own tokenizer and a fixed average length. Storing the index
bm25s built keeps retrieval exactly as it is measured.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ragstream.errors import ConfigError
from ragstream.index.manifest import Manifest, ManifestSummary, generation_dir, manifest_summary
from ragstream.index.snapshot import Snapshot, load_snapshot, prune_generations
from ragstream.settings import Settings
from ragstream.storage.postgres import connection, is_postgres
from ragstream.tenancy.projects import ProjectPaths

_PART = 16 * 1024 * 1024  # bytes per stored piece of a generation's file (PostgreSQL values stay small)
_ID_FILE = ".catalog-id"  # in a downloaded generation: which committed upload it is
# How long a process trusts the committed generation it read: a run asks many times (admission, retrieval,
# reranking, the build), one row per run is enough, and a re-ingest is still seen within this.
_FRESH_SECONDS = 0.5


class Catalog(Protocol):
    def manifest(self, paths: ProjectPaths) -> Manifest:
        """The committed manifest (an empty one when there is none)."""
        ...

    def summary(self, paths: ProjectPaths) -> ManifestSummary:
        """The committed generation and counts: cheap, asked on every query."""
        ...

    def local_generation(self, paths: ProjectPaths, generation: int) -> bool:
        """Make the generation's folder present under this data root; False when it does not exist."""
        ...

    def next_generation(self, paths: ProjectPaths, manifest: Manifest) -> int: ...

    def commit(self, paths: ProjectPaths, manifest: Manifest) -> None:
        """Publish the manifest (and with it the generation it names, already written locally)."""
        ...

    def prune(self, paths: ProjectPaths, keep: set[int]) -> None: ...

    def lock(self, paths: ProjectPaths) -> AbstractContextManager[None]:
        """One ingest of the project at a time, across every process that shares the catalog."""
        ...

    def projects(self) -> list[str]:
        """Projects with a committed index that the data root alone would not list."""
        ...


class FileCatalog:
    """The manifest file and generation folders under the data root."""

    def manifest(self, paths: ProjectPaths) -> Manifest:
        return Manifest.load(paths.manifest_path)

    def summary(self, paths: ProjectPaths) -> ManifestSummary:
        return manifest_summary(paths.manifest_path)

    def local_generation(self, paths: ProjectPaths, generation: int) -> bool:
        return bool(generation) and generation_dir(paths.index_dir, generation).is_dir()

    def next_generation(self, paths: ProjectPaths, manifest: Manifest) -> int:
        """Never reuse a number: a reader may still hold an old generation in memory."""
        return max([manifest.generation, *_local_generations(paths)]) + 1

    def commit(self, paths: ProjectPaths, manifest: Manifest) -> None:
        manifest.save(paths.manifest_path)

    def prune(self, paths: ProjectPaths, keep: set[int]) -> None:
        prune_generations(paths.index_dir, keep)

    @contextmanager
    def lock(self, paths: ProjectPaths) -> Iterator[None]:
        """A lock file beside the project's folder, not in it, so an ingest that writes nothing (a folder with
        nothing to ingest) leaves no project behind."""
        paths.store_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(paths.store_dir.parent / f".{paths.name}.ingest.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def projects(self) -> list[str]:
        return []


def _local_generations(paths: ProjectPaths) -> list[int]:
    if not paths.index_dir.is_dir():
        return []
    return [int(p.name[1:]) for p in paths.index_dir.glob("g*") if p.name[1:].isdigit()]


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS ragstream_manifest (
        project text PRIMARY KEY, generation integer NOT NULL, upload text NOT NULL,
        files integer NOT NULL, chunks integer NOT NULL, manifest text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS ragstream_generation_file (
        project text NOT NULL, generation integer NOT NULL, upload text NOT NULL, name text NOT NULL,
        part integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (project, generation, name, part))""",
)


class PostgresCatalog:
    """The manifest and the generations in PostgreSQL; each data root keeps a downloaded copy of what it reads."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._downloading = threading.Lock()
        self._ready: set[tuple[Path, str]] = set()  # (generation folder, upload) checked present in this process
        self._rows: dict[str, tuple[float, dict[str, object] | None]] = {}  # project: (read at, manifest row)
        with connection(url) as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext('ragstream:schema'))")  # CREATE IF NOT EXISTS races
            try:
                for statement in _SCHEMA:
                    conn.execute(statement)
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext('ragstream:schema'))")

    def _row(self, project: str) -> dict[str, object] | None:
        read_at, row = self._rows.get(project, (float("-inf"), None))
        if time.monotonic() - read_at < _FRESH_SECONDS:
            return row
        with connection(self.url) as conn:
            row = conn.execute(
                "SELECT generation, upload, files, chunks FROM ragstream_manifest WHERE project = %s", (project,)
            ).fetchone()
        self._rows[project] = (time.monotonic(), row)
        return row

    def manifest(self, paths: ProjectPaths) -> Manifest:
        with connection(self.url) as conn:
            row = conn.execute("SELECT manifest FROM ragstream_manifest WHERE project = %s", (paths.name,)).fetchone()
        return Manifest.model_validate_json(row["manifest"]) if row else Manifest()

    def summary(self, paths: ProjectPaths) -> ManifestSummary:
        row = self._row(paths.name)
        if row is None:
            return ManifestSummary(0, 0, 0)
        return ManifestSummary(int(row["generation"]), int(row["files"]), int(row["chunks"]))  # type: ignore[call-overload]

    def local_generation(self, paths: ProjectPaths, generation: int) -> bool:
        """Download the generation into the data root unless the copy there is of the same upload."""
        if not generation:
            return False
        folder = generation_dir(paths.index_dir, generation)
        if (folder, _upload_of(folder) or "") in self._ready:  # a number is never reused for another upload
            return True
        with self._downloading:  # one download per process; other processes write their own temporary folder
            with connection(self.url) as conn:
                found = conn.execute(
                    "SELECT DISTINCT upload FROM ragstream_generation_file WHERE project = %s AND generation = %s",
                    (paths.name, generation),
                ).fetchone()
            upload = None if found is None else str(found["upload"])
            if upload is not None and _upload_of(folder) != upload:
                if self._download(paths, generation, upload, folder):
                    prune_generations(paths.index_dir, {generation, *self._kept(paths.name)})
                else:
                    upload = None
            if upload is None:  # pruned since its number was read (two ingests committed since): read it again
                self._rows.pop(paths.name, None)
                return False
            self._ready.add((folder, upload))
            return True

    def _kept(self, project: str) -> set[int]:
        with connection(self.url) as conn:
            rows = conn.execute(
                "SELECT DISTINCT generation FROM ragstream_generation_file WHERE project = %s", (project,)
            ).fetchall()
        return {int(r["generation"]) for r in rows}

    def _download(self, paths: ProjectPaths, generation: int, upload: str, folder: Path) -> bool:
        """The generation's files into `folder`; False, writing nothing, when it has none left: an ingest pruned
        it between the question whether it exists and this read."""
        paths.index_dir.mkdir(parents=True, exist_ok=True)
        for stale in paths.index_dir.glob(".download-*"):  # left by a process killed while downloading
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(dir=paths.index_dir, prefix=".download-"))
        try:
            with connection(self.url) as conn, conn.transaction():
                cursor = conn.cursor(name="ragstream_generation")  # streamed: a generation may be large
                cursor.execute(
                    "SELECT name, data FROM ragstream_generation_file WHERE project = %s AND generation = %s "
                    "AND upload = %s ORDER BY name, part",
                    (paths.name, generation, upload),
                )
                for row in cursor:
                    target = staging / row["name"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with target.open("ab") as handle:
                        handle.write(row["data"])
            if not any(staging.iterdir()):  # every file is at least one piece, an empty one included
                return False
            (staging / _ID_FILE).write_text(upload, encoding="utf-8")
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(staging, folder)
            return True
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def next_generation(self, paths: ProjectPaths, manifest: Manifest) -> int:
        with connection(self.url) as conn:
            row = conn.execute(
                "SELECT max(generation) AS top FROM ragstream_generation_file WHERE project = %s", (paths.name,)
            ).fetchone()
        stored = int(row["top"]) if row and row["top"] is not None else 0
        return max([manifest.generation, stored, *_local_generations(paths)]) + 1

    def commit(self, paths: ProjectPaths, manifest: Manifest) -> None:
        folder = generation_dir(paths.index_dir, manifest.generation)
        upload = secrets.token_hex(8)
        with connection(self.url) as conn, conn.transaction():
            conn.execute(
                "DELETE FROM ragstream_generation_file WHERE project = %s AND generation = %s",
                (paths.name, manifest.generation),
            )
            with conn.cursor() as cursor:
                for file in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != _ID_FILE):
                    name = file.relative_to(folder).as_posix()
                    with file.open("rb") as handle:
                        part, piece = 0, handle.read(_PART)
                        while True:  # an empty file is one empty piece, so that it is downloaded too
                            cursor.execute(
                                "INSERT INTO ragstream_generation_file VALUES (%s, %s, %s, %s, %s, %s)",
                                (paths.name, manifest.generation, upload, name, part, piece),
                            )
                            part, piece = part + 1, handle.read(_PART)
                            if not piece:
                                break
            conn.execute(
                "INSERT INTO ragstream_manifest VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project) DO UPDATE SET "
                "generation = EXCLUDED.generation, upload = EXCLUDED.upload, files = EXCLUDED.files, "
                "chunks = EXCLUDED.chunks, manifest = EXCLUDED.manifest",
                (
                    paths.name,
                    manifest.generation,
                    upload,
                    len(manifest.files),
                    len(manifest.chunk_ids()),
                    manifest.model_dump_json(),
                ),
            )
        (folder / _ID_FILE).write_text(upload, encoding="utf-8")
        self._rows.pop(paths.name, None)

    def prune(self, paths: ProjectPaths, keep: set[int]) -> None:
        with connection(self.url) as conn:
            conn.execute(
                "DELETE FROM ragstream_generation_file WHERE project = %s AND NOT (generation = ANY(%s))",
                (paths.name, sorted(keep)),
            )
        prune_generations(paths.index_dir, keep)

    @contextmanager
    def lock(self, paths: ProjectPaths) -> Iterator[None]:
        with connection(self.url) as conn:
            key = f"ragstream:ingest:{paths.name}"
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def projects(self) -> list[str]:
        with connection(self.url) as conn:
            return [str(r["project"]) for r in conn.execute("SELECT project FROM ragstream_manifest").fetchall()]


def _upload_of(folder: Path) -> str | None:
    try:
        return (folder / _ID_FILE).read_text(encoding="utf-8")
    except OSError:
        return None


@lru_cache(maxsize=4)
def _postgres_catalog(url: str) -> PostgresCatalog:
    return PostgresCatalog(url)


def catalog_of(settings: Settings) -> Catalog:
    """PostgreSQL when `database_url` is set, else the data root's files."""
    if not settings.database_url:
        return FileCatalog()
    if not is_postgres(settings.database_url):
        raise ConfigError(f"database_url must be postgresql://…, got '{settings.database_url.split('://', 1)[0]}://…'")
    return _postgres_catalog(settings.database_url)


def committed_generation(catalog: Catalog, paths: ProjectPaths) -> int:
    """The project's committed generation, in the data root (0: none).

    A generation the catalog no longer holds when it is fetched was pruned after its number was read (two
    ingests committed since, each keeping only its predecessor): the index is there, so the number is read
    again rather than the project called unindexed.
    """
    while True:
        generation = catalog.summary(paths).generation
        if catalog.local_generation(paths, generation):
            return generation
        if catalog.summary(paths).generation == generation:
            return 0


def committed_snapshot(catalog: Catalog, paths: ProjectPaths) -> Snapshot | None:
    """The project's committed generation, loaded (once per process and generation); None without one."""
    generation = committed_generation(catalog, paths)
    return load_snapshot(paths.index_dir, generation) if generation else None

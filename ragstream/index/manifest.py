"""The manifest: which files are indexed (path, sha256, size, mtime, chunk ids) and which index
generation is current. Written atomically and last, so it is the commit point of an ingest."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ragstream.errors import ProjectError
from ragstream.settings import Settings
from ragstream.storage.atomic import write_atomic
from ragstream.tenancy.projects import ProjectPaths, project_paths


def generation_dir(index_dir: Path, generation: int) -> Path:
    return index_dir / f"g{generation:06d}"


class FileEntry(BaseModel):
    sha256: str
    size: int
    mtime: float
    chunk_ids: list[str] = Field(default_factory=list)
    secrets: list[dict[str, str | int]] = Field(
        default_factory=list
    )  # redacted findings: type and line, never the value


class Manifest(BaseModel):
    generation: int = 0
    embedding: str = "local:all-MiniLM-L6-v2"
    chunking: str = ""  # how files were cut (see manager.chunking_identity); "" before it was recorded
    lexical: str = ""  # how chunks became BM25 terms (see manager.lexical_identity); "" before it was recorded
    files: dict[str, FileEntry] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)  # path: why it was not indexed (ignore rule, secrets, type)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """The committed manifest, or an empty one (a missing or damaged manifest means: re-index)."""
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, ValidationError):
            return cls()

    def save(self, path: Path) -> None:
        write_atomic(path, json.dumps(self.model_dump(), indent=1, sort_keys=True))

    def secret_lines(self) -> list[str]:
        """What `ragstream projects` and the GUI list: each redacted secret (type, file, line) and each file
        left out for holding secrets, with the reason. Never a value: none is kept."""
        from ragstream.secrets.scan import is_secret_skip

        found = [
            f"{path}:{s['line']}: {s['type']} (redacted)"
            for path, entry in sorted(self.files.items())
            for s in entry.secrets
        ]
        return found + [
            f"{path}: skipped, {reason}" for path, reason in sorted(self.skipped.items()) if is_secret_skip(reason)
        ]

    def chunk_ids(self) -> set[str]:
        return {cid for entry in self.files.values() for cid in entry.chunk_ids}


@dataclass(frozen=True)
class ManifestSummary:
    generation: int
    files: int
    chunks: int


_SUMMARIES: dict[Path, tuple[tuple[int, int], ManifestSummary]] = {}
_SUMMARIES_LOCK = threading.Lock()


def manifest_summary(path: Path) -> ManifestSummary:
    """The committed generation and counts, re-read only when the manifest file changed.

    Readers ask on every query and every project selection; a manifest lists every file, so parsing
    it each time would cost more than the query. One entry per project path: bounded.
    """
    try:
        stat = path.stat()
    except OSError:
        return ManifestSummary(0, 0, 0)
    signature = (stat.st_mtime_ns, stat.st_size)
    with _SUMMARIES_LOCK:
        cached = _SUMMARIES.get(path)
    if cached is not None and cached[0] == signature:
        return cached[1]
    manifest = Manifest.load(path)
    summary = ManifestSummary(
        manifest.generation, len(manifest.files), sum(len(f.chunk_ids) for f in manifest.files.values())
    )
    with _SUMMARIES_LOCK:
        _SUMMARIES[path] = (signature, summary)
    return summary


def committed_generation(path: Path) -> int:
    """The manifest's generation (0: none)."""
    return manifest_summary(path).generation


def indexed_project(settings: Settings, name: str | None) -> ProjectPaths:
    """The project's paths when it exists and has a committed index; a ProjectError saying what to do otherwise.

    Cheap (a stat and a cached generation number, or one PostgreSQL row), so every run can check it first.
    """
    if not name:
        raise ProjectError("no project selected: pass the project whose documents ground the prompt")
    from ragstream.index.catalog import catalog_of, committed_generation  # the catalog builds on this module

    paths = project_paths(settings, name)
    if committed_generation(catalog_of(settings), paths):
        return paths
    if paths.raw_dir.is_dir() or paths.store_dir.is_dir():
        raise ProjectError(f"project '{name}' has no index yet: run `ragstream ingest {name}`")
    raise ProjectError(
        f"no project '{name}' under {settings.data_dir}: create it with `ragstream ingest {name} --path <folder>`"
    )

"""The manifest: which files are indexed (path, sha256, size, mtime, chunk ids) and which index
generation is current. Written atomically and last, so it is the commit point of an ingest."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ragstream.atomic import write_atomic


class FileEntry(BaseModel):
    sha256: str
    size: int
    mtime: float
    chunk_ids: list[str] = Field(default_factory=list)


class Manifest(BaseModel):
    generation: int = 0
    embedding: str = "local:all-MiniLM-L6-v2"
    files: dict[str, FileEntry] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """The committed manifest, or an empty one (a missing or damaged manifest means: re-index)."""
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, ValidationError):
            return cls()

    def save(self, path: Path) -> None:
        write_atomic(path, json.dumps(self.model_dump(), indent=1, sort_keys=True))

    def chunk_ids(self) -> set[str]:
        return {cid for entry in self.files.values() for cid in entry.chunk_ids}

"""Project names and the folders they map to, kept inside the data root."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ragstream.errors import ProjectError
from ragstream.settings import Settings

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_project_name(name: str) -> str:
    """Project names are single folder names: no separators, no '..', no leading dot."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ProjectError(
            f"invalid project name {name!r}: use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class ProjectPaths:
    name: str
    raw_dir: Path
    store_dir: Path

    @property
    def manifest_path(self) -> Path:
        return self.store_dir / "manifest.json"

    @property
    def index_dir(self) -> Path:
        return self.store_dir / "index"

    @property
    def chroma_dir(self) -> Path:
        return self.store_dir / "chroma"

    @property
    def source_file(self) -> Path:
        return self.store_dir / "project.json"

    def source_dir(self) -> Path:
        """The folder this project ingests: doc_raw/<project>, or the one given with --path."""
        try:
            data = json.loads(self.source_file.read_text(encoding="utf-8"))
            return Path(data["source_dir"])
        except (OSError, ValueError, KeyError, TypeError):
            return self.raw_dir

    def remember_source(self, folder: Path) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.source_file.write_text(json.dumps({"source_dir": str(folder.resolve())}), encoding="utf-8")


def project_paths(settings: Settings, name: str) -> ProjectPaths:
    validate_project_name(name)
    root = settings.data_dir.resolve()
    return ProjectPaths(name=name, raw_dir=root / "doc_raw" / name, store_dir=root / "chroma_db" / name)


def list_projects(settings: Settings) -> list[str]:
    """Projects that have raw documents or an index."""
    root = settings.data_dir
    names = {
        p.name
        for sub in ("doc_raw", "chroma_db")
        if (root / sub).is_dir()
        for p in (root / sub).iterdir()
        if p.is_dir() and _NAME.match(p.name)
    }
    return sorted(names)


def most_recent_project(settings: Settings) -> str | None:
    """The project whose documents or index changed last: the one a person most likely returns to."""
    root = settings.data_dir

    def changed(name: str) -> float:
        folders = (root / sub / name for sub in ("doc_raw", "chroma_db"))
        return max((f.stat().st_mtime for f in folders if f.is_dir()), default=0.0)

    return max(list_projects(settings), key=changed, default=None)

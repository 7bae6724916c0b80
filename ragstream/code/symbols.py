"""The definitions a code chunk holds, as stored in its metadata, and the text it is indexed under."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ragstream.state import Chunk
from ragstream.text.markup import shown_text


@dataclass(frozen=True)
class Symbol:
    """A definition in a chunk; `part` marks a chunk holding only part of its body."""

    kind: str
    name: str
    first: int
    last: int
    doc: str = ""
    part: bool = False

    def label(self) -> str:
        return f"{self.kind} {self.name}"


def symbols_to_metadata(symbols: list[Symbol]) -> str:
    return json.dumps([asdict(s) for s in symbols], separators=(",", ":"))


def symbols_of(chunk: Chunk) -> list[Symbol]:
    """The chunk's definitions (none for prose, or for code indexed before symbols were recorded)."""
    raw = chunk.metadata.get("symbols")
    if not isinstance(raw, str):
        return []
    try:
        return [Symbol(**entry) for entry in json.loads(raw)]
    except (ValueError, TypeError):
        return []


def lines_of(chunk: Chunk) -> tuple[int, int] | None:
    first, last = chunk.metadata.get("line_start"), chunk.metadata.get("line_end")
    return (first, last) if isinstance(first, int) and isinstance(last, int) else None


def index_text(chunk: Chunk) -> str:
    """What a chunk is embedded and BM25-indexed as: a code chunk also under its path and the names of
    its definitions, so a piece from the middle of a long function still says whose it is; prose as its
    rendered page shows it (text/markup.py: template macros replaced by what they show)."""
    symbols = symbols_of(chunk)
    if not symbols:
        return chunk.text if "language" in chunk.metadata else shown_text(chunk.text)
    return f"{chunk.source_path}: {'; '.join(s.label() for s in symbols)}\n{chunk.text}"

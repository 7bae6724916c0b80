"""The kind of a chunk (prose, code or table), from its own metadata and shape.

Rankers weigh evidence differently per kind: code is found by its own words and meaning, not by how
often its file repeats the query's terms; a table is mostly names and numbers.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from ragstream.state import Chunk

Kind = Literal["prose", "code", "table"]

_TABLE_SUFFIXES = {".csv", ".tsv"}


def chunk_kind(chunk: Chunk) -> Kind:
    """`code` when ingestion recorded a programming language; `table` for CSV/TSV files and chunks
    whose lines are mostly Markdown table rows; `prose` otherwise."""
    if chunk.metadata.get("language"):
        return "code"
    if PurePosixPath(chunk.source_path).suffix.lower() in _TABLE_SUFFIXES:
        return "table"
    rows = [line.strip() for line in chunk.text.splitlines() if line.strip()]
    if len(rows) >= 2 and sum(r.startswith("|") and r.endswith("|") for r in rows) * 2 > len(rows):
        return "table"
    return "prose"

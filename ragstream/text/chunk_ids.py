"""Chunk ids: `source@sha10#index` for a chunk of a document (or of a web result), `log#turnN` for a past
conversation turn. An answer cites them in square brackets, so the format is built, parsed and matched
here only: ingestion, tools and memory build ids, A4, review/apply and the tests read citations.

A source may hold spaces (file names do); a square bracket or a line break would end the citation, so
an id whose source holds one is not `is_chunk_id` and cannot be cited (building it is not refused: the
chunk is still retrieved and shown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.errors import InputError

SHA_CHARS = 10
_ID = rf"[^\[\]\n]+?(?:@[0-9a-f]{{{SHA_CHARS}}}#\d+|#turn\d+)"
CITATION = re.compile(rf"\[({_ID})\]")
_PARTS = re.compile(rf"(?P<source>[^\[\]\n]+?)(?:@(?P<sha>[0-9a-f]{{{SHA_CHARS}}})#(?P<index>\d+)|#turn(?P<turn>\d+))")


@dataclass(frozen=True)
class ChunkId:
    """A parsed id: `sha` is empty and `turn` true for a conversation turn."""

    source: str
    sha: str
    index: int
    turn: bool


def chunk_id(source: str, sha256: str, index: int) -> str:
    """Stable across runs: the same content at the same source always gives the same ids."""
    return f"{source}@{sha256[:SHA_CHARS]}#{index}"


def turn_id(log: str, index: int) -> str:
    """The id of a past turn of the conversation log `log`."""
    return f"{log}#turn{index}"


def parse(value: str) -> ChunkId:
    """The parts of an id; InputError when `value` is not one."""
    match = _PARTS.fullmatch(value)
    if match is None:
        raise InputError(f"{value!r} is not a chunk id (source@sha10#index or log#turnN)")
    if match["turn"] is not None:
        return ChunkId(match["source"], "", int(match["turn"]), True)
    return ChunkId(match["source"], match["sha"], int(match["index"]), False)


def is_chunk_id(value: str) -> bool:
    return _PARTS.fullmatch(value) is not None


def source_of(value: str) -> str:
    """The document (or log) an id names."""
    return parse(value).source


def citations(text: str) -> list[str]:
    """The ids cited in `text`, in order (repeats kept)."""
    return CITATION.findall(text)


def uncite(line: str, drop: set[str] | frozenset[str]) -> str:
    """`line` without its citations of `drop`, spaces closed up."""
    return " ".join(CITATION.sub(lambda m: "" if m.group(1) in drop else m.group(0), line).split())


def prune_citations(text: str, keep: set[str] | frozenset[str] | list[str]) -> tuple[str, list[str]]:
    """`text` with its citations of ids not in `keep` removed, and the lines withdrawn because none was left:
    a line that cites only what the prompt does not show asserts what nothing in it supports. A section
    heading left with no line under it goes too (an empty "### Facts" reads as a finding)."""
    kept = set(keep)
    lines: list[str] = []
    withdrawn: list[str] = []
    for line in text.split("\n"):
        cited = citations(line)
        gone = [cid for cid in cited if cid not in kept]
        if not gone:
            lines.append(line)
        elif len(gone) == len(cited):
            withdrawn.append(line)
        else:
            lines.append(uncite(line, set(gone)))
    if withdrawn:
        lines = [line for i, line in enumerate(lines) if not _empty_section(lines, i)]
    return "\n".join(lines), withdrawn


def _empty_section(lines: list[str], i: int) -> bool:
    """Whether `lines[i]` is a Markdown heading with nothing but blank lines before the next heading or fence."""
    if not lines[i].startswith("#"):
        return False
    for line in lines[i + 1 :]:
        if line.startswith("#") or line.startswith("~~~"):
            return True
        if line.strip():
            return False
    return True

"""Near-duplicate candidates: word 5-gram Jaccard similarity, the better-ranked copy kept."""

from __future__ import annotations

import re

SHINGLE = 5
DUPLICATE_JACCARD = 0.8
_WORD = re.compile(r"\w+")


def shingles(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < SHINGLE:
        return {tuple(words)}
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def near_duplicates(texts: list[tuple[str, str]]) -> dict[str, str]:
    """id -> id of the earlier (better-ranked) chunk it duplicates."""
    kept: list[tuple[str, set[tuple[str, ...]]]] = []
    dupes: dict[str, str] = {}
    for cid, text in texts:
        mine = shingles(text)
        for other_id, other in kept:
            shared = len(mine & other)
            union = len(mine) + len(other) - shared  # no union set built: this loop is quadratic in candidates
            if union and shared / union >= DUPLICATE_JACCARD:
                dupes[cid] = other_id
                break
        else:
            kept.append((cid, mine))
    return dupes

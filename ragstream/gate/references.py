"""Candidates kept by reference: a kept chunk that names a dropped candidate's file for the ask."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePosixPath

import numpy as np

from ragstream.gate.evidence import Weighed, decision_counts, shorten
from ragstream.settings import GateSettings
from ragstream.state import Chunk, ChunkDecision
from ragstream.text.sentences import MARKDOWN, split


def referenced(kept: list[Chunk], others: list[Chunk]) -> list[tuple[Chunk, str, str]]:
    """(kept chunk, file name, the words naming it): each mention of a candidate's file in a kept chunk's
    sentence ("See retrieval.md for how chunks are found and ingestion.md for ..."), with the words from the
    sentence's start (first mention) or from the mention up to the next one, which say what the file is for."""
    names = {PurePosixPath(c.source_path).name for c in others}
    found: list[tuple[Chunk, str, str]] = []
    for chunk in kept:
        for sentence in split(chunk.text, MARKDOWN):
            mentions = sorted(
                (m.start(), name)
                for name in names
                for m in re.finditer(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", sentence)
            )
            for k, (start, name) in enumerate(mentions):
                end = mentions[k + 1][0] if k + 1 < len(mentions) else len(sentence)
                found.append((chunk, name, " ".join(sentence[0 if k == 0 else start : end].split())))
    return found


def keep_referenced(
    weighed: Weighed,
    candidates: list[Chunk],
    pieces: list[str],
    piece_vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    settings: GateSettings,
) -> Weighed:
    """A candidate dropped for weak evidence of its own is kept when a kept chunk names its file for (part of)
    the ask: the words naming it reach `gate.min_reference_similarity` cosine to a piece. Documents point to
    each other ("See retrieval.md for how chunks are found"), and the pointer is evidence its text may
    lack (other words, or none of the ask's). The file's best-rated candidate is kept, after the others."""
    by_id = {c.id: c for c in candidates}
    decisions = weighed.report.decisions
    dropped = [c for c in candidates if decisions[c.id].decision == "drop_irrelevant"]
    kept_files = {PurePosixPath(by_id[cid].source_path).name for cid in weighed.kept}
    dropped_files = {PurePosixPath(c.source_path).name for c in dropped} - kept_files
    mentions = [m for m in referenced([by_id[cid] for cid in weighed.kept], candidates) if m[1] in dropped_files]
    if not mentions:
        return weighed
    similarity = embed([words for _, _, words in mentions]) @ piece_vectors.T
    added: dict[str, tuple[float, str]] = {}
    for (chunk, name, words), row in zip(mentions, similarity, strict=True):
        best = int(np.argmax(row))
        if row[best] < settings.min_reference_similarity or name in added:
            continue
        target = max(
            (c for c in dropped if PurePosixPath(c.source_path).name == name), key=lambda c: weighed.evidence[c.id]
        )
        added[name] = (float(row[best]), target.id)
        decisions[target.id] = ChunkDecision(
            decision="keep",
            reason=f"{decisions[target.id].reason}; named in {chunk.id}, which is kept: '{shorten(words)}' "
            f"(cosine {float(row[best]):.2f} to '{shorten(pieces[best])}'): kept by reference",
        )
    weighed.report.counts = decision_counts(decisions)
    extra = [cid for _, cid in sorted(added.values(), key=lambda a: -a[0])]
    return replace(weighed, kept=[*weighed.kept, *extra])

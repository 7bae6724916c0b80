"""Candidates kept beside a kept chunk: an answer runs on across a chunk's edge."""

from __future__ import annotations

from ragstream.gate.evidence import Weighed, decision_counts
from ragstream.settings import GateSettings
from ragstream.state import Chunk, ChunkDecision


def keep_adjacent(weighed: Weighed, candidates: list[Chunk], settings: GateSettings) -> Weighed:
    """A candidate dropped under the floor but at `gate.weak_evidence` or over is kept when the chunk before or
    after it in its file is kept on its own: tenacity's `before_sleep_log` signature was dropped at 0.53 while the
    chunk holding the rest of the function was kept, so the excerpts showed a body without its name and parameters.
    It comes after the chunks kept on their own evidence, which A4 and the builder read first: placed beside its
    neighbour, a release-notes page's weak chunks took uvicorn's settings page out of A4's window."""
    decisions = weighed.report.decisions
    place = {(c.source_path, c.chunk_index): c.id for c in candidates if c.id in weighed.kept}
    order = list(weighed.kept)
    for c in candidates:
        if decisions[c.id].decision != "drop_irrelevant" or weighed.evidence.get(c.id, -1.0) < settings.weak_evidence:
            continue
        before, after = place.get((c.source_path, c.chunk_index - 1)), place.get((c.source_path, c.chunk_index + 1))
        if before is None and after is None:
            continue
        order.append(c.id)
        index = c.chunk_index - 1 if before is not None else c.chunk_index + 1
        decisions[c.id] = ChunkDecision(
            decision="keep", reason=f"{decisions[c.id].reason}; beside chunk {index} of its file, which is kept"
        )
    if len(order) == len(weighed.kept):
        return weighed
    weighed.report.counts = decision_counts(decisions)
    return Weighed(order, weighed.report, weighed.evidence, weighed.cosine)

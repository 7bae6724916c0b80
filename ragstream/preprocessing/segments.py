"""Task 3: the segment table. META is dropped from retrieval, CONTENT kept, unknowns parked."""

from __future__ import annotations

from ragstream.preprocessing.canonicalize import Canonicalized
from ragstream.state import CanonEntry, Segment, SegmentNote
from ragstream.text.lines import LineIndex


def _decide(entry: CanonEntry, text: str, include_undecided: bool) -> tuple[str, bool, SegmentNote]:
    if entry.mapped_by == "person" and entry.canon is None:  # strict mode: kept as an additional section, or dropped
        kept = entry.role == "CONTENT" and bool(text)
        return ("ADDITIONAL" if kept else "DROPPED"), kept, ("KEPT_BY_PERSON" if kept else "DROPPED_BY_PERSON")
    if entry.role == "META":
        return entry.canon or "UNDECIDED", False, "DROPPED_META"
    canon_type = entry.canon if entry.role == "CONTENT" and entry.canon else "UNDECIDED"
    if not text:
        return canon_type, False, "DROPPED_EMPTY"
    if entry.role == "CONTENT":
        return canon_type, True, "KEPT_CONTENT"
    if include_undecided:
        return canon_type, True, "KEPT_UNDECIDED"
    return canon_type, False, "UNDECIDED"


def build_segments(prompt: str, canon: Canonicalized, include_undecided: bool) -> list[Segment]:
    lines = LineIndex(prompt)
    rows: list[Segment] = []
    for n, entry in enumerate(canon.entries, start=1):
        text = entry.body_span.slice(prompt)
        canon_type, kept, note = _decide(entry, text, include_undecided)
        rows.append(
            Segment(
                id=f"text{n}",
                canon_type=canon_type,
                original_header=entry.original_header,
                text=text,
                span=entry.body_span,
                line_start=lines.line_of(entry.body_span.start),
                line_end=lines.line_of(max(entry.body_span.end - 1, entry.body_span.start)),
                kept_for_retrieval=kept,
                source_note=note,
            )
        )
    return rows

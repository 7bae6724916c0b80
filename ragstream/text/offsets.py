"""Offsets between a document's own text and its indexed text (the same text with every secret replaced
by `[REDACTED: <type>]`, see secret_scan).

Chunks and excerpts are cut from the indexed text, but their spans must point into the document a user
opens: a marker is rarely as long as the secret it replaces, so every later offset of the file would
otherwise be off by the difference. Redaction keeps every line, and a changed line differs only between
its first and last redacted character: before and after that part, characters correspond one to one,
and an offset inside it maps to the part's edge (its start, or its end for the end of a span).
"""

from __future__ import annotations

from bisect import bisect_right


def _line_starts(lines: list[str]) -> list[int]:
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return starts


def _common_edges(a: str, b: str) -> tuple[int, int]:
    """The lengths of the longest common prefix and suffix of `a` and `b` (not overlapping in either)."""
    limit = min(len(a), len(b))
    prefix = 0
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return prefix, suffix


class Offsets:
    """Maps offsets of the indexed text to the document's text and back."""

    def __init__(self, document: str, indexed: str) -> None:
        self.same = document == indexed
        if self.same:
            return
        doc_lines, idx_lines = document.split("\n"), indexed.split("\n")
        if len(doc_lines) != len(idx_lines):  # not a line-keeping redaction: one segment, the whole text
            doc_lines, idx_lines = [document], [indexed]
        self._doc = (_line_starts(doc_lines), [len(line) for line in doc_lines])
        self._idx = (_line_starts(idx_lines), [len(line) for line in idx_lines])
        self._edges = [
            _common_edges(d, i) if d != i else (len(d), 0) for d, i in zip(doc_lines, idx_lines, strict=True)
        ]

    def to_document(self, offset: int, end: bool = False) -> int:
        """The document's offset for an offset of the indexed text (`end`: a span's end, inside a marker
        maps to the end of the secret)."""
        return offset if self.same else self._map(offset, end, self._idx, self._doc)

    def to_indexed(self, offset: int, end: bool = False) -> int:
        """The indexed text's offset for an offset of the document."""
        return offset if self.same else self._map(offset, end, self._doc, self._idx)

    def outside_secrets(self, start: int, end: int) -> tuple[int, int]:
        """An indexed span widened so that no edge falls inside a marker: a marker has no counterpart in the
        document but its whole secret, so a span is cut only where both texts agree."""
        return self.to_indexed(self.to_document(start)), self.to_indexed(self.to_document(end, end=True), end=True)

    def _map(
        self, offset: int, end: bool, source: tuple[list[int], list[int]], target: tuple[list[int], list[int]]
    ) -> int:
        starts, lengths = source
        line = max(bisect_right(starts, offset) - 1, 0)
        column = min(offset - starts[line], lengths[line] + 1)  # + 1: the line's newline
        prefix, suffix = self._edges[line]
        length, target_length = lengths[line], target[1][line]
        if column > length:  # the newline itself
            mapped = target_length + 1
        elif column <= prefix:
            mapped = column
        elif column >= length - suffix:
            mapped = target_length - (length - column)
        else:  # inside the replaced part
            mapped = target_length - suffix if end else prefix
        return target[0][line] + mapped

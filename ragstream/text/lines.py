"""Character offsets to line numbers, for spans a person reads as `path:line`."""

from __future__ import annotations

from bisect import bisect_right


class LineIndex:
    """Maps character offsets of one text to 1-based line numbers in O(log n)."""

    def __init__(self, text: str) -> None:
        self._newlines: list[int] = []
        pos = text.find("\n")
        while pos != -1:
            self._newlines.append(pos)
            pos = text.find("\n", pos + 1)

    def line_of(self, offset: int) -> int:
        return bisect_right(self._newlines, offset - 1) + 1

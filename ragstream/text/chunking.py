"""The one text splitter, shared by ingestion and PreProcessing Task 4.

Query pieces and document chunks must be cut the same way (same size, same overlap, same
boundary rules) so that a query piece and the chunk it should find have comparable shape.
A token counter enforces the embedding model's input limit as a hard ceiling: a window that would
be truncated by the model is cut shorter, and the next window still overlaps it.
"""

from __future__ import annotations

from typing import Protocol

from ragstream.settings import ChunkingSettings, Settings
from ragstream.state import Span
from ragstream.tokens.counters import token_counter


class TokenCounter(Protocol):
    """Counts model tokens; used to keep every piece inside the embedder's input window."""

    def count(self, text: str) -> int: ...

    def fitting_prefix(self, text: str, max_tokens: int) -> int:
        """Length in characters of the longest prefix of `text` with at most `max_tokens` tokens."""
        ...


_SNAP_FRACTION = 0.2


def _snap_back(text: str, start: int, end: int) -> int:
    """Move `end` back to just after whitespace, when one lies in the last part of the window."""
    floor = start + int((end - start) * (1 - _SNAP_FRACTION))
    for pos in range(end, floor, -1):
        if text[pos - 1].isspace():
            return pos
    return end


def _snap_forward(text: str, start: int, limit: int) -> int:
    """Move a window start forward to the beginning of a word, without passing `limit`."""
    pos = start
    while pos < limit and pos > 0 and not text[pos - 1].isspace():
        pos += 1
    return pos if pos < limit else start


def split_spans(text: str, chunking: ChunkingSettings, counter: TokenCounter, max_tokens: int) -> list[Span]:
    """Cut `text` into overlapping windows that together cover every character.

    Windows are at most `chunk_size` characters and at most `max_tokens` tokens; each later
    window starts `chunk_overlap` characters before the previous one ended (moved to a word
    start when one is near), so consecutive windows overlap and nothing is skipped.
    """
    n = len(text)
    if n == 0:
        return []
    size, overlap = chunking.chunk_size, chunking.chunk_overlap
    spans: list[Span] = []
    start = 0
    while True:
        end = min(start + size, n)
        fit = counter.fitting_prefix(text[start:end], max_tokens)
        if fit < end - start:
            end = start + max(fit, 1)
        if end < n:
            end = _snap_back(text, start, end)
        spans.append(Span(start=start, end=end))
        if end >= n:
            return spans
        step_back = min(overlap, (end - start) // 2)
        start = _snap_forward(text, end - step_back, end)


class Chunker:
    """The splitter bound to the shared settings: what ingestion and Task 4 both call."""

    # [CLS] and [SEP] take two of the model's input positions.
    SPECIAL_TOKENS = 2

    def __init__(self, chunking: ChunkingSettings, counter: TokenCounter, max_input_tokens: int) -> None:
        self.chunking = chunking
        self.counter = counter
        self.max_tokens = max_input_tokens - self.SPECIAL_TOKENS

    @classmethod
    def from_settings(cls, settings: Settings) -> Chunker:
        counter = token_counter(settings.embedding)
        return cls(settings.chunking, counter, settings.embedding.max_input_tokens)

    def spans(self, text: str) -> list[Span]:
        return split_spans(text, self.chunking, self.counter, self.max_tokens)

"""Structure-aware chunks of source files: whole definitions, cut at statements only when too long.

A file is split at its definitions (the module header of docstring and imports, classes,
functions, methods). A definition that does not fit the limits is cut at the start of one of its
statements, never inside a line, and its signature always stays with the start of its body; a
class too long for one chunk becomes its header plus its members. Small neighbours are packed
together. Chunks are runs of whole lines that cover the file exactly, in order, without overlap;
only a single line longer than the limits (minified code) is cut by characters. Files without a
parser here, or that do not parse, are cut by lines, preferably at blank lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate

from ragstream.code.languages import Language
from ragstream.code.outline import Definition, outline
from ragstream.code.symbols import Symbol
from ragstream.state import Span
from ragstream.text.chunking import Chunker

HEADER_TOKENS = 32  # kept free for the path and symbol names a code chunk is indexed under


@dataclass
class CodePiece:
    first: int  # 1-based, inclusive
    last: int
    span: Span
    symbols: list[Symbol] = field(default_factory=list)


def _symbol(d: Definition, part: bool = False) -> Symbol:
    return Symbol(kind=d.kind, name=d.name, first=d.start, last=d.end, doc=d.doc, part=part)


class CodeSplitter:
    def __init__(self, chunker: Chunker) -> None:
        self.chunker = chunker
        self.max_chars = chunker.chunking.chunk_size
        self.max_tokens = chunker.max_tokens - HEADER_TOKENS

    def split(self, text: str, language: Language) -> list[CodePiece]:
        return _File(self, text).pieces(outline(text, language))


class _File:
    def __init__(self, splitter: CodeSplitter, text: str) -> None:
        self.splitter = splitter
        self.text = text
        lines = text.split("\n")
        body = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        self.n = len(body)
        self.offsets = [0, *accumulate(len(line) for line in body)]  # offsets[i]: start of line i + 1
        counter = splitter.chunker.counter
        self.tokens = [0, *accumulate(counter.count(line) for line in body)]
        self.blank = [not line.strip() for line in body]

    # -- measures --------------------------------------------------------------------------

    def chars(self, first: int, last: int) -> int:
        return self.offsets[last] - self.offsets[first - 1]

    def fits(self, first: int, last: int) -> bool:
        return (
            self.chars(first, last) <= self.splitter.max_chars
            and self.tokens[last] - self.tokens[first - 1] <= self.splitter.max_tokens
        )

    def is_blank(self, first: int, last: int) -> bool:
        return all(self.blank[first - 1 : last])

    # -- splitting -------------------------------------------------------------------------

    def pieces(self, definitions: list[Definition] | None) -> list[CodePiece]:
        if self.n == 0:
            return []
        runs: list[tuple[int, int, list[Symbol]]]
        if definitions is None:
            paragraph_starts = {i + 1 for i in range(1, self.n) if self.blank[i - 1] and not self.blank[i]}
            runs = [(a, b, []) for a, b in self.greedy(1, self.n, paragraph_starts)]
        else:
            runs = self.segments(1, self.n, definitions)
        return self.to_pieces(self.pack(runs))

    def segments(self, lo: int, hi: int, definitions: list[Definition]) -> list[tuple[int, int, list[Symbol]]]:
        """Runs covering lo..hi: the loose code between definitions, and each definition's runs."""
        runs: list[tuple[int, int, list[Symbol]]] = []
        cursor = lo
        for d in sorted(definitions, key=lambda d: d.start):
            if d.start < cursor or d.end > hi:
                continue  # overlapping or outside: left to the surrounding runs
            if d.start > cursor:
                runs += [(a, b, []) for a, b in self.greedy(cursor, d.start - 1, None)]
            runs += self.definition(d)
            cursor = d.end + 1
        if cursor <= hi:
            runs += [(a, b, []) for a, b in self.greedy(cursor, hi, None)]
        return runs

    def definition(self, d: Definition) -> list[tuple[int, int, list[Symbol]]]:
        if self.fits(d.start, d.end):
            return [(d.start, d.end, [_symbol(d), *(_symbol(c) for c in d.descendants())])]
        if d.children:
            runs = self.segments(d.start, d.end, list(d.children))
            if len(runs) > 1 and not runs[0][2] and self.fits(runs[0][0], runs[1][1]):
                runs[:2] = [(runs[0][0], runs[1][1], runs[1][2])]  # the class line with its first member
            head = runs[0]
            runs[0] = (head[0], head[1], [_symbol(d), *head[2]])
            part = [_symbol(d, part=True)]
            return [(a, b, symbols or ([] if self.is_blank(a, b) else part)) for a, b, symbols in runs]
        starts = {line for line in d.cuts if line > d.body}
        parts = self.greedy(d.start, d.end, starts, min_end=min(d.body, d.end))
        return [(a, b, [_symbol(d, part=i > 0)]) for i, (a, b) in enumerate(parts)]

    def greedy(self, lo: int, hi: int, starts: set[int] | None, min_end: int = 0) -> list[tuple[int, int]]:
        """Cut lo..hi into the longest runs that fit, each next run beginning at a line in `starts`
        (any line when None, or when no such cut fits); the first run reaches at least `min_end`."""
        runs = []
        first = lo
        while first <= hi:
            best = any_line = None
            last = first
            while last <= hi and self.fits(first, last):
                any_line = last
                if (last == hi or starts is None or last + 1 in starts) and last >= min_end:
                    best = last
                last += 1
            chosen = best or any_line or first  # a single line over the limits is cut by characters later
            runs.append((first, chosen))
            first = chosen + 1
            min_end = 0
        return runs

    def pack(self, runs: list[tuple[int, int, list[Symbol]]]) -> list[tuple[int, int, list[Symbol]]]:
        """Join neighbours while small: blank runs always, others while the joint run stays within half
        the size limit (a few small functions read better together than one per chunk)."""
        packed: list[tuple[int, int, list[Symbol]]] = []
        for first, last, symbols in runs:
            opens = any(not s.part and s.last > last for s in symbols)  # the head of a longer definition
            if packed and not opens:
                a, _, held = packed[-1]
                blank = self.is_blank(first, last) or self.is_blank(a, packed[-1][1])
                if blank or (self.fits(a, last) and self.chars(a, last) <= self.splitter.max_chars // 2):
                    packed[-1] = (a, last, held + [s for s in symbols if s not in held])
                    continue
            packed.append((first, last, list(symbols)))
        return packed

    def to_pieces(self, runs: list[tuple[int, int, list[Symbol]]]) -> list[CodePiece]:
        pieces = []
        for first, last, symbols in runs:
            start, end = self.offsets[first - 1], self.offsets[last]
            if first == last and not self.fits(first, last):
                chunker = self.splitter.chunker
                for span in chunker.spans(self.text[start:end]):
                    pieces.append(CodePiece(first, last, Span(start=start + span.start, end=start + span.end), symbols))
                continue
            pieces.append(CodePiece(first, last, Span(start=start, end=end), symbols))
        return pieces

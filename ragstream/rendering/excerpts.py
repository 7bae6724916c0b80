"""Whole excerpts: the selected chunks hydrated from their documents when the prompt is built.

Retrieval works on chunks cut to a size, so a chunk starts and ends wherever its window fell. The
build reads each selected chunk's document again (lazily: only the files of the excerpts it shows),
checks it is the very text that was indexed (same sha256, same redaction, every chunk's text at its
span), and then

1. widens each chunk to whole sentences (prose) or whole lines (code; code chunks already start where
   a statement starts), so no excerpt starts or ends mid-sentence;
2. merges excerpts of one file that overlap or touch into one excerpt with one span and one line
   range, so no line is shown twice;
3. closes each prose excerpt over what its answer needs: an excerpt never ends on a lead-in (a line
   ending in ':', which promises what follows: the list, table, code block or paragraph after it is
   added) and never holds list items without the list's lead-in (the whole list and the sentence or
   heading introducing it are added; for a list that adds over `excerpts.max_closing_tokens`, the lead-in
   and the items up to the excerpt);
4. keeps, best first, the excerpts that fit the prompt budget;
5. then, while the budget allows, widens each kept excerpt to what encloses it (the parent-document
   idea): a code chunk holding part of a definition to the whole definition, a prose chunk to its
   list, else to its Markdown section, each at most `excerpts.max_parent_tokens`;
6. then, while the budget allows, widens each kept excerpt by up to `excerpts.neighbour_chars` of the
   text around it, to whole sentences: the answer to a part of the ask often sits a paragraph from the chunk
   that matched it, across a heading the section widening stops at. A code excerpt grows by the whole
   definitions beside it (the class that combines the two that matched).

A document that cannot be read back as indexed (changed, moved, a conversation turn) keeps its chunk
as indexed, and the record says so. The work is done on the indexed text (secrets redacted); spans point
into the document's own text (`text/offsets`), so the file at an excerpt's span holds the excerpt's text
(a redacted secret aside), and line ranges are the same in both.
"""

from __future__ import annotations

import ast
import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ragstream.code.languages import Language, load_languages
from ragstream.code.outline import Definition, outline
from ragstream.code.symbols import lines_of, symbols_of
from ragstream.ingestion.loader import SkipFile, load_document
from ragstream.secrets.scan import identity as scanner_identity
from ragstream.secrets.scan import scan as scan_secrets
from ragstream.settings import ExcerptSettings, Settings
from ragstream.state import Chunk, ExcerptRecord, Span, SuperPrompt
from ragstream.text.fences import FENCE_LINE, fence_marks
from ragstream.text.lines import LineIndex
from ragstream.text.offsets import Offsets
from ragstream.text.rst import is_rst, literal_blocks
from ragstream.text.sentences import EXCERPT, spans
from ragstream.tokens.budget import ContextBudget, TrimReport

_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_BLOCK_LINE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|[-*+][ \t]|\d{1,3}[.)][ \t]|\||>|```|~~~)", re.M)
_STANDALONE_LINE = re.compile(r"^[ \t]*(?:#{1,6}[ \t].*|\|.*\||```.*|~~~.*)$", re.M)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+\S.*$", re.M)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S")
_TABLE_ROW = re.compile(r"^[ \t]*\|")
_NOT_CODE = re.compile(r"[ \t]*(?:(?:#|//|/?\*|--)[^\n]*)?(?:\n|$)")  # a blank or comment line: no code starts there


def statement_lines(text: str, language: Language | None) -> tuple[set[int], set[int]] | None:
    """1-based lines where a statement may start and where one may end, or None when the parser
    sees no structure (then every line is both). Python: every statement of its `ast` (a line inside a
    statement, such as a docstring's or a call's continuation, is neither). Other languages: the
    statement starts (`cuts`) of each definition of their tree-sitter outline; lines outside every
    definition are both."""
    count = text.count("\n") + 1
    if language is not None and language.parser == "ast":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        starts: set[int] = set()
        ends: set[int] = set()
        inside: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
                last = node.end_lineno or node.lineno
                starts.add(first)
                ends.add(last)
                inside.update(range(first + 1, last + 1))
                inside.update(range(first, last))  # as ends: any line but its last
        free = {n for n in range(1, count + 1) if n not in inside}
        return starts | free, ends | free
    definitions = outline(text, language) if language is not None else None
    if not definitions:
        return None
    valid = dict.fromkeys(range(1, count + 1), True)
    for d in [x for top in definitions for x in (top, *top.descendants())]:  # outer first: inner ones overwrite
        allowed = set(d.cuts) | {c.start for c in d.children}
        for n in range(d.start + 1, d.end + 1):
            valid[n] = n in allowed
    starts = {n for n, ok in valid.items() if ok}
    ends = (
        {n - 1 for n in starts if n > 1} | {d.end for top in definitions for d in (top, *top.descendants())} | {count}
    )
    return starts, ends


class Document:
    """One indexed document's text with the positions where a sentence, a line and a section begin."""

    def __init__(
        self,
        text: str,
        code: bool,
        language: Language | None = None,
        offsets: Offsets | None = None,
        rst: bool = False,
    ) -> None:
        self.text = text
        self.rst = rst  # reStructuredText: no Markdown fences
        self.offsets = offsets or Offsets(text, text)  # `text` is the indexed text; offsets map it to the file's
        self.code = code
        self.language = language
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.lines = LineIndex(text)
        self.ends: list[int] | None = None
        self.literal = [] if code else literal_blocks(text)  # reStructuredText's literal blocks (`text/rst`)
        fenced, self.fence_openers = self._fenced_lines()
        self.fenced = fenced
        if code:
            statements = statement_lines(text, language)
            if statements is None:
                self.starts = list(self.line_starts)
            else:
                self.starts = [self.line_starts[n - 1] for n in sorted(statements[0]) if n <= len(self.line_starts)]
                self.ends = sorted(
                    self.line_end(self.line_starts[n - 1] + 1) for n in statements[1] if n <= len(self.line_starts)
                )
        else:
            found = {start for start, _ in spans(text, EXCERPT)}
            found.update(m.end() for m in _PARAGRAPH.finditer(text))
            found.update(m.start() for m in _BLOCK_LINE.finditer(text))
            found.update(m.end() + 1 for m in _STANDALONE_LINE.finditer(text) if m.end() < len(text))
            found.update(self.line_starts[i] for i in fenced)
            self.starts = sorted(p for p in found if p <= len(text))
        self.headings = (
            [(m.start(), len(m.group(1))) for m in _HEADING.finditer(text) if self.line_of(m.start()) - 1 not in fenced]
            if not code
            else []
        )

    def _fenced_lines(self) -> tuple[set[int], set[int]]:
        """0-based numbers of the lines inside (and of) Markdown code fences and of the lines of reStructuredText's
        literal blocks (`text/rst`), each its own statement; and of the fence lines among them that open a block."""
        inside, lines, openers = False, set(), set()
        marks = set(fence_marks(self.text)) if not self.rst else set()
        for number, start in enumerate(self.line_starts):
            if start in marks:
                lines.add(number)
                openers |= set() if inside else {number}
                inside = not inside
            elif inside:
                lines.add(number)
        for block in self.literal:
            lines.update(range(self.line_of(block.start) - 1, self.line_of(block.end)))
        return lines, openers

    def line_of(self, offset: int) -> int:
        return self.lines.line_of(offset)

    def line_start(self, offset: int) -> int:
        return self.line_starts[bisect_right(self.line_starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """The end of the line holding the character before `offset` (without its newline)."""
        nl = self.text.find("\n", max(offset - 1, 0))
        return len(self.text) if nl == -1 else max(nl, offset)

    def trimmed(self, start: int, end: int) -> tuple[int, int]:
        """The span without the whitespace at its edges."""
        while start < end and self.text[start].isspace():
            start += 1
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return start, end

    def whole(self, start: int, end: int, reach: int) -> tuple[int, int, bool]:
        """The span widened to whole sentences (prose: each edge moving at most `reach` characters,
        else to its line's edge) or whole statements (code: however far the statement reaches); True
        when both edges are whole."""
        start, end = self.trimmed(start, end)
        if start >= end:
            return start, end, True
        i = bisect_right(self.starts, start) - 1
        new_start = self.starts[max(i, 0)]
        edges = self.ends if self.ends is not None else self.starts
        j = bisect_left(edges, end)
        new_end = len(self.text) if j >= len(edges) else edges[j]
        new_end = max(len(self.text[:new_end].rstrip()), end)
        if self.code:
            return new_start, new_end, True
        whole = True
        if start - new_start > reach:
            new_start, whole = self.line_start(start), False
        if new_end - end > reach:
            new_end, whole = self.line_end(end), False
        return new_start, new_end, whole

    def around(self, start: int, end: int, reach: int) -> tuple[int, int]:
        """The span grown by up to `reach` characters each way, to whole sentences, without cutting a code block
        at either new edge (the growth stops before it), and closed over the lists it reaches (the least
        closure: a list item keeps its lead-in, a lead-in its first item). Code grows by whole definitions
        (`code_edges`)."""
        if self.code:
            starts, ends = self.code_edges(self.line_of(start), self.line_of(max(end - 1, start)))
            new_start = min((p for p in starts if start - reach <= p <= start), default=start)
            new_end = max((p for p in ends if end <= p <= end + reach), default=end)
            return new_start, max(len(self.text[:new_end].rstrip()), end)
        wide_start, wide_end, _ = self.whole(max(start - reach, 0), min(end + reach, len(self.text)), reach)
        first, last = self.line_of(start) - 1, self.line_of(max(end - 1, start)) - 1
        top, bottom = self.line_of(wide_start) - 1, self.line_of(max(wide_end - 1, wide_start)) - 1
        if top < first and top in self.fenced and not FENCE_LINE.match(self._line(top)):
            while top < first and (top in self.fenced or not self._line(top).strip()):
                top += 1
            wide_start = self.line_starts[top]
        if bottom > last and bottom in self.fenced and not self._closes_fence(bottom):
            while bottom > last and (bottom in self.fenced or not self._line(bottom).strip()):
                bottom -= 1
            wide_end = self.line_starts[bottom] + len(self._line(bottom))
        return self.trimmed(*self.closed(min(wide_start, start), max(wide_end, end), least=True))

    @cached_property
    def definitions(self) -> list[Definition] | None:
        """The code's outline, parsed once: each kept excerpt of the document asks for it."""
        return outline(self.text, self.language) if self.language is not None else None

    def code_edges(self, first: int, last: int) -> tuple[list[int], list[int]]:
        """Where code shown beside the excerpt on 1-based lines first..last may begin and end: a definition's
        first and last line (the class beside the one that matched, the helper it calls, whole) when whatever
        encloses it encloses the excerpt too (a method of another class comes with its class, never alone), or a
        statement outside every definition (an import, a constant); never a statement inside a body, nor a comment
        (the middle of a licence header)."""
        definitions = self.definitions
        spans: list[tuple[int, int]] = []
        inside: set[int] = set()

        def visit(found: Sequence[Definition]) -> None:
            for d in found:
                spans.append((d.start, d.end))
                inside.update(range(d.start, d.end + 1))
                if d.start <= first and last <= d.end:  # its members stand beside the excerpt
                    visit(d.children)

        visit(definitions or [])
        count = len(self.line_starts)
        starts = {self.line_starts[a - 1] for a, _ in spans if a <= count}
        ends = {self.line_end(self.line_starts[b - 1] + 1) for _, b in spans if b <= count}
        starts.update(p for p in self.starts if self.line_of(p) not in inside and not _NOT_CODE.match(self.text, p))
        statement_ends = self.ends if self.ends is not None else [self.line_end(p + 1) for p in self.line_starts]
        ends.update(p for p in statement_ends if self.line_of(max(p - 1, 0)) not in inside)
        return sorted(starts), sorted(ends)

    def _closes_fence(self, i: int) -> bool:
        """Line `i` is a fence line that closes its block (the fenced line before it is inside the block)."""
        return (
            bool(FENCE_LINE.match(self._line(i))) and i - 1 in self.fenced and not FENCE_LINE.match(self._line(i - 1))
        )

    def section(self, start: int, end: int) -> tuple[int, int] | None:
        """The innermost Markdown section (heading to the next heading of its level or above) holding the span."""
        before = [h for h in self.headings if h[0] <= start]
        for offset, level in reversed(before):
            after = next((o for o, lv in self.headings if o > offset and lv <= level), len(self.text))
            if after >= end:
                return offset, len(self.text[:after].rstrip())
        return None

    def list_block(self, start: int, end: int) -> tuple[int, int] | None:
        """The Markdown list (items, their indented continuations, blank lines between items) holding the span."""
        first, last = self.line_of(start) - 1, self.line_of(max(end - 1, start)) - 1
        lines = [self._line(i) for i in range(len(self.line_starts))]

        def in_list(i: int) -> bool:
            return bool(_LIST_ITEM.match(lines[i])) or (lines[i][:1] in (" ", "\t") and lines[i].strip() != "")

        items = [i for i in range(first, last + 1) if _LIST_ITEM.match(lines[i])]
        if not items:
            return None
        # From the span's last item on, not its last line: prose after the list is no part of it, and the list's
        # end read as that line's end cut a sentence the span had whole ("... they shrink to a usable").
        last = items[-1]
        while first > 0 and (in_list(first - 1) or (not lines[first - 1].strip() and first > 1 and in_list(first - 2))):
            first -= 1
        while last + 1 < len(lines) and (
            in_list(last + 1)
            or (not lines[last + 1].strip() and last + 2 < len(lines) and _LIST_ITEM.match(lines[last + 2]))
        ):
            last += 1
        while first <= last and not _LIST_ITEM.match(lines[first]):
            first += 1
        if first > last:
            return None
        return self.trimmed(self.line_starts[first], self.line_end(self.line_starts[last] + 1))

    def lead_in(self, first: int) -> int | None:
        """Where the lead-in of a list (or block) starting on 0-based line `first` begins: the heading, or the
        last sentence of the paragraph, right above it (blank lines between allowed); None when there is none."""
        j = first - 1
        while j >= 0 and not self._line(j).strip():
            j -= 1
        if j < 0 or j in self.fenced or _LIST_ITEM.match(self._line(j)) or _TABLE_ROW.match(self._line(j)):
            return None
        if _HEADING.match(self._line(j)):
            return self.line_starts[j]
        end = self.line_starts[j] + len(self._line(j).rstrip())
        paragraph = j
        while paragraph > 0 and self._line(paragraph - 1).strip() and paragraph - 1 not in self.fenced:
            paragraph -= 1
        sentence = self.starts[max(bisect_right(self.starts, end - 1) - 1, 0)]
        return max(sentence, self.line_starts[paragraph])

    def following(self, i: int) -> tuple[int, int] | None:
        """The block a lead-in on 0-based line `i` introduces: the list, code block, table, section (after a
        heading) or paragraph that comes next (blank lines between allowed); None at the document's end."""
        count = len(self.line_starts)
        j = i + 1
        while j < count and not self._line(j).strip():
            j += 1
        if j >= count:
            return None
        line, start = self._line(j), self.line_starts[j]
        if j in self.fenced:
            k = j + 1
            while k < count and k in self.fenced and not FENCE_LINE.match(self._line(k)):
                k += 1
            return start, self.line_end(self.line_starts[min(k, count - 1)] + 1)
        if _LIST_ITEM.match(line):
            return self.list_block(start, start + len(line))
        if _HEADING.match(line):
            return self.section(start, start + len(line))
        k = j
        table = bool(_TABLE_ROW.match(line))
        while k + 1 < count and self._line(k + 1).strip() and (not table or _TABLE_ROW.match(self._line(k + 1))):
            k += 1
        return start, self.line_end(self.line_starts[k] + 1)

    def introduced(self, start: int, end: int, least: bool = False) -> tuple[int, int] | None:
        """The block the span's last line introduces when it is a lead-in (ends in ':'): with `least`, only a
        list's first item. None when it is no lead-in."""
        last = self.line_of(max(end - 1, start)) - 1
        if last in self.fenced or not self._line(last).rstrip().endswith(":"):
            return None
        found = self.following(last)
        if found is not None and least and _LIST_ITEM.match(self._line(self.line_of(found[0]) - 1)):
            found = found[0], self.item_end(self.line_of(found[0]) - 1)
        return found

    def closed(self, start: int, end: int, least: bool = False) -> tuple[int, int]:
        """The span widened until it holds what its answer needs: a list it touches whole, with the list's
        lead-in, and the block a lead-in at its end introduces (its last line ends in ':'), or right after its
        end (it stopped just before the answer: a lead-in and its list follow). With `least`, the
        smallest such widening (for a list too long to show whole): from the lead-in of the list its first
        line is in, and a trailing lead-in's first item or paragraph. Prose only."""
        if self.code:
            return start, end
        last = self.line_of(max(end - 1, start)) - 1
        after = self.next_line(last)
        if after is not None and self._lead_in_line(after) and not self._lead_in_line(last):
            if not _LIST_ITEM.match(self._line(last)) and last not in self.fenced:  # it stopped right before one
                end = self.line_end(self.line_starts[after] + 1)
        for _ in range(8):  # each round adds one block; a handful reaches the fixed point
            before = start, end
            block = self.list_block(start, end)
            if block is not None:
                lead = self.lead_in(self.line_of(block[0]) - 1)
                start = min(start, block[0], lead if lead is not None else start)
                end = end if least else max(end, block[1])
            found = self.introduced(start, end, least)
            end = max(end, found[1]) if found is not None else end
            if (start, end) == before:
                break
        return start, end

    def next_line(self, i: int) -> int | None:
        """The first non-blank 0-based line after line `i`, if any."""
        j = i + 1
        while j < len(self.line_starts) and not self._line(j).strip():
            j += 1
        return j if j < len(self.line_starts) else None

    def _lead_in_line(self, i: int) -> bool:
        """A prose line (no heading, item, table row or fenced line) that ends in ':' and introduces a block."""
        line = self._line(i)
        return (
            line.rstrip().endswith(":")
            and i not in self.fenced
            and not _HEADING.match(line)
            and not _LIST_ITEM.match(line)
            and not _TABLE_ROW.match(line)
            and self.following(i) is not None
        )

    def item_end(self, i: int) -> int:
        """The end of the list item on 0-based line `i`, with its indented continuation lines."""
        k = i
        while k + 1 < len(self.line_starts) and self._line(k + 1)[:1] in (" ", "\t") and self._line(k + 1).strip():
            k += 1
        return self.line_end(self.line_starts[k] + 1)

    def _line(self, i: int) -> str:
        start = self.line_starts[i]
        end = self.text.find("\n", start)
        return self.text[start : end if end != -1 else len(self.text)]

    def lines_span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets of 1-based lines first..last (the last line without its newline)."""
        start = self.line_starts[min(first, len(self.line_starts)) - 1]
        last_start = self.line_starts[min(last, len(self.line_starts)) - 1]
        return start, self.line_end(last_start + 1)


@dataclass
class Excerpt:
    """Consecutive text of one document shown as one fence; `members` are its chunks, best first."""

    members: list[Chunk]
    start: int
    end: int
    how: str
    doc: Document | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        return self.members[0].source_path

    def as_chunk(self) -> Chunk:
        """The excerpt in the shape the fence renders: its chunks' ids (in file order), span, lines."""
        best = self.members[0]
        if self.doc is None:
            return best
        ordered = [c.id for c in sorted(self.members, key=lambda c: c.span.start)]
        lines = (
            (self.doc.line_of(self.start), self.doc.line_of(max(self.start, self.end - 1))) if lines_of(best) else None
        )
        offsets = self.doc.offsets
        start, end = offsets.outside_secrets(self.start, self.end)
        span = (offsets.to_document(start), offsets.to_document(end, end=True))
        return _shaped(best, ordered, *span, self.doc.text[start:end], lines)

    def record(self) -> ExcerptRecord:
        chunk = self.as_chunk()
        lines = lines_of(chunk)
        return ExcerptRecord(
            source=self.path,
            chunks=[c.id for c in sorted(self.members, key=lambda c: c.span.start)],
            start=chunk.span.start,
            end=chunk.span.end,
            lines=list(lines) if lines else None,
            hydrated=self.how,
            text=chunk.text,
        )


class Sources:
    """Indexed documents read back on demand, each once, verified against the chunks that name it: from the
    project's folder, else from the index generation's copy (`stored`, path -> text as indexed)."""

    def __init__(
        self, root: Path | None, settings: Settings, stored: Callable[[str], str | None] | None = None
    ) -> None:
        self.root = root
        self.settings = settings
        self.stored = stored
        self._docs: dict[tuple[str, str], Document | None] = {}

    def document(self, chunk: Chunk) -> Document | None:
        key = (chunk.source_path, chunk.sha256)
        if key not in self._docs:
            self._docs[key] = self._read(chunk)
        doc = self._docs[key]
        if doc is not None and doc.text[slice(*indexed_span(doc, chunk))] != chunk.text:
            return None
        return doc

    def _read(self, chunk: Chunk) -> Document | None:
        if chunk.metadata.get("kind") != "text":
            return None
        texts = self._from_folder(chunk)
        if texts is None and self.stored is not None and (kept := self.stored(chunk.source_path)) is not None:
            texts = kept, kept  # the generation keeps the indexed text only: spans map where no secret was redacted
        if texts is None:
            return None
        document, text = texts
        language = (
            load_languages(self.settings.config_dir).of(chunk.source_path) if chunk.metadata.get("language") else None
        )
        code = language is not None
        return Document(text, code, language, Offsets(document, text), rst=is_rst(chunk.source_path))

    def _from_folder(self, chunk: Chunk) -> tuple[str, str] | None:
        """The document's text and its indexed text (secrets redacted), when the file is as it was indexed."""
        if self.root is None:
            return None
        try:
            loaded = load_document(self.root / chunk.source_path, self.settings.ingestion.max_file_bytes)
        except (SkipFile, OSError):
            return None
        if loaded.sha256 != chunk.sha256:
            return None
        return loaded.text, _redacted(loaded.text, loaded.sha256, chunk.source_path, self.settings)


_REDACTED: dict[tuple[str, str, str], str] = {}  # (sha256, path, scanner) -> the indexed text, newest last
_REDACTED_KEPT = 64
_REDACTED_LOCK = threading.Lock()


def _redacted(text: str, sha256: str, path: str, settings: Settings) -> str:
    """The document's text with its secrets redacted, as indexed. Scanning is most of the cost of reading a
    document back (36 ms for one OWASP cheat sheet), and A4 and the Prompt Builder each read the same documents
    in every run: a document is scanned once per content and scanner in the process."""
    key = (sha256, path, scanner_identity(settings.secrets))
    with _REDACTED_LOCK:  # runs of a server's threads share it
        found = _REDACTED.get(key)
    if found is None:
        found = scan_secrets(text, path, settings.secrets).text
        with _REDACTED_LOCK:
            while len(_REDACTED) >= _REDACTED_KEPT:
                del _REDACTED[next(iter(_REDACTED))]
            _REDACTED[key] = found
    return found


def indexed_span(doc: Document, chunk: Chunk) -> tuple[int, int]:
    """Where the chunk lies in the document's indexed text (its span points into the file's)."""
    return doc.offsets.to_indexed(chunk.span.start), doc.offsets.to_indexed(chunk.span.end, end=True)


def _touch(a: Excerpt, b: Excerpt) -> bool:
    """Same document, and overlapping or with only whitespace between them."""
    if a.doc is None or a.doc is not b.doc:
        return False
    return (
        max(a.start, b.start) <= min(a.end, b.end) or not a.doc.text[min(a.end, b.end) : max(a.start, b.start)].strip()
    )


def _union(first: Excerpt, then: Excerpt) -> Excerpt:
    members = first.members + [m for m in then.members if m.id not in {f.id for f in first.members}]
    how = (
        first.how
        if first.how == then.how
        else " + ".join(dict.fromkeys(first.how.split(" + ") + then.how.split(" + ")))
    )
    return Excerpt(members, min(first.start, then.start), max(first.end, then.end), how, first.doc)


def merged(excerpts: list[Excerpt]) -> list[Excerpt]:
    """Excerpts of one document that overlap or touch become one, placed where the best of them was."""
    out: list[Excerpt] = []
    for excerpt in excerpts:
        place = len(out)
        while True:
            hits = [i for i, other in enumerate(out) if _touch(other, excerpt)]
            if not hits:
                break
            place = min(place, hits[0])
            for i in reversed(hits):
                excerpt = _union(out.pop(i), excerpt)
        out.insert(place, excerpt)
    return out


def hydrated(chunk: Chunk, sources: Sources, reach: int) -> Excerpt:
    doc = sources.document(chunk)
    if doc is None:
        return Excerpt([chunk], chunk.span.start, chunk.span.end, "as indexed (document not readable as indexed)")
    start, end, whole = doc.whole(*indexed_span(doc, chunk), reach)
    how = (
        ("whole statements" if doc.code else "whole sentences")
        if whole
        else "line edges (no sentence boundary within reach)"
    )
    return Excerpt([chunk], start, end, how, doc)


def sentence_whole(
    chunks: list[Chunk], sources: Sources, reach: int, close: Callable[[Excerpt], Excerpt] | None = None
) -> list[Chunk]:
    """Each prose chunk as the prompt will at least show it: widened to whole sentences (step 1 above), and with
    `close` closed over its lead-in and list as step 3 closes it, under its own id, marked `sentence_edges` when
    both edges are whole, `opens_in_code` when it starts inside a fenced block (its own first fence line closes
    that block) and `code_until` where the reStructuredText literal block it starts inside ends. A4 reads these,
    so a sentence the chunk's window cut is whole in its candidates, a list the excerpt shows is read with its
    lead-in, and every line it quotes lies inside the excerpt the prompt shows (the later steps only add). A code
    chunk, or one whose document cannot be read back as indexed, stays as indexed."""
    found = []
    for chunk in chunks:
        if "language" in chunk.metadata:
            found.append(chunk)
            continue
        excerpt = hydrated(chunk, sources, reach)
        if excerpt.doc is None:
            found.append(chunk)
            continue
        doc, whole = excerpt.doc, excerpt.how == "whole sentences"
        if close is not None:
            excerpt = close(excerpt)  # adds whole lists, lead-ins and the blocks they introduce: edges stay whole
        shown = excerpt.as_chunk()
        first = doc.line_of(excerpt.start) - 1
        in_code = first in doc.fenced and not FENCE_LINE.match(doc.text[excerpt.start :])
        whole = whole and not in_code  # a line inside a code block opens no sentence
        literal = next((b for b in doc.literal if b.start <= excerpt.start < b.end), None)
        # Inside a fenced block: a literal block's lines are in `doc.fenced` too, but it ends where its indent does.
        opens_in_code = first in doc.fenced and first not in doc.fence_openers and literal is None
        metadata = {**chunk.metadata, "sentence_edges": whole, "opens_in_code": opens_in_code}
        if literal is not None:
            metadata["code_until"] = literal.end - excerpt.start
        found.append(chunk.model_copy(update={"text": shown.text, "span": shown.span, "metadata": metadata}))
    return found


def parent(excerpt: Excerpt) -> tuple[int, int, str] | None:
    """What encloses the excerpt: the definition its code belongs to, else its list, else its section."""
    doc = excerpt.doc
    if doc is None:
        return None
    if doc.code:
        spans = [doc.lines_span(s.first, s.last) for m in excerpt.members for s in symbols_of(m) if s.part]
        if not spans:
            return None
        return min([excerpt.start, *(s for s, _ in spans)]), max([excerpt.end, *(e for _, e in spans)]), "definition"
    for finder, name in ((doc.list_block, "list"), (doc.section, "section")):
        found = finder(excerpt.start, excerpt.end)
        if (
            found
            and (found[0] < excerpt.start or found[1] > excerpt.end)
            and found[0] <= excerpt.start
            and found[1] >= excerpt.end
        ):
            return found[0], found[1], name
    return None


def closed_excerpt(excerpt: Excerpt, cost: Callable[[Excerpt], int], cfg: ExcerptSettings) -> Excerpt:
    """The excerpt closed over its lead-ins and lists (`Document.closed`): whole lists when that adds at most
    `excerpts.max_closing_tokens`, else the least closure, else as it is."""
    if excerpt.doc is None:
        return excerpt
    for least in (False, True):
        start, end = excerpt.doc.closed(excerpt.start, excerpt.end, least)
        if (start, end) == (excerpt.start, excerpt.end):
            return excerpt
        wider = Excerpt(list(excerpt.members), start, end, f"{excerpt.how} + lead-in and list", excerpt.doc)
        if cost(wider) - cost(excerpt) <= cfg.max_closing_tokens:
            return wider
    return excerpt


def whole_excerpts(
    selection: list[Chunk],
    sources: Sources,
    budget: ContextBudget,
    fence: Callable[[Chunk], str],
    reserve: int,
    cfg: ExcerptSettings,
    ceiling: int | None = None,
) -> tuple[list[Chunk], TrimReport, list[ExcerptRecord]]:
    """The excerpts the prompt shows (as fence-ready chunks, best first), the budget report by chunk id,
    and how each excerpt was hydrated; `ceiling` overrides the prompt budget's (a plan's budget)."""
    cost_cache: dict[tuple[str, int, int, str], int] = {}

    def cost(e: Excerpt) -> int:
        key = (e.as_chunk().id, e.start, e.end, e.path)
        if key not in cost_cache:
            cost_cache[key] = budget.count(fence(e.as_chunk()))
        return cost_cache[key]

    # Closed before the budget is filled: an excerpt is shown with the lead-in and list its answer needs, or not
    # at all, never cut right before the items it announces.
    excerpts = merged([hydrated(c, sources, cfg.sentence_reach_chars) for c in selection])
    excerpts = merged([closed_excerpt(e, cost, cfg) for e in excerpts])

    kept, trim = budget.fit(
        "prompt",
        excerpts,
        key=lambda e: e.as_chunk().id,
        text=lambda e: fence(e.as_chunk()),
        reserve=reserve,
        ceiling=ceiling,
    )
    ceiling = trim.ceiling

    def parent_of(excerpt: Excerpt) -> Excerpt | None:
        found = parent(excerpt)
        if found is None:
            return None
        wider = Excerpt(list(excerpt.members), found[0], found[1], found[2], excerpt.doc)
        return wider if cost(wider) <= cfg.max_parent_tokens else None

    def with_neighbours(excerpt: Excerpt) -> Excerpt | None:
        doc = excerpt.doc
        reach = cfg.neighbour_chars
        if doc is None or not reach:
            return None
        start, end = doc.around(excerpt.start, excerpt.end, reach)
        if (start, end) == (excerpt.start, excerpt.end):
            return None
        what = "definitions" if doc.code else "text"
        return Excerpt(list(excerpt.members), start, end, f"{excerpt.how} + neighbouring {what}", doc)

    for wider_of in (parent_of, with_neighbours):  # each pass best first, while the budget allows
        index = 0
        while index < len(kept):
            target = kept[index]
            index += 1
            wider = wider_of(target)
            if wider is None:
                continue
            trial = merged([wider if e is target else e for e in kept])
            if reserve + sum(cost(e) for e in trial) <= ceiling:
                kept = trial
    trim.used = reserve + sum(cost(e) for e in kept)
    trim.kept = [m.id for e in kept for m in e.members]
    trim.removed = [c.id for c in selection if c.id not in set(trim.kept)]
    return [e.as_chunk() for e in kept], trim, [e.record() for e in kept]


def shown_excerpts(sp: SuperPrompt) -> list[Chunk]:
    """The excerpts the built prompt shows, best first, as fence-ready chunks (for exports)."""
    by_id = sp.chunk_by_id()
    report = sp.extras.build
    if report is None or not report.excerpts:  # built before whole excerpts: the kept chunks as indexed
        kept = report.budget.kept if report is not None and report.budget is not None else sp.final_selection_ids
        return [by_id[cid] for cid in kept if cid in by_id]
    shown = []
    for record in report.excerpts:
        best = next((by_id[cid] for cid in record.chunks if cid in by_id), None)
        if best is None:
            continue
        lines = (record.lines[0], record.lines[1]) if record.lines else None
        shown.append(_shaped(best, record.chunks, record.start, record.end, record.text, lines))
    return shown


def _shaped(best: Chunk, ids: list[str], start: int, end: int, text: str, lines: tuple[int, int] | None) -> Chunk:
    """An excerpt as a chunk: its chunks' ids, its own span, text and lines, the best chunk's other metadata
    (not its definitions: an excerpt may hold more or less than that chunk did)."""
    metadata = {k: v for k, v in best.metadata.items() if k not in ("symbols", "line_start", "line_end")}
    if lines:
        metadata["line_start"], metadata["line_end"] = lines
    return best.model_copy(
        update={"id": " ".join(ids), "text": text, "span": Span(start=start, end=end), "metadata": metadata}
    )

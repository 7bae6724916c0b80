"""Offline A4: query-focused extractive condensation, verbatim and cited.

Sentences are cut from each selected chunk on its own (never joined across chunks), so every line is
a contiguous span of the one chunk it cites. A sentence cut by a chunk edge is left out (the
neighbouring chunk, when selected, holds it whole). Candidate sentences are scored by cosine
similarity to the prompt's query pieces; maximal marginal relevance picks the most relevant ones that do not repeat
each other, up to `condenser.max_lines`, and nothing under `condenser.min_relevance`. Each line is
filed by documented cues (`condenser.*_cues`): Open issues are questions and undecided points,
decisions are Facts, Constraints are normative sentences, Facts the rest. Source code contributes no
sentences: a code chunk offers references to the definitions it holds (kind, name, `path:first-last`
and the first line of its doc comment, all from the chunk's ingestion metadata), scored and picked
like sentences and filed under Facts; code indexed without definitions offers nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ragstream.code.symbols import Symbol, symbols_of
from ragstream.settings import CondenserSettings
from ragstream.state import Chunk
from ragstream.text.fences import FENCE_LINE
from ragstream.text.phrases import phrase
from ragstream.text.sentences import MARKDOWN, spans

_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])[ \t]+")
_TERMINAL = re.compile(r"[.!?:;)\"'`]$")
_CODE = re.compile(r"^\s*(?:def |class |import |from \S+ import |return\b|@\w|[{}]|```)|[;{}]\s*$|\s=\s|==|\)\s*:\s*$")
# Lines that are markup, not prose: HTML comments, rules and underlines (front matter's "---" too),
# reStructuredText directives and field lists, table rows, shell and doctest prompts, a bare link.
_MARKUP = re.compile(
    r"<!--|-->|^\s*(?:-{3,}|={3,}|~{3,}|\*{3,}|\^{3,})\s*$|^\s*\.\.\s|^\s*:[\w -]+:|^\s*\||^\s*(?:>>>|\$\s|\.\.\.\s)"
    r"|^\W*(?:<?https?://\S+>?|\[[^\]]*\]\([^)]*\))\W*$|^\s*(?::::|```|~~~)",
    re.MULTILINE,
)
# A paragraph that introduces literal text (reStructuredText "::", or a code directive): what follows is code.
_LITERAL_INTRO = re.compile(r"::\s*$|^\.\.\s+(?:code|code-block|sourcecode|literalinclude|doctest)\b")
_LIST_END = re.compile(r"\n[ \t]*\n(?![ \t]*(?:[-*+]|\d+[.)])[ \t])")
MIN_WORDS = 4
MAX_LIST_WORDS = 150  # a lead-in with more items than this is too long to be one line: the items stand alone


@dataclass(frozen=True)
class Sentence:
    chunk: Chunk
    start: int  # span within chunk.text
    end: int

    @property
    def text(self) -> str:
        return " ".join(self.chunk.text[self.start : self.end].split())


@dataclass(frozen=True)
class Reference:
    """Where a definition in a code chunk lives, as a line the answering model can cite as `path:line`."""

    chunk: Chunk
    symbol: Symbol

    @property
    def start(self) -> int:
        return self.symbol.first

    @property
    def text(self) -> str:
        s = self.symbol
        where = f"{self.chunk.source_path}:{s.first}" + (f"-{s.last}" if s.last != s.first else "")
        doc = f": {s.doc}" if s.doc else ""
        return f"{s.kind} `{s.name}` ({where}){' (part shown)' if s.part else ''}{doc}"


@dataclass(frozen=True)
class Line:
    section: str  # facts | constraints | open_issues
    text: str
    chunk_id: str
    relevance: float
    cue: str


def _fenced(text: str) -> list[tuple[int, int]]:
    """Spans of the text inside fenced code blocks (an unclosed fence runs to the end)."""
    marks = [m.start() for m in FENCE_LINE.finditer(text)]
    marks += [len(text)] if len(marks) % 2 else []
    return list(zip(marks[::2], marks[1::2], strict=False))


def _is_prose(raw: str) -> bool:
    return not any(_CODE.search(line) or _MARKUP.search(line) for line in raw.splitlines())


def sentences_of(chunk: Chunk) -> list[Sentence]:
    """The chunk's whole sentences and list items, as spans of its own text (headings, code and markup
    left out). A sentence that introduces a list (ends with ':') is one span with its items; one that
    introduces code, a table or nothing is left out, since alone it says nothing."""
    if "language" in chunk.metadata:
        return []  # source code is never flattened into sentences
    text = chunk.text
    fenced = _fenced(text)
    pieces = spans(text, MARKDOWN)
    found: list[Sentence] = []
    consumed = literal = 0
    for index, (a, b) in enumerate(pieces):
        raw = text[a:b]
        lead = len(raw) - len(raw.lstrip())
        a, raw = a + lead, raw.strip()
        after_literal, literal = literal, bool(_LITERAL_INTRO.search(raw))
        if not raw or raw.startswith("#") or a < consumed or any(x <= a < y for x, y in fenced):
            continue
        if index == 0 and chunk.span.start > 0:
            continue  # may begin mid-sentence: the chunk before holds it whole
        if after_literal and (lead or text[max(a - 1, 0)] in " \t"):
            continue  # the indented literal block of a "::" paragraph
        if index == len(pieces) - 1 and not _TERMINAL.search(raw):
            continue  # may be cut by the chunk's end (a line break there may be a mere wrap)
        marker = _MARKER.match(raw)
        if marker:
            a, raw = a + marker.end(), raw[marker.end() :]
        if raw.endswith(":"):
            items = _with_items(chunk, a, b)
            if items is not None:
                found.append(items)
                consumed = items.end
            continue
        if len(raw.split()) < MIN_WORDS or not _is_prose(raw):
            continue
        found.append(Sentence(chunk, a, a + len(raw)))
    return found


def _with_items(chunk: Chunk, start: int, lead_end: int) -> Sentence | None:
    """The lead-in at `start` with the list that follows it, when a whole list of prose items does."""
    text = chunk.text
    rest = text[lead_end:]
    if not re.match(r"\s*\n[ \t]*(?:[-*+]|\d+[.)])[ \t]", rest):
        return None
    end = _LIST_END.search(text, lead_end)
    if end is None and not _TERMINAL.search(text.rstrip()):
        return None  # the list may go on in the next chunk
    stop = end.start() if end else len(text.rstrip())
    span = text[start:stop]
    if len(span.split()) > MAX_LIST_WORDS or not _is_prose(span):
        return None
    return Sentence(chunk, start, stop)


def _cue(sentence: str, cues: list[str]) -> str:
    lowered = sentence.lower()
    return next((cue for cue in cues if phrase(cue).search(lowered)), "")


def classify(sentence: str, settings: CondenserSettings) -> tuple[str, str]:
    """(section, the cue that decided it): questions and undecided points; then decisions, which are
    facts even when they state a rule; then normative sentences; the rest are facts."""
    if sentence.rstrip().endswith("?"):
        return "open_issues", "?"
    cue = _cue(sentence, settings.open_issue_cues)
    if cue:
        return "open_issues", cue
    cue = _cue(sentence, settings.decision_cues)
    if cue:
        return "facts", cue
    cue = _cue(sentence, settings.constraint_cues)
    if cue and not _cue(sentence, settings.example_cues):
        return "constraints", cue
    return "facts", ""


def stands_alone(sentence: str, settings: CondenserSettings) -> bool:
    """Content about the subject: not narration or a cross-reference, not leaning on what came before."""
    opening = re.match(r"\W*([A-Za-z]+)", sentence)
    first = opening.group(1).lower() if opening else ""
    return first not in settings.dangling_openers and not _cue(sentence, settings.narration_cues)


def select(relevance: np.ndarray, similarity: np.ndarray, settings: CondenserSettings) -> list[int]:
    """Maximal marginal relevance over candidates at or above the relevance floor."""
    remaining = [i for i in range(len(relevance)) if relevance[i] >= settings.min_relevance]
    chosen: list[int] = []
    while remaining and len(chosen) < settings.max_lines:

        def gain(i: int) -> float:
            redundancy = max((float(similarity[i, j]) for j in chosen), default=0.0)
            return settings.mmr_lambda * float(relevance[i]) - (1 - settings.mmr_lambda) * redundancy

        best = max(remaining, key=lambda i: (gain(i), -i))
        chosen.append(best)
        remaining.remove(best)
    return chosen


def condense_extractively(asks: list[str], chunks: list[Chunk], embed, settings: CondenserSettings) -> list[Line]:
    """The lines of the condensed context, in selection order, each from one chunk.

    A sentence's relevance is its best cosine to any of `asks` (the prompt's query pieces).
    """
    candidates: list[Sentence | Reference] = [
        s for chunk in chunks for s in sentences_of(chunk) if stands_alone(s.text, settings)
    ]
    candidates += [Reference(chunk, symbol) for chunk in chunks for symbol in symbols_of(chunk)]
    unique: dict[str, Sentence | Reference] = {}
    for s in candidates:
        unique.setdefault(s.text.lower(), s)
    candidates = list(unique.values())
    asks = [a for a in asks if a.strip()]
    if not candidates or not asks:
        return []
    vectors = embed(asks + [s.text for s in candidates])
    ask_vectors, sentence_vectors = vectors[: len(asks)], vectors[len(asks) :]
    relevance = (sentence_vectors @ ask_vectors.T).max(axis=1)
    chosen = select(relevance, sentence_vectors @ sentence_vectors.T, settings)
    order = {c.id: i for i, c in enumerate(chunks)}
    chosen.sort(key=lambda i: (order[candidates[i].chunk.id], candidates[i].start))
    lines = []
    for i in chosen:
        section, cue = (
            ("facts", "definition") if isinstance(candidates[i], Reference) else classify(candidates[i].text, settings)
        )
        lines.append(Line(section, candidates[i].text, candidates[i].chunk.id, round(float(relevance[i]), 4), cue))
    return lines

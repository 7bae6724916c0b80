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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.code.symbols import Symbol, symbols_of
from ragstream.settings import CondenserSettings
from ragstream.state import Chunk
from ragstream.text.fences import FENCE_LINE
from ragstream.text.phrases import phrase
from ragstream.text.sentences import MARKDOWN, spans

_MARKER = re.compile(r"^(?:(?:[-*+]|\d+[.)])[ \t]+(?::[ \t]+)?|:[ \t]+)")  # list item, or a definition's ": "
# A bold or underlined label opening a piece ("**Note:** ...", "**If no DOI is issued:**"): never a line alone.
_LABEL = re.compile(r"^(?:\*\*[^*\n]+\*\*|__[^_\n]+__)[:.]?(?:\s+|$)")
_TERMINAL = re.compile(r"[.!?:;)\"'`]$")
_CODE = re.compile(r"^\s*(?:def |class |import |from \S+ import |return\b|@\w|[{}]|```)|[;{}]\s*$|\s=\s|==|\)\s*:\s*$")
# Lines that are markup, not prose: HTML comments, rules and underlines (front matter's "---" too),
# reStructuredText directives and field lists, table rows, shell and doctest prompts, a bare link, a line
# that is one HTML or JSX tag, an image (or the end of its alt text), a sequence diagram's arrow.
_MARKUP = re.compile(
    r"<!--|-->|^\s*(?:-{3,}|={3,}|~{3,}|\*{3,}|\^{3,})\s*$|^\s*\.\.\s|^\s*:[\w -]+:|^\s*\||^\s*(?:>>>|\$\s|\.\.\.\s)"
    r"|^\W*(?:<?https?://\S+>?|\[[^\]]*\]\([^)]*\))\W*$|^\s*(?::::|```|~~~)|^\s*</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>\s*$"
    r"|!\[|\]\([^)\s]+\.(?:svg|png|jpe?g|gif|webp)\)|-+>>|<<-+",
    re.MULTILINE,
)
# A paragraph that introduces literal text (reStructuredText "::", or a code directive): what follows is code.
_LITERAL_INTRO = re.compile(r"::\s*$|^\.\.\s+(?:code|code-block|sourcecode|literalinclude|doctest)\b")
_LIST_END = re.compile(r"\n[ \t]*\n(?![ \t]*(?:[-*+]|\d+[.)])[ \t])")
# A fenced block of at most three short lines right after a lead-in: the command or setting it introduces
# (a plain block, its info string a language name at most: a directive such as {eval-rst} is markup, and so
# is a template's {{#include ...}}).
_SHORT_CODE = re.compile(
    r"[ \t]*\n(?:[ \t]*\n)?[ \t]*(`{3,}|~{3,})[\w+.-]*[ \t]*\n"
    r"(?:(?![ \t]*\{[{%])[^\n]{0,120}\n){1,3}?[ \t]*\1[ \t]*(?=\n|$)"
)
_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)|<?https?://\S+>?")
_HEADER_END = re.compile(r"\s*(?::|\{|=>)\s*(?:#.*|//.*)?$")  # where a definition's header ends and its body starts
_HEADER_LINES = 4
MAX_SIGNATURE = 160
MIN_WORDS = 4
MAX_LIST_WORDS = 150  # a lead-in with more items than this is too long to be one line: the items stand alone


@dataclass(frozen=True)
class Sentence:
    chunk: Chunk
    start: int  # span within chunk.text
    end: int
    listed: bool = False  # a lead-in with the list or short code block it introduces: the items carry it

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
        """What the definition does: its signature (or name), where it lives, its doc comment's first sentence."""
        s = self.symbol
        where = f"{self.chunk.source_path}:{s.first}" + (f"-{s.last}" if s.last != s.first else "")
        doc = f": {s.doc}" if s.doc else ""
        signature = self.signature()
        owner = s.name.rsplit(".", 1)[0] + "." if "." in s.name else ""  # Store.Get's "Store."
        name = owner + signature if signature else s.name
        return f"{s.kind} `{name}` ({where}){' (part shown)' if s.part else ''}{doc}"

    def signature(self) -> str:
        """The definition's header as written from its name on (decorators, comments and keywords skipped, up to
        its body), when the chunk holds it and it says more than the name; '' otherwise."""
        start = self.chunk.metadata.get("line_start")
        if not isinstance(start, int):
            return ""
        lines = self.chunk.text.split("\n")[max(self.symbol.first - start, 0) :]
        header: list[str] = []
        for line in lines[: 2 * _HEADER_LINES]:
            stripped = line.strip()
            if not header and (not stripped or stripped.startswith(("@", "#", "//", "/*", "*"))):
                continue
            header.append(stripped)
            if _HEADER_END.search(stripped) or len(header) == _HEADER_LINES:
                break
        if not header or not _HEADER_END.search(header[-1]):
            return ""
        text = _HEADER_END.sub("", " ".join(header)).strip()
        short = self.symbol.name.rsplit(".", 1)[-1]
        found = re.search(rf"(?<![\w.]){re.escape(short)}\b", text)
        if found is None or len(text) > MAX_SIGNATURE or "`" in text:
            return ""
        text = text[found.start() :]  # from the name on: "open_store(path: str) -> Connection", not the keyword
        return "" if text == short else text


@dataclass(frozen=True)
class Line:
    section: str  # facts | constraints | open_issues
    text: str
    chunk_id: str
    relevance: float
    cue: str
    part: int = 0  # the part of the ask (clause, in order) it answers best
    core: bool = False  # chosen by evidence for its part, not only by relevance


def _fenced(text: str) -> list[tuple[int, int]]:
    """Spans of the text inside fenced code blocks (an unclosed fence runs to the end)."""
    marks = [m.start() for m in FENCE_LINE.finditer(text)]
    marks += [len(text)] if len(marks) % 2 else []
    return list(zip(marks[::2], marks[1::2], strict=False))


def is_prose(raw: str) -> bool:
    """No line of `raw` is code or markup."""
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
        label = _LABEL.match(raw)
        if label and label.end() < len(raw):
            a, raw = a + label.end(), raw[label.end() :]  # the sentence after the label stands alone
        elif label:
            raw = raw.strip("*_")  # a label alone leads in to a list, or is left out
            if not raw.endswith(":"):
                continue
        if raw.endswith(":"):
            items = _with_items(chunk, a, b)
            if items is not None:
                found.append(items)
                consumed = items.end
            continue
        if len(_LINK.sub("", raw).split()) < MIN_WORDS or not is_prose(raw):
            continue  # too short, or a link with a word or two around it ("[Range requests](...) guide")
        found.append(Sentence(chunk, a, a + len(raw)))
    return found


def _with_items(chunk: Chunk, start: int, lead_end: int) -> Sentence | None:
    """The lead-in at `start` with the list that follows it, when a whole list of prose items does, or with
    the short code block (a command, a setting) that follows it, when the chunk holds all of it."""
    text = chunk.text
    rest = text[lead_end:]
    code = _SHORT_CODE.match(rest)
    if code:
        return Sentence(chunk, start, lead_end + code.end(), listed=True)
    if not re.match(r"\s*\n[ \t]*(?:[-*+]|\d+[.)])[ \t]", rest):
        return None
    end = _LIST_END.search(text, lead_end)
    if end is None and not _TERMINAL.search(text.rstrip()):
        return None  # the list may go on in the next chunk
    stop = end.start() if end else len(text.rstrip())
    span = text[start:stop]
    if len(span.split()) > MAX_LIST_WORDS or not is_prose(span) or span.rstrip().endswith(":"):
        return None  # too long, not prose, or its last item leads in to something the span does not hold
    return Sentence(chunk, start, stop, listed=True)


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


Evidence = Callable[[str, list[str], np.ndarray, np.ndarray], tuple[list[float], list[bool]]]


def _candidates(chunks: list[Chunk], settings: CondenserSettings) -> list[Sentence | Reference]:
    """Each chunk's standalone sentences and the definitions it holds, each text once; a definition named
    twice (an overload stub, then the function) once, with its doc comment when one of them has it."""
    found: list[Sentence | Reference] = [
        s for chunk in chunks for s in sentences_of(chunk) if s.listed or stands_alone(s.text, settings)
    ]
    definitions: dict[tuple[str, str], Reference] = {}
    for chunk in chunks:
        for symbol in symbols_of(chunk):
            key = (chunk.source_path, symbol.name)
            if key not in definitions or (symbol.doc and not definitions[key].symbol.doc):
                definitions[key] = Reference(chunk, symbol)
    unique: dict[str, Sentence | Reference] = {}
    for s in [*found, *definitions.values()]:
        unique.setdefault(s.text.lower(), s)
    return list(unique.values())


def condense_extractively(
    asks: list[str],
    chunks: list[Chunk],
    embed,
    settings: CondenserSettings,
    parts: Sequence[str] = (),
    evidence: Evidence | None = None,
) -> list[Line]:
    """The lines of the condensed context, answer first: each from one chunk, ordered by the part of the ask
    they answer (in the ask's order), then by where they stand in the selection.

    `parts` are the clauses of the ask (in order; the ask's pieces when none are given), and `evidence(part,
    texts, vectors, part_vector)` says for each candidate its evidence for the part and whether it is enough
    (A3's absolute evidence, so a line answers a clause by the rule a chunk is kept for it; the cosine
    against `condenser.min_relevance` without one). For each part, its `condenser.per_part` best-evidenced
    candidates come first (not repeating a line already chosen); the remaining lines, up to
    `condenser.max_lines`, are those most relevant per word (relevance: the best cosine to any of `asks`,
    the prompt's query pieces and clauses), so short answering sentences beat long ones that merely fit.
    Each line is marked `core` (answers a part) or not (filler by relevance), for the token budget.
    """
    candidates = _candidates(chunks, settings)
    asks = [a for a in asks if a.strip()]
    parts = [p for p in parts if p.strip()] or asks
    if not candidates or not asks:
        return []
    texts = [s.text for s in candidates]
    vectors = embed(list(dict.fromkeys([*asks, *parts])) + texts)
    queries = {q: vectors[i] for i, q in enumerate(dict.fromkeys([*asks, *parts]))}
    sentence_vectors = vectors[len(queries) :]
    relevance = (sentence_vectors @ np.asarray([queries[a] for a in asks]).T).max(axis=1)
    similarity = sentence_vectors @ sentence_vectors.T
    scores = np.zeros((len(candidates), len(parts)))
    enough = np.zeros((len(candidates), len(parts)), dtype=bool)
    for p, part in enumerate(parts):
        if evidence is None:
            scores[:, p] = sentence_vectors @ queries[part]
            enough[:, p] = scores[:, p] >= settings.min_relevance
        else:
            found, kept = evidence(part, texts, sentence_vectors, queries[part])
            scores[:, p], enough[:, p] = found, kept
    chosen: list[int] = []
    core: set[int] = set()

    def fresh(i: int) -> bool:
        return all(float(similarity[i, j]) < settings.max_similarity for j in chosen)

    for p in range(len(parts)):
        answering = sorted((i for i in range(len(candidates)) if enough[i, p]), key=lambda i: -scores[i, p])
        for i in [i for i in answering if i not in chosen][: settings.per_part]:
            if fresh(i) and len(chosen) < settings.max_lines:
                chosen.append(i)
                core.add(i)
    for i in sorted(range(len(candidates)), key=lambda i: (-relevance[i], i)):
        if len(chosen) >= settings.max_lines:
            break
        if i not in chosen and relevance[i] >= settings.min_relevance and fresh(i):
            chosen.append(i)
    order = {c.id: i for i, c in enumerate(chunks)}
    part_of = {i: int(np.argmax(scores[i])) for i in chosen}
    chosen.sort(key=lambda i: (part_of[i], order[candidates[i].chunk.id], candidates[i].start))
    lines = []
    for i in chosen:
        section, cue = (
            ("facts", "definition") if isinstance(candidates[i], Reference) else classify(candidates[i].text, settings)
        )
        lines.append(
            Line(section, texts[i], candidates[i].chunk.id, round(float(relevance[i]), 4), cue, part_of[i], i in core)
        )
    return lines

"""Offline A4: query-focused extractive condensation, verbatim and cited.

Sentences are cut from each selected chunk on its own (never joined across chunks), so every line is
a contiguous span of the one chunk it cites. A sentence cut by a chunk edge is left out (the
neighbouring chunk, when selected, holds it whole). What answers is not always a plain sentence, so the
candidates are also: a list's lead-in with its items (or with the command it introduces), a sentence that
leans on the one before it ("However, it is not encrypted.") with that one, a whole statement in bold, a
recommendation with the value in code it quotes on the next line, a comment in a code block with the lines
of code it describes ("# Save state to file" and its command), and each body row of a table. Candidates are
scored by the evidence A3 uses (see `condense_extractively`) and picked answer first, not repeating each
other, up to `condenser.max_lines`, and nothing under `condenser.min_relevance`. Each line is
filed by documented cues (`condenser.*_cues`): Open issues are questions and undecided points,
decisions are Facts, Constraints are normative sentences, Facts the rest. Source code contributes no
sentences: a code chunk offers references to the definitions it holds (kind, name, `path:first-last`
and the first line of its doc comment, all from the chunk's ingestion metadata), each also with one
paragraph or field of its Python docstring that the chunk holds (":param wrap_width: ..."), scored and
picked like sentences and filed under Facts, each definition once; code indexed without definitions
offers nothing.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import PurePosixPath

import numpy as np

from ragstream.code.symbols import Symbol, symbols_of
from ragstream.settings import CondenserSettings
from ragstream.state import Chunk
from ragstream.text.fences import FENCE_LINE, fence_marks, fenced_spans
from ragstream.text.headings import HEADING_LINE, heading_name, holding
from ragstream.text.phrases import any_phrase, as_typed, phrase, unquoted
from ragstream.text.rst import (
    Block,
    after_directive,
    as_read,
    block_after,
    is_rst,
    literal_blocks,
    table_rows,
    title_spans,
)
from ragstream.text.sentences import MARKDOWN, spans

_MARKER = re.compile(r"^(?:(?:[-*+]|\d+[.)])[ \t]+(?::[ \t]+)?|:[ \t]+)")  # list item, or a definition's ": "
# A bold or underlined label opening a piece ("**Note:** ...", "**If no DOI is issued:**"): never a line alone.
_LABEL = re.compile(r"^[_*]?(?:\*\*[^*\n]+\*\*|__[^_\n]+__)[_*]?[:.]?(?:\s+|$)")  # bold, maybe in italics
# A bold word the sentence goes on from: no colon or full stop ends it, and the next word is in lower case or a
# parenthesis ("**For flat indexes** (i.e., `--find-links` locations), uv assumes ...").
_GOES_ON = re.compile(r"[a-z(]")


def _subject(label: str, rest: str) -> bool:
    """Whether a bold opening is the subject of its sentence ("**Docker** is a popular choice ...") rather than a
    label ("**Note:** ..."): left out as a label, the line read "is a popular choice for modern application
    deployment"."""
    return not re.search(r"[:.]\W*$", label.strip()) and _GOES_ON.match(rest) is not None


_TERMINAL = re.compile(r"[.!?:;)\"'`]$")
# A chunk whose text opens on a line break began after whitespace (the splitter starts windows after
# whitespace): a blank line, so its first piece is a whole paragraph, when that opens as a sentence or a
# block does (a wrapped line's start is no line break, it is the word itself).
_OPENS_PARAGRAPH = re.compile(r"[ \t]*\n\s*(?:[A-Z0-9#>*_`\[]|[-+]\s)")
_VALUE_LINE = re.compile(r"(?:\A|\n)[ \t>*-]*`[^`\n]+`\Z")  # a line that is one code span: a quoted value


def ends_whole(text: str) -> bool:
    """Whether `text` ends as a whole sentence does: a closing mark, but a code span only on a line of its own (a
    quoted value). "The iterator is stored in the `v1_iter`", a chunk's last words, goes on "variable." in the
    next chunk."""
    text = text.rstrip()
    return bool(_TERMINAL.search(text)) and (not text.endswith("`") or _VALUE_LINE.search(text) is not None)


_CODE = re.compile(r"^\s*(?:def |class |import |from \S+ import |return\b|@\w|[{}]|```)|[;{}]\s*$|\s=\s|==|\)\s*:\s*$")
# Lines that are markup, not prose: HTML comments, rules and underlines (front matter's "---" too),
# reStructuredText directives and field lists (":param width:", not a role a wrapped line opens with: ":exc:`Foo`"),
# table rows, shell and doctest prompts, a bare link, a line that is one HTML or JSX tag, an image (or the end of
# its alt text), a sequence diagram's arrow, a Markdown link reference definition ("[docs_dir]:
# user-guide/configuration.md#docs_dir": a link's target, not a statement) or a reStructuredText hyperlink target
# (".. _First Steps with Celery: https://...", its ".." cut off as a sentence).
_MARKUP = re.compile(
    r"<!--|-->|^\s*(?:-{3,}|={3,}|~{3,}|\*{3,}|\^{3,})\s*$|^\s*\.\.\s|^\s*:[\w -]+:(?![\w:.+-]*`)|^\s*\|"
    r"|^\s*(?:>>>|\$\s|\.\.\.\s)"
    r"""|^[ ]{0,3}\[[^\]]+\]:[ \t]*<?\S+>?(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$"""
    r"|^[ \t]*(?:\.\.[ \t]+)?__?[^:\n]*:[ \t]+(?:https?://|[\w.-]*[/#.])\S*[ \t]*$"
    r"|^\W*(?:<?https?://\S+>?|\[[^\]]*\]\([^)]*\))\W*$|^\s*(?::::|```|~~~)"
    r'|^\s*</?[A-Za-z][\w-]*(?:\s(?:"[^"]*"|[^<>"])*)?/?>\s*$'
    r"|!\[|\]\([^)\s]+\.(?:svg|png|jpe?g|gif|webp)\)|-+>>|<<-+",
    re.MULTILINE,
)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_LIST_END = re.compile(r"\n[ \t]*\n(?![ \t]*(?:[-*+]|\d+[.)])[ \t])")
_ITEM_LINE = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]")


def _list_end(text: str, start: int, lead_end: int) -> int | None:
    """Where the list that the lead-in opening at `start` introduces (after `lead_end`) ends: at a blank line no item
    follows, and, for a lead-in that is itself an item ("- The only combinations allowed are:" over its nested
    items), at the next item no deeper than it, which belongs to the outer list. None: it runs to the text's end."""
    line_start = text.rfind("\n", 0, start) + 1
    end = _LIST_END.search(text, lead_end)
    stop = end.start() if end else None
    if _ITEM_LINE.match(text, line_start):
        indent = len(text[line_start:start]) - len(text[line_start:start].lstrip(" \t"))
        outer = re.compile(rf"\n[ \t]{{0,{indent}}}(?:[-*+]|\d+[.)])[ \t]").search(text, lead_end)
        if outer is not None and (stop is None or outer.start() < stop):
            stop = outer.start()
    return stop


# A fenced block of at most three short lines right after a lead-in: the command or setting it introduces
# (a plain block, its info string a language name at most: a directive such as {eval-rst} is markup, and so
# is a template's {{#include ...}}); a settings block (TOML, YAML, INI, an env file) of at most six, since a
# setting takes a line for its table or key and one per value ("repos: - repo: ... rev: ... hooks: - id: black").
# The line break after a lead-in, and the HTML comments before its block (the Rust book's "<!-- manual-regeneration
# ... -->" before each session): a comment is never read, so the lead-in still introduces the block.
_BLOCK_GAP = r"[ \t]*\n(?:[ \t]*\n)?(?:[ \t]*<!--[\s\S]*?-->[ \t]*\n(?:[ \t]*\n)?)*"
_SHORT_CODE = re.compile(
    _BLOCK_GAP + r"[ \t]*(`{3,}|~{3,})(?:(?:toml|ya?ml|ini|cfg|conf|env|dotenv|properties)[ \t]*\n"
    r"(?:(?![ \t]*\{[{%])[^\n]{0,120}\n){1,6}?|[\w+.-]*[ \t]*\n"
    r"(?:(?![ \t]*\{[{%])[^\n]{0,120}\n){1,3}?)[ \t]*\1[ \t]*(?=\n|$)"
)
# A longer block after a lead-in that opens with a shell prompt ("$ cargo test -- --show-output", then its
# output): the command is what the lead-in introduces, so it comes with it (the output stays in the excerpt).
_COMMAND_FIRST = re.compile(_BLOCK_GAP + r"[ \t]*(?:`{3,}|~{3,})[\w+.-]*[ \t]*\n[ \t]*[$>] [^\n]{1,120}(?=\n)")
# A list item that only names something: every word capitalized (short joining words aside), no closing mark.
_TITLE_CASE = re.compile(r"(?:(?:[A-Z0-9]\S*|[a-z]{1,4}|&|/)[ \t]+)*[A-Z0-9](?:\S*[^\s.!?:;,])?")
_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)|`[^`<\n]*<[^>\n]+>`__?|<?https?://\S+>?")  # Markdown's, reST's, bare
# A piece that is only a value in code ("> `X-Content-Type-Options: nosniff`"): the setting the sentence before
# it recommends, so it goes with that sentence.
_CODE_VALUE = re.compile(r"^(?:>[ \t]*)?`[^`\n]+`[.;]?$")
# A comment line in a code block ("# Save state to file", "// Mock the API"), then the code it describes.
_COMMENT = re.compile(r"^[ \t]*(?:#|//)[ \t]+(?P<words>[^\n]*\w[^\n]*)$")
# A fence its document marks as code that is wrong or fails (MDN's "```http example-bad", mdBook's
# "```rust,ignore,does_not_compile", rustdoc's "compile_fail"): what it shows is what not to write.
_FAILING_FENCE = re.compile(
    r"^[ \t>]*(?:`{3,}|~{3,})[^\n]*?(?<![\w-])(?:example-bad|bad|wrong|incorrect|invalid|does_not_compile|"
    r"compile_fail|run-fail|should_panic|anti-?pattern)(?![\w-])",
    re.M,
)
_TABLE_ROW = re.compile(r"^[ \t]*\|(?P<cells>.*\S.*)\|[ \t]*$")
_TABLE_RULE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?)?[ \t]*$")
_PROMPT = re.compile(r"^[ \t]*\$[ \t]")  # a shell session's command line ("$ typer ./main.py run")
MAX_COMMAND_LINES = 3
MAX_COMMAND_CHARS = 120
# Where a definition's header ends and its body starts; a Python stub's body ("...") on the same line, as overloads
# and protocols have it, ends it too.
_HEADER_END = re.compile(r"\s*(?::(?:\s*\.\.\.)?|\{|=>)\s*(?:#.*|//.*)?$")
_HEADER_LINES = 4
MAX_SIGNATURE = 160
MIN_WORDS = 4
MAX_LIST_WORDS = 150  # a lead-in with more items than this is too long to be one line: the items stand alone
MAX_ITEM_WORDS = 80  # a list item of several sentences up to this long is one line; a longer one, its sentences
# Where a list item ends: a blank line, the next item, a heading or a fence.
_ITEM_END = re.compile(r"\n[ \t]*(?:\n|(?:[-*+]|\d+[.)])[ \t]|#|`{3}|~{3})")


@dataclass(frozen=True)
class Sentence:
    chunk: Chunk
    start: int  # span within chunk.text
    end: int
    listed: bool = False  # a lead-in with the list or short code block it introduces, or a sentence with the short
    # block right after it: the items or the code carry it
    code: bool = False  # a code block's comment with the lines it describes ("# Save state to file", its command)
    lead: str = ""  # the lead-in of the list this item stands in, when the list was too long to be one line
    items: bool = False  # a lead-in with the whole list of items it introduces (not a code block)
    subject: str = ""  # the name its section's heading is, when the sentence does not say it (`_named_sections`)

    @property
    def scored(self) -> str:
        """What the line is scored as: an item with its lead-in, which says what the item answers ("...the
        below should be followed to implement a secure process:" over "Return a consistent message ...")."""
        return f"{self.lead} {self.shown}" if self.lead else self.shown

    @property
    def lead_in(self) -> str:
        """A lead-in with its items: the lead-in alone, what says what the items answer ("`blackd` can produce the
        following response codes:"); "" otherwise."""
        if not self.items:
            return ""
        head = self.chunk.text[self.start : self.end].split("\n", 1)[0]
        return " ".join(head.split()) if head.rstrip().endswith(":") else ""

    @property
    def introduces(self) -> bool:
        """A lead-in shown without the code or table it introduces (`states`): it is a line only where it answers a
        part of the ask, never filler beside the lines that do."""
        return not (self.listed or self.code) and self.text.endswith(":")

    @property
    def shown(self) -> str:
        """The line as the condensed context gives it: under a heading that is a bare name, named by it."""
        return f"`{self.subject}`: {self.text}" if self.subject else self.text

    @property
    def text(self) -> str:
        """The span as its reader sees it: whitespace collapsed, an HTML comment in it ("[link]<!-- ignore -->")
        left out."""
        raw = as_read(self.chunk.text[self.start : self.end])
        return " ".join((_HTML_COMMENT.sub("", raw) if "<!--" in raw else raw).split())


@dataclass(frozen=True)
class Reference:
    """Where a definition in a code chunk lives, as a line the answering model can cite as `path:line`."""

    chunk: Chunk
    symbol: Symbol
    detail: tuple[int, int] | None = None  # a paragraph of its docstring (a span of the chunk) said too
    member: str = ""  # a documented member's declaration ("limit?: number"): `detail` is its doc comment

    @property
    def start(self) -> int:
        return self.symbol.first

    @property
    def text(self) -> str:
        """What the definition does: its signature (or name), where it lives, its doc comment's first sentence
        (and the paragraph of its docstring that `detail` names: a parameter's, an example's)."""
        s = self.symbol
        where = f"{self.chunk.source_path}:{s.first}" + (f"-{s.last}" if s.last != s.first else "")
        if self.detail is not None and self.member:  # the member, not its type's doc again (a line of its own)
            said = _COMMENT_MARK.sub("", self.chunk.text[self.detail[0] : self.detail[1]])
            doc = ": " + " ".join(f"`{self.member}`: {said}".split())
        elif self.detail is not None:
            doc = ": " + " ".join(f"{s.doc} {self.chunk.text[self.detail[0] : self.detail[1]]}".split())
        else:
            doc = f": {s.doc}" if s.doc else ""
        signature = self.signature()
        owner = s.name.rsplit(".", 1)[0] + "." if "." in s.name else ""  # Store.Get's "Store."
        name = owner + signature if signature else s.name
        return f"{s.kind} `{name}` ({where}){' (part shown)' if s.part else ''}{doc}"

    def signature(self) -> str:
        """The definition's header as written from its name on (decorators, comments and keywords skipped, up to
        its body), when the chunk holds it and it says more than the name; '' otherwise. A header the chunk cuts
        (a long parameter list split between chunks) is its name and the parameters the chunk holds, then "..."."""
        start = self.chunk.metadata.get("line_start")
        if not isinstance(start, int):
            return ""
        lines = self.chunk.text.split("\n")[max(self.symbol.first - start, 0) :]
        own = self.symbol.last - max(self.symbol.first, start) + 1  # the definition's lines the chunk may hold
        header: list[str] = []
        for line in lines[: min(_LONG_HEADER_LINES, own)]:
            stripped = line.strip()
            if not header and (not stripped or stripped.startswith(("@", "#", "//", "/*", "*"))):
                continue
            said = _TRAILING_COMMENT.sub("", stripped)
            if said:
                header.append(said)
            if _HEADER_END.search(stripped):
                break
        # A definition that is all header ("type FParseErrWhitelist flag.ParseErrorsAllowlist" in Go) ends with its
        # last line: read on, its header took in the comment and the definition after it.
        ended = bool(header) and (_HEADER_END.search(header[-1]) is not None or own <= min(len(lines), _HEADER_LINES))
        cut = not ended and len(lines) <= _LONG_HEADER_LINES  # the chunk ends inside the header
        if not header or not (ended or cut):
            return ""
        text = _HEADER_END.sub("", " ".join(header)).strip() if ended else " ".join(header)
        text = _BRACKET_SPACE.sub("", text)  # Black's one parameter per line, joined: "f( a: int, b: str, )"
        short = self.symbol.name.rsplit(".", 1)[-1]
        found = re.search(rf"(?<![\w.]){re.escape(short)}\b", text)
        if found is None or "`" in text:
            return ""
        text = text[found.start() :]  # from the name on: "open_store(path: str) -> Connection", not the keyword
        if cut or len(text) > MAX_SIGNATURE:
            text = _parameter_names(short, text[len(short) :], cut)
        return "" if text.rstrip(" =") == short else text  # "RetryOptions =" says no more than its name

    @property
    def scored(self) -> str:
        """What the line is scored as: a member by its declaration and doc alone, since its type's name is in every
        member's line ("type `Command`" matched every ask about a cobra command, and its undocumented fields filled
        the Facts)."""
        if self.detail is not None and self.member:
            said = _COMMENT_MARK.sub("", self.chunk.text[self.detail[0] : self.detail[1]])
            return " ".join(f"{self.member}: {said}".split())
        return self.text

    @property
    def says(self) -> bool:
        """Whether the line says anything of the definition (its signature, its doc), not only its name and lines:
        "method `Retrying.__call__` (__init__.py:517-539) (part shown)" for a chunk holding the end of its body is
        no Fact, as a heading alone is none; nor is an undocumented function's signature that takes nothing but its
        instance and returns nothing ("method `ResponseNotRead.__init__(self) -> None`", beside the class that says
        what the exception means)."""
        if self.detail or self.symbol.doc:
            return True
        if _internal(self.symbol.name, str(self.chunk.metadata.get("language", ""))):
            return False
        signature = self.signature()
        short = self.symbol.name.rsplit(".", 1)[-1]
        taken = signature[len(short) :] if signature.startswith(short) else signature
        return bool(signature) and not (self.symbol.kind in _CALLABLE and _TAKES_NOTHING.fullmatch(taken))


# A name its language marks as internal to its module: Python's (and JavaScript's, Ruby's, PHP's) leading underscore,
# a dunder aside; Go's lower-case initial (unexported).
_INTERNAL_NAME = {"go": re.compile(r"[a-z]")}
_UNDERSCORED = re.compile(r"_(?!_)")


def _internal(name: str, language: str) -> bool:
    """Whether the definition or the one holding it is internal to its module ("BaseRetrying._run_stop",
    "_OptionParser.__init__", Go's "helpOrVersionFlagPresent"): undocumented, it is a helper of the code around it,
    and its signature alone tells the user nothing they can call (tenacity's `_begin_iter`, `_run_wait` and
    `_add_action_func` were Facts for "how do I retry only when my function returns None?")."""
    marked = _INTERNAL_NAME.get(language, _UNDERSCORED)
    return any(marked.match(part) for part in name.split("."))


_LONG_HEADER_LINES = 40  # a header this long is still read for the names of its parameters
_CALLABLE = frozenset({"function", "method", "constructor"})
# A parameter list of the instance or class alone (annotated or not), and no result: "(self) -> None", "()".
_TAKES_NOTHING = re.compile(r"\(\s*(?:(?:self|cls|this)\b(?:\s*:\s*[^,()]+)?\s*,?\s*)?\)\s*(?:->\s*None\s*)?:?")
_PARAMETER = re.compile(r"\s*(\**[A-Za-z_]\w*)")
# A comment closing a header's line ("def __call__(  # type: ignore[override]"): said to the tools, not the reader.
_TRAILING_COMMENT = re.compile(r"(?:^|\s+)(?:#|//)\s.*$")
# The space a header written one parameter per line leaves after an opening bracket, and the trailing comma and
# space before a closing one ("( logger: Logger, exc_info: bool = False, )").
_BRACKET_SPACE = re.compile(r"(?<=[(\[{])\s+|,?\s+(?=[)\]}])")


def _parameter_names(name: str, rest: str, cut: bool = False) -> str:
    """A header too long to quote, as its name and the names of its parameters ("Context.__init__(command, parent,
    info_name, ..., max_content_width, ...)"): what the definition takes, where the whole header said nothing at
    all; `cut`: the header goes on past `rest`, so "..." closes the list. "" when `rest` opens no parameter list."""
    if not rest.startswith("("):
        return ""
    depth, piece, pieces = 0, "", []
    for ch in rest[1:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            pieces.append(piece)
            piece = ""
        else:
            piece += ch
    pieces.append(piece)
    names = [m.group(1) for p in pieces if (m := _PARAMETER.match(p)) and m.group(1) not in ("self", "cls")]
    shown = f"{name}({', '.join([*names, '...'] if cut else names)})"
    while len(shown) > MAX_SIGNATURE and names:
        names.pop()
        shown = f"{name}({', '.join(names)}, ...)"
    return shown


@dataclass(frozen=True)
class Line:
    section: str  # facts | constraints | open_issues
    text: str
    chunk_id: str
    relevance: float
    cue: str
    part: int = 0  # the part of the ask (clause, in order) it answers best
    core: bool = False  # chosen by evidence for its part, not only by relevance
    answers: tuple[int, ...] = ()  # the parts whose evidence it reaches by A3's rule (as a sentence)


_BARE_FENCE = re.compile(
    r"[ \t]*(?:>[ \t]?)*[ \t]*(?:`{3,}|~{3,})[ \t]*$", re.M
)  # a fence line naming no language: it may close


# A MyST admonition ("```{note}", "```{warning}"): a fence around prose, not code. Read as code, its sentences
# were no lines ("It is intended for local use only", blackd's warning).
_ADMONITION = re.compile(
    r"[ \t]*(?:>[ \t]?)*[ \t]*(?:`{3,}|~{3,})\{(?:note|warning|tip|important|caution|attention|danger|error|hint"
    r"|seealso|admonition)\}",
    re.IGNORECASE,
)


# A GitHub alert's marker line ("> [!NOTE]"), over the quoted lines that are its body.
_ALERT = re.compile(r"^[ \t]*(?:>[ \t]?)+[ \t]*\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*$", re.M | re.I)


def _admonitions_opened(text: str, opens_in_code: bool = False) -> str:
    """`text` with the fence lines of each MyST admonition and the marker line of each GitHub alert blanked (offsets
    kept): their body is prose ("> [!NOTE] > Some Web applications may use ..." was a line, marker and all)."""
    blanked = _ALERT.sub(lambda m: " " * len(m.group(0)), text)
    for start, end in _fenced(text, opens_in_code):
        if _ADMONITION.match(text, start):
            for line in (start, end):
                stop = text.find("\n", line)
                stop = len(text) if stop < 0 else stop
                blanked = blanked[:line] + " " * (stop - line) + blanked[stop:]
    return blanked


def _fenced(text: str, opens_in_code: bool = False) -> list[tuple[int, int]]:
    """Spans of the text inside fenced code blocks (an unclosed fence runs to the end). With `opens_in_code` (its
    document says the text starts inside a block) a first fence line that is bare closes that block: read as an
    opener, it hid every sentence after the block and offered the block's lines as prose. A first fence naming a
    language opens one, whatever the document's count says (a stray fence line upsets that count). A text that
    starts inside a block and holds no fence line is code throughout (a fixture's body, "yield  # Run the tests.",
    was read as sentences)."""
    marks = fence_marks(text, opens_in_code)
    marks = [0, *marks] if opens_in_code and (not marks or _BARE_FENCE.match(text, marks[0])) else marks
    return fenced_spans(marks, len(text))


def _comments(text: str) -> list[tuple[int, int]]:
    """Spans of HTML comments (an unclosed one runs to the end): notes to the document's editors, never shown."""
    return [m.span() for m in _HTML_COMMENT.finditer(text)]


# A header line of a record ("PEP: 723", "Title: Inline script metadata", "Content-Type: text/plain"): a field's
# name at the line's start, a colon, its value.
_FIELD_LINE = re.compile(r"^[A-Z][\w-]*(?: [A-Z][\w-]*)?:[ \t]+\S")
MIN_FIELD_LINES = 3


def is_prose(raw: str) -> bool:
    """No line of `raw` is code or markup (a whole HTML comment inside a sentence, "[link]<!-- ignore -->", is a
    note to the document's editors, not markup of the sentence), and `raw` is no block of header fields (a PEP's
    "PEP: 723 Title: Inline script metadata Author: ..." was a Fact)."""
    raw = _HTML_COMMENT.sub("", raw) if "-->" in raw else raw
    lines = raw.splitlines()
    if sum(1 for line in lines if _FIELD_LINE.match(line)) >= MIN_FIELD_LINES:
        return False
    return not any((_CODE.search(line) and not _ITEM_CLAUSE.match(line)) or _MARKUP.search(line) for line in lines)


# A list item of words ending in ";", a clause of its list's sentence ("- code 0 if nothing would change;"), not a
# statement of code: no brackets, no "=".
_ITEM_CLAUSE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+[A-Za-z][\w'’`]*(?:\s+[\w'’`.,-]+){2,};\s*$")


def sentences_of(chunk: Chunk) -> list[Sentence]:
    """The chunk's whole sentences and list items, as spans of its own text (headings, code and markup
    left out). A sentence that introduces a list (ends with ':') is one span with its items; one that
    introduces code, a table or nothing is left out unless it says something itself (`states`). Any other sentence
    a short code block follows is one span with the block (the value that does what it says)."""
    if "language" in chunk.metadata:
        return []  # source code is never flattened into sentences
    opens_in_code = bool(chunk.metadata.get("opens_in_code"))
    rst = is_rst(chunk.source_path)  # its code is literal blocks, and a line of backticks is a title's underline
    text = chunk.text if rst else _admonitions_opened(chunk.text, opens_in_code)
    whole = bool(chunk.metadata.get("sentence_edges"))  # widened to whole sentences: no edge cuts one
    fenced = [] if rst else _fenced(text, opens_in_code)
    until = chunk.metadata.get("code_until")
    blocks = literal_blocks(text, until if isinstance(until, int) else 0)
    rows = table_rows(text) if rst else []  # a list-table's rows: records, read as a Markdown table's are
    hidden = fenced + [(block.start, block.end) for block in blocks] + rows + _comments(text)
    titles = title_spans(text, rst)
    # A heading's whole line: its number ends no sentence ("### 2. Clean Up Old Traces" gave "Clean Up Old Traces").
    headings = [] if rst else [(m.start(), m.end()) for m in HEADING_LINE.finditer(text)]
    pieces = spans(text, MARKDOWN)
    found: list[Sentence] = []
    consumed = 0
    previous = -1  # the piece the last sentence found ends in
    list_lead, lead_until = "", -1  # the lead-in of a long list and where that list ends
    clauses_until = -1  # where a list whose items run on into each other ends (`_RUNS_ON`)
    for index, (a, b) in enumerate(pieces):
        raw = text[a:b]
        lead = len(raw) - len(raw.lstrip())
        a, raw = a + lead, raw.strip()
        title = next((end for start, end in titles if start <= a < end), after_directive(text, a))
        if title != a:  # the paragraph under a title, or a directive's text, without them
            raw = text[title:b].strip()
            a = b - len(text[title:b].lstrip()) if raw else b
        if not raw or raw.startswith("#") or a < consumed or any(x <= a < y for x, y in hidden + headings):
            continue
        if index == 0 and chunk.span.start > 0 and not whole and not _OPENS_PARAGRAPH.match(text):
            continue  # may begin mid-sentence: the chunk before holds it whole
        if index == len(pieces) - 1 and not whole and not ends_whole(raw):
            continue  # may be cut by the chunk's end (a line break there may be a mere wrap)
        marker = _MARKER.match(raw)
        if marker:
            a, raw = a + marker.end(), raw[marker.end() :]
            if _TITLE_CASE.fullmatch(raw):
                continue  # a feature's name in a list ("Keep-Alive & Connection Pooling"): a label, no statement
        item_of = list_lead if marker and a < lead_until else ""
        label = _LABEL.match(raw)
        if label and label.end() < len(raw) and _subject(label.group(0), raw[label.end() :]):
            pass  # "**Docker** is a popular choice ...": the bold word is the sentence's subject, not a label
        elif label and label.end() < len(raw):
            a, raw = a + label.end(), raw[label.end() :]  # the sentence after the label stands alone
        elif label and raw.strip("*_").endswith(":"):
            raw = raw.strip("*_")  # a label alone leads in to a list, or is left out
        elif label and len(_LINK.sub("", raw).split()) < MIN_WORDS:
            continue  # a bold heading ("**Recommendation**"); a whole sentence in bold is a sentence
        elif label and not marker and not re.search(r"[.!?]$", raw.strip("*_ ")):
            continue  # a bold line of its own that ends no sentence is a heading ("_**Disable Introspection**_")
        if _CODE_VALUE.match(raw):
            if found and previous == index - 1 and not found[-1].listed:
                found[-1] = Sentence(chunk, found[-1].start, a + len(raw))
                previous = index
            continue
        if raw.endswith(":"):
            items = _with_items(chunk, a, b, blocks)
            if items is not None:
                found.append(items)
                consumed = items.end
                previous = index
            elif re.match(r"\s*\n[ \t]*(?:[-*+]|\d+[.)])[ \t]", text[b:]):
                end = _list_end(text, a, b)
                list_lead, lead_until = raw, end if end is not None else len(text)
            if items is not None or list_lead == raw or not states(raw):
                continue
        item_end = _whole_item(text, a, b, pieces[index + 1 :], whole, hidden) if marker else None
        if item_end is not None:
            raw, consumed = text[a:item_end].rstrip(), item_end
        if len(_LINK.sub("", raw).split()) < MIN_WORDS or not is_prose(raw):
            continue  # too short, or a link with a word or two around it ("[Range requests](...) guide")
        if marker and (a < clauses_until or _RUNS_ON.search(raw)):
            begin = max((m.end() for m in _LIST_END.finditer(text, 0, a)), default=0)
            closing = _LIST_END.search(text, a)
            clauses_until = max(clauses_until, closing.start() if closing else len(text))
            found = [
                s for s in found if not (s.start >= begin and _ITEM_LINE.match(text, text.rfind("\n", 0, s.start) + 1))
            ]
            continue  # "- code 1 if some files would be reformatted; or": its list's items are clauses of one sentence
        shown = _short_code(text, a + len(raw), blocks) if not marker and not raw.endswith(":") else None
        if shown is not None:
            found.append(Sentence(chunk, a, shown, listed=True))
            consumed = shown
        else:
            found.append(Sentence(chunk, a, a + len(raw), lead=item_of))
        previous = index
    code = fenced + [(block.intro, block.end) for block in blocks if block.intro >= 0]  # each from its opening line
    listed = [Sentence(chunk, a, b) for a, b in rows if len(_LINK.sub("", as_read(text[a:b])).split()) >= MIN_WORDS]
    return [*_named_sections(found, fenced), *_commented_code(chunk, code), *_table_rows(chunk), *listed]


# The end of a list item that runs on into the next, a clause of the sentence its list's lead-in opens: "_Black_ will
# exit with: - code 0 if nothing would change; - code 1 if some files would be reformatted; or - code 123 ...". Alone,
# it says what only its lead-in gives a meaning ("code 1 if ...", and under "rejected when:", the opposite).
_RUNS_ON = re.compile(r"(?:;|[;,]?\s+(?:and|or))$")


# A lead-in that points at what follows (or back) instead of saying it: "Run the following command:", "Add these
# lines:", "as shown below:", "Cargo generated this code for us:", "Note that this requires ...", "All we did there
# achieves the same thing as before, a required CLI argument:".
_POINTING = re.compile(
    r"\b(?:the\s+following|as\s+follows|below|here|there|like\s+so|this|these|those)\b", re.IGNORECASE
)
MIN_LEAD_WORDS = 8
# A lead-in whose last word wants what follows it ("The default settings for the `dev` profile are:", "Supported
# values include:", "Set the option to:"): what it says is the block after it.
_UNFINISHED = re.compile(
    r"\b(?:is|are|was|were|be|been|include|includes|including|contain|contains|such\s+as|like|as|to|with|of|for|"
    r"from|by|into|namely|become|becomes|mean|means)\s*:?\s*$",
    re.IGNORECASE,
)


def states(lead_in: str) -> bool:
    """Whether a lead-in to code, a table or nothing says something itself: "To make a *CLI argument* optional, use
    `typer.Argument()` and make sure to provide a "default" value, for example `"World"`:" answers how, and the code
    after it shows it; left out, the condensed context lost the answer. A short one ("Install it with pip:") or one
    that points at what follows or before ("Add the following to your config:", "Cargo generated this code for
    us:"), or one whose last word wants what follows ("The default settings for the `dev` profile are:"), does not."""
    words = lead_in.rstrip(" :").split()
    return len(words) >= MIN_LEAD_WORDS and not _POINTING.search(lead_in) and not _UNFINISHED.search(lead_in)


def _whole_item(
    text: str, start: int, first_end: int, after: list[tuple[int, int]], whole: bool, hidden: list[tuple[int, int]]
) -> int | None:
    """Where the list item opening at `start` ends, when it goes on past its first sentence (ending at `first_end`;
    `after`: the sentence spans after it) and is short enough to be one line: an item is one statement about its
    subject, and its first sentence alone dropped what qualifies it ("`allow_credentials` - Indicate that cookies
    should be supported ... Defaults to `False`. Also, `allow_origins` ... cannot be set to `['*']` for credentials
    to be allowed"). Its tail says nothing when it is an issue number ("(#2951)") or sends the reader elsewhere ("See
    [here](...)"): the item ends before it. None when the item is that one sentence, runs into a hidden span (code,
    a comment), is too long, or may be cut by the chunk's end."""
    found = _ITEM_END.search(text, first_end)
    end = len(text[: found.start() if found else len(text)].rstrip())
    if found is None and not whole and not ends_whole(text[start:end]):
        return None
    tail = [(a, min(b, end)) for a, b in after if a < end]
    while tail and not _says_something(text[tail[-1][0] : tail[-1][1]]):
        end = len(text[: tail.pop()[0]].rstrip())
    if (
        end <= first_end
        or len(text[start:end].split()) > MAX_ITEM_WORDS
        or any(start < y and x < end for x, y in hidden)
    ):
        return None
    return end


def _says_something(piece: str) -> bool:
    """Two words at least, outside links, and not only a pointer elsewhere (links read as one token: a dot in a URL
    is no sentence's end)."""
    return len(re.findall(r"[A-Za-z]{2,}", _LINK.sub("", piece))) >= 2 and not points_away(piece)


def _named_sections(found: list[Sentence], fenced: list[tuple[int, int]]) -> list[Sentence]:
    """The sentences, each under a heading that is a bare name and that it does not say named by it: a reference
    page gives each setting a heading and then says what it does without its name ("### dev_addr" over "Determines
    the address used when running `mkdocs serve`."), and the line alone says of nothing what it does. Only a
    heading in the chunk counts: the excerpt that shows the line shows its heading too."""
    if not found:
        return found
    headings = [
        (m.start(), heading_name(m.group("title")))
        for m in HEADING_LINE.finditer(found[0].chunk.text)
        if not any(x <= m.start() < y for x, y in fenced)
    ]
    named: list[Sentence] = []
    for sentence in found:
        subject = next((n for start, n in reversed(headings) if start < sentence.start), "")
        held = subject and re.search(holding(subject), sentence.text, re.IGNORECASE)
        named.append(replace(sentence, subject=subject) if subject and not held else sentence)
    return named


def _lines(text: str, first: int = 0, last: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each line of text[first:last], its line break left out."""
    found, at = [], first
    for line in text[first:last].splitlines(keepends=True):
        found.append((at, at + len(line.rstrip("\r\n"))))
        at += len(line)
    return found


def _commented_code(chunk: Chunk, fenced: list[tuple[int, int]]) -> list[Sentence]:
    """In each fenced block, a comment of a few words (its lines, when it runs over several) with the lines of
    code right after it (up to `MAX_COMMAND_LINES`, to the next blank or comment line): "# Save state to file"
    and its command. In a shell session (a block with "$ " command lines) what a comment describes is its commands,
    not their output: Typer's "// Some weird broken error message ⛔️" over a broken completion's output was a Fact,
    "(eval):1: command not found: Validating rutyper ./main.pyed Typer app." and all."""
    text = chunk.text
    found: list[Sentence] = []
    for first, last in fenced:
        lines = _lines(text, first, last)
        if not lines or _FAILING_FENCE.match(text[slice(*lines[0])]):
            continue  # its comments say what the wrong code does ("# equivalent to" over a conflicting header)
        lines = lines[1:]  # the opening fence line out
        session = any(_PROMPT.match(text[u:v]) for u, v in lines)
        for k, (x, y) in enumerate(lines):
            comment = _COMMENT.match(text[x:y])
            if comment is None or len(comment.group("words").split()) < 2:
                continue
            if k and _COMMENT.match(text[lines[k - 1][0] : lines[k - 1][1]]):
                continue  # the rest of the comment above: it goes with that one
            code = k + 1  # the first line after the comment's last
            while code < len(lines) and _COMMENT.match(text[lines[code][0] : lines[code][1]]):
                code += 1
            body: list[tuple[int, int]] = []
            for u, v in lines[code : code + MAX_COMMAND_LINES]:
                line = text[u:v]
                if not re.search(r"\w", line) or _COMMENT.match(line) or FENCE_LINE.match(line):
                    break  # a blank line, a bare comment mark, the next comment or the fence ends what it describes
                if session and not _PROMPT.match(line):
                    break  # a command's output: what the comment describes ends with the commands
                if len(line) > MAX_SIGNATURE:
                    break
                body.append((u, v))
            if body and not re.search(r"[:({\[,\\]\s*$", text[body[-1][0] : body[-1][1]]):  # not a block's opening
                start = x + len(text[x:y]) - len(text[x:y].lstrip())
                found.append(Sentence(chunk, start, body[-1][1], code=True))
    return found


def _table_rows(chunk: Chunk) -> list[Sentence]:
    """The body rows of each Markdown table the chunk holds, each as one line of its cells ("`X-Frame-Options:
    DENY` | Header to ..."): a row is a record, the table's answer. Rows count from a table's rule line on, or
    from the chunk's start when it opens inside a table's body (a row, or the end of a cut one, then a row)."""
    text = chunk.text
    found: list[Sentence] = []
    lines = _lines(text)
    body = (
        chunk.span.start > 0
        and len(lines) > 1
        and text[slice(*lines[0])].rstrip().endswith("|")
        and _TABLE_ROW.match(text[slice(*lines[1])]) is not None
        and not _TABLE_RULE.match(text[slice(*lines[1])])
    )
    for k, (x, y) in enumerate(lines):
        if k == 0 and body:
            continue  # the end of a row the chunk's window cut, or a row that may have lost its first cells
        line = text[x:y]
        row = _TABLE_ROW.match(line)
        if _TABLE_RULE.match(line):
            body = True
        elif row is None:
            body = False
        elif body and len(_LINK.sub("", row.group("cells")).replace("|", " ").split()) >= MIN_WORDS:
            found.append(Sentence(chunk, x + row.start("cells"), x + row.end("cells")))
    return found


def _short_code(text: str, at: int, blocks: list[Block]) -> int | None:
    """Where the short code block (a Markdown fence, or reStructuredText's literal block) right after `at` ends."""
    fence = _SHORT_CODE.match(text, at)
    if fence is not None:
        return None if _FAILING_FENCE.search(fence.group(0)) else fence.end()
    block = block_after(blocks, text, at)
    return block.end if block is not None and block.short(MAX_COMMAND_LINES, MAX_COMMAND_CHARS) else None


def _with_items(chunk: Chunk, start: int, lead_end: int, blocks: list[Block]) -> Sentence | None:
    """The lead-in at `start` with the list that follows it, when a whole list of prose items does, or with
    the short code block (a command, a setting) that follows it, when the chunk holds all of it, or with the
    command a longer shell session opens with."""
    text = chunk.text
    rest = text[lead_end:]
    code = _short_code(text, lead_end, blocks)
    if code is not None:
        return Sentence(chunk, start, code, listed=True)
    session = _COMMAND_FIRST.match(rest)
    if session:
        return Sentence(chunk, start, lead_end + session.end(), listed=True)
    block = block_after(blocks, text, lead_end)
    if block is not None and block.opens_with_prompt():
        return Sentence(chunk, start, block.start + len(block.lines[0]), listed=True)
    if not re.match(r"\s*\n[ \t]*(?:[-*+]|\d+[.)])[ \t]", rest):
        return None
    end = _list_end(text, start, lead_end)
    if end is None and not _TERMINAL.search(text.rstrip()):
        return None  # the list may go on in the next chunk
    stop = end if end is not None else len(text.rstrip())
    span = text[start:stop]
    if len(span.split()) > MAX_LIST_WORDS or not is_prose(span) or span.rstrip().endswith(":"):
        return None  # too long, not prose, or its last item leads in to something the span does not hold
    return Sentence(chunk, start, stop, listed=True, items=True)


def _cue(sentence: str, cues: list[str]) -> str:
    lowered = as_typed(unquoted(sentence)).lower()
    return next((cue for cue in cues if phrase(cue).search(lowered)), "")


# An indirect question opening the clause a cue stands in ("... to indicate how long a client should wait", "...
# whether or not a browser should be allowed to render a page"): the cue is what the question asks about.
_INDIRECT = re.compile(r"\b(?:whether|how|what|why)\b[^,;:.!?()\u2014\u2013]*$")


def _rule_cue(sentence: str, cues: list[str]) -> str:
    """The first cue that the sentence states, not one it only asks about in an indirect question: the header "can
    be used to indicate whether or not a browser should be allowed to render a page" states what the header
    does, and was filed as a Constraint for its "should"."""
    lowered = as_typed(unquoted(sentence)).lower()
    for cue in cues:
        if any(not _INDIRECT.search(lowered[: m.start()]) for m in phrase(cue).finditer(lowered)):
            return cue
    return ""


def classify(sentence: str, settings: CondenserSettings, open_question: bool = True) -> tuple[str, str]:
    """(section, the cue that decided it): questions (unless `open_question` is False: a question the document
    asks of its reader) and undecided points; then decisions, which are facts even when they state a rule; then
    normative sentences; the rest are facts."""
    if open_question and sentence.rstrip().endswith("?"):
        return "open_issues", "?"
    cue = _cue(sentence, settings.open_issue_cues)
    if cue:
        return "open_issues", cue
    cue = _cue(sentence, settings.decision_cues)
    if cue:
        return "facts", cue
    cue = _rule_cue(sentence, settings.constraint_cues)
    if cue and not _cue(sentence, settings.example_cues):
        return "constraints", cue
    return "facts", ""


def points_at_exhibit(sentence: str, settings: CondenserSettings) -> bool:
    """The sentence opens by pointing at a numbered exhibit ("Listing 20-2 shows ...", "In Figure 3, ...")."""
    nouns = "|".join(re.escape(noun) for noun in settings.exhibit_nouns)
    return bool(nouns) and bool(re.match(rf"\W*(?:(?:in|as in|see)\s+)?(?:{nouns})\s+\d[\w.-]*", sentence, re.I))


# A sentence whose last clause sends the reader to a link ("For an overview of how to work with exceptions, see
# [Exceptions](quickstart.md#exceptions).", "If you encounter issues, please refer to our [guide](...).", "You will
# learn how in [CLI Arguments with Environment Variables](envvar.md).", "Read the [guide](...) for a detailed
# explanation."), read with each link as one token (its text may hold a colon or a dot), a few words at most
# between the pointing verb and the link ("Read the file with `open()` and pass it to [parse](...)" points nowhere).
_POINTS_AWAY = re.compile(
    r"(?:^|[,;:]\s+)(?:please\s+)?(?:(?:you|we)\s+(?:will|can|could|may|should|might)\s+)?(?:also\s+)?"
    r"(?:see|refer\s+to|check(?:\s+out)?|read|visit|consult|(?:learn|find|read)(?:\s+[^\s;:]+){0,4}?\s+(?:in|at|on))"
    r"(?:\s+[^\s;:]+){0,5}?\s+LINK(?:\s+(?:for|to)\s[^;:]{0,200})?[\s.!)]*$",
    re.I,
)


def points_away(sentence: str) -> bool:
    """The sentence only sends the reader elsewhere: its last clause is "see [a link]" (or "you will learn how in
    [a link]"), at most with what the link is for. It says where an answer is, not the answer, and the link's target
    is no excerpt of the prompt."""
    return _POINTS_AWAY.search(_LINK.sub("LINK", sentence.strip())) is not None


# A clause that states something before the sentence turns to narrate ("The standard library provides the
# `eprintln!` macro that prints to the standard error stream, so let's change ..."): at least six words,
# then a comma or semicolon and a joining word right before the narration cue. An opening phrase ("As an
# example of ..., let's look at ...") states nothing: the sentence narrates.
_STATED_FIRST = re.compile(r"^\W*(?:\S+\s+){5,}\S*[,;]\s*(?:so|and|but|then)\s+$")


def narrates(sentence: str, settings: CondenserSettings) -> bool:
    """The sentence is about the text's own course ("Let's look at ...", "In this chapter, ..."), not its
    subject: a narration cue, unless a clause stating something comes before it."""
    lowered = as_typed(unquoted(sentence)).lower()
    for cue in settings.narration_cues:
        found = phrase(cue).search(lowered)
        if found and not _STATED_FIRST.match(lowered[: found.start()]):
            return True
    return False


def _first_word(sentence: str) -> str:
    """The sentence's first word, lower-cased ("" when it has none)."""
    opening = re.match(r"\W*([A-Za-z]+)", sentence)
    return opening.group(1).lower() if opening else ""


def stands_alone(sentence: str, settings: CondenserSettings, item: bool = False) -> bool:
    """Content about the subject: not narration or a cross-reference, not leaning on what came before (a list
    `item` may open in lower case: "- with `--check`, nothing is written")."""
    return (
        _first_word(sentence) not in settings.dangling_openers
        and not qualifies(sentence, settings)
        and (item or not continues(sentence, settings))
        and not narrates(sentence, settings)
        and not points_at_exhibit(sentence, settings)
        and not points_away(sentence)
    )


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


_DOCSTRING = re.compile(r'[rRuU]?("""|\'\'\')(.*?)(?:\1|$(?![\s\S]))', re.S)  # to the chunk's end when cut
# Where a docstring's paragraph starts besides after a blank line: a field ("  :param width: ..."), or an
# argument of a Google- or NumPy-style section ("    width (int): ...").
_DOC_FIELD = re.compile(
    r"\n(?=[ \t]*(?::(?:param|parameter|arg|argument|key|keyword|type|raises?|except|returns?|rtype|var|ivar|cvar)"
    r"\b[^:\n]*:|[*\w]+(?:[ \t]*\([^)\n]*\))?:[ \t]+\S))"
)
_BLANK = re.compile(r"\n[ \t]*\n")
MAX_DOC_WORDS = 80


def _docstring(reference: Reference) -> tuple[int, int, bool] | None:
    """The span of the definition's docstring body in its chunk, and whether it is the whole docstring: right
    after its header, or, when the chunk starts past the header, from the chunk's start to the closing quotes
    alone on their line (the chunk holds the docstring's end)."""
    chunk, symbol = reference.chunk, reference.symbol
    start = chunk.metadata.get("line_start")
    if not isinstance(start, int) or chunk.metadata.get("language") != "python":
        return None
    lines = _lines(chunk.text)
    first = symbol.first - start
    if first < 0:
        close = re.search(r"^[ \t]*(?:\"\"\"|\'\'\')[ \t]*$", chunk.text, re.M)
        if close is not None and not re.search(r"\"\"\"|\'\'\'", chunk.text[: close.start()]):
            return 0, close.start(), False
        if close is None and _inside_string(chunk):
            return 0, len(chunk.text), False
        return None
    if first >= len(lines):
        return None
    reach = lines[min(first + 2 * _HEADER_LINES, len(lines) - 1)][1]  # it opens right after the header
    found = _DOCSTRING.search(chunk.text, lines[first][0])
    if found is None or found.start() > reach:
        return None
    return found.start(2), found.end(2), True


# A line that reads as a Python statement: a comment, a keyword that opens one, an assignment or a call.
_STATEMENT = (
    r"^[ \t]*(?:#|(?:if|elif|else|for|while|with|try|except|finally)\b[^\n]*:[ \t]*$|(?:def|class)[ \t]+\w+[ \t]*[(:]"
    r"|import[ \t]+\w|from[ \t]+\S+[ \t]+import\b|[\w.\[\]]+[ \t]*[-+*/|&]?=[^=]|[\w.]+\()"
)


def _inside_string(chunk: Chunk) -> bool:
    """A Python chunk cut from the middle of a long docstring: no quotes of its own, no line that reads as a
    statement, and not code (it does not parse, where code cut at a statement's start does)."""
    if re.search(r"\"\"\"|\'\'\'|" + _STATEMENT, chunk.text, re.M):
        return False
    try:
        ast.parse(textwrap.dedent(chunk.text))
    except (SyntaxError, ValueError):
        return True
    return False


_FENCE_MARK = re.compile(r"^[ \t]*(?:`{3,}|~{3,})", re.M)


def _doc_paragraphs(reference: Reference) -> list[tuple[int, int]]:
    """The spans of the paragraphs and fields of the definition's docstring the chunk holds, past its first
    (the line that names the definition says that one): the parameter that sets a width, the path an example
    shows. A paragraph ending in ':' comes with the one after it (its example or list), but not one the chunk cuts
    inside its code block (httpx's "Usage: ``` >>> import httpx" was a Fact, its fence never closed). Python's
    docstrings; other languages' doc comments are left to the first sentence their symbol records."""
    found = _docstring(reference)
    if found is None:
        return []
    begin, end, whole = found
    text = reference.chunk.text
    blocks: list[tuple[int, int]] = []
    at = begin
    for gap in _BLANK.finditer(text, begin, end):
        blocks.append((at, gap.start()))
        at = gap.end()
    blocks.append((at, end))
    joined: list[tuple[int, int]] = []
    for x, y in blocks:
        if joined and text[joined[-1][0] : joined[-1][1]].rstrip().endswith(":"):
            joined[-1] = (joined[-1][0], y)  # a lead-in with what it introduces
        else:
            joined.append((x, y))
    spans: list[tuple[int, int]] = []
    for x, y in joined:
        cuts = [x, *(m.start() + 1 for m in _DOC_FIELD.finditer(text, x, y)), y]
        for a, b in zip(cuts, cuts[1:], strict=False):
            part = text[a:b]
            if MIN_WORDS <= len(part.split()) <= MAX_DOC_WORDS and len(_FENCE_MARK.findall(part)) % 2 == 0:
                spans.append((a + len(part) - len(part.lstrip()), a + len(part.rstrip())))
    if whole:
        return spans[1:]  # a whole docstring's first paragraph is the definition's own line
    # A chunk that starts inside a docstring may start inside a sentence ("silently downgraded. It has no effect
    # on Windows ..."): a paragraph opening in lower case continues one the chunk does not hold.
    return spans[1:] if spans and not text[begin : spans[0][0]].strip() and text[spans[0][0]].islower() else spans


def references_of(chunk: Chunk) -> list[Reference]:
    """The lines a code chunk offers: each definition it holds, and each with one paragraph or field of its
    docstring that the chunk holds (`_doc_paragraphs`), or one member its doc comment documents (`_members`)."""
    plain = [Reference(chunk, symbol) for symbol in symbols_of(chunk)]
    details = [Reference(chunk, r.symbol, span) for r in plain for span in _doc_paragraphs(r)]
    return plain + details + _members(chunk)


# A doc comment ("/** ... */", or a run of "///" lines) and the declaration right under it: a member of a type, an
# interface or a class, which Java, Kotlin, C#, Rust, TypeScript and JavaScript document this way.
_MEMBER_DOC = re.compile(
    r"(?:/\*\*(?P<block>(?:(?!\*/).)*)\*/|(?P<lines>(?:^[ \t]*///[^\n]*\n)*^[ \t]*///[^\n]*))[ \t]*\n"
    r"[ \t]*(?P<decl>[^\n]*\S)",
    re.M | re.S,
)
# Go documents a struct's or an interface's field with the run of "//" lines right above it ("// SilenceUsage is an
# option to silence usage when an error occurs."), as it documents any declaration.
_GO_MEMBER_DOC = re.compile(r"(?P<lines>(?:^[ \t]*//[^\n]*\n)*^[ \t]*//[^\n]*)\n[ \t]*(?P<decl>[^\n/]*\S)", re.M)
_COMMENT_MARK = re.compile(r"^[ \t]*(?:\*(?!\*)|///?)[ \t]?", re.M)  # a doc comment's line marks


def _members(chunk: Chunk) -> list[Reference]:
    """The members of the chunk's definitions that a doc comment documents (Go: a struct's field under its "//"
    lines), each as a line of the innermost definition holding it (`RetryOptions`'s "`limit?: number`: The number
    of times to retry failed requests. @default 2"): in such code the answer is a field's comment ("@default 2"),
    and the line that named only `type RetryOptions` said nothing of it. A member that is a definition of its own
    has its own line (its doc's first sentence)."""
    start = chunk.metadata.get("line_start")
    language = chunk.metadata.get("language")
    if not isinstance(start, int) or language in (None, "python"):
        return []
    symbols = symbols_of(chunk)
    found: list[Reference] = []
    for m in (_GO_MEMBER_DOC if language == "go" else _MEMBER_DOC).finditer(chunk.text):
        line = start + chunk.text.count("\n", 0, m.start("decl"))
        opening = start + chunk.text.count("\n", 0, m.start())
        block = m.groupdict().get("block")
        doc = block if block is not None else m.group("lines")
        decl = m.group("decl").rstrip(";,{ ")
        holding = [s for s in symbols if s.first < line <= s.last]
        if language == "go":  # a "//" comment inside a function is about a statement, not a member
            holding = [s for s in holding if s.kind == "type"]
        if not holding or any(s.first in (line, opening) for s in symbols) or len(decl) > MAX_SIGNATURE:
            continue
        if not MIN_WORDS <= len(_COMMENT_MARK.sub("", doc).split()) <= MAX_DOC_WORDS:
            continue
        span = m.span("block") if block is not None else m.span("lines")
        found.append(Reference(chunk, min(holding, key=lambda s: s.last - s.first), span, decl))
    return found


# A pronoun among a sentence's first words stands for something the sentence before names ("Giving someone
# access to it is equivalent to giving unrestricted root access to your host."): the two read as one. After a
# relative word the pronoun is the sentence's own ("Environments which report that they support ...").
_EARLY_PRONOUN = re.compile(
    r"^\W*(?:(?!(?:which|who|whose|that)\b)\S+\s+){0,4}(?:it|they|them)\b(?!['’])", re.IGNORECASE
)


def _leans_early(sentence: str) -> bool:
    return _EARLY_PRONOUN.match(unquoted(sentence)) is not None


# A demonstrative among a sentence's first words ("Naming the file this way tells Rust ...", "Using these
# options ...") points at what the text before it says, never at something of the sentence's own: the
# sentence is read with the one before it, or not at all.
_EARLY_DEMONSTRATIVE = re.compile(r"^\W*(?:\S+\s+){1,4}(?:this|these|those)\s+\w", re.IGNORECASE)


def _points_back(sentence: str) -> bool:
    return _EARLY_DEMONSTRATIVE.match(unquoted(sentence)) is not None


# A sentence that opens by sending the reader elsewhere ("See retrieval.md for how chunks are found."): a
# cross-reference, never the continuation of the sentence before it.
_POINTER = re.compile(r"^\W*see\b", re.IGNORECASE)


def _adjoins(between: str, alone: bool) -> bool:
    """Whether a sentence reads on from the one `between` separates it from: in the same paragraph, or, for one
    that cannot stand alone, the first of the next ("So when migrating ... commit the changes (preferably in one
    massive commit).", "However, it's not recommended to grant `no-store` liberally, ..." open paragraphs that
    go on from the last sentence of the paragraph before; dropped, they left the condensed context without
    them). A list, quote, table or second blank line between ends the thread."""
    if not re.search(r"\n[ \t]*(?:\n|[-*+>|]|\d+[.)])", between):
        return True
    return not alone and not between.strip() and between.count("\n") == 2


def _standalone(found: list[Sentence], settings: CondenserSettings) -> list[Sentence]:
    """The sentences that stand alone; one that opens by leaning on the sentence before it ("However, ...",
    "This response must ...") with that sentence, when it is right before it in the same paragraph and
    stands alone itself: the two read as one statement ("See X for Y", or "You will learn how in [X](...)", sends
    the reader elsewhere: it continues nothing, and is no line). A sentence with a pronoun among its first words
    ("Giving someone access to it is ...") is read with the sentence before it where they pair, else alone
    (the pronoun may be the sentence's own: "Environments which report that they ..."). A sentence with the short
    code block it introduces stands alone, unless it qualifies the one before ("However, a `no-cache` directive
    will force ... ```http Cache-Control: no-cache```", a paragraph after "... returning `no-store` will not prevent
    the old response from being reused."): it is read with that one as any qualification is."""
    kept: list[Sentence] = []
    for k, s in enumerate(found):
        item = _opens_item(s)
        leans = qualifies(s.text, settings) or (continues(s.text, settings) and not item)  # block or not
        listed = s.listed and not leans
        runs_on = s.code and _runs_into_code(s.chunk.text[s.start : s.end], settings)  # "# equivalent to"
        alone = listed or (stands_alone(s.text, settings, item) and not runs_on)
        # "That's called the cache-busting pattern. ```html ...```": its block carries it, yet it leans on what precedes
        dangles = listed and not item and _first_word(s.text) in settings.dangling_openers
        before = found[k - 1] if k else None
        joined = (
            before is not None
            and not ((listed and not dangles) or (before.listed and not leans) or before.code or s.code)
            and before.end <= s.start
            and _adjoins(s.chunk.text[before.end : s.start], alone)
            and not narrates(s.text, settings)
            and not _POINTER.match(s.text)
            and not points_away(s.text)
        )
        if joined and before is not None and (leans or dangles) and kept and kept[-1].end == before.end:
            last = kept[-1]  # read with its qualification (or what its block leans on it for), never alone
            kept[-1] = Sentence(s.chunk, last.start, s.end, s.listed or last.listed, items=s.items or last.items)
            continue
        pairs = joined and before is not None and stands_alone(before.text, settings, _opens_item(before))
        if pairs and before is not None and (not alone or dangles or _leans_early(s.text) or _points_back(s.text)):
            kept.append(Sentence(s.chunk, before.start, s.end, s.listed, items=s.items))
        elif alone and (listed or not _points_back(s.text)):
            kept.append(s)
    return kept


def _runs_into_code(commented: str, settings: CondenserSettings) -> bool:
    """Whether a code comment ends on a word that goes on into the code under it ("# equivalent to" over
    `Cache-Control: no-store`): it says what that code is to the code before it, which the line does not hold."""
    said = [m.group("words") for line in commented.splitlines() if (m := _COMMENT.match(line))]
    words = re.findall(r"[A-Za-z]+", said[-1]) if said else []
    return bool(words) and words[-1].lower() in settings.continuing_openers


def _opens_item(sentence: Sentence) -> bool:
    """Whether the sentence opens a list item (its line's text before it is the item's marker)."""
    text = sentence.chunk.text
    return _MARKER.fullmatch(text[text.rfind("\n", 0, sentence.start) + 1 : sentence.start].lstrip(" \t>")) is not None


def continues(sentence: str, settings: CondenserSettings) -> bool:
    """Whether the sentence is the rest of one a code block or a chunk's edge interrupted: it opens in lower case
    with a word that goes on from something ("where `my-registry` is the registry name ...", "with the
    corresponding `add` call:")."""
    opening = re.match(r"[ \t*_>-]*([a-z]+)\b", sentence)  # as written: "`--check` for ..." opens with its code
    return opening is not None and opening.group(1) in settings.continuing_openers


def qualifies(sentence: str, settings: CondenserSettings) -> bool:
    """Whether the sentence opens by qualifying the one before it ("However, ...", "But ...")."""
    return _openers(tuple(settings.qualifying_openers)).match(unquoted(sentence).lstrip(" \t*_>-")) is not None


@lru_cache(maxsize=4)
def _openers(cues: tuple[str, ...]) -> re.Pattern[str]:
    """The cues as one pattern, compiled once: every sentence of every chunk read is asked whether it qualifies."""
    return any_phrase(cues)


def _rhetorical(sentence: Sentence, settings: CondenserSettings) -> bool:
    """A question in a document's prose that names no open point ("So, what makes `RefCell<T>` different from
    `Box<T>`?", "How do you get access to the application with the config?"): the text after it answers it; it
    states nothing, and filed as an Open issue it read as a question the documents leave open. A listed question
    ("Open questions: - Should excerpts be capped?") or one naming an open point ("still open", "TBD") is one."""
    return (
        sentence.text.rstrip().endswith("?")
        and not (sentence.listed or sentence.lead or _opens_item(sentence))
        and not _cue(sentence.text, settings.open_issue_cues)
    )


def _left_open(sentence: Sentence, settings: CondenserSettings) -> bool:
    """Whether a listed question is one the documents leave open: its list's lead-in, the line leading in to it or
    the heading over it names an open point ("## Open questions", "TBD:"). A checklist of questions is what the
    document asks its reader ("Code reviews should look at: - **Design**: Is the code well-designed ...?" in
    Google's review guide): filed as Open issues, its items read as questions the documents leave open."""
    before = sentence.chunk.text[: sentence.start]
    headings = [m.group("title") for m in HEADING_LINE.finditer(before)]
    headings += [before[a:b] for a, b in title_spans(before, is_rst(sentence.chunk.source_path))]
    lead_ins = [line for line in before.splitlines() if line.rstrip().endswith(":")]
    around = [sentence.lead, *headings[-1:], *lead_ins[-1:]]
    return any(_cue(text, settings.open_issue_cues) for text in around if text)


def _candidates(chunks: list[Chunk], settings: CondenserSettings) -> list[Sentence | Reference]:
    """Each chunk's standalone sentences and the definitions it holds, each text once; a definition named
    twice (an overload stub, then the function; its header's chunk, then the rest of its body) once, with its doc
    comment when one of them has it, from the chunk that holds its header when one does: a line from the body's
    chunk names it alone ("`before_sleep_log` (part shown)"), its header's line says what it takes."""
    found: list[Sentence | Reference] = [
        s for chunk in chunks for s in _standalone(sentences_of(chunk), settings) if not _rhetorical(s, settings)
    ]
    definitions: dict[tuple[str, str], Reference] = {}
    for chunk in chunks:
        for symbol in symbols_of(chunk):
            key = (chunk.source_path, symbol.name)
            reference = Reference(chunk, symbol)
            if reference.says and (key not in definitions or _better(reference, definitions[key])):
                definitions[key] = reference
    details = [r for chunk in chunks for r in references_of(chunk) if r.detail is not None]
    unique: dict[str, Sentence | Reference] = {}
    for s in [*found, *definitions.values(), *details]:
        unique.setdefault(s.text.lower(), s)
    return list(unique.values())


def _better(found: Reference, kept: Reference) -> bool:
    """Whether a definition's line from another chunk says more than the one kept: a doc comment the kept one
    lacks, or, as documented, the header the kept one's chunk does not hold."""
    if bool(found.symbol.doc) != bool(kept.symbol.doc):
        return bool(found.symbol.doc)
    return kept.symbol.part and not found.symbol.part


def _said_again(chosen: list[int], plain: list[str]) -> dict[int, int]:
    """Each chosen line another chosen line says again, with that line: its words (`plain`, "" for a definition)
    inside the other's (one sentence quoted alone and again with the sentence leaning on it from a neighbouring
    chunk, which shares text with its own; a list item alone and in its list; a page's bold summary of a rule and
    the rule). The longer line stays: it says more."""
    again: dict[int, int] = {}
    for i in chosen:
        outer = [j for j in chosen if plain[i] and len(plain[i]) < len(plain[j]) and plain[i] in plain[j]]
        if outer:
            again[i] = max(outer, key=lambda j: len(plain[j]))
    return again


def _plain(text: str) -> str:
    """A line's words without emphasis marks and list bullets, for telling whether one line says another."""
    return " ".join(_EMPHASIS.sub("", text).replace(" - ", " ").split()).casefold().lstrip("- ")


_EMPHASIS = re.compile(r"[*_`]")


def _announces(sentence: str, settings: CondenserSettings) -> bool:
    """Whether the sentence counts out what it does not give ("you need to take one additional step so that MkDocs
    will work with your custom domain", "There are two ways to ..."): a count, then one of `announced_nouns`."""
    if not settings.announced_nouns:
        return False
    nouns = "|".join(re.escape(noun) for noun in settings.announced_nouns)
    counted = (
        r"\b(?:(?:one|two|three|four|five|six|several|a few|a couple of)\s+(?:[a-z]+\s+)?"
        r"|an?\s+(?:additional|extra|further|final|single)\s+)(?:" + nouns + r")\b"
    )
    return re.search(counted, sentence, re.IGNORECASE) is not None


def _delivery(i: int, candidates: list[Sentence | Reference], settings: CondenserSettings) -> int | None:
    """What comes right after candidate `i` in its chunk and gives what it announces, if any: the list (a lead-in
    with its items) a sentence that answers a part often announces ("You can take five actions in unsafe Rust
    ..." before "Those superpowers include the ability to: 1. ..."), or, for a sentence that counts out what it
    does not give (`_announces`), the sentence after it in its paragraph ("... one additional step so that MkDocs
    will work with your custom domain." before "You need to add a `CNAME` file to the root of your docs_dir.")."""
    first = candidates[i]
    if not isinstance(first, Sentence):
        return None
    announces = _announces(first.text, settings)
    for j, then in enumerate(candidates):
        if (
            isinstance(then, Sentence)
            and (then.items or announces)
            and then.chunk.id == first.chunk.id
            and then.start >= first.end
            and not then.chunk.text[first.end : then.start].strip()
        ):
            return j
    return None


def _changelog(path: str, settings: CondenserSettings) -> bool:
    """Whether the file is a changelog (`condenser.changelog_names`): its entries say what changed in a version
    ("Fix bug where --log-config disables uvicorn loggers (#512)"), filler beside the pages on how things work."""
    stem = PurePosixPath(path).stem.lower()
    return re.sub(r"[-_.\s]", "", stem) in settings.changelog_names


def condense_extractively(
    asks: list[str],
    chunks: list[Chunk],
    embed,
    settings: CondenserSettings,
    parts: Sequence[str] = (),
    evidence: Evidence | None = None,
    lacking: bool = False,
    unsure: Collection[str] = (),
) -> list[Line]:
    """The lines of the condensed context, answer first: each from one chunk, ordered by the part of the ask
    they answer (in the ask's order), then by where they stand in the selection.

    `parts` are the clauses of the ask (in order; the ask's pieces when none are given), and `evidence(part,
    texts, vectors, part_vector)` says for each candidate its evidence for the part and whether it is enough
    (A3's absolute evidence, so a line answers a clause by the rule a chunk is kept for it; the cosine
    against `condenser.min_relevance` without one); a lead-in with its items has the better evidence of the
    whole and the lead-in alone, which says what the items answer. For each part, its `condenser.per_part`
    best-evidenced candidates come first (not repeating a line already chosen); the remaining lines, up to
    `condenser.max_lines`, are those with the most evidence for any of `asks` (the prompt's query pieces) or
    `parts`, so a sentence holding the ask's rare words beats one that only shares its drift. A line repeats
    a chosen one when it is as close in meaning (`condenser.max_similarity`), overlaps it in its chunk, or
    names the same definition. Each line is marked `core` (answers a part) or not (filler), for the budget.

    `lacking` says the gate named a part of the ask that no kept chunk covers (not only a name inside a covered
    part: "... classes I send to Ray workers" is answered without Ray). Then, when no
    candidate has the evidence to answer any part, no line fills: chosen by relevance alone, they are the near
    misses of a topic the documents lack ("Read the Docs offers free documentation hosting" for publishing
    versions with mike), filed as Facts beside the Open issue that says the documents do not cover it.

    `unsure` are the chunks the gate kept last, in its unsure band: their lines fill after every other chunk's, as
    the chunks come after the others (mdn's lost-update ask lost "If the hashes don't match, ... a `412
    Precondition Failed` error is thrown" to a `Content-Disposition` line about saving files).
    """
    candidates = _candidates(chunks, settings)
    asks = [a for a in asks if a.strip()]
    parts = [p for p in parts if p.strip()] or asks
    if not candidates or not asks:
        return []
    texts = [s.shown if isinstance(s, Sentence) else s.text for s in candidates]
    scored = [s.scored for s in candidates]
    leads = {i: s.lead_in for i, s in enumerate(candidates) if isinstance(s, Sentence) and s.lead_in}
    vectors = embed(list(dict.fromkeys([*asks, *parts])) + scored + list(leads.values()))
    queries = {q: vectors[i] for i, q in enumerate(dict.fromkeys([*asks, *parts]))}
    sentence_vectors = vectors[len(queries) : len(queries) + len(scored)]
    lead_vectors = vectors[len(queries) + len(scored) :]
    relevance = (sentence_vectors @ np.asarray([queries[a] for a in asks]).T).max(axis=1)
    similarity = sentence_vectors @ sentence_vectors.T
    scores = np.zeros((len(candidates), len(parts)))
    enough = np.zeros((len(candidates), len(parts)), dtype=bool)
    weight: dict[str, np.ndarray] = {}  # each query's evidence for every candidate
    for query in queries:
        if evidence is None:
            found = sentence_vectors @ queries[query]
            weight[query], sufficient = found, found >= settings.min_relevance
        else:
            listed, decided = evidence(query, scored, sentence_vectors, queries[query])
            weight[query], sufficient = np.asarray(listed), np.asarray(decided, dtype=bool)
            if leads:
                by_lead, lead_decided = evidence(query, list(leads.values()), lead_vectors, queries[query])
                for k, i in enumerate(leads):
                    weight[query][i] = max(weight[query][i], by_lead[k])
                    sufficient[i] = sufficient[i] or lead_decided[k]
        if query in parts:
            scores[:, parts.index(query)], enough[:, parts.index(query)] = weight[query], sufficient
    strength = np.max([weight[q] for q in queries], axis=0)  # the best evidence for any piece or part

    def fresh(i: int, chosen: list[int]) -> bool:
        """Not a repeat of a chosen line: not as close in meaning, not overlapping it in its chunk."""
        return all(float(similarity[i, j]) < settings.max_similarity and not overlap(i, j) for j in chosen)

    def overlap(i: int, j: int) -> bool:
        """Two spans of one chunk that overlap, or two lines naming one definition (it is named once)."""
        a, b = candidates[i], candidates[j]
        if isinstance(a, Reference) or isinstance(b, Reference):
            return (
                isinstance(a, Reference)
                and isinstance(b, Reference)
                and (a.chunk.source_path, a.symbol.name, a.member) == (b.chunk.source_path, b.symbol.name, b.member)
            )
        return a.chunk.id == b.chunk.id and a.start < b.end and b.start < a.end

    chosen: list[int] = []
    for p in range(len(parts)):
        taken = 0
        for i in sorted((i for i in range(len(candidates)) if enough[i, p]), key=lambda i: -scores[i, p]):
            if taken == settings.per_part or len(chosen) == settings.max_lines:
                break
            if fresh(i, chosen):
                chosen.append(i)
                taken += 1
    core = set(chosen)
    last = {i for i, c in enumerate(candidates) if c.chunk.id in unsure}
    for i in sorted(range(len(candidates)), key=lambda i: (i in last, -strength[i], i)):
        if len(chosen) >= settings.max_lines or (lacking and not core):
            break
        candidate = candidates[i]
        logged = _changelog(candidate.chunk.source_path, settings)
        leads_in = isinstance(candidate, Sentence) and candidate.introduces
        if i not in chosen and not (logged or leads_in) and relevance[i] >= settings.min_relevance and fresh(i, chosen):
            chosen.append(i)
    delivered: dict[int, int] = {}  # a chosen line: the list it announces, chosen with it
    for i in list(chosen):
        j = _delivery(i, candidates, settings)
        weakest = [k for k in chosen if k not in core and k != i and k not in delivered and k not in delivered.values()]
        if i not in chosen or j is None or not fresh(j, chosen) or (len(chosen) >= settings.max_lines and not weakest):
            continue
        if len(chosen) >= settings.max_lines:  # the weakest filler line makes room
            chosen.remove(weakest[-1])
        delivered[i] = j
        chosen.insert(chosen.index(i) + 1, j)
    core |= {j for i, j in delivered.items() if i in core}
    plain = [_plain(c.text) if isinstance(c, Sentence) else "" for c in candidates]
    for inner, outer in _said_again(chosen, plain).items():
        chosen.remove(inner)
        core |= {outer} if inner in core else set()
    order = {c.id: i for i, c in enumerate(chunks)}
    part_of = {i: int(np.argmax(scores[i])) for i in chosen}
    part_of.update({j: part_of[i] for i, j in delivered.items() if j in part_of and i in part_of})
    chosen.sort(key=lambda i: (part_of[i], order[candidates[i].chunk.id], candidates[i].start))
    lines = []
    for i in chosen:
        candidate = candidates[i]
        section, cue = (
            ("facts", "definition")
            if isinstance(candidate, Reference)
            else classify(candidate.text, settings, _left_open(candidate, settings))
        )
        lines.append(
            Line(
                section,
                texts[i],
                candidates[i].chunk.id,
                round(float(strength[i]), 4),
                cue,
                part_of[i],
                i in core,
                tuple(p for p in range(len(parts)) if enough[i, p]),
            )
        )
    return lines

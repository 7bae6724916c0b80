"""reStructuredText read by its structure: literal blocks, section titles, directives' markers and list-tables.

A literal block (the indented block a "::" paragraph or a code directive introduces) is code, never prose, a
sentence or a heading, as a Markdown fence's lines are. reStructuredText marks it by indentation alone: the block
runs while its lines (blank ones aside) are indented more than the line that introduced it. Read as prose, a console
session's output became Facts ("'pipx' already seems to be installed.", pipx's docs), and a lead-in never came with
the short command under it. `as_read` gives a span as its reader sees it (the lines the condensed context quotes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

SUFFIXES = frozenset({".rst", ".rest"})

# A directive whose body is literal text (code, a console session, math, raw markup): a "note" or a "warning"
# holds prose, and is read.
_CODE_DIRECTIVE = re.compile(
    r"^([ \t]*)\.\.[ \t]+(?:code|code-block|sourcecode|doctest|math|raw|parsed-literal|productionlist|highlight"
    r"|ipython|jupyter-execute|testcode|testoutput)::"
)
# The last line of a paragraph that ends in "::" (not a directive's or a comment's: ".. note::" holds prose).
_LITERAL_PARAGRAPH = re.compile(r"^([ \t]*)(?!\.\.[ \t])(?:\S.*)?::[ \t]*$")
_LINE = re.compile(r"[^\n]*(?:\n|$)")
_OPTION = re.compile(r"[ \t]+:[\w-]+:(?![\w:.+-]*`)")  # a directive's option line, not a role (":func:`f`")
# A directive's line and the option lines under it (".. code-block:: console", "   :linenos:"): markup, never read.
_DIRECTIVE_LINES = re.compile(rf"^[ \t]*\.\.[ \t]+[\w:-]+::[^\n]*(?:\n{_OPTION.pattern}[^\n]*)*$", re.M)
_DIRECTIVE_HEAD = re.compile(r"[ \t]*\.\.[ \t]+[\w:-]+::[ \t]*")  # ".. note:: ", before the directive's own text
# A paragraph's "::": shown as ":" after a word, not at all alone or after a space (docutils' "expanded form").
_LITERAL_MARK = re.compile(r"(?P<alone>^[ \t]*|[ \t]+)?::(?=[ \t]*(?:\n|\Z))", re.M)
_PROMPT = re.compile(r"[ \t]*[$>] \S")  # a shell prompt opening a console session


@dataclass(frozen=True)
class Block:
    """A literal block: `intro` is where the line that introduced it starts (-1 when the text opens inside it),
    `start`/`end` the span of its body's lines (blank lines at its edges left out)."""

    intro: int
    start: int
    end: int
    lines: tuple[str, ...]  # the body's non-blank lines
    closed: bool  # the text goes on after it: the block may go on past a chunk's end

    def short(self, max_lines: int, max_chars: int) -> bool:
        """A command or a setting, whole: at most `max_lines` lines of at most `max_chars` characters, the text going
        on after them (a chunk's window may cut a long session after its first lines)."""
        return (
            self.closed and len(self.lines) <= max_lines and all(len(line.strip()) <= max_chars for line in self.lines)
        )

    def opens_with_prompt(self) -> bool:
        """The block is a console session: its first line is a command after a shell prompt."""
        return _PROMPT.match(self.lines[0]) is not None


def is_rst(path: str) -> bool:
    """Whether the file is reStructuredText: its lines of backticks are titles' underlines, never Markdown fences
    (click's "Defining the Lazy Group" over "```````````````````````" opened a "code block" that hid the
    sections after it)."""
    return PurePosixPath(path).suffix.lower() in SUFFIXES


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _lines_of(text: str) -> list[tuple[int, str]]:
    """Each line of `text` with where it starts, its line break left out."""
    return [(m.start(), m.group(0).rstrip("\n")) for m in _LINE.finditer(text) if m.start() < len(text)]


def literal_blocks(text: str, opens_inside: int = 0) -> list[Block]:
    """The literal blocks of `text`, in order; `opens_inside` is where the block the text opens inside ends (its
    document says so: in the text alone, nothing marks its lines as code), 0 when it opens in none."""
    if not opens_inside and "::" not in text:
        return []  # no literal block opens without "::"
    lines = _lines_of(text)
    blocks: list[Block] = []
    i = 0
    if opens_inside:
        head = [line for line in lines if line[0] < opens_inside]
        blocks.append(Block(-1, 0, opens_inside, tuple(line for _, line in head if line.strip()), True))
        i = len(head)
    while i < len(lines):
        start, line = lines[i]
        found = _CODE_DIRECTIVE.match(line) or _LITERAL_PARAGRAPH.match(line)
        i += 1
        if found is None:
            continue
        indent = len(found.group(1))
        while found.re is _CODE_DIRECTIVE and i < len(lines) and _OPTION.match(lines[i][1]):
            i += 1  # the directive's options (":linenos:"), not its body
        i = _block(lines, i, indent, start, blocks)
    return blocks


def _block(lines: list[tuple[int, str]], i: int, indent: int, intro: int, blocks: list[Block]) -> int:
    """Reads the block whose lines from `i` on are indented more than `indent`, adds it (when it has a line) to
    `blocks`, and returns the index of the line after it."""
    body: list[tuple[int, str]] = []
    while i < len(lines) and (not lines[i][1].strip() or _indent(lines[i][1]) > indent):
        if lines[i][1].strip():
            body.append(lines[i])
        i += 1
    if body:
        end = body[-1][0] + len(body[-1][1])
        blocks.append(Block(intro, body[0][0], end, tuple(line for _, line in body), i < len(lines)))
    return i


def block_after(blocks: list[Block], text: str, at: int) -> Block | None:
    """The block introduced by the text ending at `at` (a paragraph ending in "::") or by a directive right after
    it (blank lines between): the code a lead-in or a sentence introduces."""
    line_start = text.rfind("\n", 0, at) + 1
    for block in blocks:
        if block.intro == line_start and text[line_start:at].rstrip().endswith("::"):
            return block
        if block.intro >= at and not text[at : block.intro].strip():
            return block
    return None


def as_read(text: str) -> str:
    """`text` as its reader sees it: without directives' lines, a paragraph's "::" as the ":" it is shown as, and
    each line of a literal block as code ("Pass ``--index-url`` directly: `$ pipx install ...`", never "... ..
    code-block:: console $ pipx install ..."): a lead-in with its command ends as a sentence does. A list-table's
    row reads as its cells between bars, as a Markdown table's does."""
    if "::" not in text and _ROW_LINE.search(text) is None:
        return text  # most text: nothing to read otherwise (this runs for every line the extraction offers)
    for start, end in reversed(_rows(text)):
        text = f"{text[:start]}{' | '.join(_cells(text[start:end]))}{text[end:]}"
    if "::" not in text:
        return text
    pieces, at = [], 0
    for block in literal_blocks(text):
        pieces.append(_prose(text[at : block.start]))
        pieces.append("\n".join(f"`{line.strip()}`" for line in block.lines))
        at = block.end
    pieces.append(_prose(text[at:]))
    return "".join(pieces)


def _prose(text: str) -> str:
    return _LITERAL_MARK.sub(lambda m: "" if m.group("alone") is not None else ":", _DIRECTIVE_LINES.sub("", text))


# A section title: its text line under an overline or over an underline of one punctuation character repeated
# (reStructuredText's titles; Markdown's setext headings are underlined with "=" or "-" only: a line of backticks
# or tildes there is a fence).
_ADORNED = r"^(?:[ \t]*({c})\1{{2,}}[ \t]*\n)?[ \t]*\S[^\n]*\n[ \t]*({c})\2{{2,}}[ \t]*$"
_TITLE = re.compile(_ADORNED.format(c=r"[=\-~^*#+`'\"._:]"), re.M)
_SETEXT = re.compile(_ADORNED.format(c=r"[=\-]"), re.M)


def title_spans(text: str, rst: bool) -> list[tuple[int, int]]:
    """The spans of the section titles in `text` with their adornment lines: no sentence, and no part of the
    paragraph right under them ("Testing if a crontab matches ... ====== Test for a match_range ...:" is no
    sentence, nor is "Defining the Lazy Group")."""
    return [m.span() for m in (_TITLE if rst else _SETEXT).finditer(text)]


def titles_at(text: str) -> list[tuple[int, str]]:
    """(offset, title) for each section title of a reStructuredText document, at its overline when it has one: a
    title is never indented (an indented line over dashes is a literal block's, a "# comment" in one no title)."""
    found = []
    for m in _TITLE.finditer(text):
        lines = m.group(0).split("\n")
        line = lines[1] if m.group(1) else lines[0]
        if not line[:1].isspace():
            found.append((m.start(), line.strip()))
    return found


def after_directive(text: str, at: int) -> int:
    """Where the text of the directive whose marker holds `at` starts (".. note:: Neither the connect nor read
    timeouts ..." read "note:: Neither ...", its ".." taken for a sentence's end); `at` when it is in none."""
    line = text.rfind("\n", 0, at) + 1
    head = _DIRECTIVE_HEAD.match(text, line)
    return head.end() if head is not None and at < head.end() else at


# A row of a list-table: its first cell after two markers ("* - Install editable from path"), each other cell on a
# line of its own under it ("  - ``pipx install -e ./mypkg``").
_ROW = re.compile(r"^([ \t]*)[*+-][ \t]+-[ \t]+\S")
_ROW_LINE = re.compile(_ROW.pattern, re.M)
_CELL = re.compile(r"^[ \t]*(?:[*+-][ \t]+)?-[ \t]+")
_HEADER_ROWS = re.compile(
    rf"^[ \t]*\.\.[ \t]+list-table::[^\n]*\n(?:{_OPTION.pattern}[^\n]*\n)*?[ \t]+:header-rows:[ \t]*(\d+)", re.M
)


def table_rows(text: str) -> list[tuple[int, int]]:
    """The spans of the rows of the list-tables in `text` (a row: its marker line and the lines under it, indented
    more), the header rows of a table whose directive the text holds left out: a row is a record, as a Markdown
    table's is, and read as list items its cells were lines of a word or two ("- - Install editable from path")."""
    headers = {m.end(): int(m.group(1)) for m in _HEADER_ROWS.finditer(text)}
    return _without_headers(_rows(text), headers)


def _rows(text: str) -> list[tuple[int, int]]:
    """The spans of all list-table rows in `text`, header rows too."""
    lines = _lines_of(text)
    rows: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        start, line = lines[i]
        row = _ROW.match(line)
        i += 1
        if row is None:
            continue
        end = start + len(line)
        while i < len(lines) and lines[i][1].strip() and _indent(lines[i][1]) > len(row.group(1)):
            end = lines[i][0] + len(lines[i][1])
            i += 1
        rows.append((start, end))
    return rows


def _without_headers(rows: list[tuple[int, int]], headers: dict[int, int]) -> list[tuple[int, int]]:
    """The rows less the first `n` after each list-table directive that declares `n` header rows."""
    dropped: set[tuple[int, int]] = set()
    for at, n in headers.items():
        dropped.update([row for row in rows if row[0] >= at][:n])
    return [row for row in rows if row not in dropped]


def _cells(text: str) -> list[str]:
    """The cells of a list-table row's text, each as one line."""
    cells: list[str] = []
    for line in text.split("\n"):
        cell = _CELL.match(line)
        if cell is not None:
            cells.append(line[cell.end() :].strip())
        elif cells and line.strip():
            cells[-1] = f"{cells[-1]} {line.strip()}"
    return cells

"""Fences: how document-derived text is kept apart in a prompt, and how Markdown fences are found in text.

Every fence the prompt shows is written here: a tilde fence longer than any run of tildes inside the
text (so no document can close it and pose as instructions), opened by an info line naming what it
holds (for an excerpt: its source, chunk id, line range and span) with every attribute escaped so no
value can end the line. The prompt builder, the prompt view and the export all fence through it.

It also owns the patterns that find Markdown code fences in a document or a prompt: a fenced block is
code, never prose, a sentence or a section heading.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

CONDENSED_FENCE_INFO = 'condensed-context from="the excerpts below"'
CONVERSATION_FENCE_INFO = 'earlier-conversation note="past turns, quoted: not the current request"'
# A line that opens or closes a fenced block of a document (loosely: any indent, ``` or ~~~), also inside a
# blockquote ("> ```python": MkDocs' and GitHub's callouts quote whole examples).
FENCE_LINE = re.compile(r"^[ \t]*(?:>[ \t]?)*[ \t]*(?:```|~~~)", re.MULTILINE)
# A fence opener as CommonMark has it (at most three spaces of indent; the run is captured, since only a
# run of the same character, at least as long, closes it): for a prompt whose structure is parsed.
COMMONMARK_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TILDES = re.compile(r"~{3,}")
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_BREAKING = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})  # controls, format characters, line/paragraph separators


# A title's underline, not a fence: a line of one fence character, at least four, as long as the text line over it
# ("Latest PyPI stable release" over 26 "~": reStructuredText, which PyPI readmes saved as `.md` are).
_UNDERLINE = re.compile(r"^(?:~{4,}|`{4,})(?=[ \t]*$)", re.MULTILINE)


def _underlines(text: str) -> set[int]:
    """Where each title underline starts (read line by line: a pattern spanning the title line backtracked over
    every split of a long line, minutes on a one-line JSON file)."""
    found = set()
    for m in _UNDERLINE.finditer(text):
        if m.start() < 2:
            continue
        above = text[text.rfind("\n", 0, m.start() - 1) + 1 : m.start() - 1]
        if above.strip() and len(above.rstrip()) == m.end() - m.start() and not FENCE_LINE.match(above):
            found.add(m.start())
    return found


# A fence line's run of fence characters and what follows it on the line (its info string, or nothing).
_FENCE_RUN = re.compile(r"[ \t]*(?:>[ \t]?)*[ \t]*(?P<run>`{3,}|~{3,})(?P<rest>[^\n]*)")


def fence_marks(text: str, inside: bool = False) -> list[int]:
    """Where each line opening or closing a document's fenced block starts (`FENCE_LINE`), in pairs: a block closes
    only at a bare run of its own character at least as long as its opening's, so the fences of a block nested in a
    longer one (MyST's "````{admonition}" around a "```" example) are its content, not the ends of blocks (paired by
    count, they turned pip's file tree into prose and its prose into code); and a title's underline is no fence
    (each of tqdm's 29 "~~~~" underlines flipped code and prose for the rest of its readme). `inside`: the text
    starts inside a block, which its first bare fence line closes (a first fence naming a language opens one)."""
    underlines = _underlines(text)
    marks: list[int] = []
    opened = "?" if inside else ""  # "?": a block whose opening the text does not hold
    for m in FENCE_LINE.finditer(text):
        line = _FENCE_RUN.match(text, m.start())
        if line is None or (m.start() in underlines and not opened):  # inside a block, the run may close it
            continue
        run, rest = line.group("run"), line.group("rest").strip()
        if opened == "?" and rest:
            opened = ""
        if not opened:
            marks.append(m.start())
            opened = run
        elif not rest and (opened == "?" or (run[0] == opened[0] and len(run) >= len(opened))):
            marks.append(m.start())
            opened = ""
    return marks


def fenced_spans(marks: list[int], end: int) -> list[tuple[int, int]]:
    """The spans between fence lines (`marks`: where each starts) taken in pairs, an unclosed fence running to
    `end`: the text inside a document's code blocks."""
    marks = [*marks, end] if len(marks) % 2 else marks
    return list(zip(marks[::2], marks[1::2], strict=False))


def breaking_characters(text: str) -> list[str]:
    """The characters of `text` that can end a line or hide what follows (U+000A, U+2028, U+202E, ...)."""
    return [ch for ch in text if unicodedata.category(ch) in _BREAKING]


def escape_attr(value: object) -> str:
    """A fence info-line attribute value (unquoted): a quote or backslash is escaped with a backslash and a
    character that could end the line or hide text is written `\\uXXXX`, so no file name, chunk id or
    other value can close the attribute, the info line or the fence, or start a line of its own."""
    out = []
    for ch in str(value):
        if ch in '"\\':
            out.append("\\" + ch)
        elif unicodedata.category(ch) in _BREAKING:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


def fence_info(kind: str, attrs: Mapping[str, object], language: object = None) -> str:
    """The info line of a fence: an optional language word (dropped unless it is a plain identifier),
    the kind, then `name="value"` attributes, every value escaped (`escape_attr`)."""
    head = f"{language} " if isinstance(language, str) and _LANGUAGE.match(language) else ""
    return head + " ".join([kind, *(f'{name}="{escape_attr(value)}"' for name, value in attrs.items())])


def fence_block(info: str, text: str) -> str:
    """`text` in a tilde fence longer than any tilde run inside it, so the text cannot close it.

    `info` comes from `fence_info` (or is one of the constants above)."""
    longest = max((len(m.group()) for m in _TILDES.finditer(text)), default=0)
    bar = "~" * max(4, longest + 1)
    return f"{bar}{info}\n{text}\n{bar}"


def excerpt_fence(
    text: str,
    *,
    source: str,
    chunk: str,
    span: tuple[int, int],
    lines: tuple[int, int] | None = None,
    language: object = None,
    origin: Mapping[str, str] | None = None,
) -> str:
    """An excerpt's fence: its source path, chunk id, where it came from when not this project's documents
    (`origin`: project, tool), its line range (so an answer can cite `path:line`) and span; code opens
    with its language."""
    attrs: dict[str, object] = {"source": source, "chunk": chunk, **(origin or {})}
    if lines:
        attrs["lines"] = f"{lines[0]}-{lines[1]}"
    attrs["span"] = f"{span[0]}-{span[1]}"
    return fence_block(fence_info("excerpt", attrs, language), text)

"""Task 1: detect the prompt's format and extract top-level headers with exact spans.

Purely syntactic. Every body is an exact slice of the prompt (`prompt[body_span] == body`), so
later stages can always point back to where a piece of text came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]  # exported by the stdlib, missing in typeshed

from ragstream.preprocessing.schema import normalize_header
from ragstream.state import Header, PromptFormat, Span
from ragstream.text.fences import COMMONMARK_FENCE

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*\r?$")
# A label opening a line: a capitalised name of at most four words, its colon inside or after bold marks.
_LABEL = re.compile(
    r"^ {0,3}(?P<mark>(?P<bold>\*\*|__)?(?P<name>[A-Z][A-Za-z]*(?:[ \t][A-Za-z]+){0,3})"
    r"(?:(?P=bold):|:(?P=bold)|(?(bold)(?!)|:)))[ \t]*"
)
_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


class ParsedPrompt:
    """Task 1 output: format, headers in original order, and why a fallback happened."""

    def __init__(self, fmt: PromptFormat, headers: list[Header], note: str | None = None) -> None:
        self.format = fmt
        self.headers = headers
        self.note = note


def strip_span(text: str, start: int, end: int) -> Span:
    """Shrink [start, end) past surrounding whitespace; an all-blank range collapses to its start."""
    while start < end and text[start] in _WS:
        start += 1
    while end > start and text[end - 1] in _WS:
        end -= 1
    return Span(start=start, end=end)


def _header_name(raw: str | None) -> str:
    """ATX header text without an optional closing run of '#'."""
    name = (raw or "").strip()
    closed = re.sub(r"(?:^|[ \t]+)#+$", "", name)
    return closed.strip()


def _markdown_headers(prompt: str) -> list[Header]:
    lines: list[tuple[int, int, str]] = []
    pos = 0
    for line in prompt.splitlines(keepends=True):
        lines.append((pos, pos + len(line), line.rstrip("\r\n")))
        pos += len(line)

    found: list[tuple[int, int, int, int, str]] = []  # level, line start, line end, body start, name
    fence: str | None = None
    for start, end, content in lines:
        fence_match = COMMONMARK_FENCE.match(content)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        match = _ATX.match(content)
        if match:
            found.append((len(match.group(1)), start, start + len(content), end, _header_name(match.group(2))))
    if not found:
        return []

    top = min(level for level, *_ in found)
    tops = [h for h in found if h[0] == top]
    headers: list[Header] = []
    preamble = strip_span(prompt, 0, tops[0][1])
    if preamble.end > preamble.start:
        headers.append(Header(name=None, level=0, body=preamble.slice(prompt), body_span=preamble))
    for i, (level, line_start, line_end, body_start, name) in enumerate(tops):
        body_end = tops[i + 1][1] if i + 1 < len(tops) else len(prompt)
        body_span = strip_span(prompt, body_start, body_end)
        headers.append(
            Header(
                name=name,
                level=level,
                header_span=Span(start=line_start, end=line_end),
                body=body_span.slice(prompt),
                body_span=body_span,
            )
        )
    return headers


def _skip_ws(text: str, idx: int) -> int:
    while idx < len(text) and text[idx] in _WS:
        idx += 1
    return idx


def _json_headers(prompt: str) -> list[Header]:
    """Top-level keys of a JSON object, in order (duplicates kept), with exact value spans.

    Raises ValueError when the text is not one strict JSON object.
    """
    idx = _skip_ws(prompt, 0)
    if idx >= len(prompt) or prompt[idx] != "{":
        raise ValueError("not a JSON object")
    headers: list[Header] = []
    idx = _skip_ws(prompt, idx + 1)
    if idx < len(prompt) and prompt[idx] == "}":
        idx += 1
    else:
        while True:
            if idx >= len(prompt) or prompt[idx] != '"':
                raise ValueError(f"expected a quoted key at character {idx}")
            key_start = idx
            key, idx = scanstring(prompt, idx + 1, True)
            key_span = Span(start=key_start, end=idx)
            idx = _skip_ws(prompt, idx)
            if idx >= len(prompt) or prompt[idx] != ":":
                raise ValueError(f"expected ':' at character {idx}")
            idx = _skip_ws(prompt, idx + 1)
            value, value_end = _DECODER.raw_decode(prompt, idx)
            if isinstance(value, str):
                span = Span(start=idx + 1, end=value_end - 1)
                decoded: str | None = value if value != span.slice(prompt) else None
            else:
                span = Span(start=idx, end=value_end)
                decoded = None
            headers.append(
                Header(name=key, level=1, header_span=key_span, body=span.slice(prompt), body_span=span, value=decoded)
            )
            idx = _skip_ws(prompt, value_end)
            if idx < len(prompt) and prompt[idx] == ",":
                idx = _skip_ws(prompt, idx + 1)
                continue
            if idx < len(prompt) and prompt[idx] == "}":
                idx += 1
                break
            raise ValueError(f"expected ',' or '}}' at character {idx}")
    if _skip_ws(prompt, idx) != len(prompt):
        raise ValueError(f"extra text after the JSON object at character {idx}")
    return headers


def _fence_lines(lines: list[tuple[int, int, str]]) -> set[int]:
    """The indexes of the lines inside (or opening and closing) a fenced code block."""
    inside: set[int] = set()
    fence: str | None = None
    for i, (_, _, content) in enumerate(lines):
        opened = COMMONMARK_FENCE.match(content)
        if opened and (fence is None or opened.group(1).startswith(fence)):
            fence = opened.group(1)[0] * 3 if fence is None else None
            inside.add(i)
        elif fence is not None:
            inside.add(i)
    return inside


def _label_headers(prompt: str, labels: Mapping[str, str]) -> list[Header]:
    """Labelled fields ("Task: ...", "**Constraints:**" over a list) as headers, when at least two different
    known labels (`labels`: normalized name -> canonical section) open lines outside code, one of them the
    task's ("Task:", "Question:"): one "Note:" in a question stays its text, a pasted example's "Input:" and
    "Output:" lines under a question are no sections, and a pasted YAML's "environment:" (lower case) is no
    label."""
    lines: list[tuple[int, int, str]] = []
    pos = 0
    for line in prompt.splitlines(keepends=True):
        lines.append((pos, pos + len(line), line.rstrip("\r\n")))
        pos += len(line)
    code = _fence_lines(lines)
    found: list[tuple[int, int, int, str]] = []  # label start, label end, body start, name
    for i, (start, _, content) in enumerate(lines):
        match = _LABEL.match(content)
        if i not in code and match and normalize_header(match.group("name")) in labels:
            found.append((start, start + match.end("mark"), start + match.end(), match.group("name")))
    named = {normalize_header(name) for *_, name in found}
    if len(named) < 2 or not any(labels[name] == "TASK" for name in named):
        return []
    headers: list[Header] = []
    preamble = strip_span(prompt, 0, found[0][0])
    if preamble.end > preamble.start:
        headers.append(Header(name=None, level=0, body=preamble.slice(prompt), body_span=preamble))
    for i, (label_start, label_end, body_start, name) in enumerate(found):
        body_span = strip_span(prompt, body_start, found[i + 1][0] if i + 1 < len(found) else len(prompt))
        headers.append(
            Header(
                name=name,
                level=1,
                header_span=Span(start=label_start, end=label_end),
                body=body_span.slice(prompt),
                body_span=body_span,
            )
        )
    return headers


def parse_prompt(prompt: str, labels: Mapping[str, str] | None = None) -> ParsedPrompt:
    """Detect plain / Markdown / JSON-like and list the top-level headers with their bodies; in a prompt with
    no Markdown header, lines that open with known labels (`labels`: normalized header name -> canonical section;
    "Task:", "**Context:**") are its headers."""
    stripped = prompt.strip(_WS)
    if stripped.startswith("{"):
        try:
            return ParsedPrompt("json", _json_headers(prompt))
        except (ValueError, RecursionError) as exc:
            note = f"JSON-like prompt could not be parsed ({exc}); treated as plain text"
            return ParsedPrompt("plain", [], note)
    headers = _markdown_headers(prompt)
    if headers:
        return ParsedPrompt("markdown", headers)
    headers = _label_headers(prompt, labels or {})
    if headers:
        return ParsedPrompt("markdown", headers, "labelled fields ('Name:' lines) read as headers")
    return ParsedPrompt("plain", [])

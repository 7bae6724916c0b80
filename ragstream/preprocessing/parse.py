"""Task 1: detect the prompt's format and extract top-level headers with exact spans.

Purely syntactic. Every body is an exact slice of the prompt (`prompt[body_span] == body`), so
later stages can always point back to where a piece of text came from.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # exported by the stdlib, missing in typeshed

from ragstream.state import Header, PromptFormat, Span
from ragstream.text.fences import COMMONMARK_FENCE

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*\r?$")
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


def parse_prompt(prompt: str) -> ParsedPrompt:
    """Detect plain / Markdown / JSON-like and list the top-level headers with their bodies."""
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
    return ParsedPrompt("plain", [])

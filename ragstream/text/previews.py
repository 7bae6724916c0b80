"""Previews: a long text shown in one line, cut at a word so a reader never sees half a word."""

from __future__ import annotations

ELLIPSIS = " …"


def preview(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, at most `limit` characters; a cut ends on a whole word and says so."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(limit - len(ELLIPSIS), 1)]
    if flat[len(cut)] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + ELLIPSIS

"""Identifiers split into words for lexical search: `best_match` also reads "best match", and
`parseHTTPHeader` also "parse HTTP header", so a question in words finds the code and a question
naming the identifier still matches it whole.

Joined terms (`no-cache`, `--cap-drop`, `X-Frame-Options`, `process::exit`) are the reverse case: the
tokenizer cuts them at the hyphen or colons, and their parts are common words ("no" is a stopword,
"cache" is on every page of a caching guide), so `no-cache` and `no-store` would both read "cache"
and "store". For the BM25 index and its queries they also count as one word, spelt with underscores, beside
their parts; the gate's and the support check's words stay the parts (a joined term is no word a user wrote
that the documents could lack)."""

from __future__ import annotations

import re

_COMPOUND = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+\b|\b[A-Za-z]+[a-z0-9](?:[A-Z][A-Za-z0-9]*)+\b")
_JOINED = re.compile(r"(?<!\w)[A-Za-z][A-Za-z0-9]*(?:(?:-|::)[A-Za-z0-9]+)+(?!\w)")
_JOINT = re.compile(r"-|::")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_parts(identifier: str) -> list[str]:
    return _PART.findall(identifier)


def with_identifier_parts(text: str, joined: bool = False) -> str:
    """The text followed by the words of each compound identifier in it and, with `joined`, each joined term as
    one word (the original stays)."""
    parts = [" ".join(identifier_parts(m.group())) for m in _COMPOUND.finditer(text)]
    if joined:
        parts += [_JOINT.sub("_", m.group()) for m in _JOINED.finditer(text)]
    return f"{text}\n{' '.join(parts)}" if parts else text

"""Headings that name a thing: the sections of a reference page ("### dev_addr", "#### `no-cache`").

A reference page gives each setting, directive, option or field a heading of its bare name and says what it does
under it, often without the name again. Two readers need the same reading of such headings: the condenser names a
line by the heading over it (condensing/extractive.py), and retrieval finds the section that defines a name the
prompt asks about (retrieval/search.py), which a question naming two directives ranks below pages that repeat them.
"""

from __future__ import annotations

import re

from ragstream.text.fences import fence_marks, fenced_spans

HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(?P<title>.+?)[ \t#]*$", re.M)
# A heading that is a bare name: a setting, command or field of a reference page ("### dev_addr", "## `nav`"), in
# lower case or holding a mark a word lacks (an inner capital, a digit, or _ . - /); "Installation" is a title.
NAME_HEADING = re.compile(r"`?(?P<name>(?=[a-z]|[^`]*(?:[a-z][A-Z]|[\d_./-]))[A-Za-z_][\w./-]*)`?(?:\s*\{[^}]*\})?")
_QUERY_NAME = re.compile(r"[A-Za-z_][\w./-]*")


def heading_name(title: str) -> str:
    """The name a heading's title is, or "" for a title that is no bare name."""
    found = NAME_HEADING.fullmatch(title.strip())
    return found.group("name") if found else ""


def name_headings(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each heading of `text` that is a bare name, outside fenced code (a shell comment in a
    block is no heading)."""
    fenced = fenced_spans(fence_marks(text), len(text))
    return [
        (m.start(), name)
        for m in HEADING_LINE.finditer(text)
        if (name := heading_name(m.group("title"))) and not any(a <= m.start() < b for a, b in fenced)
    ]


def holding(name: str) -> str:
    """How a text names a section's name: as written when it is shaped like one ("dev_addr"), as code when it
    is a plain word: in a code span or against code's marks ("#[doc(hidden)]"), since "Determines additional
    directories to watch ..." names no setting `watch`."""
    if re.search(r"[\d_./-]|[a-z][A-Z]", name):
        return rf"(?<![\w.-]){re.escape(name)}(?![\w-])"
    return rf"`{re.escape(name)}\b|(?<=[(\[.=#:/]){re.escape(name)}\b|\b{re.escape(name)}(?=[(=\])])"


def names_held(text: str, names: dict[str, str]) -> set[str]:
    """The names of `names` (lower case -> as a heading writes it) that `text` names, by `holding`'s rule for the
    name as the heading writes it: "MkDocs" in a prompt names no section "### mkdocs" (a theme), "`mkdocs`" does."""
    found = set()
    for token in _QUERY_NAME.findall(text):
        for key in {token.lower(), token.rstrip("./-").lower()}:
            if key in names and key not in found and re.search(holding(names[key]), text, re.IGNORECASE):
                found.add(key)
    return found

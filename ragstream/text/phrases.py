"""Cue phrases: a configured phrase matches only as whole words, so 'lesson' does not match 'lessons
learned' and 's3' not 'aws3x'. The offline keyword rules (agent configs' `x-cues`), the planner's cue
lists, A5's format kinds and A4's line cues all match through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CODE_SPAN = re.compile(r"`([^`\n]+)`")


def as_typed(text: str) -> str:
    """Typographic apostrophes as typed ones: the cue lists write "let's" and "can't", documents often "let’s"
    and "can’t" (the Rust book throughout)."""
    return text.replace("\u2019", "'")


def unquoted(text: str) -> str:
    """The text without its inline code spans: what a code span holds is quoted (a message, a name, a
    command), so a cue inside it ("`Should have been able to read the file`") is not the writer's."""
    return CODE_SPAN.sub(" ", text)


def phrase(cue: str) -> re.Pattern[str]:
    """`cue` as whole words, lower case (match it against lower-cased text)."""
    return re.compile(r"(?<![\w])" + re.escape(cue.lower()) + r"(?![\w])")


def any_phrase(cues: Iterable[str]) -> re.Pattern[str]:
    """Any of `cues` as whole words, ignoring case, longest first (so 'thank you' wins over 'you')."""
    ordered = sorted({p.lower() for p in cues}, key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(re.escape(p) for p in ordered) + r")(?![\w])", re.I)

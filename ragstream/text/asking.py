"""Asking sentences: whether a sentence asks for something, by one rule everywhere.

A sentence that ends in '?' is a question; a sentence whose first words are one of the prompt schema's
`ask_openers` (config/prompt_schema.json: imperative verbs such as 'explain' or 'list', or 'please',
'can you', 'how', ...) is a request. PreProcessing picks the task by it, the planner reads a request to
look something up by it, and the A3 gate judges the coverage of each asking sentence of the task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragstream.text.sentences import TYPED, split

_BULLET = re.compile(r"^[\s>*\-+\d.)]*")


def ask_of(sentence: str, openers: Iterable[str]) -> str | None:
    """What makes `sentence` ask: '?' for a question, else the opener it starts with; None if it does not."""
    words = _BULLET.sub("", sentence).strip().lower()
    if not words:
        return None
    if words.endswith("?"):
        return "?"
    return next((o for o in openers if words == o or words.startswith(o + " ") or words.startswith(o + ",")), None)


def asking_sentences(text: str, openers: Iterable[str]) -> list[str]:
    """The sentences of typed `text` that ask for something, in order."""
    listed = tuple(openers)
    return [s for s in split(text, TYPED) if ask_of(s, listed) is not None]


def asks(text: str, openers: Iterable[str]) -> bool:
    """Whether any sentence of typed `text` asks for something."""
    return bool(asking_sentences(text, openers))

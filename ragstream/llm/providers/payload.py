"""What the offline provider reads of a request: the INPUT block's text, as sentences.

The local provider is no language model: it can only pick from what it was given. These are the units
it picks: the payload's text content (keys are schema words, not content) in sentences of at least three
words, split as wrapped prose (ragstream/text/sentences.py), without repeats.
"""

from __future__ import annotations

import json
from typing import Any

from ragstream.text.sentences import WRAPPED, split

MIN_WORDS = 3
LIST_ITEMS = 5


def sentences(text: str) -> list[str]:
    """Sentences of `text` (split as wrapped prose: see ragstream/text/sentences.py) in order, without
    duplicates; fragments under three words are not sentences."""
    return list(dict.fromkeys(s for s in split(text, WRAPPED) if len(s.split()) >= MIN_WORDS))


def flatten(value: Any) -> str:
    """The payload's text content; keys are schema words, not content, so they are left out."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(flatten(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(flatten(v) for v in value.values())
    return json.dumps(value)

"""Removing secrets from any text that may reach logs, errors, traces or state."""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,})")


def redact(text: str, secrets: Iterable[str | None] = (), patterns: Iterable[re.Pattern[str]] = ()) -> str:
    """Replace every known secret, configured secret pattern and OpenAI-shaped key with a mask."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    for pattern in patterns:
        text = pattern.sub(MASK, text)
    return _KEY_LIKE.sub(MASK, text)

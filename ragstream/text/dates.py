"""ISO dates (`YYYY-MM-DD`, or `YYYY-MM` where a month is enough), years 1900 to 2099: the one pattern that
ingestion dates a document by, the temporal strategy finds in a query, retrieval reads back from a chunk's
metadata, and the price table strips from a dated model snapshot's name.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_YEAR_MONTH = r"(?:19|20)\d{2}-(?:0[1-9]|1[0-2])"
_DAY = r"-(?:0[1-9]|[12]\d|3[01])"
ISO_DATE = re.compile(rf"\b{_YEAR_MONTH}(?:{_DAY})?\b")  # a day or a month: what a query may name
ISO_DAY = re.compile(rf"\b{_YEAR_MONTH}{_DAY}\b")  # a day: what a document is dated by
SNAPSHOT_SUFFIX = re.compile(rf"-{_YEAR_MONTH}{_DAY}$")  # `gpt-4.1-mini-2025-04-14`


def first_day(*texts: str) -> str | None:
    """The first ISO day in the first of `texts` that has one."""
    for text in texts:
        found = ISO_DAY.search(text)
        if found:
            return found.group()
    return None


def years_of_dates(text: str) -> set[int]:
    """The years of the ISO dates (days or months) in `text`."""
    return {int(m.group()[:4]) for m in ISO_DATE.finditer(text)}


def timestamp(date: str) -> float | None:
    """A stored ISO date as a POSIX timestamp (midnight UTC); None when it is not one."""
    try:
        return datetime.fromisoformat(date).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None

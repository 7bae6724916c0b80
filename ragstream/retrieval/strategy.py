"""Retrieval strategies and the small deterministic chooser that picks one from the query."""

from __future__ import annotations

import re
from enum import Enum


class Strategy(str, Enum):
    PRECISE = "PRECISE"  # dense vectors only
    SEMANTIC = "SEMANTIC"  # BM25 only
    HYBRID = "HYBRID"  # both, fused
    TEMPORAL = "TEMPORAL"  # hybrid, re-ranked by recency / filtered by dates named in the query
    EXPLORATORY = "EXPLORATORY"  # hybrid seeds expanded along neighbouring chunks and linked files


_DATE = re.compile(
    r"\b(?:19|20)\d{2}-\d{2}(?:-\d{2})?\b|\b(?:in|since|before|after|during|from|until)\s+(?:19|20)\d{2}\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?:19|20)\d{2}")
_RECENCY = re.compile(
    r"\b(?:latest|recent(?:ly)?|newest|this (?:week|month|year)|last (?:week|month|year)|today|yesterday|"
    r"since|changelog|what changed)\b",
    re.IGNORECASE,
)
_EXPLORE = re.compile(
    r"\b(?:overview|explore|related|everything about|connections?|how .* (?:connect|relate)|map of|landscape)\b",
    re.IGNORECASE,
)


def years_in(text: str) -> set[int]:
    """Years the query names as dates (ISO dates, or 'in/since/before … YYYY')."""
    return {int(_YEAR.search(m.group()).group()) for m in _DATE.finditer(text)}


def choose_strategy(query: str) -> Strategy:
    """Dates or recency words -> TEMPORAL; exploration words -> EXPLORATORY; otherwise HYBRID."""
    if _DATE.search(query) or _RECENCY.search(query):
        return Strategy.TEMPORAL
    if _EXPLORE.search(query):
        return Strategy.EXPLORATORY
    return Strategy.HYBRID

"""The deterministic chooser that picks a retrieval strategy (`ragstream.strategies`) from the query.

The chooser's rules, in order (the first that applies wins, and is reported as the reason):

1. TEMPORAL when the query names a time: an ISO date (2024-03 or 2024-03-18); a year after a time
   preposition ("in 2023", "since 2021", "before 2020"); "since" followed by a time ("since last
   week", "since March", "since v2", "since the release"); or a recency phrase ("latest", "most
   recent", "recently", "this week", "last month", "past 30 days", "today", "what changed", "what's
   new"). A causal "since" ("since the index is immutable") and the word "changelog" are not times.
2. EXPLORATORY when the query asks to explore rather than to find: "overview of", "explore",
   "everything about", "the big picture", "landscape", "map of", "how do X and Y relate/connect",
   "connections/relationships between", "what else ... related". "Related work" (a paper's
   section) is not exploration.
3. HYBRID otherwise.
"""

from __future__ import annotations

import re

from ragstream.strategies import Strategy
from ragstream.text.dates import ISO_DATE, years_of_dates

_MONTHS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
)
_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_YEAR_AFTER_PREPOSITION = re.compile(
    r"\b(?:in|since|before|after|during|from|until|till|as of)\s+((?:19|20)\d{2})\b", re.I
)
_SINCE_A_TIME = re.compile(
    rf"\bsince\s+(?:the\s+)?(?:last|yesterday|today|this|{_MONTHS}|{_WEEKDAYS}|v\d|version|release|launch|migration|upgrade)\b",
    re.I,
)
_RECENCY = re.compile(
    r"\b(?:latest|most\s+recent(?:ly)?|newest|recently|lately|this\s+(?:week|month|year|quarter|sprint)|"
    r"last\s+(?:week|month|year|quarter|sprint|\d+\s+(?:days|weeks|months))|past\s+\d+\s+(?:days|weeks|months)|"
    r"today|yesterday|what\s+(?:has\s+)?changed|what'?s\s+new|changes\s+in\s+the\s+last)\b",
    re.I,
)
_EXPLORE = re.compile(
    r"\b(?:(?:an?\s+)?overview\s+of|give\s+me\s+an\s+overview|explore|exploring|everything\s+(?:about|on|related)|"
    r"big\s+picture|landscape|map\s+of|connections?\s+between|relationships?\s+between|"
    r"how\s+(?:do|does|are|is)\s+.{1,60}?\s+(?:relate|related|connect|connected|fit\s+together)|"
    r"what\s+else\s+(?:is\s+)?(?:related|connected))\b",
    re.I,
)


def years_in(text: str) -> set[int]:
    """Years the query names as dates (ISO dates, or 'in/since/before … YYYY')."""
    return years_of_dates(text) | {int(m.group(1)) for m in _YEAR_AFTER_PREPOSITION.finditer(text)}


def choose_strategy(query: str) -> tuple[Strategy, str]:
    """The strategy for a query, and the rule that chose it (recorded in the retrieval report)."""
    for strategy, pattern, what in (
        (Strategy.TEMPORAL, ISO_DATE, "a date"),
        (Strategy.TEMPORAL, _YEAR_AFTER_PREPOSITION, "a year"),
        (Strategy.TEMPORAL, _SINCE_A_TIME, "'since' a time"),
        (Strategy.TEMPORAL, _RECENCY, "a recency phrase"),
        (Strategy.EXPLORATORY, _EXPLORE, "an exploration phrase"),
    ):
        match = pattern.search(query)
        if match:
            return strategy, f"{what}: '{match.group(0)}'"
    return Strategy.HYBRID, "no time or exploration phrase: the default"

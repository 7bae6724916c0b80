"""Asking sentences: whether a sentence asks for something, by one rule everywhere.

A sentence that ends in '?' is a question; a sentence whose first words are one of the prompt schema's
`ask_openers` (config/prompt_schema.json: imperative verbs such as 'explain' or 'list', or 'please',
'can you', 'how', ...) is a request. PreProcessing picks the task by it, the planner reads a request to
look something up by it, and the A3 gate judges the coverage of each asking sentence of the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ragstream.text.sentences import TYPED, split

_BULLET = re.compile(r"^[\s>*\-+\d.)]*")


def ask_of(sentence: str, openers: Iterable[str]) -> str | None:
    """What makes `sentence` ask: '?' for a question, else the opener it starts with; None if it does not."""
    words = _BULLET.sub("", sentence).strip().lower()
    if not words:
        return None
    if words.endswith("?"):
        return "?"
    return _opener(words, openers)


# What asks for a piece of writing before saying what it is about: a deliverable verb, its object and whom it is for,
# then "of", "on", "about", "for" (or "explaining", "describing", "covering") right before a question word.
_FRAMING = (
    r"^\s*(?:please\s+)?(?:{verbs})\b[^.?!\n]{{0,100}}?\b(?:of|on|about|for|explaining|describing|covering)\s+"
    r"(?=(?:how|what|which|why|when|where|whether)\b)"
)


def topic_start(sentence: str, deliverables: Iterable[str]) -> int:
    """Where what a request for a piece of writing is about starts in `sentence` (0 when it asks for none): "Write a
    short internal guideline for how our team should set caching headers ..." is about "how our team should set
    caching headers ...". Read whole, the framing took the ask's meaning: MiniLM put "Write a one-paragraph summary
    for the new hire of which database we use ..." at 0.29 from the ADR that answers it, its topic alone at 0.53."""
    verbs = "|".join(re.escape(verb) for verb in deliverables)
    if not verbs:
        return 0
    found = re.match(_FRAMING.format(verbs=verbs), sentence, re.IGNORECASE)
    return found.end() if found else 0


def _opener(words: str, openers: Iterable[str]) -> str | None:
    return next((o for o in openers if words == o or words.startswith(o + " ") or words.startswith(o + ",")), None)


def asking_sentences(text: str, openers: Iterable[str]) -> list[str]:
    """The sentences of typed `text` that ask for something, in order."""
    listed = tuple(openers)
    return [s for s in split(text, TYPED) if ask_of(s, listed) is not None]


def asks(text: str, openers: Iterable[str]) -> bool:
    """Whether any sentence of typed `text` asks for something."""
    return bool(asking_sentences(text, openers))


# Where one sentence may join two asks: a semicolon, or "and"/"or"/"but"/"also" (after a comma or not).
_JOIN = re.compile(r"\s*;\s*(?:(?:and|also|then)\s+)*|,?\s+(?:and|or|but|also)\s+(?:also\s+)?", re.IGNORECASE)


# A sentence that opens by joining on to the one before ("Also how do we measure review latency?"): the join is no
# part of its ask, and named as uncovered it read "The documents do not cover: Also how do we ...".
_OPENING_JOIN = re.compile(r"^(?:(?:and|also|plus|additionally|then)\b[,\s]*)+", re.IGNORECASE)


def _without_opening_join(sentence: str, openers: tuple[str, ...]) -> str:
    """The sentence without a join word it opens with, when what follows asks on its own."""
    rest = _OPENING_JOIN.sub("", sentence)
    return rest if rest != sentence and ask_of(rest, openers) is not None else sentence


def clauses(
    text: str,
    openers: Iterable[str],
    substantive: Callable[[str], bool] = bool,
    questions: Iterable[str] = (),
    deliverables: Iterable[str] = (),
) -> list[str]:
    """The asks in typed `text`, one per clause: each asking sentence, cut where a join is followed by a
    request opener ("How are X found, and how are they ranked?"; "Explain X; also list Y") or, in a question,
    by one of `questions` ("..., and can it export to PDF?"), so the A3 gate can judge each ask on its own. A
    sentence is cut only when every clause is `substantive` (e.g. names enough of its own), so "How do I read
    and write files?" or "... and what are its drawbacks?" stay whole. A request for a piece of writing asks what
    it is about (`deliverables`, `topic_start`)."""
    listed, asking, written = tuple(openers), tuple(questions), tuple(deliverables)
    found: list[str] = []
    for whole in (_without_opening_join(s.strip(), listed) for s in asking_sentences(text, listed)):
        sentence = whole[topic_start(whole, written) :]
        cuts = [
            m
            for m in _JOIN.finditer(sentence)
            if _opener(rest := sentence[m.end() :].strip().lower(), listed)
            or (sentence.endswith("?") and _opener(rest, asking))
        ]
        bounds = [0, *(x for m in cuts for x in (m.start(), m.end())), len(sentence)]
        parts = [sentence[bounds[i] : bounds[i + 1]].strip() for i in range(0, len(bounds), 2)]
        found += parts if len(parts) > 1 and all(substantive(p) for p in parts) else [sentence]
    return found


# "the difference between X and Y", "compare X with Y": each side is a topic of its own, answered by pages
# that treat only one of them (the Box chapter for "Box<T> and Rc<T>"). "between" compares only after a word
# that weighs one thing against another: "send data between two tasks with a memory object stream" or "share
# state between the middleware and the endpoint" name no two things to tell apart.
_SIDES_END = r"\s*(?:[,;?!]|\.(?:\s|$)|$|\s+(?:and|or|but|for|when|if|in|on)\s)"
_COMPARED = (
    re.compile(
        r"\b(?:differen(?:ce|ces|t)|differs?|choos(?:e|ing)|decid(?:e|ing)|pick(?:ing)?|distinguish(?:ing)?"
        r"|trade-?offs?|comparisons?|compar(?:e|ing))\s+between\s+(?P<a>[^,;?!]+?)\s+(?:and|vs\.?|versus)\s+"
        r"(?P<b>[^,;?!]+?)" + _SIDES_END,
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:compare|comparing)\s+(?!between\b)(?P<a>[^,;?!]+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>[^,;?!]+?)"
        + _SIDES_END,
        re.IGNORECASE,
    ),
)
MAX_SIDE_WORDS = 6


def compared_sides(clause: str) -> list[str]:
    """The two things a comparing clause compares ("Box<T>", "Rc<T>"), each at most a few words; none when the
    clause compares nothing."""
    found = next((m for m in (p.search(clause) for p in _COMPARED) if m is not None), None)
    if found is None:
        return []
    sides = [found.group("a").strip(), found.group("b").strip()]
    return sides if all(0 < len(side.split()) <= MAX_SIDE_WORDS for side in sides) else []

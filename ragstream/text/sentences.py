"""Sentences: the one place that says where a sentence ends.

Text reaches the pipeline in different shapes, and each shape ends a sentence differently, so the
splitter takes the shape as an explicit rule instead of guessing:

- `TYPED`, text a person typed (a prompt, a conversation turn): a line break ends a sentence too,
  since a prompt's lines are its sentences and list items;
- `WRAPPED`, prose whose lines wrap sentences (a document as the offline provider reads it): the lines
  of a paragraph are joined first and Markdown heading lines dropped, and a sentence ends at `.`, `!`
  or `?` only when the next one opens with a capital, a digit or an opening quote or bracket;
- `MARKDOWN`, a chunk of a Markdown document cut as offline A4 condenses it: a sentence ends at
  `.`, `!` or `?` whatever follows (closing quotes and brackets after it stay with it), and a
  blank line, a list item, a heading or a code fence starts a new piece whatever came before;
- `EXCERPT`, where an excerpt may begin in a document: after a sentence end (closing quotes,
  brackets and emphasis after it skipped) that a capital, a digit or a Markdown block opens.

In every rule the period of an abbreviation ("e.g.", "a.k.a.", "cf.", "vs.") ends no sentence.

The offline A3 gate and A4 condenser depend on these exact boundaries (the quality suite measures
them), which is why they are four rules and not one compromise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class SentenceRule:
    gap: re.Pattern[str]  # what lies between two sentences
    wrapped: bool = False  # lines of a paragraph are joined, heading lines dropped, before splitting


# The period of an abbreviation that stands inside a sentence ("the repository host (e.g. GitHub, Bitbucket, etc),
# the branch ..."): no sentence ends there, whatever follows. An abbreviation is letters each with its period
# ("e.g.", "i.e.", "a.k.a.": "a bundle of SSL certificates (a.k.a. CA bundle)" is one sentence), the undotted "ie."
# and "eg.", or "cf.", "vs.", "et al.", "approx.", "incl.", "viz."; nor does one end at "etc." when the sentence goes
# on in lower case ("Process monitoring, audit, and transaction logs/trails etc. are usually collected ...").
_END = (
    r"(?<=[.!?])(?<!\b[A-Za-z]\.[A-Za-z]\.)(?<!\b[iI][eE]\.)(?<!\b[eE][gG]\.)(?<!\b[cC]f\.)(?<!\bvs\.)"
    r"(?<!\bet al\.)(?<!\bapprox\.)(?<!\bincl\.)(?<!\bviz\.)"
    r"(?!(?<=\betc\.)[\"')\]]*\s+[a-z])"
)
# An admonition's opening line (MkDocs' and Python-Markdown's "!!! note", "??? tip \"Title\""): markup, like a
# heading, between the sentences before it and the indented body it opens ("note The `reload` and `workers` ...").
_ADMONITION = r"(?m:^)[ \t]*(?:!!!|\?\?\?\+?)[ \t]+[^\n]*(?:\n|$)"
TYPED = SentenceRule(re.compile(_END + r"\s+|\n+"))
WRAPPED = SentenceRule(re.compile(_END + r"\s+(?=[\"'(\[]?[A-Z0-9])"), wrapped=True)
MARKDOWN = SentenceRule(
    re.compile(
        _ADMONITION
        + r"|"
        + _END
        + r"[\"')\]]*\s+|\n[ \t]*\n|\n(?=[ \t]*(?:[-*+]|\d+[.)])[ \t])|\n(?=[ \t]*#)|\n(?=[ \t]*```)"
    )
)
EXCERPT = SentenceRule(re.compile(_END + r"[\"'\u201d\u2019)\]*_]*\s+(?=[\"'\u201c\u2018(\[*_`]?[A-Z0-9#>|`*\-])"))


# What closes a sentence after its period: quotes, brackets and emphasis. A gap that starts with them leaves them to
# the sentence before ('how large is "too large." 100 lines is ...' kept its closing quote: cut before it, the line
# read 'how large is "too large.').
_CLOSERS = re.compile(r"[\"'\u201d\u2019)\]*_]*")


def _inside_brackets(piece: str) -> bool:
    """Whether the piece leaves a bracket open: a sentence does not end inside a link's text or a parenthesis."""
    return piece.count("[") > piece.count("]") or piece.count("(") > piece.count(")")


def spans(text: str, rule: SentenceRule) -> list[tuple[int, int]]:
    """(start, end) of every piece of `text` between two gaps, as is (blank or untrimmed pieces included),
    so a caller can cite a sentence as a span of the text it came from; a piece keeps the quotes, brackets and
    emphasis that close it, and no piece ends inside a bracket it opens on the same line."""
    if rule.wrapped:
        raise ValueError("a wrapped rule joins lines, so its sentences are not spans of the text: use split()")
    found: list[tuple[int, int]] = []
    start = 0
    for gap in rule.gap.finditer(text):
        closed = _CLOSERS.match(text, gap.start(), gap.end())
        end = closed.end() if closed is not None else gap.start()
        if _inside_brackets(text[start:end]) and "\n" not in text[end : gap.end()]:
            continue  # a title quoted in a link ('see ["Why is Cargo rebuilding my code?" in the FAQ](...)')
        found.append((start, end))
        start = gap.end()
    found.append((start, len(text)))
    return found


def split(text: str, rule: SentenceRule) -> list[str]:
    """The sentences of `text` under `rule`, trimmed, in order, blank ones left out (repeats kept)."""
    if not rule.wrapped:
        return [piece for a, b in spans(text, rule) if (piece := text[a:b].strip())]
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        lines = [line for line in paragraph.splitlines() if not line.lstrip().startswith("#")]
        out += [piece for part in rule.gap.split(" ".join(" ".join(lines).split())) if (piece := part.strip())]
    return out

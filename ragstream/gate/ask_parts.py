"""The asks of the task, one per clause: what a chunk may answer, and what may be named as uncovered."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragstream.gate.evidence import stemmed_terms, topic_terms
from ragstream.preprocessing.enumerations import Enumeration, asked_enumerations, enumerated_items, with_items
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.rendering.ask import normalized_ask
from ragstream.settings import Settings
from ragstream.state import SuperPrompt
from ragstream.text.asking import ask_of, clauses, compared_sides
from ragstream.text.sentences import TYPED, split

_BULLET = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,2}[.)])[ \t]+")  # a clause that is a list item: its marker is no word

# A word that leans on the rest of its sentence ("... and what can change before it is sent"): such a
# clause is not named on its own as uncovered. The subject of a yes/no question ("..., and can it export
# the prompt to PDF?") is the sentence's own subject: the rest of that clause is an ask of its own. A whole
# sentence leans on text the user gave beside it when it points there ("why nothing gets printed here") or
# names nothing but the work asked before its back-reference ("What does it mean?" under a pasted error, "What
# should we change before it ships?" or "... before we publish it?" under a pasted file). "both" and "each"
# stand for what the user gave when nothing follows them ("review both and give me a corrected version of each");
# "each one" for the things the sentence before named ("should I use StreamingResponse or FileResponse? What does
# each one give me in terms of headers ...?": judged alone, it was named as a part no document covers). "that" ending
# its clause is a pronoun too ("How do we avoid that?"), never the conjunction: named alone, "No excerpt answers: How
# do we avoid that?" left the condensed context without a line beside 29 kept chunks.
_BACK_REFERENCE = re.compile(
    r"\b(?:it|its|they|them|their|this|these|those|(?:which|that|either|neither|each|every|the other)\s+one"
    r"|(?:both|each|that)(?=\s*(?:[.,;:?!)]|$|\s(?:and|or)\b)))\b",
    re.IGNORECASE,
)
# The word right before a back-reference acts on what it stands for ("before we publish it", "How do I stop
# this"): the work asked, not a topic of the ask's own.
_GOVERNING = re.compile(r"\w+\W*$")
_DEICTIC = re.compile(r"\b(?:here|above|below)\b", re.IGNORECASE)
_SUBJECT = re.compile(r"^\W*(\w+)\s+(?:it|they)\b", re.IGNORECASE)
# A yes/no question about "that" ("Our site redirects visitors by their Accept-Language header. Is that considered
# good practice?") asks about what the user said, as one about "this" does (`_BACK_REFERENCE`; "that" is there only
# as "that one", since it is mostly a conjunction): judged alone, it was named as a part no document covers while
# the excerpts on that header answered it.
_THAT_SUBJECT = re.compile(r"^\W*(\w+)\s+that\b", re.IGNORECASE)


ANTECEDENT_SENTENCES = 2


def with_antecedent(clause: str, task: str, openers: Sequence[str]) -> str:
    """A clause that leans on what the user said before it ("How do I stop this using standard HTTP headers?"
    after "... whoever saves last silently wipes out the other person's changes."), read with the sentences before
    its own (at most `ANTECEDENT_SENTENCES`, back to the ask before it): judged alone, its evidence went to any
    chunk naming "standard HTTP headers" (CORS), none to the one on lost updates. The clause alone when nothing
    stands before it."""
    sentences = split(task, TYPED)
    at = next((i for i, sentence in enumerate(sentences) if clause in sentence), None)
    if not at:
        return clause
    before: list[str] = []
    for sentence in reversed(sentences[max(at - ANTECEDENT_SENTENCES, 0) : at]):
        if ask_of(sentence, openers) is not None:
            break
        before.insert(0, sentence)
    return " ".join([*before, clause]) if before else clause


def asked_items(sp: SuperPrompt, settings: Settings) -> list[str]:
    """The items the task enumerates that name two content terms (`enumerated_items`): retrieval searches for
    each too, since the ask's other words drown them in one query."""
    return enumerated_items(_enumerations(sp, settings))


def _enumerations(sp: SuperPrompt, settings: Settings) -> list[Enumeration]:
    """The task's enumerations that ask, each item naming two content terms."""
    task = sp.body.task or normalized_ask(sp)
    schema = load_prompt_schema(settings.prompt_schema_path)
    return asked_enumerations(task, schema, lambda item: len(stemmed_terms(item, settings.gate)) >= 2)


def asking_parts(sp: SuperPrompt, settings: Settings, standalone: bool = False) -> list[str]:
    """The asks of the task, one per clause (canonicalize.clauses): "How are X found, and how are Y ranked?"
    is two asks, so a chunk answering either is evidence and an unanswered one can be named; a clause that
    compares ("the difference between X and Y") is followed by each side, a topic of its own, and each item the
    task enumerates ("We care about three things: a, b, and c") is an ask of its own too. A clause
    must name at least two content terms of its own; with `standalone`, two that name a topic (`topic_terms`)
    and no word that leans on the rest of its sentence, and no sentence may lean on text the user gave beside
    it or name no topic at all (the parts judged for coverage, named in Open issues: "What does it mean?"
    under a pasted error, or "Please review both", is no topic the documents could lack); without it, a clause
    that leans on what the user said before it is read with those sentences (`with_antecedent`). The task when
    none asks."""
    task = sp.body.task or normalized_ask(sp)
    schema = load_prompt_schema(settings.prompt_schema_path)

    def substantive(clause: str) -> bool:
        """Whether a clause may be cut from its sentence: one naming two topics and leaning on nothing, or (for
        the standalone parts) one that leans on the user's text, so "What would you change before we ship it,
        and how does the Condenser pick lines?" names its second clause alone."""
        if standalone:
            return (len(topic_terms(clause, settings.gate)) >= 2 and not leans(clause)) or points_outside(clause)
        return len(stemmed_terms(clause, settings.gate)) >= 2

    def own(clause: str) -> str:
        """The clause without the subject of its yes/no question."""
        subject = _SUBJECT.match(clause)
        return clause[subject.end() :] if subject and subject.group(1).lower() in schema.question_openers else clause

    def leans(clause: str) -> bool:
        return _BACK_REFERENCE.search(own(clause)) is not None

    def points_outside(clause: str) -> bool:
        rest = own(clause)
        back = _BACK_REFERENCE.search(rest)
        subject = _THAT_SUBJECT.match(clause)
        if subject and subject.group(1).lower() in schema.question_openers:
            return True
        return bool(_DEICTIC.search(rest)) or (
            back is not None and not topic_terms(_GOVERNING.sub("", rest[: back.start()]), settings.gate)
        )

    found = clauses(task, schema.ask_openers, substantive, schema.question_openers, schema.deliverable_verbs) or [
        " ".join(task.split())
    ]
    listed = _enumerations(sp, settings)
    found = with_items(task, [_BULLET.sub("", clause) for clause in found], listed, substantive)
    found = [
        ask
        for clause in found
        for ask in [clause, *(side for side in compared_sides(clause) if stemmed_terms(side, settings.gate))]
    ]
    found = list(dict.fromkeys(found))
    if not standalone:
        return list(
            dict.fromkeys(
                with_antecedent(clause, task, schema.ask_openers) if leans(clause) else clause for clause in found
            )
        )
    # An asking sentence whose enumeration says what it is about is answered by the items': the items are named.
    umbrellas = [e.asked for e in listed if e.asked]
    return [
        clause
        for clause in found
        if topic_terms(clause, settings.gate)
        and not points_outside(clause)
        and not any(clause in asked for asked in umbrellas)
    ]

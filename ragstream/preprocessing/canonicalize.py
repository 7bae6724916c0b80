"""Task 2: map header names to canon roles and guarantee a TASK.

The deterministic alias pass runs first. Headers it cannot place go to an optional `HeaderMapper`
(Agent 00 plugs in here) that sees header names, plus a short body snippet it may choose to use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ragstream.preprocessing.parse import ParsedPrompt, strip_span
from ragstream.preprocessing.schema import PromptSchema, normalize_header
from ragstream.state import CanonEntry, Span
from ragstream.state.parts import MappedBy, TaskRule
from ragstream.text.asking import asks

SNIPPET_CHARS = 300


@dataclass(frozen=True)
class UnmappedHeader:
    """A header the alias table did not recognise, as offered to a HeaderMapper."""

    name: str
    normalized: str
    body_snippet: str


class HeaderMapper(Protocol):
    """Suggests canon names for unmapped headers; returns normalized name -> canon (or None)."""

    def map_headers(
        self, headers: list[UnmappedHeader], schema: PromptSchema, missing_must: list[str]
    ) -> dict[str, str | None]: ...


@dataclass(frozen=True)
class Canonicalized:
    entries: list[CanonEntry]
    task_rule: TaskRule
    task_section: int | None


# A role the user wrote for the model, as the opening sentence of the ask: "You are a/an/the ...",
# "Act as a ...". Not "You are given ..." (a statement of the task), hence the article.
_USER_ROLE = re.compile(
    r"(?i)(?:you\s+are|you're|please\s+act\s+as|act\s+as|acting\s+as|play\s+the\s+role\s+of)\s+(?:an?|the|my|our)\s[^\n]*?[.!](?=\s|$)"
)


def _task_rule(entries: list[CanonEntry], texts: list[str], schema: PromptSchema) -> tuple[TaskRule, int | None]:
    """The TASK guarantee: which section is the task, and by which rule.

    TASK when present. Otherwise the first section (user prompt or unmapped) that asks for something, so a
    question under a header the alias table does not know is the task rather than whichever section came
    first; a section its header names (Constraints, Context) asks only by a question after its list
    (`_trailing_question`), never by an item of its own ("- Explain why the current version loses the value":
    the task became the constraints list, shown twice, while the story above it went under "User prompt").
    Otherwise the spec's fallbacks: USER_PROMPT, then the first CONTENT section, then the first unmapped section
    with text. META never becomes the task.
    """
    for e in entries:
        if e.canon == "TASK":
            return "TASK_PRESENT", e.section_index
    dropped = [e for e in entries if e.mapped_by == "person" and e.role == "UNKNOWN"]
    candidates = [e for e in entries if e.role != "META" and e not in dropped and texts[e.section_index].strip()]
    for e in candidates:
        text = texts[e.section_index]
        if e.canon not in (None, "USER_PROMPT"):
            text = _trailing_question(text)[1]  # a question after its list is the user's, not an item
        if asks(text, schema.ask_openers):
            return ("FROM_USER_PROMPT" if e.canon == "USER_PROMPT" else "FROM_ASKING_SECTION"), e.section_index
    fallbacks: tuple[tuple[TaskRule, list[CanonEntry]], ...] = (
        ("FROM_USER_PROMPT", [e for e in candidates if e.canon == "USER_PROMPT"]),
        ("FROM_FIRST_CONTENT", [e for e in candidates if e.role == "CONTENT"]),
        ("FROM_FIRST_SECTION", candidates),
    )
    for rule, found in fallbacks:
        if found:
            return rule, found[0].section_index
    return "NO_CONTENT", None


KEEP, DROP = "keep", "drop"  # a person's decisions besides a canonical name (strict mode)


def decided(entry: CanonEntry, decision: str, schema: PromptSchema) -> CanonEntry:
    """`entry` as a person decided: a canonical name, kept as an additional section, or dropped."""
    if decision in schema.canon:
        return entry.model_copy(update={"canon": decision, "role": schema.role_of(decision), "mapped_by": "person"})
    return entry.model_copy(update={"role": "CONTENT" if decision == KEEP else "UNKNOWN", "mapped_by": "person"})


def canonicalize(
    prompt: str,
    parsed: ParsedPrompt,
    schema: PromptSchema,
    mapper: HeaderMapper | None = None,
    decisions: dict[str, str] | None = None,
) -> Canonicalized:
    """Aliases first, then a person's decisions (normalized header -> canon, `keep` or `drop`), then the mapper."""
    if parsed.format == "plain":
        span = strip_span(prompt, 0, len(prompt))
        entry = CanonEntry(
            section_index=0,
            original_header=None,
            normalized="",
            canon="TASK",
            role="CONTENT",
            mapped_by="plain_text",
            body_span=span,
        )
        return Canonicalized(_with_user_role(prompt, parsed, [entry], schema), "PLAIN_TEXT", 0)

    aliases = schema.alias_index
    entries: list[CanonEntry] = []
    for i, h in enumerate(parsed.headers):
        canon: str | None
        mapped_by: MappedBy
        if h.name is None:
            canon, mapped_by, normalized = schema.preamble_canon, "preamble", ""
        else:
            normalized = normalize_header(h.name)
            canon = aliases.get(normalized)
            mapped_by = "alias" if canon else "none"
        entries.append(
            CanonEntry(
                section_index=i,
                original_header=h.name,
                normalized=normalized,
                canon=canon,
                role=schema.role_of(canon),
                mapped_by=mapped_by,
                body_span=h.body_span,
            )
        )

    for idx, e in enumerate(entries):
        if e.canon is None and e.normalized in (decisions or {}):
            entries[idx] = decided(e, (decisions or {})[e.normalized], schema)
    unmapped = [e for e in entries if e.canon is None and e.mapped_by != "person"]
    if mapper is not None and unmapped:
        present = {e.canon for e in entries}
        missing = [m for m in schema.must_headers if m not in present]
        offered: dict[str, UnmappedHeader] = {}
        for e in unmapped:
            body = parsed.headers[e.section_index].body
            offered.setdefault(
                e.normalized, UnmappedHeader(e.original_header or "", e.normalized, body[:SNIPPET_CHARS])
            )
        suggestions = mapper.map_headers(list(offered.values()), schema, missing)
        for idx, e in enumerate(entries):
            suggestion = suggestions.get(e.normalized) if e.canon is None and e.mapped_by != "person" else None
            if suggestion in schema.canon:
                entries[idx] = e.model_copy(
                    update={"canon": suggestion, "role": schema.role_of(suggestion), "mapped_by": "agent00"}
                )

    texts = [h.value if h.value is not None else h.body for h in parsed.headers]
    rule, task_section = _task_rule(entries, texts, schema)
    if task_section is not None and entries[task_section].canon is None and entries[task_section].mapped_by != "person":
        # An unmapped section that asks is the task: it is mapped so, by the fallback, for all to see.
        entries[task_section] = entries[task_section].model_copy(
            update={"canon": "TASK", "role": "CONTENT", "mapped_by": "task_fallback"}
        )
    return Canonicalized(_with_user_role(prompt, parsed, entries, schema), rule, task_section)


def _with_user_role(
    prompt: str, parsed: ParsedPrompt, entries: list[CanonEntry], schema: PromptSchema
) -> list[CanonEntry]:
    """A role the user wrote as the ask's opening sentence becomes the SYSTEM section, verbatim.

    Only when no SYSTEM section was given, only in the first section with text (the ask or the
    preamble), and only when something is left after it. The role's span leaves that section, so it
    is neither part of the Task nor searched for; its entry is appended, keeping indices stable.
    """
    if any(e.canon == "SYSTEM" for e in entries):
        return entries
    first = next((i for i, e in enumerate(entries) if e.body_span.end > e.body_span.start), None)
    if first is None or entries[first].canon not in ("TASK", schema.preamble_canon):
        return entries
    entry = entries[first]
    if parsed.format != "plain" and parsed.headers[entry.section_index].value is not None:
        return entries  # a JSON value: its text is decoded, not a slice of the prompt
    text = entry.body_span.slice(prompt)
    match = _USER_ROLE.match(text)
    rest = strip_span(prompt, entry.body_span.start + match.end(), entry.body_span.end) if match else None
    if match is None or rest is None:
        return entries
    if rest.end <= rest.start:  # the whole section is the role: a preamble before the ask becomes SYSTEM
        if entry.canon != schema.preamble_canon or match.end() != len(text):
            return entries
        system = entry.model_copy(
            update={"canon": "SYSTEM", "role": schema.role_of("SYSTEM"), "mapped_by": "user_role"}
        )
        return [*entries[:first], system, *entries[first + 1 :]]
    role = CanonEntry(
        section_index=entry.section_index,
        original_header=None,
        normalized="",
        canon="SYSTEM",
        role=schema.role_of("SYSTEM"),
        mapped_by="user_role",
        body_span=Span(start=entry.body_span.start, end=entry.body_span.start + match.end()),
    )
    return [*entries[:first], entry.model_copy(update={"body_span": rest}), *entries[first + 1 :], role]


def section_text(prompt: str, parsed: ParsedPrompt, entry: CanonEntry) -> str:
    """A section's readable text: the decoded JSON string when there is one, else the exact slice."""
    header = parsed.headers[entry.section_index] if parsed.format != "plain" else None
    return header.value if header is not None and header.value is not None else entry.body_span.slice(prompt)


def body_fields(prompt: str, parsed: ParsedPrompt, canon: Canonicalized) -> dict[str, str]:
    """Canonical body fields; repeated sections of one canon are joined with a blank line. A question the user
    wrote after the list of another section (a "## Constraints" list, then "How should I ...?") is the ask, not
    an item: it joins the task (or is the task, when its section was taken for the task only because of it),
    where the stages look for what is asked and the prompt shows it; the list stays its section's."""
    fields: dict[str, list[str]] = {}
    asked: dict[int, str] = {}  # section index: the question after its list
    for e in canon.entries:
        text = section_text(prompt, parsed, e)
        if canon.task_section is not None and e.canon not in (None, "TASK", "USER_PROMPT"):
            text, question = _trailing_question(text)
            if question:
                asked[e.section_index] = question
        if e.canon is not None and text:
            fields.setdefault(e.canon.lower(), []).append(text)
    joined = {k: "\n\n".join(v) for k, v in fields.items()}
    if canon.task_section is not None and "task" not in joined:
        task_text = (
            "" if canon.task_section in asked else section_text(prompt, parsed, canon.entries[canon.task_section])
        )
        if task_text:
            joined["task"] = task_text
    if asked:
        task_canon = canon.entries[canon.task_section].canon if canon.task_section is not None else None
        same = (task_canon or "task").lower() if task_canon in (None, "TASK", "USER_PROMPT") else "task"
        for field in {"task", same}:  # the task's own section too, when the task is its text
            joined[field] = "\n\n".join([joined.get(field, ""), *asked.values()]).strip()
    return joined


_LIST_ITEM_LINE = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\S")


def _trailing_question(text: str) -> tuple[str, str]:
    """(the section's text, the question after its list): a last paragraph of questions only, after a list,
    is no item of that list but what the user asks; (text, "") when there is none."""
    head, sep, last = text.rstrip().rpartition("\n\n")
    if not sep or "\n" in last.strip():
        return text, ""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", last.strip()) if s]
    if not sentences or not all(s.endswith("?") for s in sentences):
        return text, ""
    if not _LIST_ITEM_LINE.match(head.rstrip().rsplit("\n", 1)[-1]):
        return text, ""
    return head.rstrip(), last.strip()


def source_spans(canon: Canonicalized) -> dict[str, list[Span]]:
    spans: dict[str, list[Span]] = {}
    for e in canon.entries:
        spans.setdefault(e.canon or "UNKNOWN", []).append(e.body_span)
    return spans


def unknown_headers(canon: Canonicalized) -> list[str]:
    """Headers nothing could map and no person decided on."""
    return [e.original_header or "" for e in canon.entries if e.canon is None and e.mapped_by != "person"]


def must_header_status(canon: Canonicalized, schema: PromptSchema) -> dict[str, str]:
    present = {e.canon for e in canon.entries if e.mapped_by != "task_fallback"}
    status = {m: ("present" if m in present else "missing") for m in schema.must_headers}
    if "TASK" in status and status["TASK"] == "missing" and canon.task_section is not None:
        status["TASK"] = f"set by fallback ({canon.task_rule})"
    return status

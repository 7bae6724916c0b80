"""The items an ask enumerates, each an ask of its own.

"Which theme should we pick? We care about three things: a dark mode that follows the OS setting, how many
levels the sidebar shows, and showing our logo in place of the site name." asks three things beside the
question; so does the same list under "We care about:" as bullets, or under "Explain the following:". Read as
one sentence, the question's words drowned the items': retrieval found the theme's introduction and none of
the three options, and an item no document treats could not be named. An enumeration is read as asks when
what leads into it asks ("Explain the following:", "Question:"), or follows an asking sentence and says what
matters (the prompt schema's `enumeration_cues`: "We care about:", "three things:"). A label of another section
("Constraints:", "Context:") leads into no asks, and neither does a lead-in that only shapes the answer ("Answer
as a table with three columns: ..."), and items that open with a preposition continue one phrase ("walk me
through it: from getting an account set up, through the manifest, to uploading the first version").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ragstream.preprocessing.schema import PromptSchema, normalize_header
from ragstream.text.asking import ask_of
from ragstream.text.sentences import TYPED, split

_ITEM_LINE = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,2}[.)]|[a-zA-Z][.)])[ \t]+(?P<item>\S.*?)\s*$")
_CONTINUED = re.compile(r"^[ \t]{2,}\S")
_LEAD_COLON = re.compile(r":\s+(?=\S)")
_INLINE_JOIN = re.compile(r"\s*;\s*(?:(?:and|or)\s+)?|,\s+(?:(?:and|or)\s+)?|\s+(?:and|or)\s+(?=\S+$)")


@dataclass(frozen=True)
class Enumeration:
    """The items of one enumeration that asks, and the asking sentence they say what it is about ("Which theme
    should we pick?" before "We care about: ..."; empty under a label such as "Question:")."""

    asked: str
    items: tuple[str, ...]


def enumerations(text: str, schema: PromptSchema) -> list[Enumeration]:
    """Each enumeration in `text` that asks, in order: a list under a lead-in line ending in ":", or the items
    after a sentence's ":" (split at commas and semicolons, the last "and"/"or" after a comma)."""
    found: list[tuple[int, Enumeration]] = []
    lines = text.split("\n")
    listed: set[int] = set()
    for i, line in enumerate(lines):
        if not line.rstrip().endswith(":") or _ITEM_LINE.match(line):
            continue
        block, taken = _list_after(lines, i + 1)
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")  # sentences end at lines
        asked = _asked(split(f"{before}\n{line}", TYPED), schema)
        if len(block) >= 2 and not _continues(block, schema) and asked is not None:
            found.append((text.find(line), Enumeration(asked, tuple(block))))
            listed |= taken
    sentences = split("\n".join(line for i, line in enumerate(lines) if i not in listed), TYPED)
    for k, sentence in enumerate(sentences):
        colon = next(reversed(list(_LEAD_COLON.finditer(sentence))), None)  # "Question: which is faster: a, b"
        if colon is None or sentence.rstrip().endswith(":"):
            continue
        items = [p for p in (p.strip(" .!?") for p in _INLINE_JOIN.split(sentence[colon.end() :].strip())) if p]
        asked = _asked([*sentences[max(k - 1, 0) : k], sentence[: colon.start() + 1]], schema)
        if len(items) >= 2 and not _continues(items, schema) and asked is not None:
            found.append((text.find(sentence), Enumeration(asked, tuple(items))))
    return [enumeration for _, enumeration in sorted(found, key=lambda f: f[0])]


def asked_enumerations(text: str, schema: PromptSchema, enough: Callable[[str], bool]) -> list[Enumeration]:
    """The enumerations in `text` that ask whose every item names `enough` to be an ask of its own: "Redis,
    Memcached, or an in-process cache" are names the sentence asks between, and it stays one ask."""
    return [e for e in enumerations(text, schema) if all(enough(item) for item in e.items)]


def enumerated_items(listed: list[Enumeration]) -> list[str]:
    """The items of `listed`, in order, each once."""
    return list(dict.fromkeys(item for found in listed for item in found.items))


def _list_after(lines: list[str], start: int) -> tuple[list[str], set[int]]:
    """The items of the list that starts at `start` (after one blank line at most), and the lines it takes."""
    i = start + 1 if start < len(lines) and not lines[start].strip() else start
    items: list[str] = []
    taken: set[int] = set()
    while i < len(lines):
        found = _ITEM_LINE.match(lines[i])
        if found:
            items.append(found.group("item"))
        elif items and _CONTINUED.match(lines[i]):
            items[-1] = f"{items[-1]} {lines[i].strip()}"
        else:
            break
        taken.add(i)
        i += 1
    return items, taken


def _continues(items: list[str], schema: PromptSchema) -> bool:
    """Whether the items are one phrase's parts, not things asked: an item opens with a preposition ("walk me
    through it: from getting an account set up, through what has to be in my manifest, to uploading it")."""
    return any(item.split(maxsplit=1)[0].lower() in schema.item_prepositions for item in items)


def _asked(sentences: list[str], schema: PromptSchema) -> str | None:
    """What an enumeration whose lead-in ends `sentences` is about: the lead-in when it asks ("Explain the
    following:"), the asking sentence before it when the lead-in says what matters ("We care about:"), "" under
    a label of the task ("Question:"); None when the items ask nothing (another section's label, a statement)."""
    if not sentences:
        return None
    lead = sentences[-1].rstrip(" :")
    label = schema.alias_index.get(normalize_header(lead))
    if label is not None:
        return "" if label == "TASK" else None
    openers = schema.ask_openers
    if ask_of(lead, openers) is not None:
        return lead
    if schema.enumeration_cue.search(lead) and len(sentences) > 1 and ask_of(sentences[-2], openers) is not None:
        return sentences[-2]
    return None


def with_items(task: str, found: list[str], listed: list[Enumeration], substantive: Callable[[str], bool]) -> list[str]:
    """The clauses with the items of `listed` among them, in the task's order: an item is a part when it is
    `substantive`, and a clause that holds items or leads into them only when it is ("Tell me:" is none)."""
    items = enumerated_items(listed)
    if not items:
        return found
    leads = {e.asked for e in listed}
    parts = []
    for clause in found:
        inside = [item for item in items if item in clause]
        lead = clause[: clause.find(inside[0])].rstrip(" :") if inside else clause
        if lead and (not (inside or lead.rstrip(" :") in leads) or substantive(lead)):
            parts.append(lead)
    parts += [item for item in items if item not in parts and substantive(item)]
    where: dict[str, int] = {}
    cursor = 0
    for item in items:  # each found after the one before: "sidebar mirror" also stands inside "logo sidebar mirror"
        at = task.find(item, cursor)
        where[item], cursor = at, (at + len(item) if at >= 0 else cursor)
    where = {part: where.get(part, task.find(part)) for part in parts}
    return sorted(dict.fromkeys(parts), key=lambda part: where[part] if where[part] >= 0 else len(task))

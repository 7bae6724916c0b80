"""The offline keyword rules: how a response schema's `x-cues` decide a field on the user's own words.

Where a judgment must rest on what the user wrote (A2's labels, A5's format kind, the session
summary's notes), the agent's config declares the phrases instead of leaving it to similarity:
an enum field with `x-cues` ({value: [phrases]}) takes the first value whose phrase occurs in the
input (as whole words), then the first value one of whose `x-weak-cues` occurs (a word that names a value only
when no other value's phrase does: "Markdown" names the Markdown kind, but a "Markdown checklist" is a list), else
`x-fallback`; one with `x-states` ({value: [patterns]}) the first value one of
whose regular expressions matches the input, lower-cased: a pattern frames the words that *state* a
wish about the answer ("explain it to new developers", "in a formal tone"), so a topic word (a question
about developers) states nothing; an array of strings with `x-cues` ([phrases]) takes only the
sentences containing one, each sentence going to the first such field (one kind per note); an object
with `x-explains` reports, per field, the phrase each cue-based choice rested on.
"""

from __future__ import annotations

import re
from typing import Any

from ragstream.llm.providers.payload import LIST_ITEMS, flatten, sentences
from ragstream.text.phrases import phrase


def cued_choice(prop: dict[str, Any], payload: dict[str, Any]) -> tuple[Any, str]:
    """The first enum value one of whose cue phrases (or stating patterns) occurs in the input, with where;
    else the fallback."""
    fields = {key: flatten(value).lower() for key, value in payload.items()}
    if "x-states" in prop:
        return stated_choice(prop, fields)
    for cues in (prop["x-cues"], prop.get("x-weak-cues", {})):
        for value in prop["enum"]:
            for cue in cues.get(value, []):
                for key, text in fields.items():
                    if phrase(cue).search(text):
                        return value, f"'{cue}' in {key}"
    return prop.get("x-fallback", prop["enum"][-1]), "no keyword rule applies"


def naming_cues(prop: dict[str, Any]) -> dict[str, list[str]]:
    """Every phrase that names each value, strong or weak: what it takes for the input to name the value."""
    found: dict[str, list[str]] = {}
    for cues in (prop.get("x-cues", {}), prop.get("x-weak-cues", {})):
        for value, phrases in cues.items():
            found.setdefault(value, []).extend(phrases)
    return found


def stated_choice(prop: dict[str, Any], fields: dict[str, str]) -> tuple[Any, str]:
    """The first enum value one of whose `x-states` patterns matches a lower-cased input field, with the
    words that matched and where; else the fallback."""
    for value in prop["enum"]:
        for pattern in prop["x-states"].get(value, []):
            for key, text in fields.items():
                found = re.search(pattern, text)
                if found:
                    return value, f"'{' '.join(found.group(0).split())}' in {key}"
    return prop.get("x-fallback", prop["enum"][-1]), "no words of the prompt state it"


def cued_sentences(prop: dict[str, Any], payload: dict[str, Any], taken: set[str]) -> list[str]:
    """Input sentences containing one of the cue phrases, each used by one field only, in order."""
    source = payload.get(prop["x-source"], "") if "x-source" in prop else payload
    found = []
    for sentence in sentences(flatten(source)):
        if sentence not in taken and any(phrase(cue).search(sentence.lower()) for cue in prop["x-cues"]):
            taken.add(sentence)
            found.append(sentence)
    return found[: prop.get("maxItems", LIST_ITEMS)]


def explained(prop: dict[str, Any], evidence: dict[str, str]) -> dict[str, str]:
    """An `x-explains` object: per field, the phrase its cue-based choice rested on."""
    return {field: evidence.get(field, "no keyword rule applies") for field in prop.get("properties", {})}

"""The prompt schema (`config/prompt_schema.json`): canon names, aliases, META/CONTENT sets."""

from __future__ import annotations

import re
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ragstream.settings import config_error_from, read_json_file

if TYPE_CHECKING:
    from ragstream.state import Role

_NON_LETTER = re.compile(r"[^\w]|[\d_]")


def normalize_header(name: str) -> str:
    """Uppercase, every non-letter to a space, spaces collapsed (Task 2's deterministic pass)."""
    return " ".join(_NON_LETTER.sub(" ", name.upper()).split())


class PromptSchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    canon: tuple[str, ...]
    must_headers: tuple[str, ...]
    meta: frozenset[str]
    content: tuple[str, ...]
    preamble_canon: str
    aliases: dict[str, tuple[str, ...]]
    ask_openers: tuple[str, ...] = ()  # sentence openings that make a section a request (TASK fallback)
    # Openings of a yes/no question ("can it ...", "does the ..."): after a join inside a question they start
    # a second ask ("How are chunks chosen, and can it export to PDF?"), though they ask nothing alone.
    question_openers: tuple[str, ...] = ()
    # Words of a lead-in that say the enumeration after it is what the ask is about ("We care about:", "three
    # things:"), after an asking sentence (preprocessing/enumerations.py).
    enumeration_cues: tuple[str, ...] = ()
    item_prepositions: tuple[str, ...] = ()  # an enumerated item opening with one continues a phrase, it asks nothing
    # Verbs that ask for a piece of writing ("Write a one-paragraph summary for the new hire of which database we
    # use"): what the writing is about, from the question word on, is what the documents must answer.
    deliverable_verbs: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> PromptSchema:
        canon = set(self.canon)
        for group_name, group in (
            ("must_headers", self.must_headers),
            ("meta", self.meta),
            ("content", self.content),
            ("aliases", self.aliases),
        ):
            unknown = set(group) - canon
            if unknown:
                raise ValueError(f"{group_name} names non-canon headers: {sorted(unknown)}")
        if self.meta & set(self.content):
            raise ValueError("a header cannot be both META and CONTENT")
        if self.preamble_canon not in self.content:
            raise ValueError("preamble_canon must be a CONTENT header")
        seen: dict[str, str] = {}
        for target, names in self.aliases.items():
            for alias in names:
                key = normalize_header(alias)
                if key in seen and seen[key] != target:
                    raise ValueError(f"alias '{alias}' maps to both {seen[key]} and {target}")
                seen[key] = target
        return self

    @cached_property
    def alias_index(self) -> dict[str, str]:
        """normalized alias -> canon name."""
        return {normalize_header(a): target for target, names in self.aliases.items() for a in names}

    @cached_property
    def enumeration_cue(self) -> re.Pattern[str]:
        """Any of `enumeration_cues` as a word (a pattern that matches nothing when there are none)."""
        cues = "|".join(re.escape(cue) for cue in self.enumeration_cues) or r"(?!)"
        return re.compile(rf"\b(?:{cues})\b", re.IGNORECASE)

    def role_of(self, canon: str | None) -> Role:
        if canon in self.meta:
            return "META"
        if canon in self.content:
            return "CONTENT"
        return "UNKNOWN"


@lru_cache(maxsize=8)
def load_prompt_schema(path: Path) -> PromptSchema:
    data = read_json_file(path)
    try:
        return PromptSchema.model_validate(data)
    except ValidationError as exc:
        raise config_error_from(path, exc) from None

"""The asks of the task, one per clause: what a chunk may answer, and what may be named as uncovered."""

from __future__ import annotations

import re

from ragstream.gate.evidence import stemmed_terms
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.rendering.ask import normalized_ask
from ragstream.settings import Settings
from ragstream.state import SuperPrompt
from ragstream.text.asking import clauses

# A word that leans on the rest of its sentence ("... and what can change before it is sent"): such a
# clause is not named on its own as uncovered.
_BACK_REFERENCE = re.compile(r"\b(?:it|its|they|them|their|this|these|those)\b", re.IGNORECASE)


def asking_parts(sp: SuperPrompt, settings: Settings, standalone: bool = False) -> list[str]:
    """The asks of the task, one per clause (canonicalize.clauses): "How are X found, and how are Y ranked?"
    is two asks, so a chunk answering either is evidence and an unanswered one can be named. A clause
    must name at least two content terms of its own; with `standalone`, also no word that leans on the
    rest of its sentence (the parts judged for coverage, named in Open issues). The task when none asks."""
    task = sp.body.task or normalized_ask(sp)
    openers = load_prompt_schema(settings.prompt_schema_path).ask_openers

    def substantive(clause: str) -> bool:
        return len(stemmed_terms(clause, settings.gate)) >= 2 and not (standalone and _BACK_REFERENCE.search(clause))

    return clauses(task, openers, substantive) or [" ".join(task.split())]

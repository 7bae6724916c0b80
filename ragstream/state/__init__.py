"""The typed SuperPrompt state: its stage order, its parts, the reports each stage records, the state itself.

Everything is importable from here (`from ragstream.state import SuperPrompt`), and checkpoints written by
earlier versions, which name these classes as `ragstream.state.<Class>`, read through this package.
Each name loads its module on first use: the `Stage` order alone (all `ragstream --help` needs) costs no
pydantic model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragstream.state.extras import Extras
    from ragstream.state.parts import (
        CanonEntry,
        Chunk,
        ConversationTurn,
        Header,
        Preprocessing,
        PromptBody,
        PromptFormat,
        QueryPiece,
        Role,
        Segment,
        SegmentNote,
        Span,
    )
    from ragstream.state.reports import (
        A2Report,
        A3Report,
        A4Report,
        A5Report,
        Answer,
        AnswerAttempt,
        BudgetReport,
        BuildReport,
        ChunkDecision,
        CriticRetrieval,
        CriticSummary,
        EditRecord,
        ExcerptRecord,
        LineEvidence,
        LLMOutcomes,
        Plan,
        PreprocessReport,
        Report,
        RerankReport,
        RetrievalAttempt,
        RetrievalMode,
        RetrievalReport,
        RunMetadata,
        SectionBudget,
        StageUsage,
        SummarySelection,
        Usage,
    )
    from ragstream.state.stage import Stage
    from ragstream.state.superprompt import SuperPrompt

__all__ = [
    "A2Report",
    "A3Report",
    "A4Report",
    "A5Report",
    "Answer",
    "AnswerAttempt",
    "BudgetReport",
    "BuildReport",
    "CanonEntry",
    "Chunk",
    "ChunkDecision",
    "ConversationTurn",
    "CriticRetrieval",
    "CriticSummary",
    "EditRecord",
    "ExcerptRecord",
    "Extras",
    "Header",
    "LLMOutcomes",
    "LineEvidence",
    "Plan",
    "PreprocessReport",
    "Preprocessing",
    "PromptBody",
    "PromptFormat",
    "QueryPiece",
    "Report",
    "RerankReport",
    "RetrievalAttempt",
    "RetrievalMode",
    "RetrievalReport",
    "Role",
    "RunMetadata",
    "Segment",
    "SegmentNote",
    "SectionBudget",
    "Span",
    "Stage",
    "StageUsage",
    "SummarySelection",
    "SuperPrompt",
    "Usage",
]
_HOMES = {  # where each name of __all__ is defined
    "A2Report": "ragstream.state.reports",
    "A3Report": "ragstream.state.reports",
    "A4Report": "ragstream.state.reports",
    "A5Report": "ragstream.state.reports",
    "Answer": "ragstream.state.reports",
    "AnswerAttempt": "ragstream.state.reports",
    "BudgetReport": "ragstream.state.reports",
    "BuildReport": "ragstream.state.reports",
    "CanonEntry": "ragstream.state.parts",
    "Chunk": "ragstream.state.parts",
    "ChunkDecision": "ragstream.state.reports",
    "ConversationTurn": "ragstream.state.parts",
    "CriticRetrieval": "ragstream.state.reports",
    "CriticSummary": "ragstream.state.reports",
    "EditRecord": "ragstream.state.reports",
    "ExcerptRecord": "ragstream.state.reports",
    "Extras": "ragstream.state.extras",
    "Header": "ragstream.state.parts",
    "LineEvidence": "ragstream.state.reports",
    "LLMOutcomes": "ragstream.state.reports",
    "Plan": "ragstream.state.reports",
    "Preprocessing": "ragstream.state.parts",
    "PreprocessReport": "ragstream.state.reports",
    "PromptBody": "ragstream.state.parts",
    "PromptFormat": "ragstream.state.parts",
    "QueryPiece": "ragstream.state.parts",
    "Report": "ragstream.state.reports",
    "RerankReport": "ragstream.state.reports",
    "RetrievalAttempt": "ragstream.state.reports",
    "RetrievalMode": "ragstream.state.reports",
    "RetrievalReport": "ragstream.state.reports",
    "Role": "ragstream.state.parts",
    "RunMetadata": "ragstream.state.reports",
    "SectionBudget": "ragstream.state.reports",
    "Segment": "ragstream.state.parts",
    "SegmentNote": "ragstream.state.parts",
    "Span": "ragstream.state.parts",
    "Stage": "ragstream.state.stage",
    "StageUsage": "ragstream.state.reports",
    "SummarySelection": "ragstream.state.reports",
    "SuperPrompt": "ragstream.state.superprompt",
    "Usage": "ragstream.state.reports",
}


def __getattr__(name: str) -> Any:
    """Import the class's module on first use and keep the name here, as an eager import would."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ragstream.state' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value

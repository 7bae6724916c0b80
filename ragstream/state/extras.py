"""What `extras` holds: each stage's report, the run's project and a person's edits (and how v0.1 said it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragstream.state.reports import (
    A2Report,
    A3Report,
    A4Report,
    A5Report,
    BuildReport,
    EditRecord,
    PreprocessReport,
    RerankReport,
    RetrievalReport,
)


class Extras(BaseModel):
    """Per-stage reports (one field per stage, written only by that stage) plus the run's project and a
    person's edits.

    Serialized under `extras` as the controller spec names it; a test checks the fields match the stages.
    """

    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    edits: list[EditRecord] = Field(default_factory=list)
    preprocess: PreprocessReport | None = None
    a2: A2Report | None = None
    retrieval: RetrievalReport | None = None
    rerank: RerankReport | None = None
    a3: A3Report | None = None
    a4: A4Report | None = None
    a5: A5Report | None = None
    build: BuildReport | None = None

    def edited_fields(self) -> set[str]:
        """Fields a person edited since the last PreProcessing."""
        return {name for record in self.edits for name in record.fields}

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """Checkpoints of version 0.1 held an untyped dict with other key names: map them."""
        if not isinstance(data, dict) or not ({"decisions", "reranker", "format_enforcer", "builder"} & set(data)):
            return data
        old = dict(data)
        decisions = old.get("decisions", {})
        new: dict[str, Any] = {"project": old.get("project"), "edits": old.get("edits", [])}
        if decisions:
            new["preprocess"] = {
                "format": decisions.get("format", "plain"),
                "format_note": decisions.get("format_note"),
                "task_rule": decisions.get("task_rule", ""),
                "must_headers": decisions.get("must_headers", {}),
                "normalized_map": old.get("normalized_map", {}),
                "unknown_attributes": old.get("unknown_headers", []),
                "source_spans": old.get("source_spans", {}),
            }
        renamed = {
            "a2": "a2",
            "retrieval": "retrieval",
            "reranker": "rerank",
            "a3": "a3",
            "a4": "a4",
            "format_enforcer": "a5",
            "builder": "build",
        }
        for key, target in renamed.items():
            if isinstance(old.get(key), dict):
                allowed = cls.model_fields[target].annotation.__args__[0].model_fields  # type: ignore[union-attr]
                new[target] = {k: v for k, v in old[key].items() if k in allowed}
        if "a2" in new:
            new["a2"].setdefault("agent", "A2/v1")
            new["a2"].setdefault("provider", "")
        if "a3" in new:
            new["a3"].setdefault("agent", "A3/v1")
        if "a4" in new:
            new["a4"].setdefault("agent", "A4/v1")
        return new

"""Tasks 1-4 in sequence: raw text to a canonical body, a segment table and query pieces."""

from __future__ import annotations

from dataclasses import dataclass

from ragstream.errors import EmptyPromptError, InputError, PromptTooLargeError
from ragstream.preprocessing.canonicalize import (
    HeaderMapper,
    body_fields,
    canonicalize,
    must_header_status,
    source_spans,
    unknown_headers,
)
from ragstream.preprocessing.parse import parse_prompt
from ragstream.preprocessing.pieces import build_pieces
from ragstream.preprocessing.schema import PromptSchema, load_prompt_schema
from ragstream.preprocessing.segments import build_segments
from ragstream.settings import Settings
from ragstream.state import Preprocessing, PreprocessReport, PromptBody
from ragstream.text.chunking import Chunker


def validate_prompt(user_text: object, settings: Settings, served: bool = False) -> str:
    """The checks PreProcessing applies to raw text, usable before anything is written. A served run
    (the shared LangGraph server) has the server's lower limit."""
    if not isinstance(user_text, str):
        raise InputError(f"the prompt must be text (a JSON string), not {type(user_text).__name__}")
    if not user_text.strip():
        raise EmptyPromptError("the prompt is empty: type what you want the LLM to do")
    limit, name = (
        (settings.server.max_prompt_chars, "server.max_prompt_chars")
        if served
        else (settings.max_prompt_chars, "max_prompt_chars")
    )
    if len(user_text) > limit:
        raise PromptTooLargeError(f"the prompt has {len(user_text):,} characters; the limit is {limit:,} ({name})")
    return user_text


@dataclass(frozen=True)
class Preprocessed:
    """Tasks 1-4's result: the canonical body, the typed PreProcessing record and its report."""

    raw_prompt: str
    body: PromptBody
    preprocessing: Preprocessing
    report: PreprocessReport


def preprocess(
    user_text: str,
    settings: Settings,
    *,
    mapper: HeaderMapper | None = None,
    include_undecided: bool | None = None,
    schema: PromptSchema | None = None,
    chunker: Chunker | None = None,
    decisions: dict[str, str] | None = None,
) -> Preprocessed:
    """Turn raw text into the canonical body, the segment table and the query pieces.

    `decisions` (normalized header -> canon, `keep` or `drop`) are a person's answers for headers
    nothing else could map (strict mode); they apply before Agent 00 is asked. The text is one `validate_prompt`
    passed (the graph's preflight, or `run_alone`): it is not checked again here."""
    schema = schema or load_prompt_schema(settings.prompt_schema_path)
    chunker = chunker or Chunker.from_settings(settings)
    undecided = settings.preprocessing.include_undecided if include_undecided is None else include_undecided

    parsed = parse_prompt(user_text)
    canon = canonicalize(user_text, parsed, schema, mapper, decisions)
    segments = build_segments(user_text, canon, undecided)
    pieces = build_pieces(segments, chunker, settings.preprocessing.max_query_pieces, schema.deliverable_verbs)
    result = Preprocessing(
        format=parsed.format,
        format_note=parsed.note,
        headers=parsed.headers,
        canon_entries=canon.entries,
        task_rule=canon.task_rule,
        segments=segments,
        pieces=pieces,
        include_undecided=undecided,
    )
    report = PreprocessReport(
        format=parsed.format,
        format_note=parsed.note,
        task_rule=canon.task_rule,
        must_headers=must_header_status(canon, schema),
        normalized_map=result.canon_map,
        unknown_attributes=unknown_headers(canon),
        decisions={
            e.original_header or "": (decisions or {})[e.normalized] for e in canon.entries if e.mapped_by == "person"
        },
        source_spans={k: [(s.start, s.end) for s in v] for k, v in source_spans(canon).items()},
    )
    return Preprocessed(user_text, PromptBody(**body_fields(user_text, parsed, canon)), result, report)

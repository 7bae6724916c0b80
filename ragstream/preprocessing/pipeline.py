"""Tasks 1-4 in sequence, producing the SuperPrompt at stage `preprocessed`."""

from __future__ import annotations

from ragstream.chunking import Chunker
from ragstream.errors import EmptyPromptError, PromptTooLargeError
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
from ragstream.prompt_view import render_prompt
from ragstream.settings import Settings
from ragstream.state import Preprocessing, PromptBody, Stage, SuperPrompt


def validate_prompt(user_text: object, settings: Settings) -> str:
    """The checks PreProcessing applies to raw text, usable before anything is written."""
    if not isinstance(user_text, str) or not user_text.strip():
        raise EmptyPromptError("the prompt is empty: type what you want the LLM to do")
    if len(user_text) > settings.max_prompt_chars:
        raise PromptTooLargeError(
            f"the prompt has {len(user_text):,} characters; the limit is {settings.max_prompt_chars:,} (max_prompt_chars)"
        )
    return user_text


def preprocess(
    user_text: str,
    settings: Settings,
    *,
    previous: SuperPrompt | None = None,
    mapper: HeaderMapper | None = None,
    include_undecided: bool | None = None,
    schema: PromptSchema | None = None,
    chunker: Chunker | None = None,
) -> SuperPrompt:
    """Turn raw text into a fresh SuperPrompt at stage `preprocessed`.

    Only the conversation carried by `previous` survives: a new prompt starts a new run.
    """
    validate_prompt(user_text, settings)
    schema = schema or load_prompt_schema(settings.prompt_schema_path)
    chunker = chunker or Chunker.from_settings(settings)
    undecided = settings.preprocessing.include_undecided if include_undecided is None else include_undecided

    parsed = parse_prompt(user_text)
    canon = canonicalize(user_text, parsed, schema, mapper)
    segments = build_segments(user_text, canon, undecided)
    pieces = build_pieces(segments, chunker)
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
    decisions = {
        "format": parsed.format,
        "task_rule": canon.task_rule,
        "must_headers": must_header_status(canon, schema),
    }
    if parsed.note:
        decisions["format_note"] = parsed.note
    sp = SuperPrompt(
        stage=Stage.PREPROCESSED,
        history_of_stages=[Stage.PREPROCESSED],
        raw_prompt=user_text,
        body=PromptBody(**body_fields(user_text, parsed, canon)),
        extras={
            "normalized_map": result.canon_map,
            "unknown_headers": unknown_headers(canon),
            "decisions": decisions,
            "source_spans": {
                k: [[s.start, s.end] for s in v] for k, v in source_spans(canon).items()
            },
        },
        preprocessing=result,
        recentConversation=list(previous.recentConversation) if previous else [],
    )
    return sp.model_copy(update={"prompt_ready": render_prompt(sp)})

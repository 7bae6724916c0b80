"""Tasks 2-4 through the public `preprocess` entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragstream.errors import ConfigError, EmptyPromptError, PromptTooLargeError, RagstreamError
from ragstream.preprocessing import UnmappedHeader, preprocess, validate_prompt
from ragstream.preprocessing.schema import PromptSchema, load_prompt_schema, normalize_header
from ragstream.settings import Settings
from ragstream.state import Stage
from ragstream.text.chunking import Chunker
from tests.helpers import preprocessed

# The alias table exactly as the PreProcessing spec lists it.
SPEC_ALIASES = {
    "SYSTEM": ["SYSTEM", "SYSTEM ROLE", "MODEL ROLE", "ROLE"],
    "TASK": ["TASK", "QUESTION", "INSTRUCTION"],
    "CONTEXT": ["CONTEXT", "BACKGROUND"],
    "PURPOSE": ["PURPOSE", "GOAL"],
    "USER_PROMPT": ["USER PROMPT", "PROMPT"],
    "AUDIENCE": ["AUDIENCE"],
    "FORMAT": ["FORMAT", "OUTPUT FORMAT"],
    "DEPTH": ["DEPTH", "DETAIL LEVEL"],
}
META = {"SYSTEM", "AUDIENCE", "FORMAT", "DEPTH"}


def _run(prompt: str, settings: Settings, chunker: Chunker, **kw: object):
    return preprocess(prompt, settings, chunker=chunker, **kw)


@pytest.mark.parametrize(("alias", "canon"), [(a, c) for c, names in SPEC_ALIASES.items() for a in names])
def test_every_spec_alias_maps_to_its_canon(alias: str, canon: str, settings: Settings, chunker: Chunker) -> None:
    # Written in a messy way: lower case, underscores/punctuation for spaces.
    header = alias.lower().replace(" ", "_") + ":"
    sp = _run(f"# {header}\nsome body text\n# Task\nthe ask", settings, chunker)
    entry = sp.preprocessing.canon_entries[0]
    assert entry.canon == canon
    assert entry.mapped_by == "alias"
    assert entry.role == ("META" if canon in META else "CONTENT")
    assert sp.report.normalized_map[header] == canon


def test_normalization_rule() -> None:
    assert normalize_header("  output_format:: v2 ") == "OUTPUT FORMAT V"
    assert normalize_header("Détail-level") == "DÉTAIL LEVEL"


def test_task_present_rule(settings: Settings, chunker: Chunker) -> None:
    sp = _run("# Prompt\nP\n# Task\nT", settings, chunker)
    assert sp.preprocessing.task_rule == "TASK_PRESENT"
    assert sp.body.task == "T"
    assert sp.body.user_prompt == "P"


def test_a_question_after_another_sections_list_is_the_ask(settings: Settings, chunker: Chunker) -> None:
    """A "## Constraints" list, then a blank line and the user's question: Markdown keeps the question under the
    header, but it is no constraint: it joins the task (or is the task, when nothing else asks), where the stages
    look for the ask and the prompt shows it. A question inside a section's prose stays where it is."""
    prompt = (
        "I'm writing a log scanner in Rust.\n\n## Constraints\n- Standard library only.\n- Exit non-zero on errors."
        "\n\nHow should I read the environment variable, and how should I print errors?"
    )
    sp = _run(prompt, settings, chunker)
    question = "How should I read the environment variable, and how should I print errors?"
    assert sp.body.task == question and sp.body.user_prompt == "I'm writing a log scanner in Rust."
    assert sp.body.constraints == "- Standard library only.\n- Exit non-zero on errors."
    asking = _run(
        f"I need two things I cannot do yet.\n\n## Constraints\n- Standard library only.\n\n{question}",
        settings,
        chunker,
    )
    assert asking.body.task == asking.body.user_prompt == f"I need two things I cannot do yet.\n\n{question}"
    kept = _run("# Task\nExplain RRF.\n\n# Context\nWe fuse two lists. Why fuse at all?", settings, chunker)
    assert kept.body.context == "We fuse two lists. Why fuse at all?" and kept.body.task == "Explain RRF."


def test_an_item_of_a_named_section_that_asks_leaves_the_story_above_as_the_task(
    settings: Settings, chunker: Chunker
) -> None:
    """A story with no question in it, then "## Constraints" whose last item asks ("- Explain why ..."): the
    constraints stay constraints and the story is the task. The list was taken for the task and shown twice, under
    Task and Constraints, with the story under "User prompt"."""
    story = "Our middleware sets a request ID, but the access log always shows the original one."
    rules = "- Keep it a middleware.\n- Explain why the current version loses the value before the fix."
    sp = _run(f"{story}\n\n## Constraints\n{rules}", settings, chunker)
    assert sp.body.task == story and sp.body.constraints == rules


def test_task_from_user_prompt(settings: Settings, chunker: Chunker) -> None:
    sp = _run("# Context\nC\n# User prompt\nwhat is RRF?", settings, chunker)
    assert sp.preprocessing.task_rule == "FROM_USER_PROMPT"
    assert sp.body.task == "what is RRF?"
    assert sp.report.must_headers["TASK"].startswith("set by fallback")


def test_task_from_first_content_section(settings: Settings, chunker: Chunker) -> None:
    sp = _run("# System\nbe terse\n# Background\nB1\n# Goal\nG", settings, chunker)
    assert sp.preprocessing.task_rule == "FROM_FIRST_CONTENT"
    assert sp.body.task == "B1"
    assert sp.body.context == "B1"
    assert sp.body.purpose == "G"


def test_meta_only_prompt_has_no_retrieval_pieces(settings: Settings, chunker: Chunker) -> None:
    sp = _run("# System\nbe terse\n# Audience\nmanagers\n# Format\ntable", settings, chunker)
    assert sp.preprocessing.task_rule == "NO_CONTENT"
    assert sp.body.task is None
    assert sp.preprocessing.pieces == []
    assert sp.report.must_headers["TASK"] == "missing"


def test_plain_text_becomes_one_task_section(settings: Settings, chunker: Chunker) -> None:
    prompt = "  How does the reranker work?\n"
    sp = _run(prompt, settings, chunker)
    seg = sp.preprocessing.segments[0]
    assert (seg.canon_type, seg.kept_for_retrieval, seg.source_note) == ("TASK", True, "KEPT_CONTENT")
    assert seg.span.slice(prompt) == "How does the reranker work?"
    assert sp.preprocessing.task_rule == "PLAIN_TEXT"


def test_meta_sections_are_dropped_from_retrieval(settings: Settings, chunker: Chunker) -> None:
    sp = _run("# Task\nT\n# System\nS\n# Depth\nshort\n# Output format\nmd", settings, chunker)
    rows = {s.original_header: s for s in sp.preprocessing.segments}
    for name in ("System", "Depth", "Output format"):
        assert rows[name].kept_for_retrieval is False
        assert rows[name].source_note == "DROPPED_META"
    assert {p.parent_text_id for p in sp.preprocessing.pieces} == {rows["Task"].id}
    assert sp.body.system == "S" and sp.body.depth == "short" and sp.body.format == "md"


def test_undecided_excluded_by_default_and_included_with_switch(settings: Settings, chunker: Chunker) -> None:
    prompt = "# Task\nT\n# Lunch plans\nmust run offline"
    default = _run(prompt, settings, chunker)
    row = default.preprocessing.segments[1]
    assert (row.canon_type, row.kept_for_retrieval, row.source_note) == ("UNDECIDED", False, "UNDECIDED")
    assert default.report.unknown_attributes == ["Lunch plans"]
    assert all(p.parent_text_id != row.id for p in default.preprocessing.pieces)

    included = _run(prompt, settings, chunker, include_undecided=True)
    row = included.preprocessing.segments[1]
    assert (row.kept_for_retrieval, row.source_note, row.weight) == (True, "KEPT_UNDECIDED", 1.0)
    assert any(p.parent_text_id == row.id and p.canon_type == "UNDECIDED" for p in included.preprocessing.pieces)


def test_empty_content_section_is_not_a_retrieval_candidate(settings: Settings, chunker: Chunker) -> None:
    sp = _run("# Task\n\n# Context\nC", settings, chunker)
    assert sp.preprocessing.segments[0].source_note == "DROPPED_EMPTY"


class _RecordingMapper:
    """A real HeaderMapper implementation that maps by a fixed table and records what it saw."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table
        self.seen: list[list[UnmappedHeader]] = []

    def map_headers(
        self, headers: list[UnmappedHeader], schema: PromptSchema, missing_must: list[str]
    ) -> dict[str, str | None]:
        self.seen.append(headers)
        return {h.normalized: self.table.get(h.normalized) for h in headers}


def test_header_mapper_seam_maps_only_unmapped_headers(settings: Settings, chunker: Chunker) -> None:
    mapper = _RecordingMapper({"WHAT I NEED": "TASK", "JUNK": "NOT_A_CANON"})
    sp = _run("# Context\nC\n# What I need\nthe ask\n# Junk\nj", settings, chunker, mapper=mapper)
    assert [h.normalized for h in mapper.seen[0]] == ["WHAT I NEED", "JUNK"]
    entries = sp.preprocessing.canon_entries
    assert (entries[1].canon, entries[1].mapped_by) == ("TASK", "agent00")
    assert entries[2].canon is None  # an invalid suggestion is ignored
    assert sp.body.task == "the ask"


def test_mapper_not_called_when_everything_maps(settings: Settings, chunker: Chunker) -> None:
    mapper = _RecordingMapper({})
    _run("# Task\nT\n# Context\nC", settings, chunker, mapper=mapper)
    assert mapper.seen == []


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t\r\n"])
def test_empty_prompt_is_a_typed_error(prompt: str, settings: Settings) -> None:
    with pytest.raises(EmptyPromptError):
        validate_prompt(prompt, settings)


def test_oversized_prompt_is_a_typed_error(settings: Settings) -> None:
    small = settings.model_copy(update={"max_prompt_chars": 10})
    with pytest.raises(PromptTooLargeError) as info:
        validate_prompt("x" * 11, small)
    assert isinstance(info.value, RagstreamError)


def test_output_fields_and_prompt_ready(settings: Settings) -> None:
    sp = preprocessed('{"TASK": "Explain fusion", "CONTEXT": "Chroma + BM25", "FORMAT": "bullets"}', settings)
    assert sp.stage is Stage.PREPROCESS
    assert sp.history_of_stages == [Stage.PREPROCESS]
    assert sp.extras.preprocess.format == "json"
    assert sp.extras.preprocess.source_spans["TASK"] == [(10, 24)]
    assert "## Task\nExplain fusion" in sp.prompt_ready
    assert "## Context\nChroma + BM25" in sp.prompt_ready
    assert "- Format: bullets" in sp.prompt_ready


def test_pieces_use_ingestion_chunking_and_model_ceiling(settings: Settings, chunker: Chunker) -> None:
    long_text = " ".join(f"sentence{i} about retrieval fusion." for i in range(400))
    sp = _run(f"# Task\n{long_text}", settings, chunker)
    pieces = sp.preprocessing.pieces
    assert len(pieces) > 1
    size = settings.chunking.chunk_size
    for prev, piece in zip(pieces, pieces[1:], strict=False):
        assert piece.piece_span.start < prev.piece_span.end  # overlapping
    for p in pieces:
        assert len(p.text_piece) <= size
        assert chunker.counter.count(p.text_piece) <= chunker.max_tokens
        assert p.prompt_span.slice(sp.raw_prompt) == p.text_piece
        assert p.piece_id.startswith(p.parent_text_id + "_p")


def test_token_ceiling_subsplits_dense_text(settings: Settings, chunker: Chunker) -> None:
    # Digits tokenise to many pieces per character: 1000 chars would exceed 256 tokens.
    dense = " ".join("7x9q3z" for _ in range(300))
    sp = _run(dense, settings, chunker)
    for p in sp.preprocessing.pieces:
        assert chunker.counter.count(p.text_piece) <= chunker.max_tokens
    assert max(len(p.text_piece) for p in sp.preprocessing.pieces) < settings.chunking.chunk_size


def test_schema_rejects_alias_pointing_at_non_canon(settings: Settings, tmp_path: Path) -> None:
    data = json.loads(settings.prompt_schema_path.read_text())
    data["aliases"]["NOPE"] = ["X"]
    path = tmp_path / "prompt_schema.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"prompt_schema\.json.*aliases"):
        load_prompt_schema(path)


# Headers people write in real prompts (prompt templates and guides): each lands in a canonical section.
COMMON_HEADERS = {
    "Constraints": "CONSTRAINTS",
    "Requirements": "CONSTRAINTS",
    "Rules": "CONSTRAINTS",
    "Acceptance criteria": "CONSTRAINTS",
    "Deliverable": "FORMAT",
    "Expected output": "FORMAT",
    "Background": "CONTEXT",
    "Examples": "CONTEXT",
    "Notes": "CONTEXT",
    "Input": "CONTEXT",
    "Goal": "PURPOSE",
    "Objectives": "PURPOSE",
    "Your task": "TASK",
}


@pytest.mark.parametrize(("header", "canon"), COMMON_HEADERS.items())
def test_common_user_headers_map_to_a_canon(header: str, canon: str, settings: Settings, chunker: Chunker) -> None:
    out = _run(f"# Question\nHow are chunks found?\n# {header}\nsome words", settings, chunker)
    assert out.preprocessing.canon_map[header] == canon and header not in out.report.unknown_attributes


@pytest.mark.parametrize(
    ("prompt", "system", "task"),
    [
        (
            "You are a senior backend engineer.\nWhere are tokens checked?",
            "You are a senior backend engineer.",
            "Where are tokens checked?",
        ),
        ("Act as a strict reviewer. Is this safe?", "Act as a strict reviewer.", "Is this safe?"),
        ("# Task\nYou are an SRE. List the alerts.", "You are an SRE.", "List the alerts."),
        ("You are the release manager.\n# Task\nDraft the notes.", "You are the release manager.", "Draft the notes."),
        ("You are given a list of files. Sort them.", None, "You are given a list of files. Sort them."),
        ("You are a helpful assistant.", None, "You are a helpful assistant."),
        ("# Role\nYou are a tester.\n# Task\nYou are a pilot. Fly.", "You are a tester.", "You are a pilot. Fly."),
    ],
)
def test_a_role_the_user_wrote_becomes_the_system_role(
    prompt: str, system: str | None, task: str, settings: Settings, chunker: Chunker
) -> None:
    out = _run(prompt, settings, chunker)
    assert (out.body.system, out.body.task) == (system, task)
    searched = " ".join(p.text_piece for p in out.preprocessing.pieces)
    assert system is None or system not in searched  # the role is not searched for in the documents


def test_a_long_prompt_searches_with_at_most_max_query_pieces_and_keeps_the_rest_recorded() -> None:
    from ragstream.preprocessing.pipeline import preprocess
    from ragstream.settings import load_settings

    settings = load_settings(overrides={"llm.provider": "local", "preprocessing.max_query_pieces": 5})
    text = (
        "# Task\n"
        + "Explain how checkpoints are written and restored after a crash. " * 300
        + "\n# Context\nWe run SQLite."
    )
    pieces = preprocess(text, settings).preprocessing.pieces
    kept = [p for p in pieces if p.kept_for_retrieval]
    assert len(pieces) > 5 and len(kept) == 5  # the others stay in the state, marked as not searched


def test_a_request_for_a_piece_of_writing_is_searched_by_its_topic(settings: Settings, chunker: Chunker) -> None:
    """ "Write a one-paragraph summary for the new hire of which database we use and what alternatives we rejected."
    searched whole: MiniLM put it at 0.29 from the decision record that answers it (its topic alone: 0.53), and the
    gate kept nothing. The search starts at the topic; the task keeps every word the user wrote."""
    task = "Write a one-paragraph summary for the new hire of which database we use and what alternatives we rejected."
    sp = preprocess(f"# Task\n{task}", settings, chunker=chunker)
    assert sp.body.task == task
    [piece] = [p for p in sp.preprocessing.pieces if p.kept_for_retrieval]
    assert piece.text_piece == "which database we use and what alternatives we rejected."
    plain = preprocess("# Task\nWrite a pytest test for fetch_rates() with a fixed wait.", settings, chunker=chunker)
    assert [p.text_piece for p in plain.preprocessing.pieces] == [
        "Write a pytest test for fetch_rates() with a fixed wait."
    ]

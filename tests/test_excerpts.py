"""Whole excerpts in the final prompt, on real documents: streamlit's shipped Markdown references and
httpx's source. Checked against the documents themselves, with checks independent of the builder's
own boundary rules: every excerpt is the document's text at its span, its lines are the span's lines,
prose starts and ends where a sentence does, code starts and ends where a statement does (Python's
ast), and no line of a file is shown twice."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import httpx
import pytest
import streamlit

from ragstream.app.controller import AppController
from ragstream.code.languages import load_languages
from ragstream.ingestion.loader import load_document
from ragstream.ingestion.manager import IngestionManager
from ragstream.rendering.excerpts import Document, Excerpt, Sources, merged, whole_excerpts
from ragstream.rendering.styles import fence
from ragstream.settings import ExcerptSettings, Settings, load_settings
from ragstream.state import Chunk, Span, SuperPrompt
from ragstream.tokens.budget import ContextBudget
from tests.helpers import as_in_file

DOCS = Path(streamlit.__file__).parent / ".agents" / "skills" / "developing-with-streamlit" / "references"
DOC_FILES = (
    "authentication.md",
    "chat-ui.md",
    "cli.md",
    "performance.md",
    "session-state.md",
    "theme.md",
    "layouts.md",
)
CODE = Path(httpx.__file__).parent
CODE_FILES = ("_client.py", "_models.py", "_urls.py", "_config.py")

DOC_PROMPTS = (
    "How can I stream an LLM reply token by token in a chat interface?",
    "How do I avoid reloading a large dataset on every rerun, and how can part of the page refresh on its own?",
    "Which wins when the same option is set in config.toml, an environment variable and a command line flag?",
    "How do I keep a widget's value in the URL so a link can be shared, and what do callbacks do?",
    "How do I change the primary color and the font of the app, and how many columns should a row have?",
)
CODE_PROMPTS = (
    "How does the client build the request it sends after a redirect response?",
    "How are the timeout settings of a request represented and validated?",
    "How is the query string of a URL merged with extra params?",
    "How does a response decode its body text and guess the encoding?",
)


def _project(root: Path, name: str, source: Path, files: tuple[str, ...]) -> Settings:
    data = root / name / "data"
    settings = load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})
    raw = data / "doc_raw" / name
    raw.mkdir(parents=True)
    for file in files:
        shutil.copy(source / file, raw / file)
    IngestionManager(settings).ingest(name)
    return settings


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Settings]:
    root = tmp_path_factory.mktemp("excerpts")
    return {"docs": _project(root, "docs", DOCS, DOC_FILES), "code": _project(root, "code", CODE, CODE_FILES)}


def _built(settings: Settings, project: str, prompt: str) -> SuperPrompt:
    ctl = AppController(settings)
    ctl.select_project(project)
    return ctl.run_full_pipeline(prompt, pause_after="none")


def _file_text(settings: Settings, project: str, rel: str) -> str:
    """The document as the user's file holds it (spans point there; the excerpts show its secrets redacted)."""
    return load_document(settings.data_dir / "doc_raw" / project / rel, settings.ingestion.max_file_bytes).text


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


_BLOCK = re.compile(r"(?:[-*+] |\d+[.)] |#|\||>|```|~~~)")


def _starts_a_sentence(text: str, start: int) -> bool:
    """What lies before `start`: nothing, a sentence end, a blank line, or a line break before a
    Markdown block (list item, heading, table row, quote, fence); or `start` is a line start inside a
    fenced code block, or after a heading, a table row or a fence line."""
    before = text[:start]
    if not before.strip() or re.search(r"[.!?][\"')\]*_`]*\s+$", before) or re.search(r"\n[ \t]*\n\s*$", before):
        return True
    if not before.rstrip(" \t").endswith("\n"):
        return False
    if _BLOCK.match(text[start:]):
        return True
    previous = before.rstrip(" \t")[:-1].rsplit("\n", 1)[-1].strip()
    in_fence = sum(1 for line in before.splitlines() if line.lstrip().startswith(("```", "~~~"))) % 2 == 1
    return in_fence or previous.startswith(("#", "|", "```", "~~~"))


def _ends_a_sentence(text: str, end: int) -> bool:
    after = text[end:]
    if not after.strip():
        return True
    if re.match(r"\s+", after) is None:
        return False
    return _starts_a_sentence(text, end + len(after) - len(after.lstrip()))


def _statement_lines(source: str) -> tuple[set[int], set[int]]:
    """Lines where a statement (or a decorator) starts, and lines where one ends; comments and blank
    lines count as both (nothing is cut there)."""
    starts, ends = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt):
            starts.add(min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]))
            ends.add(node.end_lineno)
    for number, line in enumerate(source.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            starts.add(number)
            ends.add(number)
    return starts, ends


def _check(sp: SuperPrompt, settings: Settings, project: str, code: bool) -> int:
    records = sp.extras.build.excerpts
    assert records, "the prompt shows excerpts"
    shown: dict[str, set[int]] = {}
    for record in records:
        text = _file_text(settings, project, record.source)
        assert as_in_file(record.text, text[record.start : record.end]), "the span is exact"
        assert record.text in sp.prompt_ready, "the prompt shows the excerpt"
        assert record.lines == [_line(text, record.start), _line(text, record.end - 1)], "the lines are the span's"
        lines = set(range(record.lines[0], record.lines[1] + 1))
        assert not lines & shown.get(record.source, set()), (
            f"{record.source} repeats lines {sorted(lines & shown[record.source])}"
        )
        shown.setdefault(record.source, set()).update(lines)
        assert record.text == record.text.rstrip() and record.text.strip(), "no blank end"
        assert record.text == record.text.lstrip() or text[record.start - 1] == "\n", (
            "leading blanks only as a line's indent"
        )
        if code:
            starts, ends = _statement_lines(text)
            assert record.lines[0] in starts, (
                f"{record.source}:{record.lines[0]} starts mid-statement ({record.hydrated})"
            )
            assert record.lines[1] in ends, f"{record.source}:{record.lines[1]} ends mid-statement ({record.hydrated})"
        else:
            assert _starts_a_sentence(text, record.start), (
                f"starts mid-sentence: {record.text[:80]!r} ({record.hydrated})"
            )
            assert _ends_a_sentence(text, record.end), f"ends mid-sentence: {record.text[-80:]!r} ({record.hydrated})"
        for cid in record.chunks:
            chunk = sp.chunk_by_id()[cid]
            lead, trail = len(chunk.text) - len(chunk.text.lstrip()), len(chunk.text) - len(chunk.text.rstrip())
            assert record.start <= chunk.span.start + lead and chunk.span.end - trail <= record.end, (
                "an excerpt holds its chunks"
            )
    return len(records)


@pytest.mark.parametrize("prompt", DOC_PROMPTS)
def test_docs_excerpts_are_whole_sentences_exact_and_never_repeat_a_line(
    projects: dict[str, Settings], prompt: str
) -> None:
    settings = projects["docs"]
    _check(_built(settings, "docs", prompt), settings, "docs", code=False)


@pytest.mark.parametrize("prompt", CODE_PROMPTS)
def test_code_excerpts_are_whole_statements_exact_and_never_repeat_a_line(
    projects: dict[str, Settings], prompt: str
) -> None:
    settings = projects["code"]
    _check(_built(settings, "code", prompt), settings, "code", code=True)


def test_a_small_budget_still_shows_whole_excerpts_and_a_large_one_shows_parents(projects: dict[str, Settings]) -> None:
    base = projects["docs"]
    prompt = DOC_PROMPTS[3]  # one whose gated selection (A3, absolute evidence) overflows the small budget
    tight = base.model_copy(
        update={"budget": base.budget.model_copy(update={"ceilings": {**base.budget.ceilings, "prompt": 1500}})}
    )
    roomy = base.model_copy(
        update={"budget": base.budget.model_copy(update={"ceilings": {**base.budget.ceilings, "prompt": 20000}})}
    )
    small, large = _built(tight, "docs", prompt), _built(roomy, "docs", prompt)
    _check(small, tight, "docs", code=False)
    _check(large, roomy, "docs", code=False)
    assert sum(len(r.text) for r in large.extras.build.excerpts) > sum(len(r.text) for r in small.extras.build.excerpts)
    assert any(h in r.hydrated for r in large.extras.build.excerpts for h in ("section", "list"))


def test_overlapping_and_adjacent_excerpts_of_one_file_merge_into_one() -> None:
    text = "# Title\n\nFirst sentence here. Second one follows.\n\nA new paragraph starts. It ends here.\n"
    doc = Document(text, code=False)

    def excerpt(start: int, end: int, index: int) -> Excerpt:
        chunk = Chunk(
            id=f"a.md@x#{index}",
            source_path="a.md",
            sha256="x",
            chunk_index=index,
            text=text[start:end],
            span=Span(start=start, end=end),
            metadata={"kind": "text"},
        )
        s, e, _ = doc.whole(start, end, 1000)
        return Excerpt([chunk], s, e, "whole sentences", doc)

    first, second, third = excerpt(12, 25, 0), excerpt(20, 40, 1), excerpt(55, 70, 2)
    together = merged([third, first, second])
    assert len(together) == 1, "overlapping (first, second) and adjacent (a blank line between) excerpts merge"
    assert (
        together[0].doc.text[together[0].start : together[0].end]
        == "First sentence here. Second one follows.\n\nA new paragraph starts."
    )
    assert [m.id for m in together[0].members] == ["a.md@x#2", "a.md@x#0", "a.md@x#1"], "best first"
    assert together[0].as_chunk().id == "a.md@x#0 a.md@x#1 a.md@x#2", "the fence names them in file order"


_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S")


def _list_lead_in(lines: list[str], item: int) -> int | None:
    """0-based line introducing the list that holds line `item`: the first non-blank line above the list that
    is neither an item nor an item's indented continuation (None: the list opens the document)."""
    i = item
    while i > 0 and (_ITEM.match(lines[i - 1]) or lines[i - 1][:1] in (" ", "\t") or not lines[i - 1].strip()):
        i -= 1
    return i - 1 if i > 0 else None


def test_closing_over_lead_ins_and_lists() -> None:
    text = (
        "# Naming files\n\nGood names help everyone. File names should be:\n1. Machine readable\n2. Human readable\n"
        "3. Sortable\n\n## Presenting\n\nTips for a talk follow.\n\n* Keep slides short\n* Minimise jargon\n"
        "* Practise twice\n\nRun this:\n\n```bash\nmake talk\n```\n\nPlan the room well.\n\nBefore the event:\n"
        "- Book a projector\n- Test the sound\n\nThe end.\n"
    )
    doc = Document(text, code=False)

    def closed(probe: str) -> str:
        start = text.index(probe)
        a, b = doc.closed(start, start + len(probe))
        return text[a:b]

    assert closed("File names should be:\n1. Machine readable") == (
        "File names should be:\n1. Machine readable\n2. Human readable\n3. Sortable"
    ), "a list's lead-in comes with its items, and the items with their lead-in"
    assert (
        closed("* Minimise jargon")
        == "Tips for a talk follow.\n\n* Keep slides short\n* Minimise jargon\n* Practise twice"
    )
    assert closed("Run this:") == "Run this:\n\n```bash\nmake talk\n```", "a lead-in brings the block it introduces"
    assert closed("Plan the room well.") == (
        "Plan the room well.\n\nBefore the event:\n- Book a projector\n- Test the sound"
    ), "an excerpt that stops right before a lead-in takes the lead-in and its list"
    assert closed("The end.") == "The end.", "plain prose is left as it is"


@pytest.mark.parametrize("prompt", DOC_PROMPTS)
def test_an_excerpt_never_ends_on_a_lead_in_and_lists_keep_their_lead_in(
    projects: dict[str, Settings], prompt: str
) -> None:
    settings = projects["docs"]
    sp = _built(settings, "docs", prompt)
    for record in sp.extras.build.excerpts:
        text = _file_text(settings, "docs", record.source)
        assert not record.text.rstrip().splitlines()[-1].rstrip().endswith(":"), (
            f"{record.source} ends on a lead-in: {record.text[-80:]!r} ({record.hydrated})"
        )
        lines = text.split("\n")
        first, last = record.lines[0] - 1, record.lines[1] - 1
        for n in range(first, last + 1):
            if _ITEM.match(lines[n]):
                lead = _list_lead_in(lines, n)
                assert lead is None or lead >= first, (
                    f"{record.source}:{n + 1} is a list item shown without its lead-in at line {(lead or 0) + 1} "
                    f"({record.hydrated})"
                )


RETRY_AFTER = """# Retry-After

## Overview

The Retry-After response header tells the client how long to wait before it makes a follow-up request.

## Directives

- `<delay-seconds>`: A non-negative decimal integer indicating the seconds to delay after the response is received.
"""


def _file_chunk(root: Path, name: str, text: str, first: str, after: str, metadata: dict[str, str | int]) -> Chunk:
    """`text` written to `root/name`, and the chunk of it from `first` up to `after`, as ingestion records one."""
    (root / name).write_text(text, encoding="utf-8")
    start = text.index(first)
    end = text.index(after, start)
    return Chunk(
        id=f"{name}@x#1",
        source_path=name,
        sha256=load_document(root / name, 1_000_000).sha256,
        chunk_index=1,
        text=text[start:end],
        span=Span(start=start, end=end),
        metadata={"kind": "text", **metadata},
    )


def test_while_the_budget_allows_an_excerpt_shows_the_text_around_it_across_a_heading(tmp_path: Path) -> None:
    """The chunk that matched says what the header does; the value it takes is in the next section, which the
    section widening stops before. The text around an excerpt is shown while the budget allows, never past it."""
    chunk = _file_chunk(tmp_path, "retry-after.md", RETRY_AFTER, "The Retry-After response", "\n\n## Directives", {})
    settings = load_settings(overrides={"llm.provider": "local"})
    budget = ContextBudget(settings)

    def shown(cfg: ExcerptSettings, ceiling: int) -> str:
        kept, _, records = whole_excerpts([chunk], Sources(tmp_path, settings), budget, fence, 0, cfg, ceiling)
        return kept[0].text if kept else ""

    assert "A non-negative decimal integer" in shown(settings.excerpts, 6000)
    assert "A non-negative decimal integer" not in shown(
        settings.excerpts.model_copy(update={"neighbour_chars": 0}), 6000
    )
    tight = budget.count(fence(chunk)) + 5
    small = shown(settings.excerpts, tight)  # no room for the text around it
    assert chunk.text in small and "A non-negative decimal integer" not in small


def test_the_text_around_an_excerpt_never_cuts_a_code_block_or_ends_on_its_lead_in() -> None:
    """Growing by characters may stop inside a code block: the growth stops before the block, and a lead-in it
    then ends on brings the block it introduces (never "... by running `cargo test add`:" and nothing)."""
    text = (
        "# Running tests\n\nYou can run one test by naming it.\n\nA name filters the tests that run.\n\n"
        "For example, run those two by running `cargo test add`:\n\n```console\n$ cargo test add\n"
        + "running 2 tests\n" * 40
        + "```\n\nThe module of a test is part of its name.\n"
    )
    doc = Document(text, code=False)
    start = text.index("A name filters")
    end = start + len("A name filters the tests that run.")
    a, b = doc.around(start, end, 120)
    shown = text[a:b]
    assert "You can run one test by naming it." in shown
    assert not shown.rstrip().endswith(":") and shown.count("```") % 2 == 0, shown


STRATEGIES = '''# Copyright 2016 The Authors
#
# Licensed under the Apache License, Version 2.0.
"""Stop strategies."""
import abc


class stop_base(abc.ABC):
    """Abstract base class for stop strategies."""

    def __or__(self, other: "stop_base") -> "stop_any":
        return stop_any(self, other)


class stop_any(stop_base):
    """Stop if any of the stop conditions is valid."""

    def __init__(self, *stops: stop_base) -> None:
        self.stops = stops

    def __call__(self, state: object) -> bool:
        return any(x(state) for x in self.stops)


class stop_after_attempt(stop_base):
    """Stop when the previous attempt >= max_attempt."""

    def __init__(self, max_attempt_number: int) -> None:
        self.max_attempt_number = max_attempt_number

    def __call__(self, state: object) -> bool:
        return getattr(state, "attempt_number", 0) >= self.max_attempt_number


class stop_after_delay(stop_base):
    """Stop when the time from the first attempt >= limit."""

    def __init__(self, max_delay: float) -> None:
        self.max_delay = max_delay

    def __call__(self, state: object) -> bool:
        return getattr(state, "seconds_since_start", 0.0) >= self.max_delay
'''


def test_while_the_budget_allows_a_code_excerpt_shows_the_definitions_beside_it_whole(tmp_path: Path) -> None:
    """The question "stop after 5 attempts or 30 seconds, whichever comes first" matches the two strategies;
    what combines them (`|`, `stop_any`) is the class above them, which no word of the question names. The
    definitions around a code excerpt are shown while the budget allows: whole, never from inside a body, never
    past the budget."""
    first = STRATEGIES[: STRATEGIES.index("class stop_after_attempt")].count("\n") + 1
    lines = {"language": "python", "line_start": first, "line_end": first + 7}
    chunk = _file_chunk(tmp_path, "stop.py", STRATEGIES, "class stop_after_attempt", "\n\n\nclass stop_", lines)
    start, end = chunk.span.start, chunk.span.end
    settings = load_settings(overrides={"llm.provider": "local"})
    budget = ContextBudget(settings)

    def shown(cfg: ExcerptSettings, ceiling: int) -> tuple[str, str]:
        kept, _, records = whole_excerpts([chunk], Sources(tmp_path, settings), budget, fence, 0, cfg, ceiling)
        return (kept[0].text, records[0].hydrated) if kept else ("", "")

    wide, how = shown(settings.excerpts, 6000)
    assert "Stop if any of the stop conditions is valid." in wide and "class stop_after_delay" in wide, wide
    assert how.endswith("neighbouring definitions")
    starts, ends = _statement_lines(STRATEGIES)
    first_line = STRATEGIES[: STRATEGIES.index(wide)].count("\n") + 1
    assert first_line in starts and first_line + wide.count("\n") in ends
    narrow, _ = shown(settings.excerpts.model_copy(update={"neighbour_chars": 0}), 6000)
    assert narrow == chunk.text
    near, _ = shown(settings.excerpts.model_copy(update={"neighbour_chars": 150}), 6000)
    assert near == chunk.text, "stop_any's last method is within reach, but not without its class"
    tight, _ = shown(settings.excerpts, budget.count(fence(chunk)) + 5)  # no room for what is around it
    assert tight == chunk.text
    doc = Document(STRATEGIES, code=True, language=load_languages(settings.config_dir).of("stop.py"))
    for reach in range(0, len(STRATEGIES), 15):  # whatever the reach, the growth starts where code does
        first_shown = STRATEGIES[doc.around(start, end, reach)[0] :].split("\n", 1)[0]
        assert first_shown.strip() and not first_shown.lstrip().startswith("#"), (reach, first_shown)


def test_a_span_holding_a_list_then_prose_is_closed_over_the_list_not_to_its_last_lines_end() -> None:
    """The list a span holds ends where its items end: read to the end of the span's last line instead, the excerpt
    of a chunk holding a list and then a paragraph was cut mid-sentence (Streamlit's layouts page: "... wide. Pass
    `wrap=False` to keep columns in one row: they shrink to a usable")."""
    text = (
        "**What stays out:**\n\n- Main content, charts, tables, results\n\n## Columns\n\n"
        "Columns stack vertically when the viewport is narrow. By default\nthey wrap. Pass `wrap=False` to keep"
        " them in one row: they shrink to a usable\nminimum width, then scroll.\n"
    )
    doc = Document(text, code=False)
    end = text.index("they wrap.") + len("they wrap.")
    start, closed_end = doc.closed(0, end)
    assert (start, closed_end) == (0, end)
    assert doc.list_block(0, end) == (text.index("- Main"), text.index("results") + len("results"))

"""Task 1: format detection and header extraction with exact spans."""

from __future__ import annotations

from ragstream.preprocessing.parse import parse_prompt


def _check_spans(prompt: str) -> None:
    for h in parse_prompt(prompt).headers:
        assert h.body_span.slice(prompt) == h.body


def test_plain_text_has_no_headers() -> None:
    parsed = parse_prompt("Just explain BM25 to me.\nThanks")
    assert parsed.format == "plain"
    assert parsed.headers == []


def test_markdown_top_level_headers_keep_nested_ones_in_the_body() -> None:
    prompt = "# Task\nExplain fusion.\n## Detail\nwith RRF\n# Context\nWe use Chroma.\n"
    parsed = parse_prompt(prompt)
    assert parsed.format == "markdown"
    assert [h.name for h in parsed.headers] == ["Task", "Context"]
    assert parsed.headers[0].body == "Explain fusion.\n## Detail\nwith RRF"
    assert parsed.headers[1].body == "We use Chroma."
    _check_spans(prompt)


def test_top_level_is_the_shallowest_header_present() -> None:
    parsed = parse_prompt("## Task\nA\n### Sub\nB\n## Context\nC")
    assert [h.name for h in parsed.headers] == ["Task", "Context"]


def test_headers_inside_code_fences_are_not_headers() -> None:
    prompt = "# Task\nFix this:\n```python\n# not a header\nx = 1\n```\n# Context\nrepo"
    parsed = parse_prompt(prompt)
    assert [h.name for h in parsed.headers] == ["Task", "Context"]
    assert "# not a header" in parsed.headers[0].body


def test_hashtag_without_space_is_not_a_header() -> None:
    assert parse_prompt("#hashtag text\nmore").format == "plain"


def test_preamble_before_first_header_becomes_an_unlabelled_section() -> None:
    prompt = "Please help.\n\n# Context\nStuff"
    parsed = parse_prompt(prompt)
    assert parsed.headers[0].name is None
    assert parsed.headers[0].body == "Please help."
    _check_spans(prompt)


def test_crlf_prompt_spans_are_exact() -> None:
    prompt = "# Task\r\nDo it\r\n\r\n# Format\r\nJSON\r\n"
    parsed = parse_prompt(prompt)
    assert [h.name for h in parsed.headers] == ["Task", "Format"]
    assert parsed.headers[0].body == "Do it"
    _check_spans(prompt)


def test_closing_hashes_and_duplicates_and_empty_bodies() -> None:
    prompt = "# Task ##\n# Context\nA\n# Context\nB"
    parsed = parse_prompt(prompt)
    assert [(h.name, h.body) for h in parsed.headers] == [("Task", ""), ("Context", "A"), ("Context", "B")]
    _check_spans(prompt)


def test_json_like_keys_are_headers_with_exact_value_spans() -> None:
    prompt = '{\n  "TASK": "Explain\\nfusion",\n  "CONTEXT": {"db": "chroma"},\n  "TASK": "again"\n}'
    parsed = parse_prompt(prompt)
    assert parsed.format == "json"
    assert [h.name for h in parsed.headers] == ["TASK", "CONTEXT", "TASK"]
    assert parsed.headers[0].body == "Explain\\nfusion"
    assert parsed.headers[0].value == "Explain\nfusion"
    assert parsed.headers[1].body == '{"db": "chroma"}'
    _check_spans(prompt)


def test_malformed_json_falls_back_to_plain_text_with_a_note() -> None:
    parsed = parse_prompt('{"TASK": "unterminated, "CONTEXT": 1')
    assert parsed.format == "plain"
    assert parsed.headers == []
    assert parsed.note and "treated as plain text" in parsed.note


def test_json_array_is_plain_text() -> None:
    assert parse_prompt('["TASK", "x"]').format == "plain"

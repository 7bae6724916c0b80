"""Property tests over arbitrary prompts: typed errors only, exact spans, full coverage, determinism."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.errors import RagstreamError
from ragstream.preprocessing import preprocess
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.settings import Settings
from ragstream.text.asking import topic_start
from ragstream.text.chunking import Chunker

HEADER_NAMES = ["Task", "task", "Context", "SYSTEM", "Output format", "goal", "", "Ünïcode 名前", "USER_PROMPT", "x"]
words = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=0, max_size=80
)
newline = st.sampled_from(["\n", "\r\n"])


@st.composite
def markdown_prompts(draw: st.DrawFn) -> str:
    nl = draw(newline)
    parts = [draw(words)] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 6))):
        level = draw(st.integers(1, 4))
        name = draw(
            st.one_of(st.sampled_from(HEADER_NAMES), words.map(lambda w: w.replace("\n", " ").replace("\r", " ")))
        )
        parts.append("#" * level + " " + name)
        parts.append(draw(words))
        if draw(st.booleans()):
            parts.append("```" + nl + "# inside fence" + nl + "```")
    return nl.join(parts)


@st.composite
def json_prompts(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.one_of(st.sampled_from(HEADER_NAMES), words), max_size=5))
    values = st.one_of(words, st.integers(), st.lists(words, max_size=3), st.dictionaries(words, words, max_size=2))
    pairs = [f"{json.dumps(k)}: {json.dumps(draw(values), ensure_ascii=draw(st.booleans()))}" for k in keys]
    text = "{" + ", ".join(pairs) + "}"
    if draw(st.booleans()):  # damage it
        cut = draw(st.integers(0, max(len(text) - 1, 0)))
        text = text[:cut]
    return text


long_text = st.lists(
    st.sampled_from(["alpha ", "beta\n", "7x9q ", "\r\n", "名前", "  ", "# Task\n", "## Sub\n"]),
    min_size=200,
    max_size=1200,
).map("".join)
# A request for a piece of writing, whose search starts at its topic ("Write a note for the team on how ...").
framed = st.builds(
    lambda verb, thing, topic, rest: f"{verb} {thing} on how {topic}. {rest}",
    st.sampled_from(["Write", "Draft", "please write", "Give me"]),
    st.sampled_from(["a short note for the team", "a guideline", "a one-paragraph summary"]),
    words.map(lambda w: w.replace(".", " ")),
    words,
)
prompts = st.one_of(words, markdown_prompts(), json_prompts(), st.text(max_size=3000), long_text, framed)


def _check(sp_prompt: str, settings: Settings, chunker: Chunker) -> str | None:
    schema = load_prompt_schema(settings.prompt_schema_path)
    try:
        sp = preprocess(sp_prompt, settings, chunker=chunker)
    except RagstreamError:
        assert not sp_prompt.strip()
        return None
    pre = sp.preprocessing
    assert pre is not None
    for h in pre.headers:
        assert h.body_span.slice(sp_prompt) == h.body
    for seg in pre.segments:
        assert seg.span.slice(sp_prompt) == seg.text
    for seg in pre.segments:
        if not seg.kept_for_retrieval:
            continue
        pieces = [p for p in pre.pieces if p.parent_text_id == seg.id]
        covered = topic_start(seg.text, schema.deliverable_verbs)  # a request for a piece of writing: its topic on
        for p in pieces:
            assert p.piece_span.slice(seg.text) == p.text_piece
            assert p.prompt_span.slice(sp_prompt) == p.text_piece
            assert p.piece_span.start <= covered, "a gap between pieces"
            covered = max(covered, p.piece_span.end)
        assert covered == len(seg.text)
    return sp.preprocessing.model_dump_json() + sp.body.model_dump_json()


@hyp_settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=prompts)
def test_preprocess_properties(prompt: str, base_settings: Settings, chunker: Chunker) -> None:
    first = _check(prompt, base_settings, chunker)
    second = _check(prompt, base_settings, chunker)
    assert first == second

"""C, C++, C#, Kotlin, Ruby and PHP are cut at their definitions by their tree-sitter grammars (config/code.json)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.code.chunks import CodeSplitter
from ragstream.code.languages import load_languages
from ragstream.code.outline import outline
from ragstream.settings import Settings
from ragstream.text.chunking import Chunker

SAMPLES = Path(__file__).parent / "data" / "code"
EXPECTED = {
    "shapes.c": {"function add", "struct point"},
    "shapes.cpp": {"namespace geo", "class geo.Shape", "function geo.Shape.area", "function main"},
    "shapes.cs": {
        "namespace Geo",
        "class Geo.Shape",
        "method Geo.Shape.Area",
        "constructor Geo.Shape.Shape",
        "interface Geo.IThing",
    },
    "shapes.kt": {"class Shape", "function Shape.area", "function top"},
    "shapes.rb": {"module Geo", "class Geo.Shape", "method Geo.Shape.area", "method top"},
    "shapes.php": {"class Shape", "method Shape.area", "function top"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_language_is_read_by_its_grammar_and_cut_at_definitions(
    name: str, base_settings: Settings, chunker: Chunker
) -> None:
    language = load_languages(base_settings.config_dir).of(name)
    assert language is not None and language.grammar() is not None, f"{name}: the grammar package is installed"
    text = (SAMPLES / name).read_text(encoding="utf-8")
    definitions = outline(text, language)
    assert definitions is not None, f"{name} parses"
    found = {f"{d.kind} {d.name}" for top in definitions for d in (top, *top.descendants())}
    assert EXPECTED[name] <= found
    pieces = CodeSplitter(chunker).split(text, language)
    labels = {s.label() for p in pieces for s in p.symbols}
    assert labels, f"{name}: chunks record the definitions they hold"
    assert "".join(text[p.span.start : p.span.end] for p in pieces).split() == text.split(), "nothing is lost"

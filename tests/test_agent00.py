"""Agent 00 in PreProcessing Task 2: header names only, snippets only when still ambiguous, cached."""

from __future__ import annotations

import json

from ragstream.preprocessing import preprocess
from ragstream.services import Services
from ragstream.settings import Settings
from tests.openai_server import FakeOpenAIServer, Reply

PROMPT = "# Stuff to do\nPLEASE-SUMMARISE-THE-RETRIEVER-DESIGN in detail\n# Misc\nSECRET-BODY-TEXT about nothing\n# Context\nC"


def _canon(value: str) -> Reply:
    return Reply(content=json.dumps({"canon": value}))


def test_names_first_then_snippet_then_cache(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    # "Stuff to do" -> TASK from its name; "Misc" -> UNKNOWN by name, then FORMAT with its snippet.
    openai_server.push(_canon("TASK"), _canon("UNKNOWN"), _canon("FORMAT"))
    services = Services(openai_settings)
    sp = preprocess(PROMPT, openai_settings, mapper=services.header_mapper, chunker=services.chunker)

    first, second, third = (json.dumps(r["messages"]) for r in openai_server.requests)
    assert "Stuff to do" in first and "PLEASE-SUMMARISE" not in first and "SECRET-BODY" not in first
    assert "Misc" in second and "SECRET-BODY" not in second
    assert "SECRET-BODY-TEXT" in third and "PLEASE-SUMMARISE" not in third
    entries = sp.preprocessing.canon_entries
    assert [(e.canon, e.mapped_by) for e in entries] == [("TASK", "agent00"), ("FORMAT", "agent00"), ("CONTEXT", "alias")]
    assert sp.body.task.startswith("PLEASE-SUMMARISE")

    cache = json.loads((openai_settings.cache_dir / "agent00_header_map.json").read_text())
    assert cache["STUFF TO DO"]["canon"] == "TASK" and cache["STUFF TO DO"]["via"] == "name"
    assert cache["MISC"]["via"] == "snippet"

    # A second run, in a fresh set of services, is served from the cache: no request at all.
    again = Services(openai_settings)
    preprocess(PROMPT, openai_settings, mapper=again.header_mapper, chunker=again.chunker)
    assert len(openai_server.requests) == 3


def test_unknown_stays_undecided_and_is_not_cached(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.push(_canon("UNKNOWN"), _canon("UNKNOWN"))
    services = Services(openai_settings)
    sp = preprocess("# Task\nT\n# Misc\nm", openai_settings, mapper=services.header_mapper, chunker=services.chunker)
    assert sp.preprocessing.segments[1].source_note == "UNDECIDED"
    assert not (openai_settings.cache_dir / "agent00_header_map.json").exists()


def test_local_agent00_maps_clear_synonyms_offline(settings: Settings) -> None:
    services = Services(settings)
    sp = preprocess("# Objective\nship v1\n# Background info\nwe use Chroma\n# Banana\nyellow", settings,
                    mapper=services.header_mapper, chunker=services.chunker)
    assert [e.canon for e in sp.preprocessing.canon_entries] == ["PURPOSE", "CONTEXT", None]

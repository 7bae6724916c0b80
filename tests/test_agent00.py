"""Agent 00 in PreProcessing Task 2: header names only, snippets only when still ambiguous, cached."""

from __future__ import annotations

import json

from ragstream.preprocessing import preprocess
from ragstream.services import Services
from ragstream.settings import Settings
from tests.openai_server import FakeOpenAIServer, Reply

PROMPT = (
    "# Stuff to do\nPLEASE-SUMMARISE-THE-RETRIEVER-DESIGN in detail\n"
    "# Misc\nSECRET-BODY-TEXT about nothing\n# Context\nC"
)


def _canon(value: str) -> Reply:
    return Reply(content=json.dumps({"canon": value}))


def _by_header(request: dict) -> str:
    """'Stuff to do' is a TASK by name; 'Misc' is UNKNOWN by name and a FORMAT once its snippet is seen."""
    text = json.dumps(request["messages"])
    if "body_snippet" in text:
        return json.dumps({"canon": "FORMAT"})
    return json.dumps({"canon": "TASK" if "Stuff to do" in text else "UNKNOWN"})


def test_names_first_then_snippet_then_cache(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.responder = _by_header
    services = Services(openai_settings)
    sp = preprocess(PROMPT, openai_settings, mapper=services.header_mapper, chunker=services.chunker)

    by_name = sorted((json.dumps(r["messages"]) for r in openai_server.requests[:2]), key=lambda m: "Misc" in m)
    third = json.dumps(openai_server.requests[2]["messages"])
    assert "Stuff to do" in by_name[0] and "PLEASE-SUMMARISE" not in by_name[0] and "SECRET-BODY" not in by_name[0]
    assert "Misc" in by_name[1] and "SECRET-BODY" not in by_name[1]
    assert "SECRET-BODY-TEXT" in third and "PLEASE-SUMMARISE" not in third
    entries = sp.preprocessing.canon_entries
    assert [(e.canon, e.mapped_by) for e in entries] == [
        ("TASK", "agent00"),
        ("FORMAT", "agent00"),
        ("CONTEXT", "alias"),
    ]
    assert sp.body.task.startswith("PLEASE-SUMMARISE")

    cache = json.loads((openai_settings.cache_dir / "agent00_header_map.json").read_text())
    assert (
        cache["openai/gpt-4.1-mini|STUFF TO DO"]["canon"] == "TASK"
        and cache["openai/gpt-4.1-mini|STUFF TO DO"]["via"] == "name"
    )
    assert cache["openai/gpt-4.1-mini|MISC"]["via"] == "snippet"

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
    sp = preprocess(
        "# Objective\nship v1\n# Background info\nwe use Chroma\n# Banana\nyellow",
        settings,
        mapper=services.header_mapper,
        chunker=services.chunker,
    )
    assert [e.canon for e in sp.preprocessing.canon_entries] == ["PURPOSE", "CONTEXT", None]


def test_the_cache_is_kept_per_provider_and_model(
    settings: Settings, openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    """A mapping the offline heuristic made is never served to a run with a real model."""
    offline = settings.model_copy(update={"data_dir": openai_settings.data_dir})
    local = Services(offline)
    preprocess(
        "# Background info\nwe use Chroma\n# Task\nT", offline, mapper=local.header_mapper, chunker=local.chunker
    )
    cache = json.loads((offline.cache_dir / "agent00_header_map.json").read_text())
    assert list(cache) == ["local/gpt-4.1-mini|BACKGROUND INFO"]
    openai_server.responder = lambda request: json.dumps({"canon": "PURPOSE"})
    services = Services(openai_settings)
    sp = preprocess(
        "# Background info\nwe use Chroma\n# Task\nT",
        openai_settings,
        mapper=services.header_mapper,
        chunker=services.chunker,
    )
    assert len(openai_server.requests) == 1  # asked the model, not served from the offline entry
    assert sp.preprocessing.canon_entries[0].canon == "PURPOSE"

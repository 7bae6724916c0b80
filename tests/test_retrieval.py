"""ProjectSearcher on a real ingested project: strategies, fusion, ladder, failures, stages."""

from __future__ import annotations

import pytest

from ragstream.errors import RetrievalError
from ragstream.retrieval.factory import build_searcher
from ragstream.retrieval.search import Query
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.state import Stage
from ragstream.strategies import Strategy
from ragstream.text.chunk_ids import source_of
from tests.helpers import preprocessed, run_stage


def _files(result) -> list[str]:
    return [source_of(cid) for cid in result.ids]


def test_dense_finds_a_paraphrase_without_shared_words(indexed: Settings) -> None:
    result = build_searcher(indexed, "demo").retrieve(
        ["how are stale embeddings of deleted documents cleaned up"], Strategy.DENSE
    )
    assert _files(result)[0] == "ingestion.md"
    assert set(result.counts) == {"vector"}
    assert result.rung == "direct"


def test_keyword_bm25_finds_an_exact_rare_token(indexed: Settings) -> None:
    result = build_searcher(indexed, "demo").retrieve(["ERR_BUDGET_4711"], Strategy.KEYWORD)
    assert _files(result) == ["budget.py"]
    assert set(result.counts) == {"bm25"}


def test_hybrid_fuses_and_keeps_per_retriever_scores(indexed: Settings) -> None:
    searcher = build_searcher(indexed, "demo")
    result = searcher.retrieve(
        [Query("reciprocal rank fusion of BM25 and vectors"), Query("fallback ladder threshold")], Strategy.HYBRID
    )
    top = result.results[0]
    assert _files(result)[0] == "retrieval.md"
    assert {"vector", "bm25"} <= set(top.scores)
    assert len(result.ids) == len(set(result.ids))  # deduplicated across pieces and retrievers
    assert result.rung == "hybrid"
    assert result.timings_ms["vector"] >= 0 and result.counts["bm25"] > 0
    assert all(a.score >= b.score for a, b in zip(result.results, result.results[1:], strict=False))


def test_temporal_filters_by_named_year(indexed: Settings) -> None:
    searcher = build_searcher(indexed, "demo")
    result = searcher.retrieve(["what did we decide about checkpoints in 2021"], Strategy.TEMPORAL)
    assert _files(result)[0] == "notes/meeting-2021-06-02.md"
    assert "temporal" in result.results[0].scores
    newer = searcher.retrieve(["excerpt fencing changes since 2024"], Strategy.TEMPORAL)
    temporal_hits = [r for r in newer.results if "temporal" in r.scores]
    assert [source_of(r.chunk_id) for r in temporal_hits] == ["notes/changelog.md"]


def test_exploratory_expands_to_linked_files(indexed: Settings) -> None:
    searcher = build_searcher(indexed, "demo")
    searcher.settings = searcher.settings.model_copy(update={"expansion_seeds": 1})
    result = searcher.retrieve(["pause after the condenser for human review"], Strategy.EXPLORATORY)
    files = _files(result)
    assert files[0] == "architecture.md"
    graph = {source_of(r.chunk_id) for r in result.results if "graph" in r.scores}
    assert {"retrieval.md", "ingestion.md"} <= graph


def test_fallback_ladder_rungs(indexed: Settings) -> None:
    searcher = build_searcher(indexed, "demo")
    base = searcher.settings
    searcher.settings = base.model_copy(update={"min_score": 0.99, "fallback_min_score": 0.2, "min_results": 1})
    assert searcher.retrieve(["how does the retriever merge rankings"], Strategy.HYBRID).rung == "hybrid_lower"
    searcher.settings = base.model_copy(update={"min_score": 0.99, "fallback_min_score": 0.98, "min_results": 1})
    result = searcher.retrieve(["how does the retriever merge rankings"], Strategy.HYBRID)
    assert result.rung == "no_floor"
    assert any("vector" in r.scores for r in result.results)  # the dense hits stay, unfiltered


def test_the_floor_never_removes_a_lexical_hit(indexed: Settings) -> None:
    """A chunk only BM25 finds (its cosine under the floor) still reaches the candidates."""
    searcher = build_searcher(indexed, "demo")
    base = searcher.settings
    query = "ERR_BUDGET_4711"
    lexical = searcher.retrieve([query], Strategy.KEYWORD).ids[0]
    searcher.settings = base.model_copy(update={"min_score": 0.99, "fallback_min_score": 0.2, "min_results": 1})
    hybrid = searcher.retrieve([query], Strategy.HYBRID)
    assert lexical in hybrid.ids
    assert hybrid.results[hybrid.ids.index(lexical)].scores.get("bm25", 0) > 0


def test_one_failing_retriever_is_skipped_and_all_failing_raises(indexed: Settings, monkeypatch) -> None:
    searcher = build_searcher(indexed, "demo")

    def broken(*args, **kwargs):
        raise ConnectionError("vector store down")

    monkeypatch.setattr(type(searcher.snapshot()), "vector_search", broken)
    result = searcher.retrieve(["ERR_BUDGET_4711 token budget"], Strategy.HYBRID)
    assert "vector" in result.failures and "ConnectionError" in result.failures["vector"]
    assert _files(result)[0] == "budget.py"
    monkeypatch.setattr(type(searcher.snapshot()), "bm25_search", broken)
    with pytest.raises(RetrievalError, match="every retriever failed"):
        searcher.retrieve(["anything"], Strategy.HYBRID)


def test_unindexed_project_and_empty_query(settings: Settings) -> None:
    with pytest.raises(RetrievalError, match="no index yet"):
        build_searcher(settings, "ghost").retrieve(["x"])
    with pytest.raises(RetrievalError, match="no query text"):
        build_searcher(settings, "ghost").retrieve(["   "])


def test_retrieval_and_reranker_stages_update_the_superprompt(indexed: Settings) -> None:
    services = Services(indexed)
    sp = preprocessed("# Task\nHow are documents re-embedded when they change?\n# Purpose\nonboarding", services)
    after = run_stage(sp, "retrieval", services, project="demo")
    ids = after.views_by_stage["retrieval"]
    assert after.stage is Stage.RETRIEVAL and after.final_selection_ids == ids
    assert [c.id for c in after.base_context_chunks] == ids
    assert after.extras.retrieval.strategy == "HYBRID" and after.extras.retrieval.rung == "hybrid"
    assert after.extras.project == "demo"
    assert all("fused" in c.scores for c in after.base_context_chunks)
    assert "## Retrieved context (retrieval:" in after.prompt_ready
    reranked = run_stage(after, "rerank", services)
    assert reranked.stage is Stage.RERANK
    assert sorted(reranked.views_by_stage["reranked"]) == sorted(ids)
    assert reranked.final_selection_ids == reranked.views_by_stage["reranked"]
    assert reranked.views_by_stage["retrieval"] == ids
    assert reranked.final_selection_ids[0].startswith("ingestion.md@")
    assert "## Retrieved context (reranked:" in reranked.prompt_ready


def test_openai_embeddings_option_against_a_local_server(tmp_path) -> None:
    from ragstream.ingestion.manager import IngestionManager
    from ragstream.settings import load_settings
    from tests.fixtures_docs import make_project
    from tests.openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        settings = load_settings(
            overrides={
                "data_dir": str(tmp_path / "data"),
                "llm.provider": "local",
                "embedding.provider": "openai",
                "embedding.model": "text-embedding-3-small",
                "embedding.base_url": server.url,
                "embedding.api_key": "sk-test-emb-00000000",
            }
        )
        make_project(settings.data_dir / "doc_raw" / "oa", awkward=False)
        stats = IngestionManager(settings).ingest("oa")
        assert stats.chunks_written == 6
        result = build_searcher(settings, "oa").retrieve(["ERR_BUDGET_4711 token budget ceiling"], Strategy.DENSE)
        assert _files(result)[0] == "budget.py"
        embedding_requests = [r for r in server.requests if "input" in r]
        assert embedding_requests and all(r["model"] == "text-embedding-3-small" for r in embedding_requests)
        local = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
        again = IngestionManager(local).ingest("oa")  # a different embedding model re-embeds everything
        assert again.chunks_written == 6 and again.unchanged == 0


def test_a_hyphenated_term_is_found_as_itself_not_as_its_common_parts(settings: Settings) -> None:
    """Asked for `no-store`, the page naming it comes before a page that says "cache" and "store" everywhere
    (before, "no" was dropped as a stopword and the term read "store")."""
    from ragstream.ingestion.manager import IngestionManager

    folder = settings.data_dir / "doc_raw" / "headers"
    folder.mkdir(parents=True)
    (folder / "guide.md").write_text(
        "# Caching guide\n\nA cache may store a response. The store keeps each cached response; a shared cache "
        "stores responses for many users, and a private cache stores them for one. Store what you can cache.\n"
    )
    (folder / "directives.md").write_text(
        "# Directives\n\nThe `no-store` directive: nothing of the response is kept, whatever else is sent.\n"
    )
    IngestionManager(settings).ingest("headers")
    result = build_searcher(settings, "headers").retrieve(["no-store"], Strategy.KEYWORD)
    assert _files(result)[0] == "directives.md"


def _reference_and_guides(settings: Settings) -> None:
    """A reference page saying what each directive does under a heading of its name (the body does not repeat
    it), guides that name the directives everywhere without defining them, and pages on other topics."""
    from ragstream.ingestion.manager import IngestionManager

    folder = settings.data_dir / "doc_raw" / "caching"
    folder.mkdir(parents=True)
    body = (
        "The response may be kept by caches on the way, and the way it is reused is what this entry is about. "
        "Freshness, validation and the origin server decide together what a client sees. "
    )
    says = {
        "max-age": "It gives the number of seconds a response stays fresh after it was generated.",
        "no-cache": "It lets caches keep the response, but each reuse must first be validated with the origin.",
        "no-store": "It forbids any cache, private or shared, from keeping the response at all.",
        "private": "It lets only the browser of one user keep the response, never a shared cache.",
        "must-revalidate": "It forbids reusing a stale response without validating it with the origin first.",
    }
    (folder / "reference.md").write_text(
        "# Cache directives\n\n" + "".join(f"#### `{name}`\n\n{text} {body * 4}\n\n" for name, text in says.items())
    )
    for n in range(3):
        (folder / f"guide{n}.md").write_text(
            f"# Caching guide {n}\n\nTeams ask about no-cache and no-store all the time. Sending no-cache or "
            "no-store on a page changes what the browser does; pick no-cache or no-store, or both, for pages "
            "with user data, and compare no-cache with no-store in your own tests before shipping.\n"
        )
    for n, topic in enumerate(["cookies", "redirects", "compression", "range requests", "content negotiation"] * 6):
        (folder / f"other{n}.md").write_text(
            f"# {topic.capitalize()} {n}\n\nHow {topic} work in HTTP, with an example exchange and its headers.\n"
        )
    (folder / "extensions.html").write_text(
        "<html><body><main><h1>Extensions</h1><h4><code>stale-if-error</code></h4><p>It lets a cache serve a "
        "stale response while the origin answers with an error, for the seconds it gives.</p></main></body></html>"
    )
    IngestionManager(settings).ingest("caching")


def test_the_sections_a_question_names_come_before_pages_repeating_the_names(settings: Settings) -> None:
    """Asked how `no-cache` and `no-store` differ, the reference entries saying what each does (under headings of
    their names) lead, not the guides that only repeat both names."""
    _reference_and_guides(settings)
    result = build_searcher(settings, "caching").retrieve(
        ["What is the difference between no-cache and no-store?"], Strategy.HYBRID
    )
    snap = build_searcher(settings, "caching").snapshot()
    first = " ".join(snap.chunk(cid).text for cid in result.ids[:3])
    assert "each reuse must first be validated" in first and "forbids any cache" in first
    assert {source_of(cid) for cid in result.ids[:3]} == {"reference.md"}


def test_a_section_name_counts_only_where_the_question_writes_it_as_that_name(settings: Settings) -> None:
    """A heading that is a plain word ("`private`") is named only as code; an HTML page's headings count as a
    Markdown page's do; and a name most chunks hold is the corpus's subject, never a section the question picks
    out."""
    _reference_and_guides(settings)
    searcher = build_searcher(settings, "caching")
    plain = searcher.retrieve(["Is my private data safe in a shared cache?"], Strategy.HYBRID)
    assert not any("sections" in r.scores for r in plain.results)
    coded = searcher.retrieve(["What does `private` do?"], Strategy.HYBRID)
    assert any("sections" in r.scores for r in coded.results)
    html = searcher.retrieve(["When does stale-if-error apply?"], Strategy.HYBRID)
    assert [source_of(r.chunk_id) for r in html.results if "sections" in r.scores] == ["extensions.html"]
    searcher.settings = searcher.settings.model_copy(update={"sections_max_share": 0.0})
    subject = searcher.retrieve(["What does `private` do?"], Strategy.HYBRID)
    assert not any("sections" in r.scores for r in subject.results)

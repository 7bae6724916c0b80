"""Retrieval confidence on a real docs set (streamlit's shipped Markdown references) and a real source tree
(tenacity's, installed with LangChain): recorded for every retrieval, higher for an answerable ask, and a low one
re-runs retrieval with other strategies, compared without the signal KEYWORD holds by construction."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import streamlit
import tenacity

from ragstream.ingestion.manager import IngestionManager
from ragstream.retrieval.chunks import retrieve
from ragstream.retrieval.confidence import SIGNALS
from ragstream.retrieval.factory import build_searcher
from ragstream.retrieval.search import Query
from ragstream.settings import Settings, load_settings
from ragstream.strategies import Strategy

DOCS = Path(streamlit.__file__).parent / ".agents" / "skills" / "developing-with-streamlit" / "references"
FILES = ("authentication.md", "chat-ui.md", "cli.md", "media-display.md", "session-state.md", "theme.md")


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data = tmp_path_factory.mktemp("confidence") / "data"
    settings = load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})
    raw = data / "doc_raw" / "st"
    raw.mkdir(parents=True)
    for name in FILES:
        shutil.copy(DOCS / name, raw / name)
    IngestionManager(settings).ingest("st")
    return settings


def test_every_retrieval_records_its_confidence_and_evidence(docs: Settings) -> None:
    searcher = build_searcher(docs, "st")
    for strategy in (None, *Strategy):
        result = searcher.retrieve(["How do I embed a PDF file in the page?"], strategy)
        assert 0.0 <= result.confidence.score <= 1.0
        assert set(result.confidence.evidence) == set(SIGNALS)
        assert result.attempts[0].strategy == (strategy or Strategy.HYBRID).value


def test_an_answerable_ask_is_more_confident_than_an_unrelated_one(docs: Settings) -> None:
    searcher = build_searcher(docs, "st")
    answerable = searcher.retrieve(
        ["Where do I put the client id and secret of the OpenID identity provider?"], rerun=False
    )
    unrelated = searcher.retrieve(["migration routes of arctic terns over the Atlantic"], rerun=False)
    assert searcher.snapshot().chunk(answerable.ids[0]).source_path == "authentication.md"
    assert answerable.confidence.score > unrelated.confidence.score
    assert answerable.confidence.evidence["coverage"] > unrelated.confidence.evidence["coverage"]


def test_a_low_confidence_ask_re_runs_with_other_strategies_and_records_both(docs: Settings) -> None:
    searcher = build_searcher(docs, "st")
    low = docs.retrieval.confidence.low
    chunks, report = retrieve([Query("migration routes of arctic terns over the Atlantic")], searcher)
    assert report.confidence is not None and report.attempts[0].strategy == "HYBRID"
    assert report.attempts[0].confidence < low
    tried = [a.strategy for a in report.attempts]
    assert tried == ["HYBRID", *docs.retrieval.confidence.rerun_strategies]
    best = max(report.attempts, key=lambda a: a.compared or 0.0)
    assert report.strategy == (best.strategy if best.compared != report.attempts[0].compared else "HYBRID")
    assert report.confidence == best.confidence
    assert chunks, "a low confidence still returns what was found"


def test_a_confident_ask_and_a_caller_chosen_strategy_do_not_re_run(docs: Settings) -> None:
    searcher = build_searcher(docs, "st")
    _, confident = retrieve([Query("How do I pass command line arguments to my script with streamlit run?")], searcher)
    assert confident.confidence >= docs.retrieval.confidence.low and len(confident.attempts) == 1
    _, forced = retrieve([Query("migration routes of arctic terns over the Atlantic")], searcher, Strategy.HYBRID)
    assert [a.strategy for a in forced.attempts] == ["HYBRID"] and forced.strategy == "HYBRID"


def test_an_empty_result_has_no_confidence_and_never_wins_a_re_run(docs: Settings) -> None:
    searcher = build_searcher(docs, "st")
    nothing = searcher.retrieve(["qqqzzzx"], Strategy.KEYWORD)
    assert nothing.ids == [] and nothing.confidence.score == 0.0
    rerun = searcher.retrieve(["qqqzzzx"])
    assert rerun.ids, "the re-run keeps a result that found something"


def test_a_re_run_does_not_keep_keyword_for_leading_the_bm25_list_it_is(tmp_path: Path) -> None:
    """KEYWORD's first result is the BM25 list's best, so its `bm25_share` is 1 whatever it found; counted, it
    made KEYWORD the most confident re-run for this ask, with retry.py (`retry_if_result`) 19th, where the
    hybrid result had it first."""
    data = tmp_path / "data"
    settings = load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})
    source = Path(tenacity.__file__).parent
    raw = data / "doc_raw" / "tenacity"
    for module in source.rglob("*.py"):
        (raw / module.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(module, raw / module.relative_to(source))
    IngestionManager(settings).ingest("tenacity")
    searcher = build_searcher(settings, "tenacity")
    chunks, report = retrieve([Query("how do I retry when the function returns None but not when it raises")], searcher)
    confidence = {a.strategy: a.confidence for a in report.attempts}
    assert list(confidence) == ["HYBRID", "DENSE", "KEYWORD"]
    assert confidence["KEYWORD"] > confidence["HYBRID"] > confidence["DENSE"]  # the calibrated score still says so
    assert report.strategy == "HYBRID"
    assert chunks[0].source_path == "retry.py"

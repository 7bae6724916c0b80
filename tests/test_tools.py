"""Tools behind one interface: a docs project and a code project retrieved as one fused branch, and
the web-search tool against a local server speaking SearxNG's JSON API. Every result is fenced,
traceable and judged by A3 like any excerpt."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import ProjectError
from ragstream.ingestion.manager import IngestionManager
from ragstream.rendering.styles import fence
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from tests.servers import free_port, link_indexed_project

pytestmark = pytest.mark.slow  # a loopback HTTP server and a second ingested project

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How does reciprocal rank fusion merge the ranked lists of the retrievers?"


class Searx:
    """A loopback server answering `/search?q=...&format=json` the way SearxNG does."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                parsed = urllib.parse.urlparse(self.path)
                params = urllib.parse.parse_qs(parsed.query)
                if parsed.path != "/search" or params.get("format") != ["json"]:
                    self.send_error(403, "format not allowed")
                    return
                outer.queries.append(params["q"][0])
                body = json.dumps(
                    {
                        "query": params["q"][0],
                        "number_of_results": 2,
                        "results": [
                            {
                                "url": "https://example.org/rrf",
                                "title": "Reciprocal rank fusion",
                                "content": "Reciprocal rank fusion merges ranked lists by summing one over k plus the "
                                "rank of each result.",
                                "engine": "duckduckgo",
                                "score": 1.0,
                                "category": "general",
                            },
                            {
                                "url": "https://example.org/pasta",
                                "title": "Pasta",
                                "content": "Boil pasta in salted water.",
                                "engine": "bing",
                                "score": 0.2,
                                "category": "general",
                            },
                        ],
                        "answers": [],
                        "suggestions": [],
                        "unresponsive_engines": [],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Searx:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _settings(tmp_path: Path, indexed: Settings, **overrides: object) -> Settings:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local", **overrides})
    link_indexed_project(settings, indexed)
    return settings


def _run(settings: Settings, **options: object):
    ctl = AppController(settings, services=Services(settings))
    ctl.select_project("demo")
    return ctl.run_full_pipeline(QUESTION, **{"pause_after": "none", **options})


def test_docs_and_code_projects_are_one_fused_branch(indexed: Settings, tmp_path: Path) -> None:
    settings = _settings(tmp_path, indexed)
    IngestionManager(settings).ingest("code", ROOT / "ragstream" / "retrieval")
    sp = _run(settings, projects=["code"])
    report = sp.extras.retrieval
    assert set(report.tools) == {"demo", "code"} and all(report.tools.values())
    code = [c for c in sp.base_context_chunks if c.metadata.get("project") == "code"]
    docs = [c for c in sp.base_context_chunks if "project" not in c.metadata]
    assert code and docs and all(c.sha256 and c.source_path.endswith(".py") for c in code)
    assert all(c.id in sp.extras.a3.decisions for c in sp.base_context_chunks)  # every tool's result went through A3
    kept_code = [c for c in code if c.id in sp.final_selection_ids]
    assert kept_code, "the fusion code answers the question"
    for chunk in kept_code:
        assert 'project="code"' in fence(chunk) and fence(chunk) in sp.prompt_ready
    with pytest.raises(ProjectError):
        _run(settings, projects=["nowhere"])


def test_web_search_results_are_fenced_traceable_excerpts(indexed: Settings, tmp_path: Path) -> None:
    with Searx() as searx:
        settings = _settings(tmp_path, indexed, **{"tools.web_search.url": searx.url})
        plain = _run(settings)
        assert searx.queries == [] and "web" not in plain.extras.retrieval.tools  # off by default
        sp = _run(settings, web_search=True)
    assert searx.queries and "reciprocal rank fusion" in searx.queries[0].lower()
    web = [c for c in sp.base_context_chunks if c.metadata.get("kind") == "web"]
    assert [c.source_path for c in web] == ["https://example.org/rrf", "https://example.org/pasta"]
    assert all(len(c.sha256) == 64 and c.id.startswith(c.source_path + "@") for c in web)
    assert all(c.id in sp.extras.a3.decisions for c in web)
    decisions = sp.extras.a3.decisions
    assert decisions[web[1].id].decision != "keep"  # the pasta page is judged off topic like any chunk
    rrf = web[0]
    assert rrf.id in sp.final_selection_ids
    assert (
        fence(rrf) in sp.prompt_ready
        and 'source="https://example.org/rrf"' in fence(rrf)
        and 'tool="web"' in fence(rrf)
    )
    assert sp.extras.retrieval.tools["web"] == 2


def test_a_web_server_that_is_down_is_recorded_and_the_run_goes_on(indexed: Settings, tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        indexed,
        **{"tools.web_search.url": f"http://127.0.0.1:{free_port()}", "tools.web_search.timeout_s": 2},
    )
    sp = _run(settings, web_search=True)
    assert sp.stage.value == "built" and sp.final_selection_ids
    assert "tool web" in sp.extras.retrieval.failures and sp.extras.retrieval.tools["web"] == 0

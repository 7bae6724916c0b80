"""Shared fixtures: settings pointing at a temp data root, and the real chunker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragstream.settings import Settings, load_settings
from ragstream.text.chunking import Chunker

# One ONNX export of the embedding model for every test session (it is keyed by the weights' sha256,
# so it is always the right one); subprocesses inherit the variable.
os.environ.setdefault("RAGSTREAM_MODELS_DIR", str(Path(__file__).resolve().parents[1] / "data" / "models"))
# The scripted OpenAI-protocol server takes schemas; a probe would use up a test's scripted replies.
# Tests of the probe itself set `llm.structured_output` to "auto" (tests/test_structured_output.py).
os.environ.setdefault("RAGSTREAM_STRUCTURED_OUTPUT", "json_schema")


@pytest.fixture(autouse=True)
def fresh_endpoint_gates() -> None:
    """Every test meets the LLM endpoints as a fresh process would: the gates (rate limit, first-call
    deadline) are per process and keyed by URL, and a later test's local server may reuse a port."""
    from ragstream.llm.providers import endpoint_gate

    endpoint_gate._GATES.clear()


@pytest.fixture(scope="session")
def base_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data = tmp_path_factory.mktemp("data")
    return load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})


@pytest.fixture(scope="session")
def chunker(base_settings: Settings) -> Chunker:
    return Chunker.from_settings(base_settings)


FAKE_KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture()
def openai_server():
    from tests.openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture()
def openai_settings(tmp_path: Path, openai_server) -> Settings:
    return load_settings(
        overrides={
            "data_dir": str(tmp_path / "data"),
            "llm.provider": "openai",
            "llm.base_url": openai_server.url,
            "llm.api_key": FAKE_KEY,
            "llm.timeout_s": 1.0,
            "llm.first_call_timeout_s": None,  # a scripted server loads no model
            "llm.max_retries": 2,
            "llm.backoff_initial_s": 0.01,
            "llm.backoff_max_s": 0.2,
        }
    )


@pytest.fixture(scope="session")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings whose data root holds the sample project 'demo', ingested once per test session."""
    from ragstream.ingestion.manager import IngestionManager
    from tests.fixtures_docs import make_project

    data = tmp_path_factory.mktemp("indexed") / "data"
    settings = load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})
    make_project(data / "doc_raw" / "demo", awkward=False)
    IngestionManager(settings).ingest("demo")
    return settings


@pytest.fixture()
def openai_on_indexed(indexed: Settings, tmp_path: Path):
    """A factory: (server, settings) with the openai provider on a local server and the sample project linked."""
    from tests.openai_server import FakeOpenAIServer, schema_responder
    from tests.servers import link_indexed_project

    with FakeOpenAIServer() as server:
        server.responder = schema_responder

        def make(**overrides: object) -> tuple[FakeOpenAIServer, Settings]:
            settings = load_settings(
                overrides={
                    "data_dir": str(tmp_path / "data"),
                    "llm.provider": "openai",
                    "llm.base_url": server.url,
                    "llm.api_key": "sk-test-local-server-0000",
                    "llm.first_call_timeout_s": None,  # a scripted server loads no model
                    **overrides,
                }
            )
            link_indexed_project(settings, indexed)
            return server, settings

        yield make

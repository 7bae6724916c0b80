"""Small helpers shared by tests: one stage on a SuperPrompt, outside any graph run."""

from __future__ import annotations

import re

import pytest

from ragstream.app.controller import AppController
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.apply import run_alone
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages import Stage
from ragstream.stages.io import StageEnv
from ragstream.stages.options import RunOptions
from ragstream.state import Chunk, Span, SuperPrompt


def run_stage(
    sp: SuperPrompt, stage: str, services: Services, prompt: str | None = None, **options: object
) -> SuperPrompt:
    env = StageEnv(services, RunOptions(manual=True, **options), prompt)
    return run_alone(sp, Stage(stage), env)


def preprocessed(text: str, settings: Settings | Services, **options: object) -> SuperPrompt:
    """A fresh SuperPrompt after PreProcessing `text`, exactly as the graph's node would leave it."""
    services = settings if isinstance(settings, Services) else Services(settings)
    return run_stage(SuperPrompt(), "preprocess", services, text, **options)


def unfenced(text: str) -> str:
    """The text outside every tilde fence: what a model reads as the prompt itself.

    A fence opens with a line of four or more tildes (plus an info string) and closes only on a line
    that is exactly the same run of tildes.
    """
    outside: list[str] = []
    bar: str | None = None
    for line in text.split("\n"):
        if bar is None:
            stripped = line.rstrip()
            run = len(stripped) - len(stripped.lstrip("~"))
            if run >= 4:
                bar = "~" * run
                continue
            outside.append(line)
        elif line.rstrip() == bar:
            bar = None
    return "\n".join(outside)


_MARKER = re.compile(r"\[REDACTED: [^\]]+\]")


def as_in_file(shown: str, in_file: str) -> bool:
    """`shown` (a chunk's or excerpt's text) is `in_file` (the file's text at its span), or that text with
    its secrets replaced by whole `[REDACTED: <type>]` markers, nothing else differing."""
    if shown == in_file:
        return True
    pattern = ".+?".join(re.escape(part) for part in _MARKER.split(shown))
    return _MARKER.search(shown) is not None and re.fullmatch(pattern, in_file, re.S) is not None


def one_chunk(name: str, text: str) -> Chunk:
    """A whole document as its only chunk: what a stage sees of a file small enough not to be cut."""
    return Chunk(
        id=f"{name}@0000000000#0",
        source_path=name,
        sha256="0" * 64,
        chunk_index=0,
        text=text,
        span=Span(start=0, end=len(text)),
    )


def small_chunks_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, text: str, chunk_size: int, prompt: str
) -> SuperPrompt:
    """One document ingested into real Chroma in windows of `chunk_size` (no overlap), and an offline run on it."""
    settings = load_settings(
        overrides={
            "data_dir": str(tmp_path_factory.mktemp("small")),
            "llm.provider": "local",
            "chunking.chunk_size": chunk_size,
            "chunking.chunk_overlap": 0,
        }
    )
    raw = settings.data_dir / "doc_raw" / "doc"
    raw.mkdir(parents=True)
    (raw / name).write_text(text, encoding="utf-8")
    IngestionManager(settings).ingest("doc")
    ctl = AppController(settings)
    ctl.select_project("doc")
    return ctl.run_full_pipeline(prompt, pause_after="none")

"""Small helpers shared by tests: one stage on a SuperPrompt, outside any graph run."""

from __future__ import annotations

import re

from ragstream.orchestration.apply import run_alone
from ragstream.services import Services
from ragstream.settings import Settings
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

"""Strict mode: a header PreProcessing cannot map interrupts the run until a person decides what it is."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import InputError, StageOrderError
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.preprocessing.schema import normalize_header
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.state import Stage


@pytest.fixture(scope="module")
def services(indexed: Settings) -> Services:
    return Services(indexed)


def _controller(services: Services) -> AppController:
    ctl = AppController(services.settings, services=services, checkpointer=memory_checkpointer())
    ctl.select_project("demo")
    return ctl


def _prompt() -> tuple[str, str]:
    """A prompt with a header no alias or agent knows (fresh each time: decisions are remembered, by the
    header's letters only, so the fresh part is letters: digits would make "Zorblat 1f" and "Zorblat 2f" one)."""
    header = "Zorblat " + "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:8])
    return (
        header,
        f"# Task\nHow are changed documents re-embedded?\n# {header}\n"
        "QUUXLINE the manifest keeps each file's sha256.\n",
    )


def test_strict_run_waits_for_the_decision_applies_it_and_does_not_ask_again(services: Services) -> None:
    header, prompt = _prompt()
    ctl = _controller(services)
    sp = ctl.run_full_pipeline(prompt, strict=True)
    assert sp.stage is Stage.PREPROCESS and ctl.paused_before == ["decide_headers"]
    question = ctl.waiting
    assert question["kind"] == "headers" and [row["header"] for row in question["headers"]] == [header]
    row = question["headers"][0]
    assert row["preview"].startswith("QUUXLINE") and row["suggestion"] == "UNKNOWN" and row["reason"]
    assert {"CONTEXT", "TASK", "keep", "drop"} <= set(row["choices"])

    with pytest.raises(StageOrderError, match=header):  # a manual step past the undecided header
        ctl.run_retrieval()
    for bad, message in (({header: "BOGUS"}, "unknown choices"), ({"Other": "keep"}, "no header"), ({}, "missing")):
        with pytest.raises(InputError, match=message):
            ctl.decide(bad)
        assert ctl.waiting == question

    decided = ctl.decide({header: "CONTEXT"})
    assert (
        decided.extras.preprocess.decisions == {header: "CONTEXT"}
        and decided.extras.preprocess.unknown_attributes == []
    )
    assert "QUUXLINE" in decided.body.context
    segment = next(s for s in decided.preprocessing.segments if s.original_header == header)
    assert segment.canon_type == "CONTEXT" and segment.kept_for_retrieval
    assert ctl.resume().stage is Stage.A4 and ctl.waiting["kind"] == "review"  # then the review after A4
    built = ctl.resume()
    assert built.stage is Stage.BUILD and "## Context\nQUUXLINE" in built.prompt_ready

    again = _controller(services).run_full_pipeline(prompt, strict=True, pause_after="none")
    assert again.stage is Stage.BUILD  # not asked again: the decision is in Agent 00's mapping cache
    assert again.extras.preprocess.decisions == {header: "CONTEXT"}
    assert services.header_cache.decisions()[normalize_header(header)] == "CONTEXT"


@pytest.mark.parametrize(
    ("choice", "shown", "note"), [("keep", True, "KEPT_BY_PERSON"), ("drop", False, "DROPPED_BY_PERSON")]
)
def test_keep_and_drop(services: Services, choice: str, shown: bool, note: str) -> None:
    header, prompt = _prompt()
    ctl = _controller(services)
    ctl.run_full_pipeline(prompt, strict=True, pause_after="none")
    built = ctl.resume({"decisions": {header: choice}})  # answered and run on, in one go
    assert built.stage is Stage.BUILD
    assert ("QUUXLINE" in built.prompt_ready) is shown
    segment = next(s for s in built.preprocessing.segments if s.original_header == header)
    assert segment.source_note == note and segment.kept_for_retrieval is shown


def test_without_strict_nothing_waits(services: Services) -> None:
    header, prompt = _prompt()
    ctl = _controller(services)
    sp = ctl.run_full_pipeline(prompt, pause_after="none")
    assert sp.stage is Stage.BUILD and sp.extras.preprocess.unknown_attributes == [header]
    assert "QUUXLINE" in sp.prompt_ready  # as today: an additional section, not used for retrieval


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """One `ragstream` command in its own process, on the settings' data root."""
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(settings.data_dir), "RAGSTREAM_LLM_PROVIDER": "local"}
    return subprocess.run(["ragstream", *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_the_gate_holds_in_every_process_on_the_thread(indexed: Settings, tmp_path: Path) -> None:
    """Strict mode is the thread's, not the process's: a step from another process meets the same gate."""
    header, prompt = _prompt()
    (tmp_path / "prompt.md").write_text(prompt, encoding="utf-8")
    thread = f"strict-{uuid.uuid4().hex[:8]}"
    started = _cli(
        indexed, "run", "--strict", "--file", str(tmp_path / "prompt.md"), "--project", "demo", "--thread", thread
    )
    assert started.returncode == 2 and f"--decide '{header}=" in started.stderr  # no terminal: says what to do

    stepped = _cli(indexed, "step", "retrieval", "--thread", thread)  # a new process, no --strict
    assert stepped.returncode == 2 and "StageOrderError" not in stepped.stderr, stepped.stderr
    assert f"decide the headers PreProcessing could not map first: ['{header}']" in stepped.stderr
    ctl = AppController(indexed, thread_id=thread)
    assert ctl.sp.stage is Stage.PREPROCESS and ctl.waiting["kind"] == "headers"  # still waiting, nothing ran

    done = _cli(indexed, "resume", "--thread", thread, "--decide", f"{header}=CONTEXT")
    assert done.returncode == 0 and "stage built" in done.stderr, done.stderr
    assert "## Context\nQUUXLINE" in done.stdout

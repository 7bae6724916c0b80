"""A RunSession call reads the thread back once, at its end, and hands the surface a RunResult; the prompt is
validated once and scanned for secrets once per run, before the graph writes anything.

Counted on a real SQLite checkpointer (a SqliteSaver that counts its reads) and by profiling the real
functions, so nothing in the graph is replaced.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.pregel import Pregel

from ragstream.app.session import RunResult, RunSession
from ragstream.app.workspace import Workspace
from ragstream.errors import EmptyPromptError
from ragstream.orchestration.checkpoint import state_serializer
from ragstream.preprocessing import validate_prompt
from ragstream.secrets.scan import scan_prompt
from ragstream.settings import Settings
from ragstream.stages import Stage

AWS_KEY = "AKIA" + "Q3EGQ4ZJX7VN2B5T"  # shaped like a key, split so no scanner flags this file
PROMPT = f"# Task\nHow are chunks fenced?\n# Context\naws_access_key_id = {AWS_KEY}\n"
COUNTED: dict[CodeType, str] = {
    Pregel.get_state.__code__: "get_state",
    validate_prompt.__code__: "validate",
    scan_prompt.__code__: "scan",
}


class CountingSaver(SqliteSaver):
    """SQLite, as `ragstream run` checkpoints, counting every read of a thread's latest checkpoint."""

    reads = 0

    def get_tuple(self, config: Any) -> Any:
        self.reads += 1
        return super().get_tuple(config)


@contextmanager
def calls() -> Iterator[Counter[str]]:
    """The calls to the counted functions made inside the block, on any thread the graph uses."""
    seen: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in COUNTED:
            seen[COUNTED[frame.f_code]] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


@pytest.fixture()
def session(indexed: Settings, tmp_path: Path) -> RunSession:
    conn = sqlite3.connect(str(tmp_path / "checkpoints.sqlite"), check_same_thread=False)
    saver = CountingSaver(conn, serde=state_serializer())
    ctl = RunSession(Workspace(indexed), checkpointer=saver)
    ctl.select_project("demo")
    return ctl


def _reads(ctl: RunSession, call: Callable[[], RunResult]) -> tuple[RunResult, Counter[str], int]:
    saver = ctl.checkpointer
    assert isinstance(saver, CountingSaver)
    before = saver.reads
    with calls() as seen:
        result = call()
        # What a surface shows after the call: everything comes from the result, nothing reads the thread again.
        shown = (result.state.prompt_ready, result.paused_before, result.waiting, result.state.stage)
    assert shown
    return result, seen, saver.reads - before


def test_a_run_reads_the_thread_once_at_its_end_and_checks_its_prompt_once(session: RunSession) -> None:
    paused, seen, reads = _reads(session, lambda: session.run_full_pipeline(PROMPT))
    assert paused.state.stage is Stage.A4 and paused.paused_before == ["review"]
    assert paused.waiting is not None and paused.waiting["kind"] == "review"
    # one read admits the run (where the thread stands), the graph reads its own checkpoint, one read ends it
    assert seen["get_state"] == 2 and reads == 3
    assert seen["validate"] == 1 and seen["scan"] == 1
    assert AWS_KEY not in paused.state.raw_prompt and [f.type for f in session.prompt_secrets] == ["AWS Access Key"]
    assert paused == session.current()  # the result is the thread as it stands

    built, seen, reads = _reads(session, session.resume)
    assert built.state.stage is Stage.BUILD and built.paused_before == [] and built.waiting is None
    assert seen == Counter(get_state=2) and reads == 3  # no prompt given: nothing validated or scanned


def test_a_refused_prompt_is_checked_once_with_its_message_and_leaves_the_thread_as_it_was(
    session: RunSession,
) -> None:
    paused = session.run_full_pipeline(PROMPT)
    with calls() as seen, pytest.raises(EmptyPromptError, match="the prompt is empty: type what you want the LLM"):
        session.run_full_pipeline("   ")
    assert seen == Counter(get_state=1, validate=1)  # refused at admission: never scanned, the graph never ran
    assert session.current() == paused


def test_a_stage_run_by_hand_returns_its_result(session: RunSession) -> None:
    first, seen, _ = _reads(session, lambda: session.preprocess(PROMPT))
    assert first.state.stage is Stage.PREPROCESS and first.paused_before == [] and first.waiting is None
    assert seen == Counter(get_state=2, validate=1, scan=1)
    shaped, seen, _ = _reads(session, session.run_a2)
    assert shaped.state.stage is Stage.A2 and seen == Counter(get_state=2)
    assert session.allowed_stages(shaped.state) == session.allowed_stages()

"""Memory chosen by relevance: a conversation on two topics, recorded through the real memory (local
agents, MiniLM embeddings), then a prompt about one of them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ragstream.app.controller import AppController
from ragstream.memory.selection import select_memory, sentences
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from tests.servers import link_indexed_project

CHECKPOINTS = [
    ("How are checkpoints written to SQLite?", "Each stage writes a checkpoint row to SQLite after it finishes."),
    (
        "Can a checkpoint be restored after a crash?",
        "A crash keeps the last committed checkpoint; resuming starts from it.",
    ),
    ("Where does the SQLite checkpoint database live?", "The checkpoint database lives under the data root."),
    ("Do checkpoints store the whole SuperPrompt?", "Checkpoints store only the fields a stage changed."),
    ("How do I list a thread's checkpoints?", "The history command lists every checkpoint of a thread."),
]
PASTA = [
    ("How long should spaghetti boil?", "Spaghetti boils for about nine minutes in salted water."),
    ("Should I salt the pasta water?", "Salt the water generously before the pasta goes in."),
    ("What sauce goes with penne?", "Penne goes well with a tomato and basil sauce."),
    ("How do I keep pasta from sticking?", "Stir the pasta in the first minute and use plenty of water."),
    ("Is fresh pasta cooked differently?", "Fresh pasta cooks in two or three minutes."),
]
ECHO = "Good question, let me explain."  # an assistant habit, repeated in every answer


def _converse(settings: Settings) -> Services:
    """Twenty turns: five on checkpoints, ten on pasta, five more on checkpoints, then ten on pasta again
    would bury them; here the pasta comes last, so the latest turns are off topic for a checkpoint prompt."""
    services = Services(settings)
    for topic in (CHECKPOINTS, PASTA, CHECKPOINTS, PASTA):
        for question, answer in topic:
            # every answer restates the user's question and repeats the same habit phrase
            services.memory.record("demo", question, f"{question} {ECHO} {answer}")
    assert len(services.memory.turns("demo")) == 20
    return services


def test_memory_holds_the_current_topic_and_says_what_was_dropped(tmp_path: Path) -> None:
    settings = load_settings(
        overrides={"data_dir": str(tmp_path / "d"), "llm.provider": "local", "memory.summary_budget": 100000}
    )
    services = _converse(settings)
    ask = "How does resuming from a checkpoint work after the process is killed?"
    turns, stats = select_memory(services.memory, "demo", ask, services.embedder, services.budget, settings.memory)
    text = "\n".join(t.content for t in turns).lower()
    assert "checkpoint" in text
    carried_questions = [q for q, _ in CHECKPOINTS + PASTA if q.lower() in text]
    pasta_questions = {q for q, _ in PASTA}
    # the newest turn stays (continuity); every other pasta turn is out, named with its reason
    assert [q for q in carried_questions if q in pasta_questions] == [PASTA[-1][0]]
    assert any(q for q, _ in CHECKPOINTS if q.lower() in text)
    off_topic = [name for name, why in stats.dropped.items() if why.startswith("off topic")]
    assert stats.turns_dropped >= 1 and stats.snippets_dropped >= 1 and len(off_topic) >= 8
    assert stats.turns_kept + stats.snippets_kept >= 2
    # no assistant sentence repeats: not the habit phrase, not the restated questions
    said = Counter(s for t in turns for s in sentences(t.content) if t.role in ("assistant", "summary"))
    assert said[ECHO] <= 1 and stats.echoes_stripped > 0
    assert all(n == 1 for s, n in said.items() if s != ECHO), said
    assert stats.budget_used <= stats.budget_ceiling


def test_a_run_records_the_selection_in_its_metadata(indexed: Settings, tmp_path: Path) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    link_indexed_project(settings, indexed)
    services = _converse(settings)
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=services)
    ctl.select_project("demo")
    sp = ctl.run_full_pipeline("How are checkpoints written?", pause_after="none")
    selection = sp.run_metadata.summary_selection
    assert selection is not None and selection == sp.extras.preprocess.memory
    assert sp.run_metadata.context_budget["memory"].used == selection.budget_used > 0
    assert selection.dropped and sum(t.content.count(ECHO) for t in sp.recent_conversation) <= 1
    assert "Spaghetti boils" not in sp.prompt_ready

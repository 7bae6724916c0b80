"""Any sequence of records and clears by several users on shared projects: each user's memory of a
project holds exactly that user's turns of that project, in order, whatever the others did."""

from __future__ import annotations

import tempfile

from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from langgraph.store.memory import InMemoryStore

from ragstream.services import Services
from ragstream.settings import load_settings

USERS = ("alice", "bob", "local")
PROJECTS = ("demo", "my.proj")
SERVICES = Services(
    load_settings(overrides={"data_dir": tempfile.mkdtemp(), "llm.provider": "local", "memory.keep_turns": 2})
)


class SharedStore(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        store = InMemoryStore()
        self.memory = {user: SERVICES.memory_of(user, store) for user in USERS}
        self.model: dict[tuple[str, str], list[str]] = {}

    @rule(
        user=st.sampled_from(USERS),
        project=st.sampled_from(PROJECTS),
        prompt=st.sampled_from(
            ["Remember: my code is ZETA-4471.", "I prefer answers in French.", "How does BM25 work?"]
        ),
    )
    def record(self, user: str, project: str, prompt: str) -> None:
        text = f"{user}: {prompt}"
        self.memory[user].record(project, text, "ok")
        self.model.setdefault((user, project), []).append(text)

    @rule(user=st.sampled_from(USERS), project=st.sampled_from(PROJECTS))
    def clear(self, user: str, project: str) -> None:
        self.memory[user].clear(project)
        self.model[(user, project)] = []

    @invariant()
    def each_user_sees_only_their_own(self) -> None:
        for user in USERS:
            for project in PROJECTS:
                expected = self.model.get((user, project), [])
                assert [t.prompt for t in self.memory[user].turns(project)] == expected
                shown = " ".join(t.content for t in self.memory[user].context(project))  # turns, notes, summary
                assert not any(f"{other}:" in shown for other in USERS if other != user)


SharedStore.TestCase.settings = hyp_settings(max_examples=25, stateful_step_count=12, deadline=None)
TestSharedStore = SharedStore.TestCase

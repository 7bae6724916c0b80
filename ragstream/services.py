"""The services a run needs (settings, agent factory, LLM client, ...), built once from settings.

They travel beside the SuperPrompt, never inside it: state is data, services are context.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from langgraph.store.base import BaseStore

from ragstream.embedding.embedder import Embedder, query_embedder
from ragstream.llm.client import LLMClient
from ragstream.llm.factory import AgentFactory
from ragstream.llm.runner import AgentRunner
from ragstream.memory.conversation import LOCAL_USER, ConversationMemory, memory_store
from ragstream.preprocessing import HeaderMapper
from ragstream.preprocessing.header_mapper import Agent00HeaderMapper, HeaderMappingCache
from ragstream.retrieval.factory import build_reranker, build_searcher
from ragstream.retrieval.reranker import Reranker
from ragstream.retrieval.search import ProjectSearcher
from ragstream.settings import Settings, default_settings
from ragstream.text.chunking import Chunker
from ragstream.tokens.budget import ContextBudget


@dataclass
class Services:
    settings: Settings
    llm_override: LLMClient | None = field(default=None, repr=False)
    _searchers: dict[str, ProjectSearcher] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @cached_property
    def factory(self) -> AgentFactory:
        return AgentFactory(self.settings.agents_dir)

    @cached_property
    def llm(self) -> LLMClient:
        return self.llm_override or LLMClient.from_settings(self.settings)

    @cached_property
    def runner(self) -> AgentRunner:
        return AgentRunner(
            self.factory, self.llm, self.settings.llm.max_concurrency, lambda: LLMClient.offline(self.settings)
        )

    @property
    def offline(self) -> bool:
        """True when no model is configured (the `local` provider). The one switch for offline behaviour.

        Every stage reads it here: the planner's rules, A3's evidence gate, A4's extraction, no answer and
        no critic are the offline behaviour of their stages, in code, because they need the pipeline's own
        data (the index's term frequencies, chunk spans, vectors, the budget), which a chat-model interface
        cannot carry. The agents whose offline judgment rests on the user's words alone (A00, A2, A5, SAL)
        declare it as keyword rules in their config (`x-cues`), which the local provider applies when the
        runner calls them offline; that is data for this switch, not a second one.
        """
        return not self.llm.has_model

    @property
    def embedder(self) -> Embedder:
        return query_embedder(self.settings.embedding, self.settings.models_dir)

    @cached_property
    def chunker(self) -> Chunker:
        return Chunker.from_settings(self.settings)

    @cached_property
    def header_cache(self) -> HeaderMappingCache:
        """Agent 00's accepted mappings and a person's strict-mode decisions."""
        return HeaderMappingCache(self.settings.cache_dir / "agent00_header_map.json")

    @cached_property
    def header_mapper(self) -> HeaderMapper | None:
        if not self.settings.preprocessing.use_agent00:
            return None
        return Agent00HeaderMapper(self.runner, self.header_cache)

    @cached_property
    def budget(self) -> ContextBudget:
        return ContextBudget(self.settings)

    @cached_property
    def reranker(self) -> Reranker:
        return build_reranker(self.settings, runner=self.runner)

    @cached_property
    def memory(self) -> ConversationMemory:
        """The local user's conversation memory (CLI, GUI, Python); a server run binds its own (`memory_of`)."""
        return ConversationMemory(
            memory_store(self.settings), self.settings.memory, self.runner, self.budget, self.settings.secrets
        )

    def memory_of(self, user: str | None, store: BaseStore | None) -> ConversationMemory:
        """The memory of a run: the server's Store and the authenticated user when served, else the local one."""
        if store is None and not user:
            return self.memory
        return ConversationMemory(
            store or memory_store(self.settings),
            self.settings.memory,
            self.runner,
            self.budget,
            self.settings.secrets,
            user or LOCAL_USER,
        )

    def searcher(self, project: str) -> ProjectSearcher:
        """One searcher per project, reused across runs (it caches the index snapshot)."""
        with self._lock:
            if project not in self._searchers:
                self._searchers[project] = build_searcher(self.settings, project)
            return self._searchers[project]


_DEFAULT_LOCK = threading.Lock()


def default_services() -> Services:
    """Services for callers that bring none (the LangGraph server, the module-level graph): one per
    process, even when a server's first runs start together."""
    with _DEFAULT_LOCK:
        return _default_services()


@lru_cache(maxsize=1)
def _default_services() -> Services:
    return Services(default_settings())

"""The services a run needs (settings, agent factory, LLM client, ...), built once from settings.

They travel beside the SuperPrompt, never inside it: state is data, services are context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ragstream.agents.agent00_header_mapper import Agent00HeaderMapper, HeaderMappingCache
from ragstream.agents.agent_factory import AgentFactory
from ragstream.agents.llm_client import LLMClient
from ragstream.chunking import Chunker
from ragstream.preprocessing import HeaderMapper
from ragstream.settings import Settings


@dataclass
class Services:
    settings: Settings
    llm_override: LLMClient | None = field(default=None, repr=False)

    @cached_property
    def factory(self) -> AgentFactory:
        return AgentFactory(self.settings.agents_dir)

    @cached_property
    def llm(self) -> LLMClient:
        return self.llm_override or LLMClient.from_settings(self.settings)

    @cached_property
    def chunker(self) -> Chunker:
        return Chunker.from_settings(self.settings)

    @cached_property
    def header_mapper(self) -> HeaderMapper | None:
        if not self.settings.preprocessing.use_agent00:
            return None
        cache = HeaderMappingCache(self.settings.cache_dir / "agent00_header_map.json")
        return Agent00HeaderMapper(self.factory, self.llm, cache)

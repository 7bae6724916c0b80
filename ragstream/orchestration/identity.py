"""Who a run is for: the user LangGraph's custom auth authenticated on the server, or the local user."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime

from ragstream.memory.conversation import ConversationMemory
from ragstream.services import Services


def served_user() -> str | None:
    """The authenticated user of a server run (`langgraph_auth_user_id`); None in local runs."""
    user = get_config().get("configurable", {}).get("langgraph_auth_user_id")
    return str(user) if user else None


def run_memory(runtime: Runtime[Any], services: Services) -> ConversationMemory:
    """The run's user's memory, in the server's Store when served (the local store otherwise)."""
    return services.memory_of(served_user(), runtime.store)

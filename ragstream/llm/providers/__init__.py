"""LLM providers behind llm_client: `openai` (any OpenAI-compatible server) and `local` (offline)."""

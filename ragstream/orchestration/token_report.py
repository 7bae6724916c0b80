"""How many tokens a built prompt holds, section by section and excerpt by excerpt, and what counted them.

What `ragstream run --tokens`, the GUI's chart and the trace's `prompt_tokens` event show. The count
names its tokenizer and says whether it is exact for the model that reads the prompt (see
`ContextBudget`). With an OpenAI-compatible server (`OPENAI_BASE_URL`) that offers a `/tokenize`
endpoint (vLLM, llama.cpp's server), the server's own count of the whole prompt is asked for and is
exact for that server's model; after a send, the usage the server reported is exact too.
"""

from __future__ import annotations

import logging
from typing import Any

from ragstream.rendering.parts import prompt_parts
from ragstream.rendering.styles import fence_excerpt, markdown
from ragstream.settings import Settings
from ragstream.state import SuperPrompt
from ragstream.tokens.budget import ContextBudget

log = logging.getLogger("ragstream.tokens.counters")


def server_token_count(settings: Settings, text: str) -> int | None:
    """The OpenAI-compatible server's own count of `text` from its `/tokenize` endpoint, or None when it
    has none (OpenAI itself has none) or cannot be reached; never raises."""
    import httpx

    base = settings.llm.base_url
    if settings.llm.provider != "openai" or not base:
        return None
    root = base.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {settings.llm.api_key.get_secret_value()}"} if settings.llm.api_key else {}
    try:
        reply = httpx.post(
            f"{root}/tokenize",
            json={"model": settings.send.model, "prompt": text},
            headers=headers,
            timeout=min(settings.llm.timeout_s, 10),
        )
        reply.raise_for_status()
        body = reply.json()
    except (httpx.HTTPError, ValueError) as exc:
        log.info("no server token count: %s", type(exc).__name__)
        return None
    count = body.get("count") if isinstance(body, dict) else None
    if isinstance(count, int):
        return count
    tokens = body.get("tokens") if isinstance(body, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


def token_breakdown(sp: SuperPrompt, budget: ContextBudget, settings: Settings | None = None) -> dict[str, Any]:
    """Tokens of the built prompt: total, per section (system, ask, condensed context, excerpts) and per
    excerpt, with the tokenizer and whether the count is exact; `server` adds the server's own total."""
    parts = prompt_parts(sp)  # a typed error when the prompt is not built yet
    blocks = markdown(parts)
    excerpts = [
        {"chunk": e.chunk, "source": e.source, "tokens": budget.count(fence_excerpt(e))} for e in parts.excerpts
    ]
    sections = [
        {"section": "system", "tokens": budget.count(blocks.system)},
        {"section": "ask", "tokens": budget.count(blocks.ask)},
        {"section": "condensed context", "tokens": budget.count(blocks.condensed)},
        {"section": "excerpts", "tokens": budget.count(blocks.attachments)},
    ]
    report: dict[str, Any] = {
        "model": budget.model,
        "tokenizer": budget.tokenizer,
        "exact": budget.exact,
        "label": budget.label,
        "total": budget.count(sp.prompt_ready),
        "sections": sections,
        "excerpts": excerpts,
    }
    if settings is not None and (server := server_token_count(settings, sp.prompt_ready)) is not None:
        report["server"] = {
            "total": server,
            "exact": True,
            "label": f"exact for {settings.send.model} (the server's /tokenize)",
        }
    if sp.answer is not None and sp.answer.usage.input_tokens:
        report["sent"] = {
            "total": sp.answer.usage.input_tokens,
            "exact": True,
            "label": "exact: the prompt tokens the server reported for the sent request",
        }
    return report


def format_breakdown(report: dict[str, Any]) -> str:
    """The breakdown as aligned text (for `run --tokens` and `trace`)."""
    lines = [f"tokens: {report['total']} ({report['label']})"]
    for extra in ("server", "sent"):
        if extra in report:
            lines.append(f"  {report[extra]['total']} ({report[extra]['label']})")
    lines += [f"  {s['section']:18s} {s['tokens']:7d}" for s in report["sections"]]
    lines += [f"    {e['tokens']:7d}  {e['chunk']}" for e in report["excerpts"]]
    return "\n".join(lines)

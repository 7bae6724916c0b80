"""Retrieval tools behind one interface: a project's index, or a web-search server.

Every tool answers the run's query pieces with a ranked list of `Chunk`s that carry where they came
from (a project's file path and sha256, or a web page's URL and the sha256 of its text), so every
result is fenced and cited by the Prompt Builder, and judged by A3, like any excerpt. When a run
uses several tools (more projects, the web), their ranked lists are fused by reciprocal rank into
one candidate list: the orchestration spec's combined branch.

The web-search tool speaks SearxNG's JSON API (`GET /search?q=...&format=json`, answering
`{"results": [{"url", "title", "content", "engine", ...}]}`); it is off by default, asks only the
server the user configured, and a failure of it is recorded and leaves the other tools' results.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Protocol

from ragstream.errors import RetrievalError
from ragstream.retrieval.fusion import RankedList, rrf_fuse
from ragstream.retrieval.search import Query
from ragstream.settings import WebSearchSettings
from ragstream.state import Chunk, Span
from ragstream.text.chunk_ids import chunk_id

_ID_UNSAFE = re.compile(r"[\[\]\s\"]")
_QUERY_CHARS = 400  # a search engine's query, not a document


@dataclass
class ToolRun:
    """One tool's answer: its ranked chunks, and a failure (the chunks are then empty)."""

    name: str
    chunks: list[Chunk] = field(default_factory=list)
    failure: str = ""


class Tool(Protocol):
    name: str

    def search(self, pieces: list[Query], limit: int) -> ToolRun: ...


class WebSearchTool:
    """A SearxNG server's JSON results as chunks (title and snippet as the text, the URL as the source)."""

    name = "web"

    def __init__(self, settings: WebSearchSettings) -> None:
        if not settings.url:
            raise RetrievalError("web search is enabled but no server is configured: set tools.web_search.url")
        self.settings = settings
        self.url = settings.url

    def search(self, pieces: list[Query], limit: int) -> ToolRun:
        query = " ".join(" ".join(p.text for p in pieces).split())[:_QUERY_CHARS]
        url = f"{self.url.rstrip('/')}/search?" + urllib.parse.urlencode({"q": query, "format": "json"})
        try:
            with urllib.request.urlopen(url, timeout=self.settings.timeout_s) as response:  # noqa: S310 - the user's server
                results = json.loads(response.read().decode("utf-8")).get("results", [])
        except (OSError, ValueError, AttributeError) as exc:
            return ToolRun(self.name, failure=f"{type(exc).__name__}: {exc}")
        chunks: list[Chunk] = []
        for rank, item in enumerate(r for r in results if isinstance(r, dict) and r.get("url")):
            if len(chunks) >= min(limit, self.settings.max_results):
                break
            chunks.append(web_chunk(item, rank))
        return ToolRun(self.name, chunks)


def web_chunk(item: dict, rank: int) -> Chunk:
    """A search result as a chunk whose id cites like a document's (`source@sha10#n`)."""
    text = "\n".join(
        part for part in (str(item.get("title") or "").strip(), str(item.get("content") or "").strip()) if part
    )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    source = _ID_UNSAFE.sub("", str(item["url"]))[:200]
    return Chunk(
        id=chunk_id(source, digest, rank),
        source_path=source,
        sha256=digest,
        chunk_index=rank,
        text=text,
        span=Span(start=0, end=len(text)),
        metadata={
            "kind": "web",
            "tool": "web",
            "title": str(item.get("title") or ""),
            "engine": str(item.get("engine") or ""),
        },
        scores={"web_rank": float(rank + 1)},
    )


def fuse(runs: list[ToolRun], rrf_k: float, limit: int) -> list[Chunk]:
    """The tools' ranked lists fused by reciprocal rank (the spec's combined branch), best first."""
    by_id: dict[str, Chunk] = {}
    lists = []
    for run in runs:
        for chunk in run.chunks:
            by_id.setdefault(chunk.id, chunk)
        lists.append(RankedList(run.name, [(c.id, 1.0 / (i + 1)) for i, c in enumerate(run.chunks)]))
    fused = rrf_fuse(lists, rrf_k)[:limit]
    return [
        by_id[item.chunk_id].model_copy(update={"scores": {**by_id[item.chunk_id].scores, "tools_fused": item.score}})
        for item in fused
    ]

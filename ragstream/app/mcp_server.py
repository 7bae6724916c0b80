"""`ragstream mcp`: RAGstream as a Model Context Protocol server over stdio, for local assistants.

Built on the official MCP Python SDK (`MCPServer`). Three tools, each a thin door onto what the CLI
runs: list the projects, search one (excerpts with source, lines and chunk id), and build a
SuperPrompt for a prompt and project (the final prompt in a chosen style, with its excerpts). A
prompt is secret-scanned like everywhere else: what comes back says what was redacted. Nothing is
printed to stdout but the protocol; logs go to stderr.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from importlib.metadata import version
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ragstream.errors import RagstreamError
from ragstream.settings import Settings

T = TypeVar("T")

INSTRUCTIONS = (
    "RAGstream grounds a prompt in the user's own documents. Call list_projects to see the projects, "
    "search_project for excerpts (each with its source file, line range and chunk id), and build_superprompt "
    "to turn a prompt into a complete, grounded prompt whose excerpts are fenced and cited by chunk id."
)


def _excerpt(
    chunk_id: str, source: str, text: str, metadata: dict[str, Any], score: float | None = None
) -> dict[str, Any]:
    lines = (metadata.get("line_start"), metadata.get("line_end"))
    found: dict[str, Any] = {
        "chunk": chunk_id,
        "source": source,
        "lines": list(lines) if all(isinstance(n, int) for n in lines) else None,
        "text": text,
    }
    if score is not None:
        found["score"] = round(score, 4)
    return found


def _clear_errors(tool: Callable[..., T]) -> Callable[..., T]:
    """RAGstream's typed errors reach the host as the tool's error message (what to do), not as a crash."""

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return tool(*args, **kwargs)
        except RagstreamError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def _tool(server: MCPServer) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Register a tool with clear errors; its description is its docstring without the source's indentation
    (the SDK takes `__doc__` as it is, so a host would show every continuation line indented)."""

    def register(tool: Callable[..., T]) -> Callable[..., T]:
        return server.tool(description=inspect.cleandoc(tool.__doc__ or ""))(_clear_errors(tool))

    return register


def build_server(settings: Settings) -> MCPServer:
    """The server and its tools, over one data root (the stdio host starts one per session)."""
    server = MCPServer("ragstream", instructions=INSTRUCTIONS, version=version("ragstream"))

    @_tool(server)
    def list_projects() -> list[dict[str, Any]]:
        """The projects under the data root: files and chunks indexed, and how many secrets were redacted."""
        from ragstream.app.workspace import Workspace

        return [
            {
                "project": project["project"],
                "ingested": project["ingested"],
                "files": len(project["files"]),
                "chunks": project["chunks"],
                "secrets_redacted": len(project["secrets"]),
            }
            for project in Workspace(settings).projects()
        ]

    @_tool(server)
    def search_project(project: str, query: str, top_k: int = 8) -> list[dict[str, Any]]:
        """Excerpts of a project's documents for a query, best first: chunk id, source path, line range
        (null for HTML and PDF), fused retrieval score and text (secrets were redacted at ingestion)."""
        from ragstream.retrieval.langchain_retriever import RagstreamRetriever

        retriever = RagstreamRetriever(project=project, top_k=max(1, min(top_k, 50)), settings=settings)
        return [
            _excerpt(d.metadata["chunk_id"], d.metadata["source"], d.page_content, d.metadata, d.metadata.get("score"))
            for d in retriever.invoke(query)
        ]

    @_tool(server)
    def build_superprompt(prompt: str, project: str, style: str = "markdown") -> dict[str, Any]:
        """Run the whole pipeline on a prompt over a project and return the final prompt (style: markdown,
        xml, json or plain), the excerpts it holds, its checkpoint thread and any secrets redacted from the prompt."""
        from ragstream.app.session import RunSession
        from ragstream.app.workspace import Workspace
        from ragstream.rendering.parts import prompt_parts
        from ragstream.rendering.styles import export_prompt

        ctl = RunSession(Workspace(settings))
        sp = ctl.run_full_pipeline(prompt, project=project, pause_after="none").state
        parts = prompt_parts(sp)
        return {
            "prompt": export_prompt(sp, style),
            "style": style,
            "thread": ctl.thread_id,
            "excerpts": [
                {"chunk": e.chunk, "source": e.source, "lines": e.lines, "text": e.text} for e in parts.excerpts
            ],
            "secrets_redacted": [f.to_dict() for f in ctl.prompt_secrets],
        }

    return server


def serve(settings: Settings) -> None:
    build_server(settings).run("stdio")

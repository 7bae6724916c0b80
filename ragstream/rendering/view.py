"""The one renderer of `prompt_ready`: what the SuperPrompt would send, at any stage.

Before the Prompt Builder runs it shows the shaped prompt plus whatever context the latest stage
produced; once built it is the Markdown style of the prompt's parts (rendering/parts.py), exactly the
final prompt the LLM receives. Deterministic: the same SuperPrompt always renders to the same text.
"""

from __future__ import annotations

from ragstream.rendering.ask import PREVIEW_CHARS, render_ask, render_format
from ragstream.rendering.parts import prompt_parts
from ragstream.rendering.styles import markdown, render_condensed
from ragstream.state import Stage, SuperPrompt
from ragstream.text.fences import escape_attr


def render_system(sp: SuperPrompt) -> str:
    return f"## System\n{sp.body.system}" if sp.body.system else ""


def render_chunk_view(sp: SuperPrompt) -> str:
    """A short listing of the chunks the latest retrieval-side stage selected."""
    view = sp.current_view()
    if view is None:
        return ""
    stage, ids = view
    chunks = sp.chunk_by_id()
    lines = [f"## Retrieved context ({stage}: {len(ids)} chunks)"]
    for cid in ids:
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        preview = " ".join(chunk.text.split())[:PREVIEW_CHARS]
        scores = ", ".join(f"{k}={v:.3f}" for k, v in sorted(chunk.scores.items()))
        lines.append(
            f"- [{escape_attr(cid)}] {escape_attr(chunk.source_path)} [{chunk.span.start}:{chunk.span.end}]"
            + (f" ({scores})" if scores else "")
            + f"\n  {preview}"
        )
    return "\n".join(lines)


def render_prompt(sp: SuperPrompt) -> str:
    if sp.stage is Stage.RAW:
        return ""
    if sp.stage is Stage.BUILD:
        return markdown(prompt_parts(sp)).text()
    spec = render_format(sp.extras.a5, bool(sp.s_ctx_md or sp.final_selection_ids)) if sp.extras.a5 is not None else ""
    parts = [render_system(sp), render_ask(sp), spec, render_condensed(sp.s_ctx_md) or render_chunk_view(sp)]
    return "\n\n".join(p for p in parts if p) + "\n"

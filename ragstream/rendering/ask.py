"""The one renderer of `prompt_ready`: what the SuperPrompt would send, at any stage.

Before the Prompt Builder runs it shows the shaped prompt plus whatever context the latest stage
produced; once built it is exactly the final prompt the LLM receives. Deterministic: the same
SuperPrompt always renders to the same text.
"""

from __future__ import annotations

from ragstream.state import A5Report, Stage, SuperPrompt
from ragstream.text.fences import CONDENSED_FENCE_INFO, CONVERSATION_FENCE_INFO, escape_attr, fence_block

_CONTENT_BLOCKS = (("task", "Task"), ("context", "Context"), ("purpose", "Purpose"), ("constraints", "Constraints"))
_LABELS = (
    ("audience", "Audience"),
    ("tone", "Tone"),
    ("depth", "Depth"),
    ("confidence", "Confidence"),
    ("format", "Format"),
)
_PREVIEW_CHARS = 240
CITE_RULE = "Cite the excerpt ids you rely on in square brackets."  # A5's rule; dropped when nothing is cited


def render_condensed(sp: SuperPrompt) -> str:
    """The condensed context is document-derived text: fenced like the excerpts it came from."""
    return f"## Condensed context\n{fence_block(CONDENSED_FENCE_INFO, sp.S_CTX_MD)}" if sp.S_CTX_MD else ""


def normalized_ask(sp: SuperPrompt) -> str:
    """The ask that rerankers, the NLI gate and the condenser compare chunks with: task, then purpose."""
    return "\n".join(t for t in (sp.body.task, sp.body.purpose) if t)


def render_system(sp: SuperPrompt) -> str:
    return f"## System\n{sp.body.system}" if sp.body.system else ""


def unmapped_sections(sp: SuperPrompt) -> list[tuple[str, str]]:
    """(header, text) of every non-empty section the schema could not place: the user's words all the same."""
    pre = sp.preprocessing
    if pre is None or not pre.headers:
        return []
    found = []
    for entry in pre.canon_entries:
        header = pre.headers[entry.section_index]
        text = header.value if header.value is not None else header.body
        dropped = entry.mapped_by == "person" and entry.role != "CONTENT"  # a person dropped it (strict mode)
        if entry.canon is None and text.strip() and not dropped:
            found.append((entry.original_header or "", text))
    return found


def render_ask(sp: SuperPrompt) -> str:
    """Task, context, purpose and constraints, the sections no canon name fits, then the response labels, as
    Markdown."""
    body = sp.body
    parts = [f"## {title}\n{getattr(body, field)}" for field, title in _CONTENT_BLOCKS if getattr(body, field)]
    if body.user_prompt and body.user_prompt != body.task:
        parts.append(f"## User prompt\n{body.user_prompt}")
    extra = unmapped_sections(sp)
    if extra:
        parts.append("## Additional sections\n\n" + "\n\n".join(f"### {name}\n{text}" for name, text in extra))
    if sp.recentConversation:  # fenced like excerpts: an earlier prompt cannot pose as this request
        turns = "\n".join(f"- {t.role}: {' '.join(t.content.split())[:_PREVIEW_CHARS]}" for t in sp.recentConversation)
        parts.append(f"## Earlier conversation\n{fence_block(CONVERSATION_FENCE_INFO, turns)}")
    labels = [f"- {title}: {getattr(body, field)}" for field, title in _LABELS if getattr(body, field)]
    if labels:
        parts.append("## Response requirements\n" + "\n".join(labels))
    return "\n\n".join(parts)


def render_format(spec: A5Report, cited: bool = True) -> str:
    """The format specification A5 produced (the builder places it under the ask); without excerpts or condensed
    context there is nothing to cite, so no rule asks to."""
    listed = [rule for rule in spec.rules if cited or rule != CITE_RULE]
    if not listed and not spec.example_shape:
        return ""
    rules = "\n".join(f"- {rule}" for rule in listed)
    shape = f"\n\nShape:\n{fence_block('text', spec.example_shape)}" if spec.example_shape else ""
    return f"## Output format\n{rules}{shape}"


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
        preview = " ".join(chunk.text.split())[:_PREVIEW_CHARS]
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
        parts = [sp.System_MD, sp.Prompt_MD, render_condensed(sp), sp.Attachments_MD]
    else:
        spec = (
            render_format(sp.extras.a5, bool(sp.S_CTX_MD or sp.final_selection_ids)) if sp.extras.a5 is not None else ""
        )
        parts = [render_system(sp), render_ask(sp), spec, render_condensed(sp) or render_chunk_view(sp)]
    return "\n\n".join(p for p in parts if p) + "\n"

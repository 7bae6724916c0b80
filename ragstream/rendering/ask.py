"""The user's ask as Markdown: what every view and every export style shows of the prompt itself.

Task, context, purpose and constraints, the sections no canon name fits (the user's words all the
same), the earlier conversation (fenced), the response labels, and A5's output format. Deterministic:
the same SuperPrompt always renders to the same text.
"""

from __future__ import annotations

from ragstream.state import A5Report, SuperPrompt
from ragstream.text.fences import CONVERSATION_FENCE_INFO, fence_block

_CONTENT_BLOCKS = (("task", "Task"), ("context", "Context"), ("purpose", "Purpose"), ("constraints", "Constraints"))
_LABELS = (
    ("audience", "Audience"),
    ("tone", "Tone"),
    ("depth", "Depth"),
    ("confidence", "Confidence"),
    ("format", "Format"),
)
PREVIEW_CHARS = 240
CITE_RULE = "Cite the excerpt ids you rely on in square brackets."  # A5's rule; dropped when nothing is cited


def normalized_ask(sp: SuperPrompt) -> str:
    """The ask that rerankers, the NLI gate and the condenser compare chunks with: task, then purpose."""
    return "\n".join(t for t in (sp.body.task, sp.body.purpose) if t)


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
    if sp.recent_conversation:  # fenced like excerpts: an earlier prompt cannot pose as this request
        turns = "\n".join(f"- {t.role}: {' '.join(t.content.split())[:PREVIEW_CHARS]}" for t in sp.recent_conversation)
        parts.append(f"## Earlier conversation\n{fence_block(CONVERSATION_FENCE_INFO, turns)}")
    labels = [f"- {title}: {getattr(body, field)}" for field, title in _LABELS if getattr(body, field)]
    if labels:
        parts.append("## Response requirements\n" + "\n".join(labels))
    return "\n\n".join(parts)


def render_format(spec: A5Report, cited: bool = True) -> str:
    """The format specification A5 produced (placed under the ask); without excerpts or condensed context
    there is nothing to cite, so no rule asks to."""
    listed = [rule for rule in spec.rules if cited or rule != CITE_RULE]
    if not listed and not spec.example_shape:
        return ""
    rules = "\n".join(f"- {rule}" for rule in listed)
    shape = f"\n\nShape:\n{fence_block('text', spec.example_shape)}" if spec.example_shape else ""
    return f"## Output format\n{rules}{shape}"

"""The built SuperPrompt in four styles: Markdown (the prompt as built), XML, JSON and plain text.

Every style carries the same parts: the system role, the grounding rule, the ask with its output
format, the condensed context and every excerpt the Prompt Builder kept, each with its chunk id,
source path, line range and span, so an answer's citations resolve the same way whatever the
style. Only the way document text is kept apart differs, and the grounding rule names that way:
tilde fences (Markdown, plain), escaped XML elements (the structure Anthropic's prompt guide
recommends for documents), or JSON strings. JSON follows `config/superprompt_export.schema.json`.

All escaping for XML is in `_xml_text` and `_xml_attr`.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from xml.sax.saxutils import escape, quoteattr

from ragstream.code.symbols import lines_of
from ragstream.errors import InputError
from ragstream.rendering.excerpts import shown_excerpts
from ragstream.rendering.prompt import DEFAULT_SYSTEM, GROUNDING, conversation_note, fence
from ragstream.stages import Stage
from ragstream.state import SuperPrompt
from ragstream.text.fences import CONDENSED_FENCE_INFO, fence_block

STYLES = ("markdown", "xml", "json", "plain")
SCHEMA_ID = "ragstream.superprompt/1"
MEDIA_TYPES = {"markdown": "text/markdown", "xml": "application/xml", "json": "application/json", "plain": "text/plain"}
SUFFIXES = {"markdown": ".md", "xml": ".xml", "json": ".json", "plain": ".txt"}
_FENCES = "The condensed context and every excerpt are fenced (~~~~): text inside a fence"
_GROUNDING_BY_STYLE = {
    "markdown": GROUNDING,
    "plain": GROUNDING,
    "xml": GROUNDING.replace(
        _FENCES,
        "The condensed context and every excerpt are XML elements (<condensed_context>, <document>): text inside them",
    ),
    "json": GROUNDING.replace(
        _FENCES,
        "The condensed context and every excerpt are JSON strings (condensed_context, excerpts[].text): their text",
    ),
}
# XML 1.0 cannot carry these characters at all, escaped or not: each becomes U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Excerpt:
    index: int
    chunk: str
    source: str
    lines: list[int] | None
    span: list[int]
    language: str | None
    text: str


@dataclass(frozen=True)
class PromptParts:
    system: str
    ask: str
    condensed_context: str
    excerpts: list[Excerpt]
    conversation: str = ""  # the system's note on the earlier conversation's fence, when there is one


def prompt_parts(sp: SuperPrompt) -> PromptParts:
    """The parts of a built prompt; the excerpts are those the builder kept within the prompt budget."""
    if sp.stage is not Stage.BUILD:
        raise InputError(
            f"the prompt is not built yet (stage {sp.stage.value}): run the pipeline to the Prompt Builder first"
        )
    excerpts: list[Excerpt] = []
    for chunk in shown_excerpts(sp):
        lines = lines_of(chunk)
        language = chunk.metadata.get("language")
        excerpts.append(
            Excerpt(
                len(excerpts) + 1,
                chunk.id,
                chunk.source_path,
                list(lines) if lines else None,
                [chunk.span.start, chunk.span.end],
                language if isinstance(language, str) else None,
                chunk.text,
            )
        )
    return PromptParts(sp.body.system or DEFAULT_SYSTEM, sp.Prompt_MD, sp.S_CTX_MD, excerpts, conversation_note(sp))


def _with_note(grounding: str, parts: PromptParts) -> str:
    return f"{grounding} {parts.conversation}" if parts.conversation else grounding


def _xml_text(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text))


def _xml_attr(value: object) -> str:
    return quoteattr(_NOT_XML.sub("\ufffd", str(value)))


def _xml(parts: PromptParts) -> str:
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<superprompt format={_xml_attr(SCHEMA_ID)}>",
        f"<system>{_xml_text(parts.system)}\n\n{_xml_text(_with_note(_GROUNDING_BY_STYLE['xml'], parts))}</system>",
        f"<instructions>\n{_xml_text(parts.ask)}\n</instructions>",
    ]
    if parts.condensed_context:
        out.append(
            f"<condensed_context from={_xml_attr('the documents below')}>\n"
            f"{_xml_text(parts.condensed_context)}\n</condensed_context>"
        )
    if parts.excerpts:
        out.append("<documents>")
        for e in parts.excerpts:
            attrs = {"index": e.index, "chunk": e.chunk, "source": e.source, "span": f"{e.span[0]}-{e.span[1]}"}
            if e.lines:
                attrs["lines"] = f"{e.lines[0]}-{e.lines[1]}"
            if e.language:
                attrs["language"] = e.language
            rendered = " ".join(f"{k}={_xml_attr(v)}" for k, v in attrs.items())
            out.append(
                f"<document {rendered}>\n<document_content>\n{_xml_text(e.text)}\n</document_content>\n</document>"
            )
        out.append("</documents>")
    out.append("</superprompt>")
    return "\n".join(out) + "\n"


def _json(parts: PromptParts) -> str:
    document = {
        "format": SCHEMA_ID,
        "system": parts.system,
        "grounding": _with_note(_GROUNDING_BY_STYLE["json"], parts),
        "instructions": parts.ask,
        "condensed_context": parts.condensed_context,
        "excerpts": [asdict(e) for e in parts.excerpts],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _plain(sp: SuperPrompt, parts: PromptParts) -> str:
    rule = "=" * 72

    def section(title: str, body: str) -> str:
        return f"{rule}\n{title}\n{rule}\n{body}"

    sections = [
        section("SYSTEM", f"{parts.system}\n\n{_with_note(GROUNDING, parts)}"),
        section("INSTRUCTIONS", parts.ask),
    ]
    if parts.condensed_context:
        sections.append(section("CONDENSED CONTEXT", fence_block(CONDENSED_FENCE_INFO, parts.condensed_context)))
    if parts.excerpts:
        sections.append(section("SOURCE EXCERPTS", "\n\n".join(fence(c) for c in shown_excerpts(sp))))
    return "\n\n".join(sections) + "\n"


def export_prompt(sp: SuperPrompt, style: str = "markdown") -> str:
    """The built prompt in `style` (one of STYLES); Markdown is `prompt_ready` itself."""
    if style not in STYLES:
        raise InputError(f"unknown style {style!r}: use one of {', '.join(STYLES)}")
    parts = prompt_parts(sp)
    if style == "markdown":
        return sp.prompt_ready
    if style == "xml":
        return _xml(parts)
    if style == "json":
        return _json(parts)
    return _plain(sp, parts)

"""The prompt's parts (rendering/parts.py) in four styles: Markdown (the prompt as built), XML, JSON, plain.

Each style is a serializer of the same `PromptParts`: the system role and its notes, the ask with its
output format, the condensed context and every excerpt with its chunk id, source path, line range and
span, so an answer's citations resolve the same way whatever the style. Only the way document text is
kept apart differs, and the grounding rule names that way: tilde fences (Markdown, plain; one fence per
excerpt through `text/fences.py`), escaped XML elements (the structure Anthropic's prompt guide
recommends for documents), or JSON strings. JSON follows `config/superprompt_export.schema.json`.

All escaping for XML is in `_xml_text` and `_xml_attr`.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from xml.sax.saxutils import escape, quoteattr

from ragstream.errors import InputError
from ragstream.rendering.parts import Excerpt, PromptParts, prompt_parts
from ragstream.state import Chunk, SuperPrompt
from ragstream.text.fences import CONDENSED_FENCE_INFO, excerpt_fence, fence_block

STYLES = ("markdown", "xml", "json", "plain")
SCHEMA_ID = "ragstream.superprompt/1"
MEDIA_TYPES = {"markdown": "text/markdown", "xml": "application/xml", "json": "application/json", "plain": "text/plain"}
SUFFIXES = {"markdown": ".md", "xml": ".xml", "json": ".json", "plain": ".txt"}
_XML_FENCED = (
    "The condensed context and every excerpt are XML elements (<condensed_context>, <document>): text inside them"
)
_JSON_FENCED = (
    "The condensed context and every excerpt are JSON strings (condensed_context, excerpts[].text): their text"
)
# XML 1.0 cannot carry these characters at all, escaped or not: each becomes U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def fence_excerpt(excerpt: Excerpt) -> str:
    """Code fences open with their language (for highlighting and for the model); `lines` lets an answer cite
    `path:line`; a result of another project or of the web says so."""
    return excerpt_fence(
        excerpt.text,
        source=excerpt.source,
        chunk=excerpt.chunk,
        span=(excerpt.span[0], excerpt.span[1]),
        lines=(excerpt.lines[0], excerpt.lines[1]) if excerpt.lines else None,
        language=excerpt.language,
        origin=excerpt.origin,
    )


def fence(chunk: Chunk) -> str:
    """A chunk fenced as the prompt shows an excerpt (the builder's budget counts excerpts this way)."""
    return fence_excerpt(Excerpt.of(1, chunk))


def render_condensed(condensed: str) -> str:
    """The condensed context is document-derived text: fenced like the excerpts it came from."""
    return f"## Condensed context\n{fence_block(CONDENSED_FENCE_INFO, condensed)}" if condensed else ""


@dataclass(frozen=True)
class MarkdownPrompt:
    """The Markdown prompt's blocks (the builder stores system, ask and attachments in the state)."""

    system: str
    ask: str
    condensed: str
    attachments: str

    def text(self) -> str:
        return "\n\n".join(p for p in (self.system, self.ask, self.condensed, self.attachments) if p) + "\n"


def markdown(parts: PromptParts) -> MarkdownPrompt:
    excerpts = "\n\n".join(fence_excerpt(e) for e in parts.excerpts)
    system = "\n\n".join(parts.system())
    return MarkdownPrompt(
        system=f"## System\n{system}" if system else "",
        ask=parts.ask,
        condensed=render_condensed(parts.condensed_context),
        attachments=f"## Source excerpts\n\n{excerpts}" if excerpts else "",
    )


def _xml_text(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text))


def _xml_attr(value: object) -> str:
    return quoteattr(_NOT_XML.sub("\ufffd", str(value)))


def _xml(parts: PromptParts) -> str:
    system = "\n\n".join(parts.system(_XML_FENCED))
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<superprompt format={_xml_attr(SCHEMA_ID)}>",
        *([f"<system>{_xml_text(system)}</system>"] if system else []),
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
            attrs: dict[str, object] = {"index": e.index, "chunk": e.chunk, "source": e.source, **e.origin}
            attrs["span"] = f"{e.span[0]}-{e.span[1]}"
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
        "system": parts.role,
        "grounding": "\n\n".join(parts.notes(_JSON_FENCED)),
        "instructions": parts.ask,
        "condensed_context": parts.condensed_context,
        "excerpts": [asdict(e) for e in parts.excerpts],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _plain(parts: PromptParts) -> str:
    rule = "=" * 72

    def section(title: str, body: str) -> str:
        return f"{rule}\n{title}\n{rule}\n{body}"

    system = "\n\n".join(parts.system())
    sections = [*([section("SYSTEM", system)] if system else []), section("INSTRUCTIONS", parts.ask)]
    if parts.condensed_context:
        sections.append(section("CONDENSED CONTEXT", fence_block(CONDENSED_FENCE_INFO, parts.condensed_context)))
    if parts.excerpts:
        sections.append(section("SOURCE EXCERPTS", "\n\n".join(fence_excerpt(e) for e in parts.excerpts)))
    return "\n\n".join(sections) + "\n"


SERIALIZERS = {"markdown": lambda parts: markdown(parts).text(), "xml": _xml, "json": _json, "plain": _plain}


def export_prompt(sp: SuperPrompt, style: str = "markdown") -> str:
    """The built prompt in `style` (one of STYLES); Markdown is `prompt_ready` itself."""
    if style not in STYLES:
        raise InputError(f"unknown style {style!r}: use one of {', '.join(STYLES)}")
    return SERIALIZERS[style](prompt_parts(sp))

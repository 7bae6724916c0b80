"""A5 Format Enforcer: the requested format's kind, its sections and an example shape, as rules.

It only writes its report (`extras.a5`); the chunk selection and s_ctx_md are never touched. The
kind comes from the agent (offline: documented keyword rules); when the format names no known kind,
the kind is `unknown` and no template rule is added, so nothing contradicts the user's words.
Section names the user listed explicitly (bullets, numbered lines, headings, or "sections: a, b")
are read deterministically; otherwise the agent's sections are used only when the requested
format itself names them, so no section is invented.
"""

from __future__ import annotations

import re

from ragstream.llm.providers.keyword_rules import naming_cues
from ragstream.llm.runner import FELL_BACK, AgentRunner
from ragstream.rendering.ask import CITE_RULE
from ragstream.state import A5Report, LLMOutcomes, PromptBody
from ragstream.text.phrases import phrase

AGENT = "A5"
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#{1,6})\s+(.+?)\s*$", re.MULTILINE)
_SECTIONS_LINE = re.compile(r"sections?\s*[:=]\s*(.+)", re.IGNORECASE)
_MAX_SECTION_WORDS = 6

EXAMPLES = {
    "markdown": "## <Section>\n<two to four sentences>\n\n## <Section>\n- <point>",
    "bullet_list": "- <point>\n- <next point>",  # a shape, not a count: the user's words say how many
    "table": "| <column> | <column> |\n|---|---|\n| <value> | <value> |",
    "json": '{"<key>": "<value>"}',
    "code": "```<language>\n<code>\n```",
    "prose": "<paragraph>\n\n<paragraph>",
    "email": "Subject: <subject>\n\nHi <name>,\n\n<body>\n\nBest regards,\n<sender>",
}
RULES = {
    "markdown": ["Answer in Markdown.", "Use a heading per section."],
    "bullet_list": ["Answer as a bullet list.", "One idea per bullet."],
    "table": ["Answer with a Markdown table.", "Put explanations after the table, not inside cells."],
    "json": ["Return one valid JSON object."],
    "code": ["Put the code in a fenced block with its language."],
    "prose": ["Answer in plain paragraphs."],
    "email": ["Write an email with a subject line, greeting and sign-off."],
}
# Rules that exclude everything else: only when the user's format says so ("code only", "just the JSON"),
# never when it asks for more than one thing ("numbered steps followed by one code snippet").
EXCLUSIVE_RULES = {
    "json": "No text before or after the JSON.",
    "code": "Explain only in code comments.",
    "prose": "No headings or lists.",
}
_EXCLUSIVE = re.compile(r"\b(?:only|just|nothing else|no other text)\b", re.IGNORECASE)
DEPTH_RULES = {
    "short": "Keep the answer under 150 words.",
    "detailed": "Cover the main points with examples; about 300 to 600 words.",
    "exhaustive": "Cover every relevant detail and edge case.",
}


def listed_sections(format_text: str) -> list[str]:
    match = _SECTIONS_LINE.search(format_text)
    if match:
        items = [s.strip(" .") for s in re.split(r"[,;]", match.group(1))]
    else:
        items = [m.group(1).strip(" .") for m in _LIST_ITEM.finditer(format_text)]
    return [s for s in items if s and len(s.split()) <= _MAX_SECTION_WORDS]


def _named_in(kind: str, requested: str, runner: AgentRunner, version: str) -> bool:
    """Whether the requested format's own words name this kind (a phrase of its documented keyword rule)."""
    cues = naming_cues(runner.factory.load_config(AGENT, version).output_schema["properties"]["kind"]).get(kind, [])
    return any(phrase(cue).search(requested) for cue in cues)


def enforce(body: PromptBody, runner: AgentRunner, version: str = "v1", depth_given: bool = True) -> A5Report:
    """Rules derived from what the user asked: the recognized kind of the requested format, its sections, the depth.

    The user's own words (format, depth, tone, audience) are already in the prompt verbatim, under
    "Response requirements"; A5 adds only what follows from them and never a rule for an unset field.
    The user's format wins: a kind a model chose that the format's words do not name adds no template
    rule, and a depth the user did not give (`depth_given` false: A2 inferred it) adds no length rule,
    a number of words nobody asked for.
    """
    kind, sections, source, llm = "unknown", listed_sections(body.format or ""), "no format requested", None
    if body.format:
        payload = {
            "format": body.format,
            "depth": body.depth or "",
            "audience": body.audience or "",
            "tone": body.tone or "",
        }
        call = runner.run(AGENT, payload, version)
        kind = call.output["kind"]
        requested = body.format.lower()
        if call.reply.provider != "local" or call.outcome == FELL_BACK:
            llm = LLMOutcomes.of([call])
        if call.reply.provider != "local" and kind != "unknown" and not _named_in(kind, requested, runner, version):
            call.output["reason"] = (
                f"the model chose {kind} ({call.output.get('reason') or 'no reason given'}); "
                "not applied: no word of the requested format names it"
            )
            kind = "unknown"
        sections = sections or [
            s
            for s in call.output.get("sections", [])
            if len(s.split()) <= _MAX_SECTION_WORDS
            and s.lower() in requested
            and s.lower().strip(" .") != requested.strip(" .")
        ]  # a named part of the request, never the request itself restated as one section
        source = f"{call.source}: {call.output.get('reason') or 'no reason given'}"
    rules = list(RULES.get(kind, []))
    if kind in EXCLUSIVE_RULES and _EXCLUSIVE.search(body.format or ""):
        rules.append(EXCLUSIVE_RULES[kind])
    if sections:
        rules.append("Use exactly these sections, in this order: " + ", ".join(sections) + ".")
    if depth_given and body.depth and body.depth.lower() in DEPTH_RULES:
        rules.append(DEPTH_RULES[body.depth.lower()])
    rules.append(CITE_RULE)
    return A5Report(
        kind=kind,
        sections=sections,
        requested=body.format or "",
        example_shape=EXAMPLES.get(kind, ""),
        rules=rules,
        source=source,
        llm=llm,
    )

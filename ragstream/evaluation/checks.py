"""What a final prompt must hold, as named checks: the case's fields (../shared/eval/README.md) and what every
final prompt owes its user.

Text is compared the README's way, whitespace collapsed, and also with Markdown's emphasis and code marks and
HTML comments removed and case ignored, since a phrase copied from a document reads the same whether or not the
prompt keeps its `**` (or its `<!-- ignore -->`, which no reader sees).
A failing check quotes the lines that failed, so a report shows why, not only that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragstream.evaluation.suite import Case
from ragstream.state import Chunk, SuperPrompt
from ragstream.text.chunk_ids import CITATION, source_of
from ragstream.text.fences import COMMONMARK_FENCE
from ragstream.text.phrases import phrase
from ragstream.text.rst import as_read

# Lines of a condensed section: "### Title" then "- line".
_SECTIONS = {"Facts": "facts", "Constraints": "constraints", "Open issues": "open_issues"}
_MARKS = re.compile(r"\*\*|__|`|<!--.*?-->", re.S)  # emphasis, code marks, HTML comments (never rendered)
_ROLE = re.compile(r"^(?:you are|act as|as an? )\b", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CHUNK_ATTR = re.compile(r'\bchunk="([^"]*)"')
LABELS = ("audience", "tone", "depth", "confidence")
# Judges condensed lines (text, cited ids) against the chunks they cite, given the prompt's lines: (ok, why not).
Support = Callable[[Sequence[tuple[str, list[str]]], Mapping[str, Chunk], Sequence[str]], list[tuple[bool, str]]]
# Every check a case can have (`--min check.NAME=...` names one).
CHECK_NAMES = (
    "expected_files",
    "expected_first",
    "key_facts",
    "key_facts_condensed",
    "condensed_must_contain",
    "system_must_contain",
    "must_contain",
    "must_not_contain",
    "not_covered_named",
    "nothing_cited",
    "no_documents",
    "user_lines_kept",
    "no_unasked_role",
    "no_unasked_label",
    "no_unasked_format",
    "fences_closed",
    "condensed_cited_shown",
    "no_repeated_line",
)


@dataclass
class Check:
    """One check of one case: whether it passed, what it found, the lines that failed. A `soft` check (the ideal,
    e.g. the answering file first) is reported but does not fail the case."""

    name: str
    passed: bool
    detail: str = ""
    lines: list[str] = field(default_factory=list)
    soft: bool = False
    wanted: int = 0  # for a check of phrases: how many it looks for (`lines` are the missing ones)

    def as_dict(self) -> dict[str, Any]:
        found = {"name": self.name, "passed": self.passed, "detail": self.detail, "lines": self.lines}
        return {**found, "soft": self.soft, **({"wanted": self.wanted} if self.wanted else {})}


def norm(text: str) -> str:
    return " ".join(_MARKS.sub("", text).split()).casefold()


def _scan(prompt: str) -> tuple[list[tuple[str, str | None]], str | None]:
    """Each line with the info string of the fence it sits in (None outside any fence; a fence's own opening and
    closing lines count as inside), and the opening line of a fence left open at the end (None when all close).
    The CommonMark way: only a run of the same character, at least as long and with nothing after it, closes."""
    rows: list[tuple[str, str | None]] = []
    run, info, opening = "", "", None
    for line in prompt.splitlines():
        match = COMMONMARK_FENCE.match(line)
        rest = line.strip()[len(match.group(1)) :].strip() if match else ""
        if opening is None:
            if match:
                run, info, opening = match.group(1), rest, line
            rows.append((line, info if match else None))
            continue
        rows.append((line, info))
        if match and match.group(1)[0] == run[0] and len(match.group(1)) >= len(run) and not rest:
            opening = None
    return rows, opening


def fenced_lines(prompt: str) -> list[tuple[str, str | None]]:
    return _scan(prompt)[0]


def unclosed_fence(prompt: str) -> str | None:
    return _scan(prompt)[1]


def blocks(prompt: str) -> dict[str, str]:
    """The prompt's "## title" blocks, found outside fences (an excerpt's own headings are not the prompt's)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line, fence in fenced_lines(prompt):
        if fence is None and line.startswith("## "):
            current = found.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {title: "\n".join(lines) for title, lines in found.items()}


def condensed_shown(prompt: str) -> str:
    """The condensed context as the final prompt shows it: the builder withdraws a line citing only chunks the
    prompt does not show, which `s_ctx_md` (A4's output) still holds, so a check on A4's text judged lines
    no user ever sees."""
    return "\n".join(line for line, fence in fenced_lines(prompt) if fence and fence.startswith("condensed-context"))


def condensed(text: str) -> dict[str, list[str]]:
    """The lines of a condensed context by section (facts, constraints, open_issues)."""
    sections: dict[str, list[str]] = {key: [] for key in _SECTIONS.values()}
    current = None
    for line in text.splitlines():
        if line.startswith("### "):
            current = _SECTIONS.get(line[4:].strip())
        elif line.startswith("- ") and current:
            sections[current].append(line)
    return sections


def shown_chunks(prompt: str) -> list[str]:
    """The chunk ids of the excerpts the prompt shows, in order (a merged excerpt names several)."""
    return [cid for attr in _CHUNK_ATTR.findall(prompt) for cid in attr.split()]


def excerpt_files(sp: SuperPrompt) -> list[str]:
    """The documents of the excerpts shown, in the prompt's order, each once."""
    return list(dict.fromkeys(source_of(cid) for cid in shown_chunks(sp.prompt_ready)))


def judge(
    case: Case, sp: SuperPrompt, format_cues: Mapping[str, Iterable[str]], supported: Support | None = None
) -> list[Check]:
    """Every check the case's fields ask for, then the universal ones. `format_cues` are A5's documented words per
    format kind (the words that ask for it); `supported` judges a condensed line against the chunk it cites."""
    checks: list[Check] = []
    fields = case.fields
    prompt = sp.prompt_ready
    context = condensed_shown(prompt)
    sections = condensed(context)
    files = excerpt_files(sp)
    expected = case.strings("expected_files")
    if expected:
        top = files[:5]
        need_all = bool(fields.get("require_all_expected"))
        hit = all(f in top for f in expected) if need_all else any(f in top for f in expected)
        checks.append(
            Check(
                "expected_files",
                hit,
                f"{'all' if need_all else 'one'} of {expected} among the first 5 excerpts' files: {top}",
            )
        )
        checks.append(Check("expected_first", bool(files) and files[0] in expected, f"first: {files[:1]}", soft=True))
    in_prompt = norm(context + "\n" + sp.attachments_md)
    _phrases(checks, "key_facts", case.strings("key_facts"), in_prompt, "in the condensed context or an excerpt")
    # The ideal: the answer in the condensed context itself, not only somewhere in an excerpt.
    _phrases(checks, "key_facts_condensed", case.strings("key_facts"), norm(context), "condensed", soft=True)
    _phrases(checks, "condensed_must_contain", case.strings("condensed_must_contain"), norm(context), "condensed")
    system = blocks(prompt).get("System", "")
    _phrases(checks, "system_must_contain", case.strings("system_must_contain"), norm(system), "in the System section")
    _phrases(checks, "must_contain", case.strings("must_contain"), norm(prompt), "in the prompt")
    unwanted = [t for t in case.strings("must_not_contain") if norm(t) in norm(prompt)]
    if "must_not_contain" in fields:
        checks.append(
            Check("must_not_contain", not unwanted, f"found {unwanted}" if unwanted else "none found", unwanted)
        )
    terms = case.strings("not_covered_terms")
    if terms:
        opens = [line for line in sections["open_issues"] if any(norm(t) in norm(line) for t in terms)]
        checks.append(
            Check(
                "not_covered_named",
                bool(opens),
                f"an Open issue names one of {terms}" if opens else f"no Open issue names any of {terms}",
                [] if opens else sections["open_issues"],
            )
        )
        if "expected_files" in fields and not expected:
            cited = [line for key in ("facts", "constraints") for line in sections[key] if CITATION.search(line)]
            checks.append(Check("nothing_cited", not cited, "no Facts/Constraints line cites an excerpt", cited))
    if fields.get("no_documents"):
        shown = shown_chunks(prompt)
        cited = [line for lines in sections.values() for line in lines if CITATION.search(line)]
        checks.append(
            Check(
                "no_documents",
                not shown and not cited,
                f"{len(shown)} excerpts, {len(cited)} cited condensed lines",
                [*shown, *cited],
            )
        )
    checks += universal(sp, format_cues, supported)
    return checks


def _phrases(checks: list[Check], name: str, wanted: list[str], where: str, place: str, soft: bool = False) -> None:
    if not wanted:
        return
    missing = [t for t in wanted if norm(t) not in where]
    found = len(wanted) - len(missing)
    checks.append(Check(name, not missing, f"{found}/{len(wanted)} {place}", missing, soft, len(wanted)))


def universal(
    sp: SuperPrompt, format_cues: Mapping[str, Iterable[str]], supported: Support | None = None
) -> list[Check]:
    """What every final prompt owes its user (the README's last paragraph)."""
    prompt, raw = sp.prompt_ready, norm(sp.raw_prompt)
    whole = norm(prompt)
    lost = [line.strip() for line in user_lines(sp.raw_prompt) if not _kept(line, whole)]
    checks = [Check("user_lines_kept", not lost, f"{len(lost)} of the user's lines not in the prompt", lost)]
    role = _role_line(blocks(prompt).get("System", ""))
    unasked_role = [role] if role and norm(role) not in raw else []
    checks.append(
        Check("no_unasked_role", not unasked_role, "the System section's role line is the user's", unasked_role)
    )
    unasked = [
        f"{name}: {value}" for name in LABELS if (value := getattr(sp.body, name)) and norm(str(value)) not in raw
    ]
    checks.append(Check("no_unasked_label", not unasked, "audience/tone/depth/confidence in the user's words", unasked))
    a5 = sp.extras.a5
    rules: list[str] = []
    if a5 is not None and a5.kind in format_cues and a5.rules:
        if not any(phrase(cue).search(sp.raw_prompt) for cue in format_cues[a5.kind]):
            rules = [f"{a5.kind}: {rule}" for rule in a5.rules if "cite" not in rule.lower()]
    checks.append(Check("no_unasked_format", not rules, "format rules the prompt's words ask for", rules))
    opening = unclosed_fence(prompt)
    checks.append(Check("fences_closed", opening is None, "every fence closes", [opening] if opening else []))
    checks.append(_cited(sp, supported))
    checks.append(_repeats(prompt, sp.raw_prompt))
    return checks


def user_lines(raw: str) -> list[str]:
    """The lines the user wrote. In a prompt that is one JSON object, the lines of its values: a key is a header
    (which the prompt may normalize, as a Markdown heading), and the quotes, commas and escapes around a value
    are JSON's syntax, not the user's words."""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.splitlines()
    if not isinstance(data, dict):
        return raw.splitlines()
    return [line for value in _values(data) for line in value.splitlines()]


def _values(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _values(item)]
    if isinstance(value, list):
        return [text for item in value for text in _values(item)]
    return [value if isinstance(value, str) else json.dumps(value)]


def _kept(line: str, prompt: str) -> bool:
    """A line of the user's is kept when it is in the prompt whole, or each of its sentences is (a role sentence
    moves to the System section, the ask to the Task); a heading may be normalized, so it is not required."""
    if not line.strip() or _HEADING.match(line) or norm(line) in prompt:
        return True
    return all(norm(sentence) in prompt for sentence in _SENTENCE_END.split(line.strip()))


def _role_line(system: str) -> str:
    first = next((line.strip() for line in system.splitlines() if line.strip()), "")
    return first if _ROLE.match(first) else ""


def _cited(sp: SuperPrompt, supported: Support | None) -> Check:
    """Every condensed line that cites a chunk cites one the prompt shows, and says what the excerpt showing that
    chunk says (the excerpt as shown: widened to whole sentences, A4 quotes a sentence a chunk's window cut)."""
    from ragstream.rendering.excerpts import shown_excerpts

    shown = set(shown_chunks(sp.prompt_ready))
    chunks = sp.chunk_by_id()
    chunks.update({cid: excerpt for excerpt in shown_excerpts(sp) for cid in excerpt.id.split()})
    failing: list[str] = []
    judged: list[tuple[str, list[str]]] = []
    lines: list[str] = []
    for line in condensed_shown(sp.prompt_ready).splitlines():
        cited = CITATION.findall(line)
        if not cited:
            continue
        if not set(cited) <= shown:
            failing.append(f"not shown: {line}")
            continue
        if any("language" in chunks[c].metadata for c in cited if c in chunks):
            continue  # a code reference names a definition of the chunk (path:lines), it does not quote it
        judged.append((" ".join(CITATION.sub("", line[2:] if line.startswith("- ") else line).split()), cited))
        lines.append(line)
    if supported is not None and judged:
        asks = [line for line in sp.raw_prompt.splitlines() if line.strip()]
        for line, (ok, reason) in zip(lines, supported(judged, chunks, asks), strict=True):
            if not ok:
                failing.append(f"not supported ({reason}): {line}")
    how = "cited excerpt shown" + (" and the line supported by it" if supported is not None else "")
    return Check("condensed_cited_shown", not failing, how, failing)


# A line A4 names by the heading of its section ("`dev_addr`: Determines the address ..."): the name, then the words.
_NAMED_LINE = re.compile(r"`(?P<name>[^`]+)`: (?P<words>.+)", re.S)


def verbatim_support(
    lines: Sequence[tuple[str, list[str]]], chunks: Mapping[str, Chunk], asks: Sequence[str]
) -> list[tuple[bool, str]]:
    """The simple support check: the line's words are a cited chunk's; a line named by a heading, its words are
    a cited chunk's that holds that heading."""
    verdicts = []
    for text, ids in lines:
        cited = [as_read(chunks[c].text) for c in ids if c in chunks]  # a line quotes a chunk as it is read
        ok = any(norm(text) in norm(chunk) for chunk in cited)
        named = _NAMED_LINE.fullmatch(text)
        if not ok and named:
            heading = re.compile(rf"^[ \t]{{0,3}}#{{1,6}}[ \t]+`?{re.escape(named['name'])}`?[ \t#]*$", re.M)
            ok = any(heading.search(chunk) and norm(named["words"]) in norm(chunk) for chunk in cited)
        verdicts.append((ok, "" if ok else "its words are not in the cited excerpt"))
    return verdicts


def _repeats(prompt: str, raw: str) -> Check:
    """No line outside the excerpts' fences said twice (more often than the user wrote it), and no condensed line
    said again inside another (the same sentence quoted alone and with the one before it). Blank lines, headings
    and fence lines are structure, and an uncited condensed line is the pipeline's note ("none found"), not
    content: none of them counts."""
    counts: dict[str, int] = {}
    condensed: list[str] = []
    for line, fence in fenced_lines(prompt):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if fence is not None and not (fence.startswith("condensed-context") and CITATION.search(text)):
            continue
        if COMMONMARK_FENCE.match(line) or len(norm(text)) < 12:
            continue
        counts[norm(text)] = counts.get(norm(text), 0) + 1
        if fence is not None:
            condensed.append(norm(CITATION.sub("", text).lstrip("-* ")))
    own: dict[str, int] = {}
    for line in raw.splitlines():
        own[norm(line)] = own.get(norm(line), 0) + 1
    repeated = [text for text, n in counts.items() if n > max(1, own.get(text, 0))]
    repeated += [
        line
        for line in dict.fromkeys(condensed)
        if len(line) >= _QUOTED_AGAIN and any(line != other and line in other for other in condensed)
    ]
    return Check("no_repeated_line", not repeated, f"{len(repeated)} lines repeated", repeated)


_QUOTED_AGAIN = 40  # characters: a condensed line this long inside another is the same sentence quoted twice

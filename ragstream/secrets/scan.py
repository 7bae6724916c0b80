"""Secrets kept out of everything RAGstream stores or sends: found with detect-secrets, redacted in place.

Why detect-secrets (Yelp): it runs offline, is plugin-based (cloud keys, private keys, tokens of ~25
services, keyword assignments, high-entropy strings) with false-positive filters, reports a type and a
line for each finding, and needs no service. A document or prompt is scanned once, before it is
chunked, indexed, checkpointed, traced, remembered or sent, and each secret is replaced by
`[REDACTED: <type>]`; line numbers stay as they were (a redacted private-key block keeps its line
breaks), so citations still point at the right lines of the original file. Findings record the type
and line, never the value.

Cheap per file: detect-secrets costs about 2 ms a line and a second to import, so lines are first
screened (`candidate_lines`: what its plugins look for, loosely); only lines that pass are
given to it, and nothing is imported for a text with no such line. `bench/secret_scan.py` measures it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from ragstream.text.lines import LineIndex

if TYPE_CHECKING:
    from ragstream.settings import SecretsSettings

PRIVATE_KEY = "Private Key"
_TEMPLATES = (".example", ".sample", ".template", ".dist")
_PEM_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
# The screen: a line reaches detect-secrets only if it holds a run of 16+ token characters with a digit
# in it (keys, tokens, high-entropy strings: a random 20+ character token lacks a digit about once in a
# thousand), one of the keyword plugin's own words, a key header or credentials in a URL. Both patterns
# run once over the whole text (a per-line regex costs more than the scan it saves).
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/=_\-.~:]{16,}")
_DIGIT = re.compile(r"\d")
_CUE = re.compile(
    r"(?i:api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key"
    r"|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contrase)"
    r"|PRIVATE KEY|PuTTY-User-Key|://[^\s/:@]+:[^\s/@]+@"
)


def candidate_lines(text: str) -> list[int]:
    """The 1-based numbers of the lines the screen hands to detect-secrets."""
    starts = [m.start() for m in _TOKEN_RUN.finditer(text) if _DIGIT.search(m.group())]
    starts += [m.start() for m in _CUE.finditer(text)]
    if not starts:
        return []
    line_of = LineIndex(text).line_of
    return sorted({line_of(offset) for offset in starts})


@dataclass(frozen=True)
class Finding:
    """One secret: its type and 1-based line (the value is never kept)."""

    type: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "line": self.line}


@dataclass(frozen=True)
class Scanned:
    """A text with its secrets replaced, the findings, and how many of its non-blank lines (after
    redaction: a private-key block is one line) hold a redaction."""

    text: str
    findings: list[Finding]
    secret_lines: int
    lines: int

    @property
    def share(self) -> float:
        return self.secret_lines / self.lines if self.lines else 0.0


_MARKER = re.compile(r"\[REDACTED: ([^\]\n]+)\]")


def marker(secret_type: str) -> str:
    return f"[REDACTED: {secret_type}]"


def redacted_in(text: str) -> list[Finding]:
    """The redactions a text carries, by line: the same whether it was redacted now or by an earlier door."""
    return [Finding(m.group(1), text.count("\n", 0, m.start()) + 1) for m in _MARKER.finditer(text)]


def scan_prompt(text: str, settings: SecretsSettings) -> Scanned:
    """A prompt is scanned as Markdown (what people paste into it: config, code, notes)."""
    return scan(text, "prompt.md", settings)


def identity(settings: SecretsSettings) -> str:
    """What scanned the stored text; a change re-chunks every file (kept chunks were redacted differently)."""
    if not settings.scan:
        return "secrets-off"
    return f"detect-secrets-{version('detect-secrets')}:" + ",".join(sorted(settings.disabled_plugins))


def secret_file_rule(rel_path: str, settings: SecretsSettings) -> str | None:
    """The name pattern saying this file holds secrets by its nature (`.env`, key files), or None."""
    if not settings.scan:
        return None
    name = rel_path.rsplit("/", 1)[-1]
    if name.endswith(_TEMPLATES):  # `.env.example`: placeholders for people to copy, scanned like any file
        return None
    return next((p for p in settings.secret_files if fnmatch.fnmatchcase(name, p)), None)


@lru_cache(maxsize=1)
def _detector(disabled: tuple[str, ...]) -> tuple[Any, dict[str, list[re.Pattern[str]]]]:
    """detect-secrets' line scanner, configured once (its settings are process-wide), and each type's regexes."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import cache_bust, configure_settings_from_baseline

    classes: dict[str, type] = get_mapping_from_secret_type_to_class()
    cache_bust()
    configure_settings_from_baseline(
        {"plugins_used": [{"name": c.__name__} for c in classes.values() if c.__name__ not in disabled]}
    )
    denylists = {secret_type: list(getattr(cls, "denylist", ())) for secret_type, cls in classes.items()}
    return _process_line_based_plugins, denylists


def _spans(
    line: str, secret_type: str, value: str | None, denylists: dict[str, list[re.Pattern[str]]]
) -> list[tuple[int, int]]:
    """Where a finding sits in its line: the value, widened to the plugin's whole match when that match
    starts with it (a GitHub token's plugin reports only its prefix); the whole line when the value
    cannot be found."""
    values = []
    start = line.find(value) if value else -1
    while value and start >= 0:
        values.append((start, start + len(value)))
        start = line.find(value, start + 1)
    starts = {s for s, _ in values}
    spans = [m.span() for p in denylists.get(secret_type, []) for m in p.finditer(line) if m.start() in starts]
    spans = spans or values
    if not spans:
        stripped = len(line) - len(line.lstrip())
        spans.append((stripped, len(line)))
    return spans


def _redact_line(line: str, found: list[tuple[str, list[tuple[int, int]]]]) -> str:
    """Replace each finding's spans, merging overlaps; `found` is most specific first, and the most specific
    type starting a merged span names it."""
    marked = sorted((s, rank, e, t) for rank, (t, spans) in enumerate(found) for s, e in spans)
    merged: list[list[Any]] = []
    for start, _, end, secret_type in marked:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, secret_type])
    for start, end, secret_type in reversed(merged):
        line = line[:start] + marker(secret_type) + line[end:]
    return line


_GENERIC = ("Secret Keyword", "Base64 High Entropy String", "Hex High Entropy String")


def scan(text: str, filename: str, settings: SecretsSettings) -> Scanned:
    """The text with every secret replaced by `[REDACTED: <type>]`, and the findings by line.

    `filename` lets detect-secrets read the text as the kind of file it is (YAML, Python, ...).
    With scanning off the text comes back as it is.
    """
    if not settings.scan:
        return Scanned(text, [], 0, sum(1 for line in text.split("\n") if line.strip()))
    findings: list[Finding] = []

    def blank_block(match: re.Match[str]) -> str:
        first = text.count("\n", 0, match.start()) + 1
        breaks = match.group().count("\n")
        findings.append(Finding(PRIVATE_KEY, first))
        return marker(PRIVATE_KEY) + "\n" * breaks

    if "PRIVATE KEY" in text:
        text = _PEM_BLOCK.sub(blank_block, text)
    lines = text.split("\n")
    candidates = [(n, lines[n - 1]) for n in candidate_lines(text)]
    if candidates:
        process, denylists = _detector(tuple(settings.disabled_plugins))
        by_line: dict[int, list[tuple[str, str | None]]] = {}
        for secret in process(candidates, filename):
            by_line.setdefault(secret.line_number, []).append((secret.type, secret.secret_value))
        for number, secrets in by_line.items():
            line = lines[number - 1]
            secrets.sort(key=lambda s: _GENERIC.index(s[0]) + 1 if s[0] in _GENERIC else 0)
            found = [(t, _spans(line, t, v, denylists)) for t, v in secrets]
            lines[number - 1] = _redact_line(line, found)
            types = list(dict.fromkeys(t for t, _ in secrets))
            specific = [t for t in types if t not in _GENERIC] or types  # a named type says more than "entropy"
            findings.extend(Finding(t, number) for t in specific)
        text = "\n".join(lines)
    findings.sort(key=lambda f: (f.line, f.type))
    kept = [line for line in lines if line.strip()]  # a key block counts as the one line it became
    return Scanned(text, findings, sum(1 for line in kept if _MARKER.search(line)), len(kept))


def name_skip_reason(rule: str) -> str:
    return f"holds secrets by its name (matches '{rule}')"


def share_skip_reason(scanned: Scanned) -> str:
    return f"mostly secrets ({scanned.secret_lines} of {scanned.lines} lines: {describe(scanned.findings)})"


def is_secret_skip(reason: str) -> bool:
    """Whether a skip reason is one of the two above (listings show these beside the findings)."""
    return reason.startswith(("holds secrets by its name", "mostly secrets ("))


def describe(findings: list[Finding]) -> str:
    """`AWS Access Key (line 2), Private Key (line 6)`: for warnings and listings."""
    return ", ".join(f"{f.type} (line {f.line})" for f in findings)

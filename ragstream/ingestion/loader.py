"""Document loaders: file bytes to text, or a reason the file is skipped (never a crash).

Spans of text files refer to the decoded file text; spans of HTML and PDF files refer to the
extracted text, since their bytes are markup or binary.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path

from ragstream.text.fences import breaking_characters

TEXT_SUFFIXES = frozenset(
    ".txt .md .markdown .rst .json .jsonl .py .pyi .ipynb .js .jsx .mjs .cjs .ts .mts .cts .tsx .java .kt .scala .kts "
    ".c .h .cc .cpp .cxx .hh .hpp "
    ".cs .go .rs .rb .php .swift .m .sh .bash .zsh .ps1 .sql .r .jl .lua .pl .toml .yaml .yml .ini .cfg .conf "
    ".csv .tsv .tex .bib .xml .css .scss .org .adoc .proto .graphql .dockerfile .env.example .gitignore".split()
)
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
SNIFF_BYTES = 8192
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


class SkipFile(Exception):
    """The file cannot be ingested; `reason` says why, for the ingestion stats."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class LoadedDocument:
    text: str
    title: str
    kind: str
    sha256: str


class _HTMLText(HTMLParser):
    """Visible text of an HTML page; script and style contents are dropped.

    Block elements start a new line and table cells are separated, so `<td>Name</td><td>Value</td>`
    reads "Name | Value" and never "NameValue".
    """

    _BLOCK = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "pre",
        "ul",
        "ol",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "caption",
        "blockquote",
        "dl",
        "dt",
        "dd",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "figure",
        "figcaption",
        "hr",
        "form",
        "fieldset",
        "details",
        "summary",
        "address",
    }
    _CELL = {"td", "th"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self._BLOCK:
            self.parts.append("\n")
        elif tag in self._CELL:
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript") and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def _decode(data: bytes) -> str:
    if b"\x00" in data[:SNIFF_BYTES]:
        raise SkipFile("binary file (NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise SkipFile("binary file (NUL bytes)")
    return text


def _load_html(data: bytes) -> tuple[str, str]:
    parser = _HTMLText()
    parser.feed(_decode(data))
    parser.close()
    lines = (" ".join(line.split()).strip(" |") for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line), " ".join(parser.title.split())


def _load_pdf(data: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise SkipFile(f"unreadable PDF ({type(exc).__name__})") from None
    return "\n\n".join(p.strip() for p in pages if p.strip())


def unsafe_name_reason(name: str) -> str | None:
    """Why a file name is refused: characters that could end a line or hide text (a newline, U+2028,
    a bidi override) have no place in a name that is printed in fences, listings and citations."""
    bad = sorted({f"U+{ord(ch):04X}" for ch in breaking_characters(name)})
    return f"file name holds control characters ({', '.join(bad)}): rename the file" if bad else None


def load_document(path: Path, max_bytes: int) -> LoadedDocument:
    """Read one file into text; raises SkipFile with a reason for anything not ingestible."""
    suffix = path.suffix.lower()
    if suffix not in TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES:
        raise SkipFile(f"unsupported file type '{suffix or path.name}'")
    size = path.stat().st_size
    if size > max_bytes:
        raise SkipFile(f"too large ({size:,} bytes > {max_bytes:,})")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkipFile(f"unreadable ({exc.strerror})") from None
    if suffix in PDF_SUFFIXES:
        text, title, kind = _load_pdf(data), "", "pdf"
    elif suffix in HTML_SUFFIXES:
        (text, title), kind = _load_html(data), "html"
    else:
        text, title, kind = _decode(data), "", "text"
    if not text.strip():
        raise SkipFile("empty (no text)" if kind != "pdf" else "no text layer")
    if not title:
        heading = _MD_HEADING.search(text) if suffix in (".md", ".markdown") else None
        title = heading.group(1).strip() if heading else path.stem
    return LoadedDocument(text=text, title=title, kind=kind, sha256=hashlib.sha256(data).hexdigest())


def headings_at(text: str) -> list[tuple[int, str]]:
    """(offset, heading) for each Markdown heading, to label chunks with their section."""
    return [(m.start(), m.group(1).strip()) for m in _MD_HEADING.finditer(text)]

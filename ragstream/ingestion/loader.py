"""Document loaders: file bytes to text, or a reason the file is skipped (never a crash).

Spans of text files refer to the decoded file text; spans of HTML and PDF files refer to the
extracted text, since their bytes are markup or binary.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path

from ragstream.text.fences import breaking_characters, fence_marks, fenced_spans
from ragstream.text.rst import is_rst, titles_at

TEXT_SUFFIXES = frozenset(
    ".txt .md .markdown .rst .json .jsonl .py .pyi .js .jsx .mjs .cjs .ts .mts .cts .tsx .java .kt .scala .kts "
    ".c .h .cc .cpp .cxx .hh .hpp "
    ".cs .go .rs .rb .php .swift .m .sh .bash .zsh .ps1 .sql .r .jl .lua .pl .toml .yaml .yml .ini .cfg .conf "
    ".csv .tsv .tex .bib .xml .css .scss .org .adoc .proto .graphql .dockerfile .env.example .gitignore".split()
)
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
NOTEBOOK_SUFFIXES = frozenset({".ipynb"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES | NOTEBOOK_SUFFIXES
SNIFF_BYTES = 8192
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# YAML front matter: a first line "---", "key: value" lines, a closing "---". Static-site pages (MkDocs, Jekyll, Hugo,
# MDN's content) keep their title there; their first "#" heading names a section ("Syntax" on MDN's Vary page).
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?P<body>.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_TITLE_KEY = re.compile(r"^title:[ \t]*(?P<value>\S.*?)[ \t]*$", re.M)


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
    """A page's content as Markdown-shaped text: headings as "#" lines, paragraphs, lists and tables apart (blank
    lines between blocks), list items as "- " lines, preformatted text fenced as written. Stages read sentences,
    headings and sections out of that shape: without it a heading ran into its first sentence ("Hiding portions
    of the example Sometimes, you need some setup code ...").

    What is no content is left out: scripts and styles, the page's navigation, menus, forms, buttons and hidden
    elements, and, when the page marks its main content (`<main>`, `role="main"`), everything outside it (a
    documentation site's sidebar and keyboard help read "Press Esc to hide this help Auto Light Rust Coal ...").
    Table cells are separated, so `<td>Name</td><td>Value</td>` reads "Name | Value", never "NameValue". Inline code
    keeps its marks (`<code>no-cache</code>` reads "`no-cache`"), as Markdown's: a reference page's "<h4><code>
    no-cache</code></h4>" is then a heading naming a directive, a line naming an identifier reads as code, and a
    sentence's "`max-age`" stays apart from its words.
    """

    _VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    _SKIP = {"script", "style", "noscript", "template", "nav", "aside", "form", "button", "select", "svg", "dialog"}
    _SKIP_ROLES = {"navigation", "banner", "contentinfo", "menu", "menubar", "search", "dialog", "toolbar", "tablist"}
    _PARAGRAPH = {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "ul",
        "ol",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "caption",
        "blockquote",
        "dl",
        "figure",
        "figcaption",
        "hr",
        "fieldset",
        "details",
        "summary",
        "address",
    }
    _LINE = {"br", "tr", "dt", "dd"}
    _HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
    _CELL = {"td", "th"}
    _INLINE_CODE = {"code", "kbd", "samp", "tt"}

    def __init__(self, main_only: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._main_only = main_only
        self._open: list[tuple[str, bool, bool]] = []  # open elements: (tag, skipped, main content)
        self._in_title = False
        self._pre: list[str] | None = None  # the text of the preformatted block being read
        self._code: list[int] = []  # where each open inline code element's opening mark stands in `parts`

    def _reading(self) -> bool:
        skipped = any(skip for _, skip, _ in self._open)
        return not skipped and (not self._main_only or any(main for _, _, main in self._open))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        found = dict(attrs)
        if tag not in self._VOID:
            skipped = (
                tag in self._SKIP
                or found.get("role") in self._SKIP_ROLES
                or "hidden" in found
                or found.get("aria-hidden") == "true"
            )
            self._open.append((tag, skipped, tag == "main" or found.get("role") == "main"))
        if not self._reading():
            return
        if tag == "pre":
            self._pre = []
        elif tag in self._HEADINGS:
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self._PARAGRAPH:
            if not (self.parts and self.parts[-1] == "\n- "):  # a list item's own paragraph keeps its marker
                self.parts.append("\n\n")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag in self._LINE:
            self.parts.append("\n")
        elif tag in self._CELL:
            self.parts.append(" | ")
        elif tag in self._INLINE_CODE and self._pre is None:
            self._code.append(len(self.parts))
            self.parts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        reading = self._reading()
        if reading and tag == "pre" and self._pre is not None:
            self.parts.append(fenced("".join(self._pre)))
            self._pre = None
        elif reading and (tag in self._HEADINGS or tag in self._PARAGRAPH):
            self.parts.append("\n\n")
        elif reading and tag in self._INLINE_CODE and self._pre is None and self._code:
            self._mark_code(self._code.pop())
        if any(open_tag == tag for open_tag, _, _ in self._open):
            while self._open and self._open.pop()[0] != tag:
                pass

    def _mark_code(self, start: int) -> None:
        """The inline code read since `start` between backtick runs longer than any inside it (Markdown's rule), with
        a space inside them where the code itself starts or ends with a backtick; none round blank code."""
        code = "".join(self.parts[start + 1 :])
        if not code.strip() or "\n" in code:
            return
        mark = "`" * (max((len(run) for run in re.findall(r"`+", code)), default=0) + 1)
        pad = " " if code.startswith("`") or code.endswith("`") else ""
        self.parts[start] = mark + pad
        self.parts.append(pad + mark)

    def close(self) -> None:
        """The page's end closes a preformatted block left open: its text is kept, not lost."""
        super().close()
        if self._pre is not None:
            self.parts.append(fenced("".join(self._pre)))
            self._pre = None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self._reading():
            (self._pre if self._pre is not None else self.parts).append(data)


def fenced(code: str) -> str:
    """A preformatted block as a fenced one, longer than any backtick run in it, its lines as written."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n\n{fence}\n{code.strip(chr(10))}\n{fence}\n\n"


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
    page = _decode(data)
    parser = _HTMLText(main_only=_MAIN.search(page) is not None)
    parser.feed(page)
    parser.close()
    return _tidied("".join(parser.parts)), " ".join(parser.title.split())


_MAIN = re.compile(r"<main\b|\brole\s*=\s*[\"']?main\b", re.IGNORECASE)


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _load_notebook(data: bytes) -> str:
    """A Jupyter notebook as Markdown-shaped text: its Markdown and raw cells as written, each code cell fenced with
    the notebook's language; outputs left out (results, images and logs, not what the author wrote). Read as the
    JSON it is stored as, a notebook gave no sentence at all and its excerpts were "cell_type" and "source" lists. A
    file that is no notebook (not JSON, or without cells) is read as the text it holds."""
    raw = _decode(data)
    try:
        notebook = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return raw
    meta = _mapping(notebook.get("metadata"))
    info, kernel = _mapping(meta.get("language_info")), _mapping(meta.get("kernelspec"))
    kernel_name = str(kernel.get("name") or "")
    language = str(info.get("name") or kernel.get("language") or ("python" if kernel_name.startswith("python") else ""))
    parts = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        text = ("".join(str(line) for line in source) if isinstance(source, list) else str(source)).strip("\n")
        if not text.strip():
            continue
        if cell.get("cell_type") == "code":
            fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
            parts.append(f"{fence}{language}\n{text}\n{fence}")
        else:
            parts.append(text)
    return "\n\n".join(parts) + "\n" if parts else raw


def _tidied(text: str) -> str:
    """Whitespace collapsed in each line but inside fences, a table row's outer bars dropped, one blank line
    between blocks."""
    lines: list[str] = []
    fence = ""
    for line in text.splitlines():
        mark = re.match(r"^(`{3,})$", line.strip())
        if fence:
            lines.append(line.rstrip())
            fence = "" if mark and mark.group(1) == fence else fence
            continue
        if mark:
            fence = mark.group(1)
            lines.append(fence)
            continue
        tidy = " ".join(line.split()).strip(" |")
        if re.fullmatch(r"-|#{1,6}", tidy):  # a list item or heading with no text of its own
            tidy = ""
        if tidy or (lines and lines[-1]):
            lines.append(tidy)
    return "\n".join(lines).strip()


def _load_pdf(data: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise SkipFile(f"unreadable PDF ({type(exc).__name__})") from None
    return "\n\n".join(p.strip() for p in without_running_lines(pages) if p.strip())


def without_running_lines(pages: list[str]) -> list[str]:
    """The pages without their running header and footer: a first or last line that most pages share, digits
    aside ("Shared MIME-info Database" atop every page, the page number under it). Left in, the header ran into
    the page's first sentence ("Shared MIME-info Database The file starts with the magic string ...")."""
    lines = [[line for line in page.splitlines() if line.strip()] for page in pages]
    if len(lines) < 3:
        return pages

    def shape(line: str) -> str:
        return re.sub(r"\d+", "#", " ".join(line.split()))

    edges = Counter(edge for page in lines if page for edge in (("first", shape(page[0])), ("last", shape(page[-1]))))
    running = {edge for edge, count in edges.items() if count >= max(3, len(lines) // 2)}
    kept = []
    for page in lines:
        if page and ("first", shape(page[0])) in running:
            page = page[1:]
        if page and ("last", shape(page[-1])) in running:
            page = page[:-1]
        kept.append("\n".join(page))
    return kept


def unsafe_name_reason(name: str) -> str | None:
    """Why a file name is refused: characters that could end a line or hide text (a newline, U+2028,
    a bidi override) have no place in a name that is printed in fences, listings and citations."""
    bad = sorted({f"U+{ord(ch):04X}" for ch in breaking_characters(name)})
    return f"file name holds control characters ({', '.join(bad)}): rename the file" if bad else None


def load_document(path: Path, max_bytes: int) -> LoadedDocument:
    """Read one file into text; raises SkipFile with a reason for anything not ingestible."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
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
    elif suffix in NOTEBOOK_SUFFIXES:
        text, title, kind = _load_notebook(data), "", "notebook"
    else:
        text, title, kind = _decode(data), "", "text"
    if not text.strip():
        raise SkipFile("empty (no text)" if kind != "pdf" else "no text layer")
    if not title:
        if suffix in (".md", ".markdown", *NOTEBOOK_SUFFIXES):
            title = front_matter_title(text) or next((found for _, found in headings_at(text)), "")
        elif is_rst(path.name):
            title = next((found for _, found in titles_at(text)), "")
        title = title or path.stem
    return LoadedDocument(text=text, title=title, kind=kind, sha256=hashlib.sha256(data).hexdigest())


def front_matter_title(text: str) -> str:
    """The `title` of a Markdown page's YAML front matter (its quotes dropped), or ""."""
    found = _FRONT_MATTER.match(text)
    key = _TITLE_KEY.search(found.group("body")) if found else None
    if key is None:
        return ""
    value = key.group("value")
    return value[1:-1].strip() if len(value) > 1 and value[0] == value[-1] and value[0] in "\"'" else value


def headings_at(text: str, rst: bool = False) -> list[tuple[int, str]]:
    """(offset, heading) for each Markdown heading outside fenced code (a shell comment in a block is no
    section), to label chunks with their section; in reStructuredText (`rst`) each adorned title, since there a
    "# comment" in an indented literal block read as a heading and labelled the sections after it (pip's user
    guide: "Installing from local packages" stood under "Pin Cython for packages that use it to build")."""
    if rst:
        return titles_at(text)
    blocks = fenced_spans(fence_marks(text), len(text))
    return [
        (m.start(), m.group(1).strip())
        for m in _MD_HEADING.finditer(text)
        if not any(a <= m.start() < b for a, b in blocks)
    ]

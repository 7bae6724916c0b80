"""Ingestion on real Chroma and a real temp folder: add, update, delete, skip, crash repair."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from ragstream.app.controller import AppController
from ragstream.code.symbols import index_text
from ragstream.embedding.embedder import RagstreamEmbeddings
from ragstream.errors import IngestionError, ProjectError
from ragstream.index.manifest import Manifest
from ragstream.index.snapshot import load_snapshot
from ragstream.index.store import collection_name
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import open_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.tenancy.projects import project_paths
from tests.fixtures_docs import make_project, symlink_out


@pytest.fixture()
def project(settings: Settings) -> Path:
    return make_project(settings.data_dir / "doc_raw" / "demo")


def _state(settings: Settings, manager: IngestionManager) -> tuple[set[str], Manifest]:
    paths = project_paths(settings, "demo")
    with manager.store(paths) as store:
        return store.all_ids(), Manifest.load(paths.manifest_path)


def test_first_ingest_indexes_text_and_skips_with_reasons(settings: Settings, project: Path) -> None:
    manager = IngestionManager(settings)
    stats = manager.ingest("demo")
    assert stats.added == 8 and stats.updated == stats.deleted == 0
    assert stats.skipped == {
        "blob.txt": "binary file (NUL bytes)",
        "empty.md": "empty (no text)",
        "image.png": "unsupported file type '.png'",
        "latin1.txt": "not UTF-8 text (invalid byte at offset 3)",
    }
    ids, manifest = _state(settings, manager)
    assert ids == manifest.chunk_ids() and len(ids) == stats.chunks_total == stats.chunks_written
    snap = load_snapshot(project_paths(settings, "demo").index_dir, manifest.generation)
    design = [c for c in snap.chunks if c.source_path == "architecture.md"]
    text = (project / "architecture.md").read_text(encoding="utf-8")
    for c in design:
        assert c.span.slice(text) == c.text
        assert c.sha256 == manifest.files["architecture.md"].sha256
        assert c.metadata["title"] == "RAGstream architecture" and "mtime" in c.metadata
    assert design[0].metadata["heading"] == "RAGstream architecture"
    assert "Restart the Chroma server" in next(c.text for c in snap.chunks if c.source_path == "page.html")
    assert "var x" not in "".join(c.text for c in snap.chunks)
    assert "Quarterly ingestion report" in next(c.text for c in snap.chunks if c.source_path == "scan.pdf")
    assert next(c for c in snap.chunks if c.source_path == "notes/changelog.md").metadata["date"] == "2024-03-18"
    assert snap.links["architecture.md"] == ["ingestion.md", "retrieval.md"]


def test_a_text_holding_line_separator_characters_reads_back_from_the_snapshot(settings: Settings) -> None:
    """U+2028 and U+0085 stay raw in JSON: the snapshot's lines are split on newlines only (OWASP's DOM XSS
    cheat sheet holds one, and its project could not be searched)."""
    folder = settings.data_dir / "doc_raw" / "seps"
    folder.mkdir(parents=True)
    (folder / "xss.md").write_text("# Escapes\n\nEscape \u2028 and \u2029 and \x85 in JavaScript strings.\n")
    manager = IngestionManager(settings)
    manager.ingest("seps")
    manifest = Manifest.load(project_paths(settings, "seps").manifest_path)
    snap = load_snapshot(project_paths(settings, "seps").index_dir, manifest.generation)
    assert "\u2028 and \u2029 and \x85" in snap.chunks[0].text


def test_reingest_unchanged_writes_nothing(settings: Settings, project: Path) -> None:
    manager = IngestionManager(settings)
    first = manager.ingest("demo")
    again = manager.ingest("demo")
    assert (again.added, again.updated, again.deleted, again.chunks_written) == (0, 0, 0, 0)
    assert again.unchanged == 8 and again.generation == first.generation


def test_update_reembeds_only_that_file_and_delete_removes_chunks(settings: Settings, project: Path) -> None:
    manager = IngestionManager(settings)
    manager.ingest("demo")
    ids_before, manifest_before = _state(settings, manager)
    (project / "retrieval.md").write_text("# Retrieval\n\nCompletely rewritten: only BM25 now.\n", encoding="utf-8")
    (project / "budget.py").unlink()
    stats = manager.ingest("demo")
    assert (stats.added, stats.updated, stats.deleted, stats.unchanged) == (0, 1, 1, 6)
    assert stats.chunks_written == 1
    ids, manifest = _state(settings, manager)
    assert ids == manifest.chunk_ids()
    assert not any(cid.startswith(("budget.py@",)) for cid in ids)
    old_retrieval = set(manifest_before.files["retrieval.md"].chunk_ids)
    assert not (old_retrieval & ids)
    assert stats.chunks_deleted == len(old_retrieval) + len(manifest_before.files["budget.py"].chunk_ids)
    assert set(manifest_before.files["ingestion.md"].chunk_ids) <= ids


def test_crash_between_store_update_and_manifest_is_repaired(settings: Settings, project: Path, monkeypatch) -> None:
    manager = IngestionManager(settings)
    manager.ingest("demo")
    (project / "ingestion.md").write_text("# Ingestion\n\nNow with a write-ahead manifest.\n", encoding="utf-8")
    (project / "extra.md").write_text("# Extra\n\nA new file.\n", encoding="utf-8")

    def boom(self, path):  # the store is updated, then the process dies before the commit
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(Manifest, "save", boom)
    with pytest.raises(RuntimeError):
        manager.ingest("demo")
    monkeypatch.undo()
    ids_mid, _ = _state(settings, manager)
    assert any(cid.startswith("extra.md@") for cid in ids_mid)  # written, but not committed

    stats = manager.ingest("demo")
    ids, manifest = _state(settings, manager)
    assert ids == manifest.chunk_ids()  # no orphans, nothing missing
    with manager.store(project_paths(settings, "demo")) as store:
        assert len(store.all_ids() or ()) == len(manifest.chunk_ids())  # no duplicates
    assert stats.added == 1 and stats.updated == 1


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", "/abs", ".hidden", "x" * 80, ""])
def test_bad_project_names_are_rejected(name: str, settings: Settings) -> None:
    with pytest.raises(ProjectError):
        IngestionManager(settings).ingest(name)


def test_symlink_out_of_the_folder_is_skipped(settings: Settings, project: Path, tmp_path: Path) -> None:
    symlink_out(project, tmp_path / "outside.txt")
    stats = IngestionManager(settings).ingest("demo")
    assert stats.skipped["escape.txt"] == "symlink pointing outside the project folder"


def test_chunk_ids_are_stable_across_a_rebuilt_store(settings: Settings, project: Path) -> None:
    import shutil

    manager = IngestionManager(settings)
    manager.ingest("demo")
    ids_first, _ = _state(settings, manager)
    shutil.rmtree(project_paths(settings, "demo").store_dir)
    manager.ingest("demo")
    ids_second, _ = _state(settings, manager)
    assert ids_first == ids_second


def test_collection_uses_cosine_and_no_chroma_embedding_function(settings: Settings, project: Path) -> None:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    IngestionManager(settings).ingest("demo")
    client = chromadb.PersistentClient(
        path=str(project_paths(settings, "demo").chroma_dir), settings=ChromaSettings(anonymized_telemetry=False)
    )
    collection = client.get_collection(collection_name("demo"))
    assert collection.metadata["hnsw:space"] == "cosine"
    assert collection.configuration_json["embedding_function"] is None  # never Chroma's downloading default
    assert collection.count() > 0


def test_missing_project_folder_is_a_clear_error(settings: Settings) -> None:
    with pytest.raises(ProjectError, match="has no documents"):
        IngestionManager(settings).ingest("nothing_here")


def test_a_generation_without_vectors_is_upgraded_without_re_embedding(settings: Settings, project: Path) -> None:
    """Indexes written before generations carried their vectors get them from Chroma, not the model."""
    from ragstream.index.manifest import generation_dir
    from ragstream.retrieval.factory import build_searcher

    manager = IngestionManager(settings)
    first = manager.ingest("demo")
    paths = project_paths(settings, "demo")
    (generation_dir(paths.index_dir, first.generation) / "vectors.npy").unlink()
    again = manager.ingest("demo")
    assert again.chunks_written == 0 and again.generation > first.generation
    assert (generation_dir(paths.index_dir, again.generation) / "vectors.npy").is_file()
    assert build_searcher(settings, "demo").retrieve(["token budget ceiling"]).ids


PRICES_HTML = (
    b"<html><head><title>Prices</title></head><body><h1>Price list</h1><table><tr><th>Name</th><th>Value</th></tr>"
    b"<tr><td>Alpha</td><td>42</td></tr></table><ul><li>one</li><li>two</li></ul><p>in<b>line</b> "
    b"text</p></body></html>"
)
PRICES_TEXT = ["# Price list", "", "Name | Value", "Alpha | 42", "", "- one", "- two", "", "inline text"]
DOCTESTS_HTML = (
    b"<html><head><title>Doctests</title></head><body>"
    b'<div id="help" class="hidden" hidden><h2>Keyboard shortcuts</h2><p>Press Esc to hide this help</p></div>'
    b'<nav aria-label="Table of contents"><ol><li><a href="a.html">Intro</a></li></ol></nav>'
    b'<div class="menu-bar"><div role="menu"><button>Light</button><button>Coal</button></div>'
    b'<h1 class="menu-title">The rustdoc book</h1></div>'
    b"<main><h2>Hiding portions of the example</h2><p>Sometimes, you need some setup code.</p>"
    b"<pre><code>fn main() {\n    let x = 5;\n}</code></pre>"
    b"<ul><li><p>Lines starting with # are hidden.</p></li></ul>"
    b"</main><footer>Built with mdBook</footer></body></html>"
)
DOCTESTS_TEXT = [
    "## Hiding portions of the example",
    "",
    "Sometimes, you need some setup code.",
    "",
    "```",
    "fn main() {",
    "    let x = 5;",
    "}",
    "```",
    "",
    "- Lines starting with # are hidden.",
]

DIRECTIVES_HTML = (
    b"<html><head><title>Cache-Control</title></head><body><h4><code>private</code></h4>"
    b"<p>Send <code>max-age=0</code> with it, stop with <kbd>Ctrl</kbd>+<kbd>C</kbd>, quote <code>a`b</code>.</p>"
    b"<pre><code>Cache-Control: private</code></pre></body></html>"
)
DIRECTIVES_TEXT = [
    "#### `private`",
    "",
    "Send `max-age=0` with it, stop with `Ctrl`+`C`, quote ``a`b``.",
    "",
    "```",
    "Cache-Control: private",
    "```",
]


@pytest.mark.parametrize(
    ("html", "lines", "title"),
    [
        (PRICES_HTML, PRICES_TEXT, "Prices"),
        (DOCTESTS_HTML, DOCTESTS_TEXT, "Doctests"),
        (DIRECTIVES_HTML, DIRECTIVES_TEXT, "Cache-Control"),
    ],
    ids=["tables-and-blocks-apart", "main-content-only", "inline-code-marked"],
)
def test_an_html_page_reads_as_its_content_in_markdown_shape(html: bytes, lines: list[str], title: str) -> None:
    """Headings as "#" lines and blocks apart, so a heading never runs into its first sentence ("Hiding portions of
    the example Sometimes, you need ..." on the rustdoc book), and a table's cells and a list's items apart; code as
    written, fenced; inline code marked as Markdown marks it (a heading "`private`" names a directive, as a Markdown
    reference page's does); a documentation site's navigation, menus and hidden help outside its main content left
    out ("Press Esc to hide this help Auto Light Rust Coal ...")."""
    from ragstream.ingestion.loader import _load_html

    assert _load_html(html) == ("\n".join(lines), title)


def test_a_page_without_main_content_loses_only_its_chrome() -> None:
    from ragstream.ingestion.loader import _load_html

    page = b"<html><body><nav>Home | Docs</nav><h1>Setup</h1><p>Install it.</p><form><button>Go</button></form></body>"
    assert _load_html(page)[0].splitlines() == ["# Setup", "", "Install it."]
    assert _load_html(b"<p>Run:</p><pre>make all\n  make check")[0] == "Run:\n\n```\nmake all\n  make check\n```"


def test_a_changed_cutting_rule_in_code_rechunks_every_file(settings: Settings, project: Path, monkeypatch) -> None:
    """Editing the code that cuts chunks must re-chunk on the next ingest with no manual version bump."""
    import ragstream.ingestion.manager as manager_module

    manager = IngestionManager(settings)
    first = manager.ingest("demo")
    assert manager.ingest("demo").chunks_written == 0
    edited = settings.data_dir / "chunking_edited.py"
    edited.write_text(Path(manager_module.ragstream.text.chunking.__file__).read_text() + "\n_SNAP_FRACTION = 0.25\n")
    fake = type("Module", (), {"__file__": str(edited)})
    monkeypatch.setattr(manager_module, "CUTTING_MODULES", (fake, *manager_module.CUTTING_MODULES[1:]))
    manager_module.cutting_rules_version.cache_clear()
    try:
        again = IngestionManager(settings).ingest("demo")
    finally:
        manager_module.cutting_rules_version.cache_clear()
    assert again.chunks_written == first.chunks_written and again.generation > first.generation


def test_a_failed_store_write_commits_nothing_and_the_next_ingest_repairs(
    settings: Settings, project: Path, monkeypatch
) -> None:
    """Chroma writes run beside the next batch's embedding: a failing one still stops the ingest before the commit."""
    from ragstream.index.store import VectorIndex
    from ragstream.ingestion.manager import EMBED_BATCH

    manager = IngestionManager(settings)
    first = manager.ingest("demo")
    words = " ".join(f"word{i}" for i in range(200))
    (project / "long.md").write_text(
        "\n\n".join(f"## Part {i}\n\n{words}" for i in range(EMBED_BATCH + 8)), encoding="utf-8"
    )
    real_upsert, calls = VectorIndex.upsert, []

    def failing_second(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("disk full")
        return real_upsert(self, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "upsert", failing_second)
    with pytest.raises(IngestionError, match="disk full"):
        manager.ingest("demo")
    monkeypatch.undo()
    assert Manifest.load(project_paths(settings, "demo").manifest_path).generation == first.generation  # not committed

    stats = manager.ingest("demo")
    ids, manifest = _state(settings, manager)
    assert stats.added == 1 and ids == manifest.chunk_ids()
    assert {"read", "cut", "embed", "store", "index"} <= set(stats.phases)


def test_switching_the_embedder_variant_re_embeds_every_chunk(settings: Settings, project: Path) -> None:
    """Vectors of two variants (packaged int8 weights with and without int8 activations) never mix."""
    import numpy as np

    from ragstream.index.manifest import generation_dir

    paths = project_paths(settings, "demo")
    first = IngestionManager(settings).ingest("demo")
    before = np.load(generation_dir(paths.index_dir, first.generation) / "vectors.npy")
    w8 = settings.model_copy(update={"embedding": settings.embedding.model_copy(update={"backend": "onnx-w8"})})
    switched = IngestionManager(w8).ingest("demo")
    assert switched.chunks_written == switched.chunks_total == first.chunks_total
    after = np.load(generation_dir(paths.index_dir, switched.generation) / "vectors.npy")
    cosine = np.sum(before * after, axis=1)
    assert cosine.min() > 0.95 and not np.allclose(before, after, atol=1e-4)
    assert IngestionManager(w8).ingest("demo").chunks_written == 0
    assert IngestionManager(settings).ingest("demo").chunks_written == first.chunks_total


def _refused_files(folder: Path) -> Path:
    """A folder whose every file is refused: binary, empty, a secret file, an unsupported type."""
    folder.mkdir(parents=True)
    (folder / "blob.txt").write_bytes(b"\x00\x01binary")
    (folder / "empty.md").write_text("")
    (folder / ".env").write_text("API_TOKEN=abc\n")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return folder


@pytest.mark.parametrize("kind", ["empty", "refused"])
def test_a_folder_with_nothing_to_ingest_is_a_clear_error_that_writes_nothing(
    kind: str, settings: Settings, tmp_path: Path
) -> None:
    """Through the controller, as the GUI and MCP ingest: a ProjectError naming why, and no project made."""
    from ragstream.app.workspace import Workspace
    from ragstream.tenancy.projects import list_projects

    folder = tmp_path / "docs"
    if kind == "empty":
        folder.mkdir()
    else:
        _refused_files(folder)
    message = "has no files" if kind == "empty" else "none of its 4 files can be indexed (.env: holds secrets"
    with pytest.raises(ProjectError, match=re.escape(message)) as info:
        Workspace(settings).ingest_docs("e1", source=folder)
    assert "nothing to ingest" in str(info.value)
    assert list_projects(settings) == [] and not project_paths(settings, "e1").store_dir.exists()


def test_re_ingesting_from_a_folder_with_nothing_to_ingest_keeps_the_committed_index(
    settings: Settings, project: Path, tmp_path: Path
) -> None:
    manager = IngestionManager(settings)
    first = manager.ingest("demo")
    paths = project_paths(settings, "demo")
    before = paths.manifest_path.read_bytes()
    with pytest.raises(ProjectError, match="nothing to ingest"):
        manager.ingest("demo", _refused_files(tmp_path / "refused"))
    assert paths.manifest_path.read_bytes() == before and paths.source_dir() == paths.raw_dir
    assert manager.ingest("demo").chunks_total == first.chunks_total


def test_another_langchain_vector_store_is_configured_as_the_docs_say(
    settings: Settings, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/scale-out.md's `my_stores.py`, as written there, named in `ingestion.vector_store`: the ingest stores
    every chunk with its vector in LangChain's InMemoryVectorStore and none in Chroma, a re-ingest deletes what
    changed from it, and a run's excerpts are chunks that store holds."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "scale-out.md").read_text(encoding="utf-8")
    found = re.search(r"^```python\n(# my_stores\.py\n.*?)^```$", page, flags=re.M | re.S)
    assert found is not None
    (tmp_path / "my_stores.py").write_text(found.group(1), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    swapped = load_settings(
        overrides={
            "data_dir": str(settings.data_dir),
            "llm.provider": "local",
            "ingestion.vector_store": "my_stores:in_memory",
        }
    )
    paths = project_paths(swapped, "demo")

    def stored() -> InMemoryVectorStore:
        return InMemoryVectorStore.load(str(paths.store_dir / "in_memory_store.json"), RagstreamEmbeddings(swapped))

    IngestionManager(swapped).ingest("demo")
    snapshot = load_snapshot(paths.index_dir, Manifest.load(paths.manifest_path).generation)
    assert set(stored().store) == Manifest.load(paths.manifest_path).chunk_ids() and not paths.chroma_dir.exists()
    assert snapshot.vectors is not None
    vectors = stored().store
    assert all(np.allclose(vectors[c.id]["vector"], snapshot.vectors[i]) for i, c in enumerate(snapshot.chunks))
    (project / "retrieval.md").write_text("# Retrieval\n\nCompletely rewritten: only BM25 now.\n", encoding="utf-8")
    IngestionManager(swapped).ingest("demo")
    ids = set(stored().store)
    assert ids == Manifest.load(paths.manifest_path).chunk_ids() and "Completely rewritten" in str(
        [stored().store[i]["text"] for i in ids if i.startswith("retrieval.md@")]
    )
    ctl = AppController(swapped, checkpointer=open_checkpointer(swapped), services=Services(swapped))
    sp = ctl.run_full_pipeline("# Task\nHow are changed documents re-embedded?", project="demo", pause_after="none")
    assert sp.final_selection_ids and set(sp.final_selection_ids) <= ids
    assert 'excerpt source="ingestion.md"' in sp.prompt_ready


def test_an_index_written_with_other_lexical_terms_is_rewritten_without_re_embedding(
    settings: Settings, project: Path, monkeypatch
) -> None:
    """Queries are tokenized by today's code: an index whose BM25 terms an older tokenizer wrote is rewritten
    on the next ingest, and since the chunks are the same, nothing is embedded again."""
    import ragstream.ingestion.manager as manager_module

    first = IngestionManager(settings).ingest("demo")
    assert IngestionManager(settings).ingest("demo").generation == first.generation
    monkeypatch.setattr(manager_module, "lexical_identity", lambda: "another-tokenizer")
    again = IngestionManager(settings).ingest("demo")
    assert again.generation > first.generation and again.chunks_written == 0
    manifest = Manifest.load(project_paths(settings, "demo").manifest_path)
    assert manifest.lexical == "another-tokenizer"
    assert IngestionManager(settings).ingest("demo").generation == again.generation


def test_a_templated_page_is_embedded_as_it_reads_and_shown_as_it_is_written(settings: Settings) -> None:
    """A documentation page's template macros (MDN's `{{HTTPHeader("If-Match")}}`, Hugo's `{{% note %}}`) are
    embedded as what the rendered page shows; its excerpt is the file's own text, and code keeps its braces."""
    folder = settings.data_dir / "doc_raw" / "demo"
    folder.mkdir(parents=True)
    page = (
        'This is implemented using the {{HTTPHeader("If-Match")}} or {{HTTPHeader("If-Unmodified-Since")}} headers. '
        'If the ETag does not match, the change is rejected with a {{HTTPStatus("412", "412 Precondition Failed")}} '
        "error.\n\n{{% note %}}The client then decides which changes to keep.{{% /note %}}\n\n{{Specifications}}\n"
    )
    (folder / "conditional.md").write_text(page, encoding="utf-8")
    (folder / "render.py").write_text('def banner() -> str:\n    return "{{HTTPHeader(\\"ETag\\")}}"\n', "utf-8")
    stats = IngestionManager(settings).ingest("demo")
    snap = load_snapshot(project_paths(settings, "demo").index_dir, stats.generation)
    prose = next(c for c in snap.chunks if c.source_path == "conditional.md")
    assert prose.span.slice(page) == prose.text and "{{HTTPStatus(" in prose.text  # shown as written
    read = (
        "This is implemented using the If-Match or If-Unmodified-Since headers. If the ETag does not match, the "
        "change is rejected with a 412 Precondition Failed error.\n\nThe client then decides which changes to keep."
    )
    embedder = Services(settings).embedder
    stored = snap.vectors_of([prose.id])[prose.id]
    as_read, as_written = embedder.embed([read, prose.text])
    assert float(stored @ as_read) > 0.999 > float(stored @ as_written)
    code = next(c for c in snap.chunks if c.source_path == "render.py")
    assert float(snap.vectors_of([code.id])[code.id] @ embedder.embed([index_text(code)])[0]) > 0.999
    assert '"{{HTTPHeader(\\"ETag\\")}}"' in index_text(code)


def test_a_pdfs_running_header_and_page_numbers_are_not_its_text() -> None:
    """A header atop every page ran into each page's first sentence ("Shared MIME-info Database The file starts
    with the magic string ..."), and page numbers into the last; a line only some pages open with stays."""
    from ragstream.ingestion.loader import _load_pdf
    from tests.fixtures_docs import paged_pdf

    pages = [["Shared MIME-info Database", f"Rule {k} applies to globs.", str(k + 1)] for k in range(4)]
    pages[0].insert(1, "Introduction")
    text = _load_pdf(paged_pdf(pages))
    assert text.split("\n\n") == [
        "Introduction\nRule 0 applies to globs.",
        "Rule 1 applies to globs.",
        "Rule 2 applies to globs.",
        "Rule 3 applies to globs.",
    ]
    two = _load_pdf(paged_pdf([["Report", "Alpha."], ["Report", "Beta."]]))
    assert two == "Report\nAlpha.\n\nReport\nBeta."  # two pages are too few to tell a header from a heading


def test_the_text_a_chunk_is_embedded_as_is_part_of_the_index_identity() -> None:
    """A code chunk is embedded under its path and the names it defines (`index_text`): editing how that text is
    made must re-embed on the next ingest, like editing where chunks are cut, or the stored vectors stop matching
    what the code now reads."""
    import sys

    from ragstream.code.symbols import index_text
    from ragstream.ingestion.manager import CUTTING_MODULES

    assert sys.modules[index_text.__module__] in CUTTING_MODULES


def test_a_comment_line_in_a_code_block_is_no_section_heading() -> None:
    """A chunk is labelled with the section it stands in: "# conflicted", a comment inside a fenced HTTP example,
    is not a section, and the chunk after it still stands under "Preventing storing"."""
    from ragstream.ingestion.loader import headings_at

    text = (
        "## Preventing storing\n\nUse `no-store`.\n\n```http\n# conflicted\nCache-Control: private, no-store\n```\n\n"
        "More on storing.\n\n~~~sh\n# install it\npip install x\n"
    )
    assert [heading for _, heading in headings_at(text)] == ["Preventing storing"]


def _notebook(cells: list[dict], **metadata: object) -> bytes:
    import json

    return json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}).encode()


SENSOR_NOTEBOOK = _notebook(
    [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": [
                "# Cleaning the sensor data\n",
                "\n",
                "Readings above 120 degrees are sensor faults and must be dropped before averaging.\n",
            ],
        },
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "source": ["df = df[df.temp <= 120]"],
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["dropped 14 rows\n"]}],
        },
        {"cell_type": "markdown", "metadata": {}, "source": "## Resampling\n\nGaps stay NaN when we resample."},
    ],
    kernelspec={"name": "python3", "display_name": "Python 3"},
)


def test_a_notebook_reads_as_its_cells_and_a_run_quotes_its_prose(settings: Settings) -> None:
    """A Jupyter notebook was read as the JSON it is stored in: no sentence of it was a line, and its excerpts were
    "cell_type" and "source" lists. It reads as its Markdown cells and its code cells fenced in its language; the
    outputs (results, images, logs) are left out. A file named .ipynb that is no notebook is read as its text."""
    from ragstream.ingestion.loader import load_document

    raw = settings.data_dir / "doc_raw" / "lab"
    raw.mkdir(parents=True)
    (raw / "clean.ipynb").write_bytes(SENSOR_NOTEBOOK)
    loaded = load_document(raw / "clean.ipynb", 10**6)
    assert loaded.kind == "notebook" and loaded.title == "Cleaning the sensor data"
    assert loaded.text == (
        "# Cleaning the sensor data\n\nReadings above 120 degrees are sensor faults and must be dropped before "
        "averaging.\n\n```python\ndf = df[df.temp <= 120]\n```\n\n## Resampling\n\nGaps stay NaN when we resample.\n"
    )
    IngestionManager(settings).ingest("lab")
    ctl = AppController(settings)
    ctl.select_project("lab")
    sp = ctl.run_full_pipeline("Which sensor readings must be dropped before averaging?", pause_after="none")
    assert "Readings above 120 degrees are sensor faults" in sp.s_ctx_md, sp.s_ctx_md
    assert "cell_type" not in sp.prompt_ready and "dropped 14 rows" not in sp.prompt_ready
    (raw / "notes.ipynb").write_text("Not a notebook: the sensors are calibrated every Monday.\n")
    assert load_document(raw / "notes.ipynb", 10**6).text.startswith("Not a notebook")


RST_GUIDE = """==========
User Guide
==========

Build constraints
=================

Pin what a build may use::

   # Constrain setuptools version during build
   setuptools>=45,<80
   # Pin Cython for packages that use it to build
   cython==0.29.24

Installing from local packages
==============================

In some cases, you may want to install from local packages only, with no traffic to PyPI.
First, download the archives that fulfill your requirements into a directory.
Then install from that directory alone, with the index switched off, on the machine without network access.
The archives are reused as they are, so nothing is built again.
"""


def test_a_rst_documents_titles_label_its_chunks_and_a_comment_in_a_literal_block_is_none(tmp_path: Path) -> None:
    """In reStructuredText a section is its adorned title: "# Pin Cython ..." in an indented literal block read as a
    Markdown heading, and the chunk of pip's "Installing from local packages" stood under it."""
    from ragstream.ingestion.loader import headings_at

    settings = load_settings(
        overrides={"data_dir": str(tmp_path), "chunking.chunk_size": 200, "chunking.chunk_overlap": 0}
    )
    raw = settings.data_dir / "doc_raw" / "guide"
    raw.mkdir(parents=True)
    (raw / "user_guide.rst").write_text(RST_GUIDE, encoding="utf-8")
    IngestionManager(settings).ingest("guide")
    chunks = Services(settings).searcher("guide").snapshot().chunks
    assert chunks[-1].metadata["heading"] == "Installing from local packages"
    assert {c.metadata["heading"] for c in chunks} <= {
        "User Guide",
        "Build constraints",
        chunks[-1].metadata["heading"],
    }
    assert all(c.metadata["title"] == "User Guide" for c in chunks)
    assert [title for _, title in headings_at(RST_GUIDE, rst=True)] == [
        "User Guide",
        "Build constraints",
        "Installing from local packages",
    ]


def test_a_markdown_pages_title_is_its_front_matters_else_its_first_heading_outside_code(tmp_path: Path) -> None:
    """MDN's Vary page keeps its title in YAML front matter ("title: Vary header") and its first "#" heading is a
    section, "Syntax": the chunks said they came from a page titled "Syntax". Without front matter the title is the
    first heading, never a "# comment" in a fenced shell block above it."""
    from ragstream.ingestion.loader import load_document

    vary = tmp_path / "vary.md"
    vary.write_text(
        '---\ntitle: "Vary header"\nslug: Web/HTTP/Reference/Headers/Vary\n---\n\nThe `Vary` header ...\n\n'
        "## Syntax\n\n```http\nVary: *\n```\n",
        encoding="utf-8",
    )
    assert load_document(vary, 10**6).title == "Vary header"
    notes = tmp_path / "notes.md"
    notes.write_text("```bash\n# install it first\npip install x\n```\n\n# Deploying\n\nSteps.\n", encoding="utf-8")
    assert load_document(notes, 10**6).title == "Deploying"
    ruled = tmp_path / "ruled.md"
    ruled.write_text("---\n\n# Release notes\n\n---\n\nText.\n", encoding="utf-8")
    assert load_document(ruled, 10**6).title == "Release notes"  # a thematic break, no front matter

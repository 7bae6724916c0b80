"""An immutable index generation: the chunk table, its vectors, the BM25 index, the file link graph and the
documents' text as indexed (secrets redacted), from which the prompt widens excerpts where the source
folder is not at hand (a query machine of a deployment that shares no folder).

Each ingest that changes anything writes a new `index/g<N>/` folder, then commits it by writing
the manifest. Readers load the generation the manifest names, so a query never sees a half-written
index. Dense search is an exact scan of the generation's own vectors (memory-mapped): no vector
database is opened at query time, and no hit can come from outside the generation.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import Stemmer

from ragstream.code.identifiers import with_identifier_parts
from ragstream.code.symbols import index_text
from ragstream.errors import IndexVectorsError
from ragstream.index.manifest import generation_dir
from ragstream.state import Chunk
from ragstream.text.emphasis import without_underscore_emphasis
from ragstream.text.headings import name_headings

if TYPE_CHECKING:  # bm25s brings scipy (about half a second): imported by the first index read or write
    import bm25s

_STEMMER = Stemmer.Stemmer("english")
_TOKEN_FILE = re.compile(r"[\w./\-]+\.\w{1,8}")


def bm25_tokens(texts: list[str], joined: bool = False) -> list[list[str]]:
    """Stemmed words without stopwords, `_emphasis_` marks left out (`text/emphasis`); compound identifiers also as
    their words, and with `joined` (the BM25 index and its queries) joined terms also as one word (see
    `identifiers`)."""
    import bm25s

    expanded = [with_identifier_parts(without_underscore_emphasis(text), joined) for text in texts]
    return bm25s.tokenize(expanded, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False)


@dataclass
class Snapshot:
    generation: int
    chunks: list[Chunk]
    links: dict[str, list[str]]
    bm25: bm25s.BM25 | None
    vectors: np.ndarray | None = None  # row i is chunk i's normalized embedding; None in a pre-0.2 generation
    file_bm25: bm25s.BM25 | None = None  # BM25 over whole files: a document's terms, wherever they fall
    files: list[str] = field(default_factory=list)  # the file index's documents, in order
    folder: Path | None = None  # where the generation was read from (its documents load on first use)
    by_id: dict[str, int] = field(init=False)
    by_file: dict[str, list[str]] = field(init=False)
    _holding: dict[str, int] = field(init=False, default_factory=dict, repr=False)  # `share_holding`'s counts

    def __post_init__(self) -> None:
        self.by_id = {c.id: i for i, c in enumerate(self.chunks)}
        self.by_file = {}
        for c in self.chunks:
            self.by_file.setdefault(c.source_path, []).append(c.id)
        for ids in self.by_file.values():
            ids.sort(key=lambda cid: self.chunks[self.by_id[cid]].chunk_index)

    def chunk(self, chunk_id: str) -> Chunk:
        return self.chunks[self.by_id[chunk_id]]

    @cached_property
    def _unusable_rows(self) -> int:
        """How many stored vectors hold NaN or infinite values (read once: a generation never changes)."""
        if self.vectors is None or not len(self.chunks):
            return 0
        return int((~np.isfinite(self.vectors).all(axis=1)).sum())

    def dense_fault(self, width: int) -> str:
        """Why this generation's vectors cannot be compared with `width`-wide query vectors ("" when they can).

        An index written with another embedding model, or holding NaN vectors, would otherwise give a
        numpy error deep in a stage, or similarities that rank nothing; every reader asks here first."""
        if self.vectors is None or not len(self.chunks):
            return ""
        stored = int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0
        if width and stored != width:
            return (
                f"the index holds {stored}-dimensional vectors but the embedder gives {width}: the index was "
                "written with another embedding model; re-ingest the project with this one"
            )
        if self._unusable_rows:
            return (
                f"{self._unusable_rows} of {len(self.chunks)} stored vectors hold NaN or infinite values: "
                "the index is damaged; re-ingest the project"
            )
        return ""

    @cached_property
    def _documents(self) -> dict[str, str]:
        path = self.folder / "documents.jsonl" if self.folder else None
        if path is None or not path.is_file():
            return {}  # a generation written before documents were kept
        rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
        return {row["path"]: row["text"] for row in rows}

    def document_text(self, path: str) -> str | None:
        """A document's text as it was indexed (secrets redacted), or None."""
        return self._documents.get(path)

    @cached_property
    def sections(self) -> dict[str, tuple[str, list[str]]]:
        """Name (in lower case) -> the name as its heading writes it, and the prose chunks holding the section
        headed by it ("#### `no-cache`"): where overlapping chunks both hold its heading, the one holding more of
        its text, and the next chunk too where the heading falls in a chunk's second half with no heading after
        it (its text goes on there). Code is left out (a "# comment" in a script is no heading). Read once: a
        generation never changes."""
        best: dict[tuple[str, int], tuple[int, list[str], str]] = {}  # (file, heading's offset) -> (room, chunks, name)
        for c in self.chunks:
            if "language" in c.metadata or c.metadata.get("kind") not in ("text", "notebook", "html"):
                continue
            headings = name_headings(c.text)
            siblings = self.by_file[c.source_path]
            at = siblings.index(c.id) if headings else 0
            after = siblings[at + 1 : at + 2]
            for k, (offset, name) in enumerate(headings):
                where = (c.source_path, c.span.start + offset)
                room = len(c.text) - offset
                runs_on = k == len(headings) - 1 and room < len(c.text) / 2
                if where not in best or room > best[where][0]:
                    best[where] = (room, [c.id, *after] if runs_on else [c.id], name)
        found: dict[str, tuple[str, list[str]]] = {}
        for _, chunk_ids, name in best.values():
            ids = found.setdefault(name.lower(), (name, []))[1]
            ids.extend(cid for cid in chunk_ids if cid not in ids)
        return found

    def share_holding(self, name: str) -> float:
        """The share of the chunks whose text holds `name` (in lower case), counted once per name."""
        if name not in self._holding:
            self._holding[name] = sum(name in c.text.lower() for c in self.chunks)
        return self._holding[name] / len(self.chunks) if self.chunks else 0.0

    def vector_search(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) of the k nearest chunks, best first: an exact scan.

        Raises `IndexVectorsError` when the stored vectors cannot be compared with `query` (see `dense_fault`)."""
        if self.vectors is None or not len(self.chunks):
            return []
        fault = self.dense_fault(len(query))
        if fault:
            raise IndexVectorsError(fault)
        scores = self.vectors @ np.asarray(query, dtype=np.float32)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        order = top[np.lexsort((top, -scores[top]))]
        return [(self.chunks[int(i)].id, float(scores[i])) for i in order]

    def chunk_bm25(self, query: str, chunk_ids: list[str]) -> np.ndarray:
        """BM25 of each chunk (0 for a chunk the generation lacks or a query without terms)."""
        tokens = bm25_tokens([query], joined=True)[0]
        if self.bm25 is None or not tokens:
            return np.zeros(len(chunk_ids))
        scores = self.bm25.get_scores(tokens)
        return np.asarray([float(scores[self.by_id[cid]]) if cid in self.by_id else 0.0 for cid in chunk_ids])

    def file_bm25_of(self, query: str, chunk_ids: list[str]) -> np.ndarray:
        """BM25 of each chunk's whole file: document-level lexical evidence for the chunk."""
        tokens = bm25_tokens([query], joined=True)[0]
        if self.file_bm25 is None or not tokens:
            return np.zeros(len(chunk_ids))
        scores = dict(zip(self.files, (float(s) for s in self.file_bm25.get_scores(tokens)), strict=False))
        return np.asarray(
            [scores.get(self.chunk(cid).source_path, 0.0) if cid in self.by_id else 0.0 for cid in chunk_ids]
        )

    def document_frequency(self, terms: set[str]) -> dict[str, int]:
        """How many chunks hold each (stemmed, as `bm25_tokens` gives it) term, from the BM25 index."""
        if self.bm25 is None:
            return dict.fromkeys(terms, 0)
        vocab, indptr = self.bm25.vocab_dict, self.bm25.scores["indptr"]
        ids = {t: vocab.get(t) for t in terms}
        return {
            t: int(indptr[i + 1] - indptr[i]) if i is not None and i + 1 < len(indptr) else 0 for t, i in ids.items()
        }

    def vectors_of(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (those the generation holds)."""
        if self.vectors is None:
            return {}
        return {cid: np.asarray(self.vectors[self.by_id[cid]]) for cid in chunk_ids if cid in self.by_id}

    def bm25_search(self, query: str, k: int) -> list[tuple[str, float]]:
        if self.bm25 is None or not self.chunks:
            return []
        tokens = bm25_tokens([query], joined=True)
        if not tokens or not tokens[0]:
            return []
        docs, scores = self.bm25.retrieve(tokens, k=min(k, len(self.chunks)), show_progress=False, n_threads=1)
        return [(self.chunks[int(d)].id, float(s)) for d, s in zip(docs[0], scores[0], strict=False) if s > 0]


def find_links(chunks_by_file: dict[str, str], names: dict[str, str]) -> dict[str, list[str]]:
    """path -> other paths it names (by relative path or file name)."""
    links: dict[str, list[str]] = {}
    for path, text in chunks_by_file.items():
        found = {names[token] for token in _TOKEN_FILE.findall(text) if token in names}
        found.discard(path)
        if found:
            links[path] = sorted(found)
    return links


def _save_bm25(folder: Path, texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
    tokens = bm25_tokens(texts, joined=True) if texts else []
    if any(tokens):  # a corpus without a single word (say, only punctuation) has no lexical index
        import bm25s

        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        retriever.save(str(folder))


def write_snapshot(
    index_dir: Path,
    generation: int,
    chunks: list[Chunk],
    file_texts: dict[str, str],
    vectors: np.ndarray,
    file_bm25: tuple[float, float] = (0.9, 0.4),
) -> Path:
    """Write a generation. `file_bm25` is (k1, b) of the whole-file index: files are long, so term
    frequency saturates sooner and length is normalized less than for chunks."""
    target = generation_dir(index_dir, generation)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    np.save(target / "vectors.npy", np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1))
    with (target / "chunks.jsonl").open("w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(chunk.model_dump_json() + "\n")
    names: dict[str, str] = {}
    for path in file_texts:
        names.setdefault(Path(path).name, path)
        names[path] = path
    (target / "links.json").write_text(json.dumps(find_links(file_texts, names)), encoding="utf-8")
    with (target / "documents.jsonl").open("w", encoding="utf-8") as handle:
        for path in sorted(file_texts):
            handle.write(json.dumps({"path": path, "text": file_texts[path]}) + "\n")
    _save_bm25(target / "bm25", [index_text(c) for c in chunks])
    files = sorted(file_texts)
    (target / "files.json").write_text(json.dumps(files), encoding="utf-8")
    _save_bm25(target / "bm25_files", [file_texts[f] for f in files], *file_bm25)
    return target


@lru_cache(maxsize=8)
def _load(folder: Path, generation: int) -> Snapshot:
    import bm25s

    chunks = [  # split on "\n" only: splitlines() also cuts at U+2028 or U+0085, which JSON leaves raw in a text
        Chunk.model_validate_json(line)
        for line in (folder / "chunks.jsonl").read_text(encoding="utf-8").split("\n")
        if line
    ]
    links = json.loads((folder / "links.json").read_text(encoding="utf-8"))
    bm25 = bm25s.BM25.load(str(folder / "bm25")) if (folder / "bm25").is_dir() else None
    vectors = np.load(folder / "vectors.npy", mmap_mode="r") if (folder / "vectors.npy").is_file() else None
    file_bm25 = bm25s.BM25.load(str(folder / "bm25_files")) if (folder / "bm25_files").is_dir() else None
    files = json.loads((folder / "files.json").read_text(encoding="utf-8")) if (folder / "files.json").is_file() else []
    return Snapshot(
        generation=generation,
        chunks=chunks,
        links=links,
        bm25=bm25,
        vectors=vectors,
        file_bm25=file_bm25,
        files=files,
        folder=folder,
    )


_LOADING = threading.Lock()


def load_snapshot(index_dir: Path, generation: int) -> Snapshot:
    """The generation's snapshot (cached per process; generations never change once written). Loaded
    once even when concurrent first queries ask for it together."""
    with _LOADING:
        return _load(generation_dir(index_dir, generation), generation)


def prune_generations(index_dir: Path, keep: set[int]) -> None:
    """Remove generation folders not in `keep` (the current and the previous one stay for readers)."""
    if not index_dir.is_dir():
        return
    for folder in index_dir.iterdir():
        if folder.is_dir() and folder.name.startswith("g") and folder.name[1:].isdigit():
            if int(folder.name[1:]) not in keep:
                shutil.rmtree(folder, ignore_errors=True)

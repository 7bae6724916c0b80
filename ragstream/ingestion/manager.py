"""IngestionManager: a project folder to the vector store + BM25, incrementally and crash-safely.

Order of work: (1) embed the chunks of new and changed files and upsert them into the vector store
(stable ids, so a repeat is harmless); (2) write a new index generation (chunks, their vectors, BM25,
links; unchanged files keep their vectors); (3) commit the manifest through the catalog (a file written
atomically, or one PostgreSQL transaction with the generation's files); (4) delete chunks the store
holds that the committed generation does not. A run killed anywhere is repaired by the next one: it
re-embeds what the manifest does not vouch for and removes orphans.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

import ragstream.code.chunks
import ragstream.code.identifiers
import ragstream.code.outline
import ragstream.code.symbols
import ragstream.ingestion.loader
import ragstream.text.chunking
import ragstream.text.emphasis
import ragstream.text.fences
import ragstream.text.markup
import ragstream.text.offsets
import ragstream.text.rst
from ragstream.code.chunks import CodeSplitter
from ragstream.code.languages import load_languages
from ragstream.code.symbols import index_text, symbols_to_metadata
from ragstream.embedding.embedder import backend_variant, get_embedder
from ragstream.errors import IngestionError, ProjectError
from ragstream.index.catalog import Catalog, catalog_of
from ragstream.index.manifest import FileEntry, Manifest
from ragstream.index.snapshot import Snapshot, load_snapshot, write_snapshot
from ragstream.index.store import VectorIndex
from ragstream.ingestion.ignore import IgnoreRules
from ragstream.ingestion.loader import SkipFile, headings_at, load_document, unsafe_name_reason
from ragstream.secrets.scan import Finding, Scanned, name_skip_reason, secret_file_rule, share_skip_reason
from ragstream.secrets.scan import identity as secrets_identity
from ragstream.secrets.scan import scan as scan_secrets
from ragstream.settings import EmbeddingSettings, SecretsSettings, Settings
from ragstream.state import Chunk, Span
from ragstream.tenancy.projects import ProjectPaths, project_paths
from ragstream.text.chunk_ids import chunk_id
from ragstream.text.chunking import Chunker
from ragstream.text.dates import first_day
from ragstream.text.fences import escape_attr
from ragstream.text.lines import LineIndex
from ragstream.text.offsets import Offsets
from ragstream.text.rst import is_rst

log = logging.getLogger("ragstream.ingestion")

# (phase, done, total): phase "scan" counts files, phase "embed" counts chunks.
Progress = Callable[[str, int, int], None]
# The modules whose code decides a chunk's lexical (BM25) terms: a change rewrites the index generation on the
# next ingest, with the stored vectors (nothing is embedded again).
LEXICAL_MODULES = (ragstream.code.identifiers, ragstream.text.emphasis)
# The modules whose code decides where chunks are cut, or what text they are embedded as (their source is part
# of chunking_identity: a change re-chunks and re-embeds every file).
CUTTING_MODULES = (
    ragstream.text.chunking,
    ragstream.code.chunks,
    ragstream.code.outline,
    ragstream.code.symbols,  # what a chunk is embedded as (`index_text`)
    ragstream.ingestion.loader,
    ragstream.text.offsets,  # where a span points in the file
    ragstream.text.fences,  # which lines are code: a "#" line there is no heading labelling its chunks
    ragstream.text.rst,  # a reStructuredText section's title, which labels its chunks
    ragstream.text.markup,  # what a prose chunk is embedded as
)
NOTHING_TO_INGEST_SHOWN = 5  # skipped files named in the error for a folder with nothing to ingest
EMBED_BATCH = 64  # chunks embedded and stored per step (the progress bar's resolution)


@dataclass
class IngestionStats:
    project: str
    files_seen: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, list[Finding]] = field(default_factory=dict)  # redacted before storing: type and line only
    chunks_written: int = 0
    chunks_deleted: int = 0
    chunks_total: int = 0
    generation: int = 0
    seconds: float = 0.0
    # Wall seconds per phase: "read" (load files), "secrets" (the scan), "cut" (split and count tokens), "embed",
    # "store"
    # (vector store writes, overlapped with embedding: only the wait for the last one adds to the total),
    # "index" (the generation: chunk table, vectors, BM25, links, manifest).
    phases: dict[str, float] = field(default_factory=dict)

    def timed(self, phase: str, started: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + time.monotonic() - started

    def summary(self) -> str:
        return (
            f"{self.project}: {self.files_seen} files seen, {self.added} added, {self.updated} updated, "
            f"{self.deleted} deleted, {self.unchanged} unchanged, {len(self.skipped)} skipped, "
            f"{sum(map(len, self.secrets.values()))} secrets redacted; "
            f"{self.chunks_written} chunks written, {self.chunks_deleted} removed, {self.chunks_total} in the index "
            f"(generation {self.generation}, {self.seconds:.1f}s)"
        )


def embedding_identity(embedding: EmbeddingSettings) -> str:
    """What the stored vectors were made with, the local variant included (weights and quantization): a
    change re-embeds every file. torch and fp32 ONNX give the same vectors, so they share one identity."""
    identity = f"{embedding.provider}:{embedding.model}"
    if embedding.provider != "local":
        return identity
    variant = backend_variant(embedding.backend)
    return identity if variant == "fp32" else f"{identity}:{variant}"


def chunking_identity(settings: Settings) -> str:
    """How files are cut into chunks; a change re-chunks (and so re-embeds) every file, since kept chunks
    would otherwise mix two cuttings and lack the line and symbol metadata of the current one."""
    languages = hashlib.sha256((settings.config_dir / "code.json").read_bytes()).hexdigest()[:12]
    chunking = settings.chunking
    return (
        f"{cutting_rules_version()}:{chunking.chunk_size}:{chunking.chunk_overlap}:{languages}:"
        f"{secrets_identity(settings.secrets)}"
    )


@functools.cache
def cutting_rules_version() -> str:
    """A digest of the modules whose code decides where chunks are cut, so that changing a cutting
    rule re-chunks on the next ingest without anyone remembering to bump a version by hand."""
    return _modules_digest(CUTTING_MODULES)


@functools.cache
def lexical_identity() -> str:
    """A digest of the modules that turn a chunk into BM25 terms: an index written with other terms than the
    queries' is rewritten on the next ingest (the terms of `no-cache` changed on 2026-11-25)."""
    return _modules_digest(LEXICAL_MODULES)


def _modules_digest(modules: tuple[ModuleType, ...]) -> str:
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:12]


def _walk(
    root: Path, skip_dirs: frozenset[str], ignore: IgnoreRules | None, secrets: SecretsSettings
) -> Iterator[tuple[str, Path | None, str | None]]:
    """(relative path, file, skip reason) for every file under root; never follows links out of it.
    Hidden folders and `skip_dirs` are not entered: they hold tool state, not the user's documents;
    hidden files are passed over too, except those named as secret files (`.env`), to be reported.
    With ignore rules, an ignored file or folder is yielded once with the rule that excludes it."""
    root_real = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        folder = Path(dirpath).relative_to(root).as_posix()
        folder = "" if folder == "." else folder
        if ignore is not None:
            ignore.enter(folder)
        kept = []
        for d in sorted(d for d in dirnames if not d.startswith(".") and d not in skip_dirs):
            rel = f"{folder}/{d}" if folder else d
            rule = ignore.rule_for(rel, is_dir=True) if ignore is not None else None
            if rule is None:
                kept.append(d)
            else:
                yield rel + "/", None, f"ignored by {rule}"
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.startswith(".") and secret_file_rule(name, secrets) is None:
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            rule = ignore.rule_for(rel, is_dir=False) if ignore is not None else None
            if rule is not None:
                yield rel, None, f"ignored by {rule}"
                continue
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root_real):
                    yield rel, None, "symlink pointing outside the project folder"
                    continue
            if not path.is_file():
                yield rel, None, "not a regular file"
                continue
            yield rel, path, None


def _nothing_to_ingest(root: Path, stats: IngestionStats) -> str:
    """Why a folder gave no chunks: its files' skip reasons (the first few), or that it holds none."""
    if not stats.skipped:
        return f"nothing to ingest in {root}: it has no files (hidden files and folders are not read); nothing written"
    reasons = [f"{path}: {reason}" for path, reason in sorted(stats.skipped.items())]
    shown = "; ".join(reasons[:NOTHING_TO_INGEST_SHOWN])
    more = f"; and {len(reasons) - NOTHING_TO_INGEST_SHOWN} more" if len(reasons) > NOTHING_TO_INGEST_SHOWN else ""
    files = f"none of its {len(reasons)} files can be indexed"
    return f"nothing to ingest in {root}: {files} ({shown}{more}); nothing written"


def _heading_for(headings: list[tuple[int, str]], offset: int) -> str:
    current = ""
    for start, heading in headings:
        if start > offset:
            break
        current = heading
    return current


class IngestionManager:
    def __init__(self, settings: Settings, chunker: Chunker | None = None) -> None:
        self.settings = settings
        self.chunker = chunker or Chunker.from_settings(settings)
        self.code_splitter = CodeSplitter(self.chunker)
        self.languages = load_languages(settings.config_dir)
        self.catalog: Catalog = catalog_of(settings)

    def store(self, paths: ProjectPaths) -> VectorIndex:
        return VectorIndex(paths, self.settings)

    def _chunks_for(
        self, rel: str, sha: str, mtime: float, text: str, title: str, kind: str, document: str
    ) -> list[Chunk]:
        """The chunks of `text` (the document's text with its secrets redacted), each spanning where its
        text lies in `document` (the text the file holds), so that a span points into the file as it is."""
        offsets = Offsets(document, text)
        headings = headings_at(text, is_rst(rel)) if kind in ("text", "notebook") else []
        dated = first_day(text, rel)
        language = self.languages.of(rel) if kind == "text" else None
        line_of = LineIndex(text).line_of if kind == "text" else None
        if language is not None:
            pieces = [(p.span, p.symbols) for p in self.code_splitter.split(text, language)]
        else:
            pieces = [(span, []) for span in self.chunker.spans(text)]
        chunks = []
        for index, (cut, symbols) in enumerate(pieces):
            start, end = offsets.outside_secrets(cut.start, cut.end)
            metadata: dict[str, str | int | float | bool | None] = {"mtime": mtime, "title": title, "kind": kind}
            if dated:
                metadata["date"] = dated
            heading = _heading_for(headings, start) if language is None else ""
            if heading:
                metadata["heading"] = heading
            if line_of is not None:
                metadata["line_start"], metadata["line_end"] = (
                    line_of(start),
                    line_of(max(start, end - 1)),
                )
            if language is not None:
                metadata["language"] = language.name
            if symbols:
                metadata["symbols"] = symbols_to_metadata(symbols)
            chunks.append(
                Chunk(
                    id=chunk_id(rel, sha, index),
                    source_path=rel,
                    sha256=sha,
                    chunk_index=index,
                    text=text[start:end],
                    span=Span(start=offsets.to_document(start), end=offsets.to_document(end, end=True)),
                    metadata=metadata,
                )
            )
        return chunks

    def ingest(
        self,
        project: str,
        source: Path | None = None,
        progress: Progress | None = None,
        ignore_files: bool | None = None,
    ) -> IngestionStats:
        """Index the project's folder; `ignore_files` (default: `ingestion.ignore_files`) honours ignore files."""
        paths = project_paths(self.settings, project)
        if source is not None:
            if not source.is_dir():
                raise ProjectError(f"--path {source} is not a folder")
        root = source or paths.source_dir()
        if not root.is_dir():
            raise ProjectError(f"project '{project}' has no documents: create {root} and put files in it")
        with self.catalog.lock(paths):
            use_ignore = self.settings.ingestion.ignore_files if ignore_files is None else ignore_files
            stats = self._ingest_locked(paths, root, progress, IgnoreRules(root) if use_ignore else None)
            if source is not None:  # remembered only once something from it is indexed
                paths.remember_source(source)
            return stats

    def _ingest_locked(
        self, paths: ProjectPaths, root: Path, progress: Progress | None, ignore: IgnoreRules | None
    ) -> IngestionStats:
        started = time.monotonic()
        stats = IngestionStats(project=paths.name)
        manifest = self.catalog.manifest(paths)
        identity = embedding_identity(self.settings.embedding)
        chunking = chunking_identity(self.settings)
        if manifest.embedding != identity or manifest.chunking != chunking:  # every file is cut and embedded again
            manifest = Manifest(generation=manifest.generation, embedding=identity, chunking=chunking)
        last = self._previous_snapshot(self.catalog, paths, manifest)
        previous = {c.id: c for c in last.chunks} if last else {}
        listing = list(_walk(root, frozenset(self.settings.ingestion.skip_dirs), ignore, self.settings.secrets))
        stats.files_seen = len(listing)

        files: dict[str, FileEntry] = {}
        texts: dict[str, str] = {}
        chunks: list[Chunk] = []
        to_write: list[Chunk] = []
        for done, (rel, path, reason) in enumerate(listing, start=1):
            if progress:
                progress("scan", done, len(listing))
            if path is None:
                stats.skipped[rel] = reason or "skipped"
                continue
            unsafe = unsafe_name_reason(rel)
            if unsafe is not None:  # its name would be printed in fences and listings
                stats.skipped[escape_attr(rel)] = unsafe
                continue
            secret_rule = secret_file_rule(rel, self.settings.secrets)
            if secret_rule is not None:
                stats.skipped[rel] = name_skip_reason(secret_rule)
                continue
            began = time.monotonic()
            try:
                doc = load_document(path, self.settings.ingestion.max_file_bytes)
            except SkipFile as skip:
                stats.skipped[rel] = skip.reason
                continue
            except OSError as exc:
                stats.skipped[rel] = f"unreadable ({exc.strerror})"
                continue
            finally:
                stats.timed("read", began)
            began = time.monotonic()
            old = manifest.files.get(rel)
            if old is not None and old.sha256 == doc.sha256 and not old.secrets:
                scanned = Scanned(doc.text, [], 0, 0)  # scanned clean before (a scanner change resets the manifest)
            else:
                scanned = scan_secrets(doc.text, rel, self.settings.secrets)  # before anything is stored
            stats.timed("secrets", began)
            if scanned.share > self.settings.secrets.mostly_secret_share:
                stats.skipped[rel] = share_skip_reason(scanned)
                continue
            if scanned.findings:
                stats.secrets[rel] = scanned.findings
            sha = doc.sha256
            stat = path.stat()
            if old is not None and old.sha256 == sha and all(cid in previous for cid in old.chunk_ids):
                file_chunks = [previous[cid] for cid in old.chunk_ids]
                stats.unchanged += 1
            else:
                began = time.monotonic()
                title = scan_secrets(doc.title, rel, self.settings.secrets).text
                file_chunks = self._chunks_for(rel, sha, stat.st_mtime, scanned.text, title, doc.kind, doc.text)
                stats.timed("cut", began)
                to_write.extend(file_chunks)
                if old is None:
                    stats.added += 1
                else:
                    stats.updated += 1
            files[rel] = FileEntry(
                sha256=sha,
                size=stat.st_size,
                mtime=stat.st_mtime,
                chunk_ids=[c.id for c in file_chunks],
                secrets=[f.to_dict() for f in scanned.findings],
            )
            texts[rel] = scanned.text
            chunks.extend(file_chunks)
        if not chunks:  # before anything is written: the project, if it exists, keeps its committed index
            raise ProjectError(_nothing_to_ingest(root, stats))
        stats.deleted = len(set(manifest.files) - set(files))

        expected = {c.id for c in chunks}
        try:
            with self.store(paths) as store:
                listed = store.all_ids()
                stored = listed if listed is not None else manifest.chunk_ids()
                writing = {c.id for c in to_write}
                kept = [c.id for c in chunks if c.id not in writing]
                width = len(next(iter(store.embeddings(kept[:1]).values()), ()))
                damaged = last is not None and bool(last.dense_fault(width))  # re-read from the store, rewritten
                vectors = last.vectors_of(kept) if last is not None and not damaged else {}
                carried = [c.id for c in chunks if c.id in stored - writing and c.id not in vectors]
                vectors.update(store.embeddings(carried))
                to_write.extend(
                    c for c in chunks if c.id not in writing and (c.id not in stored or c.id not in vectors)
                )
                vectors.update(self._embed_and_store(store, to_write, progress, stats))
                phase_start = time.monotonic()
                changed = (
                    bool(to_write)
                    or stats.deleted > 0
                    or set(files) != set(manifest.files)
                    or stats.skipped != manifest.skipped
                    or manifest.lexical != lexical_identity()
                )
                generation = manifest.generation
                if changed or damaged or last is None or last.vectors is None or (chunks and not last.files):
                    generation = self.catalog.next_generation(paths, manifest)
                    matrix = np.stack([vectors[c.id] for c in chunks]) if chunks else np.zeros((0, 0), dtype=np.float32)
                    ingestion = self.settings.ingestion
                    write_snapshot(
                        paths.index_dir,
                        generation,
                        chunks,
                        texts,
                        matrix,
                        (ingestion.file_bm25_k1, ingestion.file_bm25_b),
                    )
                    self.catalog.commit(
                        paths,
                        Manifest(
                            generation=generation,
                            embedding=identity,
                            chunking=chunking,
                            lexical=lexical_identity(),
                            files=files,
                            skipped=stats.skipped,
                        ),
                    )
                stats.timed("index", phase_start)
                orphans = sorted(stored - expected)
                if orphans:
                    store.delete(orphans)
        except (OSError, ValueError) as exc:
            raise IngestionError(f"ingesting project '{paths.name}' failed: {exc}") from exc
        self.catalog.prune(paths, {generation, manifest.generation})

        stats.chunks_written = len(to_write)
        stats.chunks_deleted = len(orphans)
        stats.chunks_total = len(chunks)
        stats.generation = generation
        stats.seconds = time.monotonic() - started
        log.info("ingest %s", stats.summary())
        return stats

    def _embed_and_store(
        self, store: VectorIndex, chunks: list[Chunk], progress: Progress | None, stats: IngestionStats
    ) -> dict[str, np.ndarray]:
        """Embed new chunks and upsert them into the vector store, a batch at a time (progress counts chunks).

        Store writes run one batch in a thread while the next batch embeds (both run outside the
        interpreter lock); at most one write is pending, so a failed write stops the ingest at once.
        """
        embedder = get_embedder(self.settings.embedding, self.settings.models_dir)
        vectors: dict[str, np.ndarray] = {}
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragstream-store") as writer:
            pending: Future[None] | None = None
            for start in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[start : start + EMBED_BATCH]
                began = time.monotonic()
                matrix = embedder.embed([index_text(c) for c in batch])
                stats.timed("embed", began)
                if pending is not None:
                    pending.result()
                pending = writer.submit(self._store_batch, store, batch, matrix, stats)
                vectors.update(zip((c.id for c in batch), matrix, strict=False))
                if progress:
                    progress("embed", start + len(batch), len(chunks))
            if pending is not None:
                pending.result()
        return vectors

    def _store_batch(self, store: VectorIndex, batch: list[Chunk], matrix: np.ndarray, stats: IngestionStats) -> None:
        began = time.monotonic()
        store.upsert([c.id for c in batch], matrix, [c.text for c in batch], [self._meta(c) for c in batch])
        stats.timed("store", began)

    @staticmethod
    def _meta(chunk: Chunk) -> dict[str, str | int | float | bool]:
        meta = {k: v for k, v in chunk.metadata.items() if v is not None}
        meta.update(
            path=chunk.source_path,
            sha256=chunk.sha256,
            chunk_index=chunk.chunk_index,
            start=chunk.span.start,
            end=chunk.span.end,
        )
        return meta

    @staticmethod
    def _previous_snapshot(catalog: Catalog, paths: ProjectPaths, manifest: Manifest) -> Snapshot | None:
        """The committed generation: its chunks and vectors are reused for unchanged files (no re-embedding)."""
        try:
            if not catalog.local_generation(paths, manifest.generation):
                return None
            return load_snapshot(paths.index_dir, manifest.generation)
        except (OSError, ValueError):
            return None

"""Builds retrieval components from settings, so callers never wire stores or models by hand."""

from __future__ import annotations

from ragstream.embedding.embedder import query_embedder
from ragstream.index.catalog import catalog_of
from ragstream.retrieval.reranker import Reranker, reranker_from_settings
from ragstream.retrieval.search import ProjectSearcher
from ragstream.settings import Settings
from ragstream.tenancy.projects import project_paths


def build_searcher(settings: Settings, project: str) -> ProjectSearcher:
    paths = project_paths(settings, project)
    embedder = query_embedder(settings.embedding, settings.models_dir)
    return ProjectSearcher(paths, settings.retrieval, embedder, catalog_of(settings))


def build_reranker(settings: Settings, runner=None) -> Reranker:
    return reranker_from_settings(settings, runner=runner)

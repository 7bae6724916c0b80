"""Workspace: what a data root holds, apart from any thread (projects, documents, ingest, agents, models, users).

A RunSession drives one thread through the graph; everything here is the same for every thread, so the GUI,
the CLI and the MCP server reach it without opening a checkpointer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.errors import InputError, ProjectError
from ragstream.index.catalog import catalog_of
from ragstream.ingestion.loader import unsafe_name_reason
from ragstream.orchestration.apply import run_alone
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages import Stage
from ragstream.stages.io import StageEnv
from ragstream.stages.options import RunOptions
from ragstream.stages.rules import stage_named
from ragstream.state import SuperPrompt
from ragstream.tenancy.projects import list_projects, most_recent_project, project_paths
from ragstream.text.fences import escape_attr

if TYPE_CHECKING:
    from ragstream.embedding.onnx_model import Variant
    from ragstream.ingestion.manager import IngestionStats, Progress
    from ragstream.llm.factory import AgentConfig
    from ragstream.memory.conversation import ConversationMemory
    from ragstream.tenancy.users import UserRegistry


class Workspace:
    def __init__(self, settings: Settings | None = None, services: Services | None = None) -> None:
        self.settings = settings or (services.settings if services else load_settings())
        self.services = services or Services(self.settings)

    # -- projects -------------------------------------------------------------------------

    def project_summary(self, project_name: str) -> dict[str, Any]:
        """A project's name, store folder and whether (and how much) it is ingested: what selecting it shows."""
        paths = project_paths(self.settings, project_name)
        summary = catalog_of(self.settings).summary(paths)
        return {
            "project": paths.name,
            "store_path": str(paths.store_dir),
            "ingested": bool(summary.generation),
            "files": summary.files,
            "chunks": summary.chunks,
        }

    def project_at(self, path: str) -> str:
        """The project whose store folder `path` is; it must be <data root>/chroma_db/<project>."""
        target = Path(path).resolve()
        store_root = (self.settings.data_dir / "chroma_db").resolve()
        if target.parent != store_root:
            raise ProjectError(f"{path} is not a project store under {store_root}")
        return target.name

    def project_names(self) -> list[str]:
        """The projects under the data root (with documents or an index), by name."""
        return sorted(set(list_projects(self.settings)) | set(catalog_of(self.settings).projects()))

    def most_recent_project(self) -> str | None:
        """The project changed last (ingested or given documents): where a new session starts."""
        return most_recent_project(self.settings)

    def projects(self) -> list[dict[str, Any]]:
        """Every project under the data root, as `project_overview` describes it."""
        return [self.project_overview(name) for name in self.project_names()]

    def project_overview(self, project_name: str) -> dict[str, Any]:
        """What the project's committed manifest says: ingested or not, each file with its chunks and redacted
        secrets, and the secret lines (type, file, line; never a value) that `projects` and the GUI list."""
        paths = project_paths(self.settings, project_name)
        manifest = catalog_of(self.settings).manifest(paths)
        return {
            "project": paths.name,
            "ingested": bool(manifest.generation),
            "files": [
                {"file": path, "chunks": len(entry.chunk_ids), "secrets": len(entry.secrets)}
                for path, entry in sorted(manifest.files.items())
            ],
            "chunks": len(manifest.chunk_ids()),
            "secrets": manifest.secret_lines(),
        }

    def create_project(self, project_name: str) -> str:
        """A new (or existing) project's document folder, made; its name as the data root spells it."""
        paths = project_paths(self.settings, project_name.strip())
        paths.raw_dir.mkdir(parents=True, exist_ok=True)
        return paths.name

    # -- a stage on its own ---------------------------------------------------------------

    def run_alone(
        self, stage: Stage | str, sp: SuperPrompt | None = None, prompt: str | None = None, **options: Any
    ) -> SuperPrompt:
        """One stage on a SuperPrompt outside any thread (nothing is checkpointed): what `ragstream preprocess`
        and `ragstream a2 < sp.json` print. `options` are RunOptions fields (e.g. `include_undecided=True`)."""
        stage = stage if isinstance(stage, Stage) else stage_named(stage)
        env = StageEnv(self.services, RunOptions(manual=True, **options), prompt)
        return run_alone(sp or SuperPrompt(), stage, env)

    # -- documents ------------------------------------------------------------------------

    def save_document(self, file_name: str, data: bytes, project_name: str | None) -> Path:
        """Put an uploaded document into the project's folder, to be ingested.

        Only the name's last part is kept, so an upload cannot leave the folder; a name that could end a line
        or hide text, or a file over `ingestion.max_file_bytes`, is refused with an InputError and not saved.
        """
        if not project_name:
            raise ProjectError("select a project to add documents to")
        name = Path(file_name).name
        unsafe = unsafe_name_reason(name)
        if unsafe is not None:
            raise InputError(f"{escape_attr(name)}: {unsafe}, not saved")
        limit = self.settings.ingestion.max_file_bytes
        if len(data) > limit:
            raise InputError(f"{name}: larger than {limit:,} bytes, not saved")
        folder = project_paths(self.settings, project_name).raw_dir
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        return folder / name

    def ingest_docs(
        self,
        project_name: str,
        progress: Progress | None = None,
        *,
        source: Path | None = None,
        ignore_files: bool | None = None,
    ) -> IngestionStats:
        """Index the project's folder (or `source`, remembered for the project); only changed files re-embed.
        `ignore_files` False also takes what .gitignore, .ignore or .ragstreamignore exclude."""
        from ragstream.ingestion.manager import IngestionManager  # chromadb loads only when ingesting

        return IngestionManager(self.settings, self.services.chunker).ingest(
            project_name, source, progress, ignore_files=ignore_files
        )

    def memory_of(self, user: str | None = None, server: str | None = None, token: str = "") -> ConversationMemory:
        """Conversation memory: the local user's, or with `server` (a LangGraph server's URL) the memory of `user`
        there, read and written with their bearer `token`."""
        if server is None:
            return self.services.memory
        from ragstream.app.remote_store import RemoteStore

        if not token or not user:
            raise InputError("a server's memory needs the user and their token (from `ragstream users add`)")
        return self.services.memory_of(user, RemoteStore(server, token))

    # -- what the pipeline runs with ------------------------------------------------------

    def agent_configs(self) -> list[tuple[str, str, AgentConfig]]:
        """Every agent config (name, version and the config, validated), as the stages load them."""
        factory = self.services.factory
        return [(name, version, factory.load_config(name, version)) for name, version in factory.list_agents()]

    def agent_config(self, agent_name: str, version: str = "v1") -> tuple[Path, AgentConfig]:
        """One agent config, validated, and the file it was read from (an unknown one is a typed error)."""
        factory = self.services.factory
        config = factory.load_config(agent_name, version)
        return factory.config_path(agent_name, version), config

    def label_choices(self) -> dict[str, list[str]]:
        """What a person may set each label to at the review (A2's config enums), per SuperPrompt body field."""
        from ragstream.shaping.prompt_shaper import AGENT, LABEL_TO_BODY

        enums = self.services.factory.load_config(AGENT, "v1").enums
        return {body: enums.get(name, []) for name, body in {**LABEL_TO_BODY, "confidence": "confidence"}.items()}

    def prepare_models(self, variants: list[Variant] | None = None) -> list[tuple[Variant, Path]]:
        """Build the embedding model's ONNX graph now (each variant, by default the configured backend's),
        not on the first run that embeds."""
        from ragstream.embedding.embedder import backend_variant
        from ragstream.embedding.model_files import weights_source
        from ragstream.embedding.onnx_model import ensure_model

        embedding = self.settings.embedding
        return [
            (variant, ensure_model(weights_source(embedding, variant), self.settings.models_dir, variant))
            for variant in variants or [backend_variant(embedding.backend)]
        ]

    def users(self) -> UserRegistry:
        """The users of a shared LangGraph server on this data root, each with their projects and token."""
        from ragstream.tenancy.users import UserRegistry

        return UserRegistry.of(self.settings)

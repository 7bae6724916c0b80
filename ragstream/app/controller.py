"""AppController: the session object the GUI and CLI hold (controller spec §4-8).

It owns no pipeline logic: each stage method drives the one compiled graph on this controller's
checkpointer thread. A failing stage leaves the SuperPrompt exactly as it was, sets `last_error`
and re-raises the typed error.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END
from langgraph.types import Command

from ragstream.errors import InputError, ProjectError, RagstreamError, StageOrderError
from ragstream.index.catalog import catalog_of
from ragstream.ingestion.loader import unsafe_name_reason
from ragstream.orchestration.answer import ANSWER, check_sendable
from ragstream.orchestration.apply import apply_edit, run_alone, to_channels
from ragstream.orchestration.checkpoint import open_checkpointer
from ragstream.orchestration.graph import graph_for, preflight
from ragstream.orchestration.review import NO_ANSWER
from ragstream.orchestration.strict import DECIDE
from ragstream.preprocessing import validate_prompt
from ragstream.rendering.styles import export_prompt
from ragstream.secrets.scan import Finding, scan_prompt
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages import Stage
from ragstream.stages.io import StageEnv
from ragstream.stages.options import RunOptions
from ragstream.stages.rules import allowed_stages, next_stage, stage_named
from ragstream.state import Answer, SuperPrompt
from ragstream.telemetry.otel import OtelSpans
from ragstream.telemetry.trace import TraceStore, summarize
from ragstream.tenancy.projects import list_projects, most_recent_project, project_paths
from ragstream.text.fences import escape_attr

if TYPE_CHECKING:
    from ragstream.embedding.onnx_model import Variant
    from ragstream.ingestion.manager import IngestionStats, Progress
    from ragstream.llm.factory import AgentConfig
    from ragstream.memory.conversation import ConversationMemory
    from ragstream.tenancy.users import UserRegistry

log = logging.getLogger("ragstream.controller")


class AppController:
    def __init__(
        self,
        settings: Settings | None = None,
        *,
        thread_id: str | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        services: Services | None = None,
    ) -> None:
        self.settings = settings or load_settings()
        self.services = services or Services(self.settings)
        self.checkpointer = checkpointer or open_checkpointer(self.settings)
        self.graph = graph_for(self.checkpointer)
        self.thread_id = thread_id or uuid.uuid4().hex[:12]
        self.active_project: str | None = None
        self.active_store_path: str | None = None
        # The session's run options: what the next run, step and resume use (a run's own options become these
        # once the run is accepted). Their project is always None: the session's project is `active_project`.
        self.options = RunOptions()
        self.last_error: str | None = None
        self.errors: list[dict[str, str]] = []
        key = self.settings.llm.api_key.get_secret_value() if self.settings.llm.api_key else None
        self.traces = TraceStore(self.settings.data_dir / "traces", [key], self.settings.telemetry.redact_patterns)
        self.spans = OtelSpans.from_settings(self.settings.telemetry)
        self.on_event: Callable[[dict[str, Any]], None] | None = None
        self.prompt_secrets: list[Finding] = []  # found in the last prompt given, and redacted

    # -- state ----------------------------------------------------------------------------

    @property
    def _cfg(self) -> RunnableConfig:
        return {"configurable": {"thread_id": self.thread_id}}

    @property
    def sp(self) -> SuperPrompt:
        values = self.graph.get_state(self._cfg).values
        return SuperPrompt.model_validate(values) if values else SuperPrompt()

    @property
    def paused_before(self) -> list[str]:
        """Nodes the thread will run next when resumed (`review` at a review; empty when finished or never started)."""
        return list(self.graph.get_state(self._cfg).next)

    @property
    def waiting(self) -> dict[str, Any] | None:
        """The payload of the interrupt the thread waits on (a review, or strict mode's header decisions)."""
        interrupts = self.graph.get_state(self._cfg).interrupts
        return interrupts[0].value if interrupts else None

    def _context(self, manual: bool, options: RunOptions | None = None) -> RunOptions:
        """The options a graph call runs with: the session's (or a run's), on the active project, with the services.

        A manual step skips nothing and never sends."""
        options = options or self.options
        values = options.model_dump()
        values.update(
            project=options.project or self.active_project,
            skip=[] if manual else options.skip,
            manual=manual,
            send=options.send and not manual,
        )
        return RunOptions(services=self.services, **values)

    def _run_graph(
        self,
        graph_input: Any,
        context: RunOptions,
        stage: Stage | None,
        label: str,
        accepted: Callable[[], None] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> None:
        """Check the first stage, then run the graph from it through its stream.

        The check runs before the graph is touched (and before `accepted` commits the call's options),
        so a refused call leaves the thread and the controller exactly as they were (`stage` None: the
        caller checked). Stage events reach `on_event` live and the trace; the answer's tokens reach
        `on_token` as the model writes them.
        """
        if stage is not None:
            prompt = graph_input.get("prompt") if isinstance(graph_input, dict) else None
            if isinstance(graph_input, Command) and isinstance(graph_input.update, dict):
                prompt = graph_input.update.get("prompt")
            preflight(self.sp, stage, context, self.services, prompt)
        if accepted:
            accepted()
        if self.paused_before:  # a pending review or a failed stage: the state decides where to go now
            self.graph.update_state(self._cfg, None, as_node=END)
        self._stream(graph_input, context, label, on_token)

    def _stream(
        self,
        graph_input: Any,
        context: RunOptions,
        label: str,
        on_token: Callable[[str], None] | None = None,
        stop_after: list[str] | None = None,
    ) -> None:
        events: list[dict[str, Any]] = []
        with self.spans.run(self.thread_id, label) if self.spans else nullcontext():
            self._stream_events(graph_input, context, label, events, on_token, stop_after)

    def _stream_events(
        self,
        graph_input: Any,
        context: RunOptions,
        label: str,
        events: list[dict[str, Any]],
        on_token: Callable[[str], None] | None,
        stop_after: list[str] | None,
    ) -> None:
        try:
            stream = self.graph.stream(
                graph_input, self._cfg, context=context, interrupt_after=stop_after, stream_mode=["custom", "messages"]
            )
            # With a list of modes LangGraph yields (mode, data) pairs; its annotation does not say so.
            for mode, data in cast("Iterator[tuple[str, Any]]", stream):
                if mode == "messages":
                    chunk, metadata = data
                    if (
                        on_token
                        and metadata.get("langgraph_node") == ANSWER
                        and isinstance(chunk.content, str)
                        and chunk.content
                    ):
                        on_token(chunk.content)
                    continue
                event = {**data, "call": label}
                events.append(event)
                if self.spans:
                    self.spans.record(event)
                if self.on_event:
                    self.on_event(event)
        finally:
            self.traces.append(self.thread_id, events)

    def trace(self) -> list[dict[str, Any]]:
        """Every event recorded for this thread (stages, LLM calls, errors), oldest first."""
        return self.traces.read(self.thread_id)

    def trace_summary(self) -> dict[str, Any]:
        """The thread's trace summed up: time and counts per stage, LLM calls, tokens and cost, errors."""
        return summarize(self.trace())

    def _execute(self, label: str, run: Callable[[], None]) -> SuperPrompt:
        started = time.perf_counter()
        try:
            run()
        except RagstreamError as exc:
            self.last_error = f"{label}: {exc}"
            self.errors.append({"stage": label, "error": type(exc).__name__, "message": str(exc)})
            self.traces.append(
                self.thread_id,
                [{"event": "call_error", "call": label, "error": type(exc).__name__, "message": str(exc)}],
            )
            log.info("stage %s failed: %s", label, exc)  # raised to the caller, who reports it once
            raise
        self.last_error = None
        sp = self.sp
        if sp.stage is Stage.BUILD and label != "send":  # what the built prompt holds, by section and excerpt
            self.traces.append(self.thread_id, [{"event": "prompt_tokens", "call": label, **self.token_breakdown(sp)}])
        log.info(
            "stage %s on thread %s: %.3fs, stage=%s, %d chunks, %d selected",
            label,
            self.thread_id,
            time.perf_counter() - started,
            sp.stage.value,
            len(sp.base_context_chunks),
            len(sp.final_selection_ids),
        )
        return sp

    # -- stages ---------------------------------------------------------------------------

    def preprocess(self, user_text: str, restart: bool = True) -> SuperPrompt:
        """PreProcessing on a new prompt (a new run on this thread; `restart=False` refuses once preprocessed)."""

        def run() -> None:
            if not restart and self.sp.stage is not Stage.RAW:
                raise StageOrderError(
                    "preprocess", self.sp.stage.value, "the prompt is already preprocessed; restart to preprocess again"
                )
            goto = Command(goto=Stage.PREPROCESS.node, update={"prompt": self._guard_prompt(user_text)})
            self._run_graph(goto, self._context(manual=True), Stage.PREPROCESS, "preprocess")

        return self._execute("preprocess", run)

    def token_breakdown(self, sp: SuperPrompt | None = None, ask_server: bool = False) -> dict[str, Any]:
        """Tokens of the built prompt per section and excerpt, naming the tokenizer and whether the count is
        exact for the model; `ask_server` adds an OpenAI-compatible server's own count (its /tokenize)."""
        from ragstream.orchestration.token_report import token_breakdown

        return token_breakdown(sp or self.sp, self.services.budget, self.settings if ask_server else None)

    def _guard_prompt(self, user_text: str) -> str:
        """The prompt (or an edit's text) with its secrets redacted before the graph (checkpoints, traces, memory, any
        LLM) sees it; `prompt_secrets` and a `prompt_secrets` event (type and line, never the value) warn the person."""
        if not isinstance(user_text, str):
            return user_text
        scanned = scan_prompt(user_text, self.settings.secrets)
        self.prompt_secrets = scanned.findings
        if scanned.findings and self.on_event:
            self.on_event({"event": "prompt_secrets", "findings": [f.to_dict() for f in scanned.findings]})
        return scanned.text

    def _step(self, stage: Stage) -> SuperPrompt:
        def run() -> None:
            self._run_graph(Command(goto=stage.node), self._context(manual=True), stage, stage.node)

        return self._execute(stage.node, run)

    # The manual stage methods the controller spec names; each runs its stage by hand on this thread, and is
    # refused, changing nothing, when the stage may not run yet.

    def run_a2(self) -> SuperPrompt:
        return self._step(Stage.A2)

    def run_retrieval(self) -> SuperPrompt:
        return self._step(Stage.RETRIEVAL)

    def run_reranker(self) -> SuperPrompt:
        return self._step(Stage.RERANK)

    def run_a3(self) -> SuperPrompt:
        return self._step(Stage.A3)

    def run_a4(self) -> SuperPrompt:
        return self._step(Stage.A4)

    def run_a5(self) -> SuperPrompt:
        return self._step(Stage.A5)

    def build_prompt(self) -> SuperPrompt:
        return self._step(Stage.BUILD)

    def run_stage(self, stage: Stage | str, user_text: str | None = None) -> SuperPrompt:
        """One stage by name (what the GUI's buttons and `ragstream step` call)."""
        stage = stage if isinstance(stage, Stage) else stage_named(stage)
        if stage is Stage.PREPROCESS:
            return self.preprocess(user_text if user_text is not None else self.sp.raw_prompt)
        return self._step(stage)

    def run_full_pipeline(
        self,
        user_text: str,
        options: RunOptions | Mapping[str, Any] | None = None,
        *,
        on_token: Callable[[str], None] | None = None,
        **changes: Any,
    ) -> SuperPrompt:
        """All stages in order, pausing where the options' `pause_after` says (default: after A4).

        The run's options are `options` (RunOptions or a mapping of its fields; default: the session's) with
        `changes`, RunOptions fields given as keyword arguments (`pause_after="none"`); anything else, or an
        unknown or bad field, is an InputError and the run does not start. Accepted, they become the session's
        options and their project the active one. With `send`, the run goes on from the build to the answer and
        its critic (tokens reach `on_token`).
        """

        def run() -> None:
            base = self.options if options is None else RunOptions.coerce(options)
            opts = RunOptions(**{**base.model_dump(), **changes}) if changes else base
            validate_prompt(user_text, self.settings)
            text = self._guard_prompt(user_text)

            def accepted() -> None:
                self.options = opts.model_copy(update={"project": None})
                if opts.project:
                    self.select_project(opts.project)

            context = self._context(manual=False, options=opts)
            self._run_graph({"prompt": text}, context, Stage.PREPROCESS, "run_full_pipeline", accepted, on_token)

        return self._execute("run_full_pipeline", run)

    def run_alone(
        self, stage: Stage | str, sp: SuperPrompt | None = None, prompt: str | None = None, **options: Any
    ) -> SuperPrompt:
        """One stage on a SuperPrompt outside any thread (nothing is checkpointed): what `ragstream preprocess`
        and `ragstream a2 < sp.json` print. `options` are RunOptions fields (e.g. `include_undecided=True`)."""
        stage = stage if isinstance(stage, Stage) else stage_named(stage)
        env = StageEnv(self.services, RunOptions(manual=True, **options), prompt)
        return run_alone(sp or SuperPrompt(), stage, env)

    def resume(self, answer: dict[str, Any] | None = None, **changes: Any) -> SuperPrompt:
        """Continue an auto run: answer the pending review (`{"accept": True}` unless `answer` says
        otherwise), or go on from the frontier (edits made at a pause are already applied).

        It runs with the session's options, or with `changes` to them for this call (RunOptions fields as
        keywords: `pause_after="none"` finishes the run without stopping at a review)."""
        options = RunOptions(**{**self.options.model_dump(), **changes}) if changes else None
        context = self._context(manual=False, options=options)
        if answer is not None and not answer:  # LangGraph would read {} as a map of answers to no interrupt
            raise InputError(NO_ANSWER)
        if self.waiting is not None:
            sp = self._execute(
                "resume",
                lambda: self._stream(Command(resume={"accept": True} if answer is None else answer), context, "resume"),
            )
            if self.paused_before or next_stage(sp.stage, set(context.skip)) is None:
                return sp
            # Only a checkpoint from before each stage had its own review ends here, unfinished: a `review`
            # paused after another stage than A4 has no edge to where the run goes on. Go on from the frontier.
        elif answer is not None:
            raise InputError("nothing waits for an answer: the run is not at a review")
        sp = self.sp
        target = next_stage(sp.stage, set(context.skip)) if sp.stage is not Stage.RAW else None
        if target is None:
            raise InputError("nothing to resume: the run is finished or has not started")

        def run() -> None:
            self._run_graph(Command(goto=target.node), context, target, "resume")

        return self._execute("resume", run)

    def edit(self, **fields: Any) -> SuperPrompt:
        """A person's edits, recorded as the output of the stage that owns them (e.g. A4's, at the pause).

        At a review this answers the review's interrupt with the edits (the same `Command(resume=...)`
        a LangGraph client sends) and stops right after it, so `resume()` goes on; a refused edit leaves
        the review waiting. Elsewhere the edit is applied through the same `apply_edit`. An edit
        invalidates what depends on it, like a re-run of that stage: editing the condensed context after
        the build re-opens the build, editing a label re-opens A5. Typed text is secret-scanned like a
        prompt.
        """

        def run() -> None:
            typed = {
                name: self._guard_prompt(value) if isinstance(value, str) else value for name, value in fields.items()
            }
            if (self.waiting or {}).get("kind") == "review":
                pending = self.paused_before  # the review node that waits (`review` after A4)
                self._stream(Command(resume=typed), self._context(manual=False), "edit", stop_after=pending)
                return
            sp = self.sp
            updates, frontier = apply_edit(sp, typed)
            self.graph.update_state(self._cfg, to_channels(sp, updates), as_node=frontier.node)

        return self._execute("edit", run)

    def decide(self, decisions: dict[str, str]) -> SuperPrompt:
        """Strict mode: answer the question about headers PreProcessing could not map (header -> canonical
        name, "keep" or "drop"), and stop right after; `resume()` goes on. A refused answer keeps it waiting."""

        def run() -> None:
            if (self.waiting or {}).get("kind") != "headers":
                raise InputError("no header waits for a decision on this thread")
            self._stream(
                Command(resume={"decisions": decisions}), self._context(manual=False), "decide", stop_after=[DECIDE]
            )

        return self._execute("decide", run)

    def allowed_stages(self) -> list[Stage]:
        """The stages that may run next on this thread, in order (the GUI enables their buttons)."""
        return allowed_stages(self.sp)

    def label_choices(self) -> dict[str, list[str]]:
        """What a person may set each label to at the review (A2's config enums), per SuperPrompt body field."""
        from ragstream.shaping.prompt_shaper import AGENT, LABEL_TO_BODY

        enums = self.services.factory.load_config(AGENT, "v1").enums
        return {body: enums.get(name, []) for name, body in {**LABEL_TO_BODY, "confidence": "confidence"}.items()}

    def export_prompt(self, style: str, sp: SuperPrompt | None = None) -> str:
        """The built prompt written in a style (markdown, xml, json, plain); a run not built yet is an InputError."""
        return export_prompt(sp or self.sp, style)

    # -- send and memory ------------------------------------------------------------------

    def send(self, on_token: Callable[[str], None] | None = None) -> Answer:
        """Send the built prompt to the configured LLM through the graph's answer and critic nodes.

        Tokens reach `on_token` as they stream; a critic rejection regenerates with its feedback, up to
        `send.critic_max_retries`. The answer is `SuperPrompt.answer`, in the trace, and (with a project
        and `memory.persist`) in conversation memory.
        """

        def run() -> None:
            check_sendable(self.sp, self.services)
            context = RunOptions(project=self.active_project, send=True, manual=True, services=self.services)
            self._run_graph(Command(goto=ANSWER), context, None, "send", on_token=on_token)

        answer = self._execute("send", run).answer
        assert answer is not None
        return answer

    def record_answer(self, answer: str) -> bool:
        """Remember an answer obtained elsewhere (pasted by the user) for the current prompt."""
        if not self.active_project:
            raise InputError("select a project to keep conversation history for")
        return self.services.memory.record(self.active_project, self.sp.raw_prompt, answer, self.thread_id)

    # -- history --------------------------------------------------------------------------

    def history(self) -> list[dict[str, Any]]:
        """The thread's checkpoints, newest first."""
        rows = []
        for snap in self.graph.get_state_history(self._cfg):
            values = snap.values or {}
            stage = values.get("stage", Stage.RAW)
            rows.append(
                {
                    "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
                    "stage": Stage(stage).value,
                    "next": list(snap.next),
                    "step": (snap.metadata or {}).get("step"),
                    "created_at": snap.created_at,
                }
            )
        return rows

    def restart_from(self, checkpoint_id: str) -> SuperPrompt:
        """Time travel: make an earlier checkpoint the thread's current state (a fork; history is kept)."""
        for snap in self.graph.get_state_history(self._cfg):
            if snap.config["configurable"]["checkpoint_id"] == checkpoint_id:
                values = SuperPrompt.model_validate(snap.values) if snap.values else SuperPrompt()
                node = values.stage.node if values.stage is not Stage.RAW else Stage.PREPROCESS.node
                self.graph.update_state(self._cfg, to_channels(values, dict(values)), as_node=node)
                return self.sp
        raise InputError(f"no checkpoint {checkpoint_id!r} on thread {self.thread_id}")

    # -- projects -------------------------------------------------------------------------

    def select_project(self, project_name: str) -> dict[str, Any]:
        paths = project_paths(self.settings, project_name)
        self.active_project = paths.name
        self.active_store_path = str(paths.store_dir)
        summary = catalog_of(self.settings).summary(paths)
        return {
            "project": paths.name,
            "store_path": self.active_store_path,
            "ingested": bool(summary.generation),
            "files": summary.files,
            "chunks": summary.chunks,
        }

    def set_store_path(self, path: str) -> dict[str, Any]:
        """Select a project by its store folder, which must be <data root>/chroma_db/<project>."""
        target = Path(path).resolve()
        store_root = (self.settings.data_dir / "chroma_db").resolve()
        if target.parent != store_root:
            raise ProjectError(f"{path} is not a project store under {store_root}")
        return self.select_project(target.name)

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

    def create_project(self, project_name: str) -> dict[str, Any]:
        """A new (or existing) project's document folder, made and selected."""
        paths = project_paths(self.settings, project_name.strip())
        paths.raw_dir.mkdir(parents=True, exist_ok=True)
        return self.select_project(paths.name)

    def save_document(self, file_name: str, data: bytes, project_name: str | None = None) -> Path:
        """Put an uploaded document into the project's folder (the active project by default), to be ingested.

        Only the name's last part is kept, so an upload cannot leave the folder; a name that could end a line
        or hide text, or a file over `ingestion.max_file_bytes`, is refused with an InputError and not saved.
        """
        project = project_name or self.active_project
        if not project:
            raise ProjectError("select a project to add documents to")
        name = Path(file_name).name
        unsafe = unsafe_name_reason(name)
        if unsafe is not None:
            raise InputError(f"{escape_attr(name)}: {unsafe}, not saved")
        limit = self.settings.ingestion.max_file_bytes
        if len(data) > limit:
            raise InputError(f"{name}: larger than {limit:,} bytes, not saved")
        folder = project_paths(self.settings, project).raw_dir
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

        try:
            return IngestionManager(self.settings, self.services.chunker).ingest(
                project_name, source, progress, ignore_files=ignore_files
            )
        except RagstreamError as exc:
            self.last_error = f"ingest: {exc}"
            raise

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

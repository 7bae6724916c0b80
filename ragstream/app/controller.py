"""AppController: the session object the GUI and CLI hold (controller spec §4-8).

It owns no pipeline logic: each stage method drives the one compiled graph on this controller's
checkpointer thread. A failing stage leaves the SuperPrompt exactly as it was, sets `last_error`
and re-raises the typed error.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from ragstream.errors import InputError, ProjectError, RagstreamError
from ragstream.ingestion.manager import IngestionManager, IngestionStats, Progress
from ragstream.ingestion.manifest import Manifest
from ragstream.orchestration.checkpoint import open_checkpointer
from ragstream.orchestration.otel import OtelSpans
from ragstream.orchestration.telemetry import TraceStore
from ragstream.orchestration.graph import NODE_FOR_STAGE, NODES, PREVIOUS_NODE, STAGE_FOR_NODE, RunContext, build_graph
from ragstream.preprocessing import validate_prompt
from ragstream.projects import project_paths
from ragstream.prompt_view import render_prompt
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.state import PromptBody, Stage, SuperPrompt, check_stage_allowed

log = logging.getLogger("ragstream.controller")

EDITABLE = {"S_CTX_MD", "final_selection_ids", "body"}
PAUSE_POLICIES = ("a4", "none", "all")


def pause_nodes(policy: str | list[str]) -> list[str] | None:
    """`a4` (default): pause after the Condenser; `all`: after every stage; `none`; or node names."""
    if isinstance(policy, list):
        unknown = set(policy) - {name for name, _ in NODES}
        if unknown:
            raise InputError(f"unknown pause points {sorted(unknown)}")
        return policy or None
    if policy not in PAUSE_POLICIES:
        raise InputError(f"pause_after must be one of {PAUSE_POLICIES} or a list of stages, not {policy!r}")
    return {"a4": ["a4"], "none": None, "all": [name for name, _ in NODES]}[policy]


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
        self.graph = build_graph(self.checkpointer)
        self.thread_id = thread_id or uuid.uuid4().hex[:12]
        self.active_project: str | None = None
        self.active_store_path: str | None = None
        self.config: dict[str, Any] = {
            "pause_after": "a4",
            "skip": [],
            "strategy": None,
            "include_undecided": None,
        }
        self.history_profile: str | None = None
        self.last_error: str | None = None
        self.errors: list[dict[str, str]] = []
        key = self.settings.llm.api_key.get_secret_value() if self.settings.llm.api_key else None
        self.traces = TraceStore(self.settings.data_dir / "traces", [key], self.settings.telemetry.redact_patterns)
        self.spans = OtelSpans.from_settings(self.settings.telemetry)
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    # -- state ----------------------------------------------------------------------------

    @property
    def _cfg(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread_id}}

    @property
    def sp(self) -> SuperPrompt:
        values = self.graph.get_state(self._cfg).values
        return SuperPrompt.model_validate(values) if values else SuperPrompt()

    @property
    def paused_before(self) -> list[str]:
        """Nodes the thread will run next when resumed (empty when finished or never started)."""
        return list(self.graph.get_state(self._cfg).next)

    def _context(self, auto: bool, user_text: str | None = None) -> RunContext:
        ctx = RunContext(
            project=self.active_project,
            user_text=user_text,
            strategy=self.config["strategy"],
            skip=list(self.config["skip"]) if auto else [],
            include_undecided=self.config["include_undecided"],
            history_profile=self.history_profile,
            services=self.services,
        )
        ctx.validate()
        return ctx

    def _run_graph(self, graph_input: Any, context: RunContext, interrupt_after: list[str] | None, label: str) -> None:
        """Run the graph through its stream, so stage events reach `on_event` live and the trace."""
        events: list[dict[str, Any]] = []
        try:
            for event in self.graph.stream(
                graph_input, self._cfg, context=context, interrupt_after=interrupt_after, stream_mode="custom"
            ):
                event = {**event, "call": label}
                events.append(event)
                if self.spans:
                    self.spans.record(self.thread_id, event)
                if self.on_event:
                    self.on_event(event)
        finally:
            self.traces.append(self.thread_id, events)

    def trace(self) -> list[dict[str, Any]]:
        """Every event recorded for this thread (stages, LLM calls, errors), oldest first."""
        return self.traces.read(self.thread_id)

    def _execute(self, label: str, run: Callable[[], None]) -> SuperPrompt:
        started = time.perf_counter()
        try:
            run()
        except RagstreamError as exc:
            self.last_error = f"{label}: {exc}"
            self.errors.append({"stage": label, "error": type(exc).__name__, "message": str(exc)})
            self.traces.append(self.thread_id, [{"event": "call_error", "call": label, "error": type(exc).__name__, "message": str(exc)}])
            log.warning("stage %s failed: %s", label, exc)
            raise
        self.last_error = None
        sp = self.sp
        log.info(
            "stage %s on thread %s: %.3fs, stage=%s, %d chunks, %d selected",
            label, self.thread_id, time.perf_counter() - started, sp.stage.value,
            len(sp.base_context_chunks), len(sp.final_selection_ids),
        )
        return sp

    # -- stages ---------------------------------------------------------------------------

    def preprocess(self, user_text: str, restart: bool = True) -> SuperPrompt:
        def run() -> None:
            if not restart:
                check_stage_allowed(self.sp, Stage.PREPROCESSED)
            validate_prompt(user_text, self.settings)
            context = self._context(auto=False, user_text=user_text)
            self.graph.update_state(self._cfg, None, as_node=PREVIOUS_NODE["preprocess"])
            self._run_graph(None, context, ["preprocess"], "preprocess")

        return self._execute("preprocess", run)

    def _step(self, stage: Stage) -> SuperPrompt:
        node = NODE_FOR_STAGE[stage]

        def run() -> None:
            check_stage_allowed(self.sp, stage)
            context = self._context(auto=False)
            self.graph.update_state(self._cfg, None, as_node=PREVIOUS_NODE[node])
            self._run_graph(None, context, [node], node)

        return self._execute(node, run)

    def run_a2(self) -> SuperPrompt:
        return self._step(Stage.A2)

    def run_retrieval(self) -> SuperPrompt:
        return self._step(Stage.RETRIEVAL)

    def run_reranker(self) -> SuperPrompt:
        return self._step(Stage.RERANKED)

    def run_a3(self) -> SuperPrompt:
        return self._step(Stage.A3)

    def run_a4(self) -> SuperPrompt:
        return self._step(Stage.A4)

    def run_a5(self) -> SuperPrompt:
        return self._step(Stage.A5)

    def build_prompt(self) -> SuperPrompt:
        return self._step(Stage.BUILT)

    def run_stage(self, stage: Stage | str, user_text: str | None = None) -> SuperPrompt:
        """One stage by name (what the GUI's buttons and `ragstream step` call)."""
        stage = Stage(stage) if not isinstance(stage, Stage) else stage
        if stage is Stage.PREPROCESSED:
            return self.preprocess(user_text if user_text is not None else self.sp.raw_prompt)
        if stage is Stage.RAW:
            raise InputError("'raw' is the starting state, not a stage")
        return self._step(stage)

    def run_full_pipeline(self, user_text: str, options: dict[str, Any] | None = None) -> SuperPrompt:
        """All stages in order, pausing where `options["pause_after"]` says (default: after A4)."""
        opts = {**self.config, **(options or {})}
        if "project" in opts and opts["project"]:
            self.select_project(opts["project"])
        self.config.update({k: opts[k] for k in ("pause_after", "skip", "strategy", "include_undecided") if k in opts})

        def run() -> None:
            validate_prompt(user_text, self.settings)
            context = self._context(auto=True, user_text=user_text)
            self.graph.update_state(self._cfg, None, as_node=PREVIOUS_NODE["preprocess"])
            self._run_graph(None, context, pause_nodes(self.config["pause_after"]), "run_full_pipeline")

        return self._execute("run_full_pipeline", run)

    def resume(self) -> SuperPrompt:
        """Continue an auto run from its pause (edits made at the pause are already applied)."""
        if not self.paused_before:
            raise InputError("nothing to resume: the run is finished or has not started")

        def run() -> None:
            self._run_graph(None, self._context(auto=True), pause_nodes(self.config["pause_after"]), "resume")

        return self._execute("resume", run)

    def edit(self, **fields: Any) -> SuperPrompt:
        """A person's edits, recorded as the output of the current stage (e.g. A4's, at the pause)."""
        sp = self.sp
        if sp.stage is Stage.RAW:
            raise InputError("nothing to edit yet: preprocess a prompt first")
        body_fields = set(PromptBody.model_fields)
        update: dict[str, Any] = {}
        body = sp.body.model_dump()
        for key, value in fields.items():
            if key in body_fields:
                body[key] = value
            elif key == "body":
                body.update(value.model_dump() if isinstance(value, PromptBody) else dict(value))
            elif key in EDITABLE:
                update[key] = value
            else:
                raise InputError(f"'{key}' cannot be edited; editable: {sorted(EDITABLE | body_fields)}")
        update["body"] = PromptBody.model_validate(body)
        if "final_selection_ids" in update:
            known = {c.id for c in sp.base_context_chunks}
            unknown = [cid for cid in update["final_selection_ids"] if cid not in known]
            if unknown:
                raise InputError(f"unknown chunk ids in final_selection_ids: {unknown}")
            if sp.stage.value in sp.views_by_stage:
                update["views_by_stage"] = {**sp.views_by_stage, sp.stage.value: list(update["final_selection_ids"])}
        edits = [*sp.extras.get("edits", []), {"stage": sp.stage.value, "fields": sorted(fields)}]
        update["extras"] = {**sp.extras, "edits": edits}
        edited = sp.model_copy(update=update)
        update["prompt_ready"] = render_prompt(edited)
        return self._execute(
            "edit", lambda: self.graph.update_state(self._cfg, update, as_node=NODE_FOR_STAGE[sp.stage])
        )

    # -- send and memory ------------------------------------------------------------------

    def send(self, on_token: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Send the built prompt to the configured LLM (streamed), with the critic loop.

        The result lands in `extras["send"]` (recorded after the build) and in the trace, and the pair
        goes to the project's conversation memory unless history is switched off.
        """
        from ragstream.orchestration.send import send

        sp = self.sp
        result: dict[str, Any] = {}

        def run() -> None:
            result.update(send(sp, self.services.llm, self.services.factory, self.services.budget, self.settings.send, on_token))
            self.graph.update_state(self._cfg, {"extras": {**sp.extras, "send": result}}, as_node="build")
            self.traces.append(
                self.thread_id,
                [{"event": "send", "retries": result["retries"], "accepted": result["accepted"], **result["usage"],
                  "critiques": [a["critique"] for a in result["attempts"]]}],
            )
            if self.active_project:
                self.services.memory.record(self.active_project, sp.raw_prompt, result["answer"], self.thread_id)

        self._execute("send", run)
        return result

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
                node = NODE_FOR_STAGE.get(values.stage, "__start__")
                self.graph.update_state(self._cfg, dict(values), as_node=node)
                return self.sp
        raise InputError(f"no checkpoint {checkpoint_id!r} on thread {self.thread_id}")

    # -- projects -------------------------------------------------------------------------

    def select_project(self, project_name: str) -> dict[str, Any]:
        paths = project_paths(self.settings, project_name)
        self.active_project = paths.name
        self.active_store_path = str(paths.store_dir)
        manifest = Manifest.load(paths.manifest_path)
        return {
            "project": paths.name,
            "store_path": self.active_store_path,
            "ingested": bool(manifest.generation),
            "files": len(manifest.files),
            "chunks": sum(len(f.chunk_ids) for f in manifest.files.values()),
        }

    def set_store_path(self, path: str) -> dict[str, Any]:
        """Select a project by its store folder, which must be <data root>/chroma_db/<project>."""
        from pathlib import Path

        target = Path(path).resolve()
        store_root = (self.settings.data_dir / "chroma_db").resolve()
        if target.parent != store_root:
            raise ProjectError(f"{path} is not a project store under {store_root}")
        return self.select_project(target.name)

    def ingest_docs(self, project_name: str, progress: Progress | None = None) -> IngestionStats:
        try:
            return IngestionManager(self.settings, self.services.chunker).ingest(project_name, progress=progress)
        except RagstreamError as exc:
            self.last_error = f"ingest: {exc}"
            raise

    @staticmethod
    def stage_of(node: str) -> Stage:
        return STAGE_FOR_NODE[node]

"""RunSession: one thread driven through the compiled graph (controller spec §4-8), and RunResult, what a call left.

It owns no pipeline logic: each call runs the one graph on this session's checkpointer thread and returns a
RunResult built from the one read of the thread at its end, so a surface shows the state, the pause and what
the pause waits for without reading the checkpoint again. A failing call leaves the SuperPrompt exactly as it
was, sets `last_error` and re-raises the typed error. A call that gives a prompt is admitted first, once:
the graph's preflight validates it and the secret scan redacts it before the graph (checkpoints, traces,
memory, any LLM) sees it; the graph's nodes then trust that (`RunOptions.admitted`) instead of checking again.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END
from langgraph.types import Command, StateSnapshot

from ragstream.app.workspace import Workspace
from ragstream.errors import InputError, RagstreamError, StageOrderError
from ragstream.orchestration.answer import ANSWER, check_sendable
from ragstream.orchestration.apply import apply_edit, to_channels
from ragstream.orchestration.checkpoint import open_checkpointer
from ragstream.orchestration.graph import graph_for, preflight
from ragstream.orchestration.review import NO_ANSWER
from ragstream.orchestration.strict import DECIDE
from ragstream.rendering.styles import export_prompt
from ragstream.secrets.scan import Finding, scan_prompt
from ragstream.stages import Stage
from ragstream.stages.options import RunOptions
from ragstream.stages.rules import allowed_stages, next_stage, stage_named
from ragstream.state import SuperPrompt
from ragstream.telemetry.otel import OtelSpans
from ragstream.telemetry.trace import TraceStore, summarize

log = logging.getLogger("ragstream.session")


@dataclass(frozen=True)
class RunResult:
    """Where a thread stands after a call: its state, the nodes it will run next when resumed (`review` at a
    review; empty when finished or never started) and the payload of the interrupt it waits on (a review, or
    strict mode's header decisions), all from one read of the checkpoint."""

    state: SuperPrompt
    paused_before: list[str]
    waiting: dict[str, Any] | None

    @classmethod
    def of(cls, snapshot: StateSnapshot) -> RunResult:
        values = snapshot.values
        return cls(
            SuperPrompt.model_validate(values) if values else SuperPrompt(),
            list(snapshot.next),
            snapshot.interrupts[0].value if snapshot.interrupts else None,
        )


class RunSession:
    def __init__(
        self,
        workspace: Workspace | None = None,
        *,
        thread_id: str | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
    ) -> None:
        self.workspace = workspace or Workspace()
        self.settings = self.workspace.settings
        self.services = self.workspace.services
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

    def current(self) -> RunResult:
        """The thread as it stands now (one read of its checkpoint): what a surface shows before any call."""
        return RunResult.of(self.graph.get_state(self._cfg))

    def select_project(self, project_name: str) -> dict[str, Any]:
        """Make a project the one this session's runs ground on; what `Workspace.project_summary` says of it."""
        summary = self.workspace.project_summary(project_name)
        self.active_project = summary["project"]
        self.active_store_path = summary["store_path"]
        return summary

    def set_store_path(self, path: str) -> dict[str, Any]:
        """Select a project by its store folder, which must be <data root>/chroma_db/<project>."""
        return self.select_project(self.workspace.project_at(path))

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
        start: RunResult,
        stage: Stage | None,
        context: RunOptions,
        label: str,
        *,
        goto: str | None = None,
        prompt: Any = None,
        accepted: RunOptions | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> None:
        """Admit the call, then run the graph from `goto` (None: a new run from its input) through its stream.

        The graph's preflight checks the first stage and the prompt given before the graph is touched (and
        before `accepted` commits the call's options), so a refused call leaves the thread and the session
        exactly as they were (`stage` None: the caller checked). The prompt is then redacted once, and the
        run's nodes are told so. Stage events reach `on_event` live and the trace; the answer's tokens reach
        `on_token` as the model writes them.
        """
        if stage is not None:
            preflight(start.state, stage, context, self.services, prompt)
        if prompt is not None:
            prompt = self._guard_prompt(prompt)
            context = context.admitted()
        if accepted is not None:  # an auto run's options become the session's, its project the active one
            self.options = accepted.model_copy(update={"project": None})
            if accepted.project:
                self.select_project(accepted.project)
        if start.paused_before:  # a pending review or a failed stage: the state decides where to go now
            self.graph.update_state(self._cfg, None, as_node=END)
        update = None if prompt is None else {"prompt": prompt}
        self._stream(update if goto is None else Command(goto=goto, update=update), context, label, on_token)

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
            try:
                stream = self.graph.stream(
                    graph_input,
                    self._cfg,
                    context=context,
                    interrupt_after=stop_after,
                    stream_mode=["custom", "messages"],
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

    @contextmanager
    def _recording(self, label: str) -> Iterator[None]:
        """A call's failure, typed, in the session's errors and the thread's trace; raised to the caller."""
        try:
            yield
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

    def _finished(self, label: str, started: float) -> RunResult:
        """The call's result, from the one read of the thread at its end."""
        result = self.current()
        sp = result.state
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
        return result

    # -- stages ---------------------------------------------------------------------------

    def preprocess(self, user_text: str, restart: bool = True) -> RunResult:
        """PreProcessing on a new prompt (a new run on this thread; `restart=False` refuses once preprocessed)."""

        started = time.perf_counter()
        with self._recording("preprocess"):
            start = self.current()
            if not restart and start.state.stage is not Stage.RAW:
                raise StageOrderError(
                    "preprocess",
                    start.state.stage.value,
                    "the prompt is already preprocessed; restart to preprocess again",
                )
            context = self._context(manual=True)
            self._run_graph(
                start, Stage.PREPROCESS, context, "preprocess", goto=Stage.PREPROCESS.node, prompt=user_text
            )
        return self._finished("preprocess", started)

    def token_breakdown(self, sp: SuperPrompt | None = None, ask_server: bool = False) -> dict[str, Any]:
        """Tokens of the built prompt (a call's `state`; by default the thread's) per section and excerpt, naming
        the tokenizer and whether the count is exact for the model; `ask_server` adds an OpenAI-compatible
        server's own count (its /tokenize)."""
        from ragstream.orchestration.token_report import token_breakdown

        state = sp or self.current().state
        return token_breakdown(state, self.services.budget, self.settings if ask_server else None)

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

    def _step(self, stage: Stage) -> RunResult:
        started = time.perf_counter()
        with self._recording(stage.node):
            self._run_graph(self.current(), stage, self._context(manual=True), stage.node, goto=stage.node)
        return self._finished(stage.node, started)

    # The manual stage methods the controller spec names; each runs its stage by hand on this thread, and is
    # refused, changing nothing, when the stage may not run yet.

    def run_a2(self) -> RunResult:
        return self._step(Stage.A2)

    def run_retrieval(self) -> RunResult:
        return self._step(Stage.RETRIEVAL)

    def run_reranker(self) -> RunResult:
        return self._step(Stage.RERANK)

    def run_a3(self) -> RunResult:
        return self._step(Stage.A3)

    def run_a4(self) -> RunResult:
        return self._step(Stage.A4)

    def run_a5(self) -> RunResult:
        return self._step(Stage.A5)

    def build_prompt(self) -> RunResult:
        return self._step(Stage.BUILD)

    def run_stage(self, stage: Stage | str, user_text: str | None = None) -> RunResult:
        """One stage by name (what the GUI's buttons and `ragstream step` call)."""
        stage = stage if isinstance(stage, Stage) else stage_named(stage)
        if stage is Stage.PREPROCESS:
            return self.preprocess(user_text if user_text is not None else self.current().state.raw_prompt)
        return self._step(stage)

    def run_full_pipeline(
        self,
        user_text: str,
        options: RunOptions | Mapping[str, Any] | None = None,
        *,
        on_token: Callable[[str], None] | None = None,
        **changes: Any,
    ) -> RunResult:
        """All stages in order, pausing where the options' `pause_after` says (default: after A4).

        The run's options are `options` (RunOptions or a mapping of its fields; default: the session's) with
        `changes`, RunOptions fields given as keyword arguments (`pause_after="none"`); anything else, or an
        unknown or bad field, is an InputError and the run does not start. Accepted, they become the session's
        options and their project the active one. With `send`, the run goes on from the build to the answer and
        its critic (tokens reach `on_token`).
        """

        started = time.perf_counter()
        with self._recording("run_full_pipeline"):
            base = self.options if options is None else RunOptions.coerce(options)
            opts = RunOptions(**{**base.model_dump(), **changes}) if changes else base
            self._run_graph(
                self.current(),
                Stage.PREPROCESS,
                self._context(manual=False, options=opts),
                "run_full_pipeline",
                prompt=user_text,
                accepted=opts,
                on_token=on_token,
            )
        return self._finished("run_full_pipeline", started)

    def resume(self, answer: dict[str, Any] | None = None, **changes: Any) -> RunResult:
        """Continue an auto run: answer the pending review (`{"accept": True}` unless `answer` says
        otherwise), or go on from the frontier (edits made at a pause are already applied).

        It runs with the session's options, or with `changes` to them for this call (RunOptions fields as
        keywords: `pause_after="none"` finishes the run without stopping at a review)."""
        options = RunOptions(**{**self.options.model_dump(), **changes}) if changes else None
        context = self._context(manual=False, options=options)
        if answer is not None and not answer:  # LangGraph would read {} as a map of answers to no interrupt
            raise InputError(NO_ANSWER)
        start = self.current()
        if start.waiting is not None:
            started = time.perf_counter()
            with self._recording("resume"):
                self._stream(Command(resume={"accept": True} if answer is None else answer), context, "resume")
            start = self._finished("resume", started)
            if start.paused_before or next_stage(start.state.stage, set(context.skip)) is None:
                return start
            # Only a checkpoint from before each stage had its own review ends here, unfinished: a `review`
            # paused after another stage than A4 has no edge to where the run goes on. Go on from the frontier.
        elif answer is not None:
            raise InputError("nothing waits for an answer: the run is not at a review")
        sp = start.state
        target = next_stage(sp.stage, set(context.skip)) if sp.stage is not Stage.RAW else None
        if target is None:
            raise InputError("nothing to resume: the run is finished or has not started")

        started = time.perf_counter()
        with self._recording("resume"):
            self._run_graph(start, target, context, "resume", goto=target.node)
        return self._finished("resume", started)

    def edit(self, **fields: Any) -> RunResult:
        """A person's edits, recorded as the output of the stage that owns them (e.g. A4's, at the pause).

        At a review this answers the review's interrupt with the edits (the same `Command(resume=...)`
        a LangGraph client sends) and stops right after it, so `resume()` goes on; a refused edit leaves
        the review waiting. Elsewhere the edit is applied through the same `apply_edit`. An edit
        invalidates what depends on it, like a re-run of that stage: editing the condensed context after
        the build re-opens the build, editing a label re-opens A5. Typed text is secret-scanned like a
        prompt.
        """

        started = time.perf_counter()
        with self._recording("edit"):
            typed = {
                name: self._guard_prompt(value) if isinstance(value, str) else value for name, value in fields.items()
            }
            start = self.current()
            if (start.waiting or {}).get("kind") == "review":
                pending = start.paused_before  # the review node that waits (`review` after A4)
                self._stream(Command(resume=typed), self._context(manual=False), "edit", stop_after=pending)
            else:
                updates, frontier = apply_edit(start.state, typed)
                self.graph.update_state(self._cfg, to_channels(start.state, updates), as_node=frontier.node)
        return self._finished("edit", started)

    def decide(self, decisions: dict[str, str]) -> RunResult:
        """Strict mode: answer the question about headers PreProcessing could not map (header -> canonical
        name, "keep" or "drop"), and stop right after; `resume()` goes on. A refused answer keeps it waiting."""

        started = time.perf_counter()
        with self._recording("decide"):
            if (self.current().waiting or {}).get("kind") != "headers":
                raise InputError("no header waits for a decision on this thread")
            self._stream(
                Command(resume={"decisions": decisions}), self._context(manual=False), "decide", stop_after=[DECIDE]
            )
        return self._finished("decide", started)

    def allowed_stages(self, sp: SuperPrompt | None = None) -> list[Stage]:
        """The stages that may run next on a call's `state` (by default the thread's), in order (the GUI enables
        their buttons)."""
        return allowed_stages(sp or self.current().state)

    def export_prompt(self, style: str, sp: SuperPrompt | None = None) -> str:
        """The built prompt written in a style (markdown, xml, json, plain); a run not built yet is an InputError."""
        return export_prompt(sp or self.current().state, style)

    # -- send and memory ------------------------------------------------------------------

    def send(self, on_token: Callable[[str], None] | None = None) -> RunResult:
        """Send the built prompt to the configured LLM through the graph's answer and critic nodes.

        Tokens reach `on_token` as they stream; a critic rejection regenerates with its feedback, up to
        `send.critic_max_retries`. The answer is the result's `state.answer`, in the trace, and (with a project
        and `memory.persist`) in conversation memory.
        """

        started = time.perf_counter()
        with self._recording("send"):
            start = self.current()
            check_sendable(start.state, self.services)
            context = RunOptions(project=self.active_project, send=True, manual=True, services=self.services)
            self._run_graph(start, None, context, "send", goto=ANSWER, on_token=on_token)
        result = self._finished("send", started)
        assert result.state.answer is not None
        return result

    def record_answer(self, answer: str) -> bool:
        """Remember an answer obtained elsewhere (pasted by the user) for the current prompt."""
        if not self.active_project:
            raise InputError("select a project to keep conversation history for")
        return self.services.memory.record(self.active_project, self.current().state.raw_prompt, answer, self.thread_id)

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

    def restart_from(self, checkpoint_id: str) -> RunResult:
        """Time travel: make an earlier checkpoint the thread's current state (a fork; history is kept)."""
        for snap in self.graph.get_state_history(self._cfg):
            if snap.config["configurable"]["checkpoint_id"] == checkpoint_id:
                values = SuperPrompt.model_validate(snap.values) if snap.values else SuperPrompt()
                node = values.stage.node if values.stage is not Stage.RAW else Stage.PREPROCESS.node
                self.graph.update_state(self._cfg, to_channels(values, dict(values)), as_node=node)
                return self.current()
        raise InputError(f"no checkpoint {checkpoint_id!r} on thread {self.thread_id}")

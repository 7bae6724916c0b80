"""What every command shares: the once-only option, the prompt it reads, the session or workspace it drives."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.errors import InputError

if TYPE_CHECKING:
    from ragstream.app.session import RunResult, RunSession
    from ragstream.app.workspace import Workspace
    from ragstream.settings import Settings
    from ragstream.state import Answer


class Once(argparse.Action):
    """An option that may be given once: argparse would otherwise keep the last of two silently."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice: give it once")
        setattr(namespace, self.dest, values)


class StageChoices(Collection[str]):
    """Choices drawn from the stage registry when argparse first needs them: checking a value given, or
    a subcommand's own `--help` listing them (`%(choices)s`).

    The registry's modules declare the state's pydantic reports, so reading it while the parser is built would
    make `ragstream --help` import them. Give the argument a `metavar`: argparse lists choices in the usage
    line only when it has none, and would read them as it adds the argument.
    """

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._read = names

    @cached_property
    def _names(self) -> tuple[str, ...]:
        return tuple(self._read())

    def __contains__(self, value: object) -> bool:
        return value in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def skippable_stages() -> list[str]:
    """The stages a run may skip (`--skip`), from the registry."""
    from ragstream.stages import SKIPPABLE

    return sorted(SKIPPABLE)


def read_prompt(args: argparse.Namespace) -> str:
    """The prompt from --file (UTF-8) or the argument; a clear InputError when neither is readable."""
    if args.file:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read prompt file {args.file}: {exc.strerror}") from exc
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"prompt file {args.file} is not UTF-8 text (byte {exc.start})") from exc
    if args.prompt is None:
        raise InputError("give the prompt as an argument or with --file")
    return args.prompt


def print_progress(event: dict[str, Any]) -> None:
    """Live per-stage progress on stderr, from the graph's event stream."""
    kind = event.get("event")
    if kind == "prompt_secrets":
        found = ", ".join(f"{f['type']} (line {f['line']})" for f in event["findings"])
        print(
            f"warning: your prompt holds secrets: {found}; each was replaced by [REDACTED: <type>] "
            "before anything was stored or sent",
            file=sys.stderr,
            flush=True,
        )
    elif kind == "stage_start":
        print(f"> {event['stage']} ...", file=sys.stderr, flush=True)
    elif kind == "stage_finish":
        counts = ", ".join(f"{k} {v}" for k, v in event["counts"].items())
        mode = event.get("retrieval")
        extra = f", {mode['strategy']}/{mode['rung']}" if mode else ""
        if mode and mode.get("attempts", 0) > 1:
            extra += f" after {mode['attempts']} attempts (low confidence re-run)"
        print(
            f"  done {event['stage']} in {event['duration_ms']:.0f} ms ({counts}, ~{event['prompt_tokens']} "
            f"tokens{extra})",
            file=sys.stderr,
            flush=True,
        )
        plan = event.get("plan")
        if plan:
            print(
                f"  plan: {plan['intent']} (confidence {plan['confidence']:.2f}), "
                f"{'retrieve' if plan['retrieve'] else 'no retrieval'}: {plan['reason']}",
                file=sys.stderr,
                flush=True,
            )
    elif kind == "stage_warning":
        print(f"  note {event['stage']}: {event['message']}", file=sys.stderr, flush=True)
    # a stage_error is not printed here: main() prints the failure once, on one line, after "> stage ..."


def open_session(settings: Settings, thread: str | None = None, project: str | None = None) -> RunSession:
    """The session on a thread (a new one when None), on `project` or else the project the thread ran on,
    printing its progress to stderr. Imported here, not above: `ragstream --help` stays quick."""
    from ragstream.app.session import RunSession
    from ragstream.app.workspace import Workspace

    session = RunSession(Workspace(settings), thread_id=thread)
    session.on_event = print_progress
    project = project or (session.current().state.extras.project if thread else None)
    if project:
        session.select_project(project)
    return session


def open_workspace(settings: Settings) -> Workspace:
    """The data root's projects, documents, agents and models, with no thread (and no checkpointer) opened."""
    from ragstream.app.workspace import Workspace

    return Workspace(settings)


def report(session: RunSession, result: RunResult) -> None:
    """Where the thread stands and what to do next (stderr), and its prompt as it is now (stdout)."""
    ctl, sp = session, result.state
    print(
        f"thread {ctl.thread_id}: stage {sp.stage.value}"
        + (f", paused before {result.paused_before}" if result.paused_before else ""),
        file=sys.stderr,
    )
    waiting = (result.waiting or {}).get("kind")
    if waiting == "review":
        print(
            f"the review waits: `ragstream resume --thread {ctl.thread_id}` accepts it and builds the final prompt",
            file=sys.stderr,
        )
    elif waiting == "headers":
        print(
            f"strict mode: headers wait for a decision: `ragstream resume --thread {ctl.thread_id} "
            "--decide 'HEADER=CHOICE'`",
            file=sys.stderr,
        )
    print(sp.prompt_ready, end="")


def print_token(token: str) -> None:
    print(token, end="", flush=True)


def report_answer(answer: Answer) -> None:
    verdicts = [" ".join(f"{k}={v}" for k, v in a.critique.items() if k != "feedback") for a in answer.attempts]
    print(f"critic: {' | '.join(verdicts)}; regenerations: {answer.retries}", file=sys.stderr)

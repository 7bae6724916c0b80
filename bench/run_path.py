"""Where things are, measured: the package's layout with line counts, the path of one run from `ragstream run` to
the final prompt as a list of calls, and per run how often the checkpoint is read, the prompt validated and its
secrets scanned (issue #39's "Must show", before and after).

Everything is found by what it is, not by where it lives: the package is the imported `ragstream`, the command is
the `ragstream` console script's entry point, and calls are counted by function name with `sys.setprofile`
(`--count NAME` adds one; `--at NAME` is the function whose first line is "the Prompt Builder's rendering starts").
Only the GUI's scenarios drive the session object directly (`gui_session` below: the one line to change when the
session object changes).

A run is the demo: examples/sample_project ingested with `ragstream ingest` into a fresh data root, then
examples/prompt.md, offline. Scenarios: `cli-run` (`ragstream run`), `cli-review` (`ragstream run --review`: paused
at the review after A4 and accepted, in one process), `cli-steps` (`ragstream step` once per stage on one thread),
`gui-auto` (the session's auto run, paused after A4, then resumed: what the GUI's Run and Accept buttons call) and
`gui-manual` (the session's stage-by-stage methods, one per stage).

Run: python bench/run_path.py [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.metadata
import io
import linecache
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample_project"
PROMPT = ROOT / "examples" / "prompt.md"
STAGES = ("preprocess", "a2", "retrieval", "rerank", "a3", "a4", "a5", "build")
# What is counted, by function name: (what it means, names).
COUNTED: dict[str, tuple[str, ...]] = {
    "checkpoint read (graph state)": ("get_state", "aget_state", "get_state_history", "aget_state_history"),
    "checkpoint read (saver get_tuple)": ("get_tuple", "aget_tuple"),
    "prompt validation": ("validate_prompt",),
    "prompt secret scan": ("scan_prompt",),
    "secret scan (any text)": ("scan",),
    "stage pre-checks": ("preflight",),
}
LIBRARIES = ("langgraph", "langchain_core")  # frames named between the package's own on the path
SUBSCRIPT_CALL = re.compile(r"\b\w+(\.\w+)*\[[^\]]+\]\(")  # `RUNS[stage](...)`: a call through a lookup


def package_dir() -> Path:
    import ragstream

    return Path(ragstream.__file__).resolve().parent


# -- layout ------------------------------------------------------------------------------------


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def layout(pkg: Path) -> list[str]:
    """The package tree: each package with its modules' lines (and with its subpackages'), then the loose root
    modules one by one."""
    out = []
    loose = sorted(p for p in pkg.glob("*.py") if p.name != "__init__.py")

    def walk(folder: Path, depth: int) -> None:
        own = sorted(folder.glob("*.py"))
        total = sum(lines_of(p) for p in folder.rglob("*.py"))
        label = folder.relative_to(pkg.parent).as_posix() + "/"
        out.append(f"{'  ' * depth}{label:<40} {total:>6} lines, {len(own)} modules here")
        for sub in sorted(d for d in folder.iterdir() if (d / "__init__.py").is_file()):
            walk(sub, depth + 1)

    total = sum(lines_of(p) for p in pkg.rglob("*.py"))
    out.append(f"ragstream/ {total} lines in {len(list(pkg.rglob('*.py')))} modules")
    for sub in sorted(d for d in pkg.iterdir() if (d / "__init__.py").is_file()):
        walk(sub, 1)
    out.append(f"  loose root modules: {len(loose)}, {sum(lines_of(p) for p in loose)} lines")
    out.extend(f"    {p.name:<38} {lines_of(p):>6}" for p in loose)
    return out


def largest(pkg: Path, top: int = 10) -> list[str]:
    """The longest modules (with how many of the package's modules each imports) and the classes with most methods."""
    modules, classes = [], []
    for path in pkg.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported = {name for name in imported if name.split(".")[0] == "ragstream"}
        rel = path.relative_to(pkg.parent).as_posix()
        modules.append((lines_of(path), rel, len(imported)))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
                classes.append((len(methods), f"{node.name} ({rel})"))
    out = [f"{'lines':>6}  module (ragstream modules it imports)"]
    out += [f"{n:>6}  {rel} ({k})" for n, rel, k in sorted(modules, reverse=True)[:top]]
    out += [f"{'methods':>7}  class"]
    out += [f"{n:>7}  {name}" for n, name in sorted(classes, reverse=True)[:5]]
    return out


# -- profiling ---------------------------------------------------------------------------------


@dataclass
class Frame:
    where: str  # qualname (path:line)
    kind: str  # "ragstream", a library's name, or "other"
    call_line: str  # the source line this frame is at (the call to the next one)
    closure: bool


@dataclass
class Recorder:
    """Counts calls by name and, at the first call of `at`, keeps the stack and each frame's earlier calls."""

    pkg: Path
    at: str
    at_path: str
    counts: Counter[str] = field(default_factory=Counter)
    callers: Counter[str] = field(default_factory=Counter)
    own_calls: int = 0
    stack: list[Frame] | None = None
    hits: int = 0
    children: dict[int, list[str]] = field(default_factory=dict)
    path_children: list[list[str]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.names = {name: what for what, names in COUNTED.items() for name in names}
        self.prefix = str(self.pkg) + os.sep

    def kind(self, frame: FrameType) -> str:
        file = frame.f_code.co_filename
        if file.startswith(self.prefix):
            return "ragstream"
        return next((lib for lib in LIBRARIES if f"{os.sep}{lib}{os.sep}" in file), "other")

    def where(self, frame: FrameType) -> str:
        code = frame.f_code
        file = Path(code.co_filename)
        rel = file.relative_to(self.pkg.parent) if self.kind(frame) == "ragstream" else Path(file.name)
        return f"{code.co_qualname} ({rel.as_posix()}:{frame.f_lineno})"

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        own = code.co_filename.startswith(self.prefix)
        with self.lock:
            what = self.names.get(code.co_name)
            if what is not None and (own or self.kind(frame) != "other"):
                self.counts[f"{what}: {code.co_qualname}"] += 1
                caller = self._own_caller(frame.f_back)
                self.callers[f"{code.co_qualname} <- {caller}"] += 1
            if not own:
                return
            self.own_calls += 1
            if self.stack is None:
                self.children[id(frame)] = []
                parent = frame.f_back
                while parent is not None and not parent.f_code.co_filename.startswith(self.prefix):
                    parent = parent.f_back
                if parent is not None:
                    self.children.setdefault(id(parent), []).append(code.co_qualname)
            if code.co_name == self.at and self.at_path in code.co_filename:
                self.hits += 1
                if self.stack is None:
                    self._keep_stack(frame)

    def _own_caller(self, frame: FrameType | None) -> str:
        while frame is not None and not frame.f_code.co_filename.startswith(self.prefix):
            frame = frame.f_back
        return frame.f_code.co_qualname if frame is not None else "(outside ragstream)"

    def _keep_stack(self, frame: FrameType) -> None:
        """The path: the main thread's stack down to where it waits, then (when the graph runs the node in a worker
        thread) that thread's, from its first library frame; the package's frames with what each called before."""
        chains = [self._chain(frame)]
        main = threading.main_thread()
        if threading.current_thread() is not main and main.ident is not None:
            waiting = sys._current_frames().get(main.ident)
            worker = chains[0]
            start = next((i for i, f in enumerate(worker) if self.kind(f) != "other"), 0)
            chains = [self._chain(waiting), worker[start:]] if waiting is not None else chains
        self.stack = []
        for number, chain in enumerate(chains):
            if number:
                self.stack.append(Frame("(the graph runs the node in a worker thread)", "thread", "", False))
            first = next((i for i, f in enumerate(chain) if self.kind(f) == "ragstream"), 0) if not number else 0
            for item in chain[first:]:
                kind = self.kind(item)
                line = linecache.getline(item.f_code.co_filename, item.f_lineno).strip()
                self.stack.append(Frame(self.where(item), kind, line, "<locals>" in item.f_code.co_qualname))
                if kind == "ragstream":
                    self.path_children.append(list(self.children.get(id(item), [])))

    @staticmethod
    def _chain(frame: FrameType | None) -> list[FrameType]:
        chain = []
        while frame is not None:
            chain.append(frame)
            frame = frame.f_back
        return chain[::-1]


@contextlib.contextmanager
def profiled(recorder: Recorder) -> Iterator[None]:
    threading.setprofile(recorder)
    sys.setprofile(recorder)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


# -- scenarios ---------------------------------------------------------------------------------


def cli() -> Callable[[list[str]], int]:
    """The `ragstream` console script's function, found through its entry point (wherever it lives)."""
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="ragstream")
    return entry.load()


def ragstream(data: Path, *args: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli()(["--data-dir", str(data), *args])
    if code != 0:
        raise SystemExit(f"ragstream {' '.join(args)}: exit {code}")


def gui_session(data: Path) -> Any:
    """The session object the GUI holds, on `data` (at ba47471: AppController; since issue #39: RunSession)."""
    from ragstream.app.session import RunSession
    from ragstream.app.workspace import Workspace
    from ragstream.settings import load_settings

    return RunSession(Workspace(load_settings(overrides={"data_dir": str(data)})))


def cli_run(data: Path) -> None:
    ragstream(data, "run", "--file", str(PROMPT), "--project", "demo")


def cli_review(data: Path) -> None:
    os.environ.pop("EDITOR", None)  # the review is accepted as it is (no editor on a pipe)
    ragstream(data, "run", "--review", "--file", str(PROMPT), "--project", "demo")


def cli_steps(data: Path) -> None:
    ragstream(data, "step", "preprocess", "--thread", "steps", "--project", "demo", "--file", str(PROMPT))
    for stage in STAGES[1:]:
        ragstream(data, "step", stage, "--thread", "steps")


def gui_auto(data: Path) -> None:
    session = gui_session(data)
    session.run_full_pipeline(PROMPT.read_text(encoding="utf-8"), project="demo")
    session.resume()


def gui_manual(data: Path) -> None:
    session = gui_session(data)
    session.select_project("demo")
    for stage in STAGES:
        session.run_stage(stage, PROMPT.read_text(encoding="utf-8") if stage == "preprocess" else None)


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "cli-run": cli_run,
    "cli-review": cli_review,
    "cli-steps": cli_steps,
    "gui-auto": gui_auto,
    "gui-manual": gui_manual,
}


# -- report ------------------------------------------------------------------------------------


def path_report(rec: Recorder) -> list[str]:
    """The stack at the rendering's first line: the package's frames with what each called before (→ the next one on
    the path), the library frames between them by name, and the lookups and closures on the way."""
    if rec.stack is None:
        return [f"(the run never called {rec.at} in a file with {rec.at_path!r} in its path)"]
    out: list[str] = []
    between: list[str] = []
    own = 0
    children = iter(rec.path_children)
    for frame in rec.stack:
        if frame.kind == "thread":
            out.append(f"      via {len(between)} library frames: {' → '.join(between)} (the main thread waits here)")
            out.append(f"      {frame.where}")
            between = []
            continue
        if frame.kind != "ragstream":
            between.append(frame.where.split(" (")[0])
            continue
        if between:
            out.append(f"      via {len(between)} library frames: {' → '.join(between)}")
            between = []
        own += 1
        marks = ["a closure"] if frame.closure else []
        if SUBSCRIPT_CALL.search(frame.call_line):
            marks.append("calls through a lookup")
        before = next(children)
        earlier = ", ".join(_collapsed(before[:-1])) if len(before) > 1 else ""
        out.append(f"  {own:>2}. {frame.where}" + (f"   <-- {'; '.join(marks)}" if marks else ""))
        out.append(f"        at: {frame.call_line}")
        if earlier:
            out.append(f"        called before: {earlier}")
    library = sum(1 for f in rec.stack if f.kind not in ("ragstream", "thread"))
    out.insert(0, f"{own} ragstream frames and {library} library frames from the command to {rec.at}:")
    return out


def _collapsed(names: list[str]) -> list[str]:
    counted = Counter(names)
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return [f"{n} ×{counted[n]}" if counted[n] > 1 else n for n in seen]


def summary(rows: list[tuple[str, Recorder, float]]) -> list[str]:
    """One line per scenario: the calls of each counted kind, summed over the functions of that kind."""
    kinds = list(COUNTED)
    out = ["| scenario | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for name, rec, _ in rows:
        per = Counter({kind: 0 for kind in kinds})
        for key, n in rec.counts.items():
            per[key.split(": ", 1)[0]] += n
        out.append(f"| {name} | " + " | ".join(str(per[k]) for k in kinds) + " |")
    return [*out, ""]


def measure(name: str, scenario: Callable[[Path], None], at: str, at_path: str, work: Path) -> Recorder:
    data = work / name
    ragstream(data, "ingest", "demo", "--path", str(SAMPLE), "--quiet")
    recorder = Recorder(package_dir(), at, at_path)
    with profiled(recorder):
        scenario(data)
    return recorder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", choices=list(SCENARIOS), help="default: all")
    parser.add_argument("--at", default="build@rendering", help="NAME@PATH-PART: where the rendering starts")
    parser.add_argument("--count", action="append", default=[], help="also count calls of this function name")
    parser.add_argument("--markdown", type=Path, help="also write the report here")
    args = parser.parse_args()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGSTREAM_LLM_PROVIDER", "RAGSTREAM_DATA_DIR"):
        os.environ.pop(name, None)  # offline, on this script's own data roots
    if args.count:
        COUNTED["asked"] = tuple(args.count)
    at, _, at_path = args.at.partition("@")
    pkg = package_dir()
    report = ["## Layout", "", "```text", *layout(pkg), "", *largest(pkg), "```", ""]
    work = Path(tempfile.mkdtemp(prefix="run-path-"))
    rows = []
    for name in args.scenario or list(SCENARIOS):
        started = time.perf_counter()
        try:
            rec = measure(name, SCENARIOS[name], at, at_path, work)
        except ImportError as exc:
            report += [f"## {name}: not measured ({exc})", ""]
            continue
        seconds = time.perf_counter() - started
        if name == "cli-run":
            report += ["## The path of `ragstream run` to the final prompt", "", "```text", *path_report(rec), "```"]
            report.append("")
        rows.append((name, rec, seconds))
    report += ["## Per run: checkpoint reads, prompt validations, secret scans (calls by function name)", ""]
    report += summary(rows)
    for name, rec, seconds in rows:
        report += [f"### {name} ({rec.own_calls:,} ragstream calls; {rec.hits} × {at}; {seconds:.1f} s profiled)"]
        report += ["", "```text", *(f"{n:>4}  {what}" for what, n in sorted(rec.counts.items()))]
        report += ["callers:", *(f"{n:>4}  {who}" for who, n in sorted(rec.callers.items())), "```", ""]
    text = "\n".join(report)
    print(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

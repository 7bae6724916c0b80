"""The final prompt of every labelled case, byte for byte: the baseline a change that must not alter behaviour is
judged by (run it before and after, then `diff -r BEFORE AFTER`; an empty diff is the proof).

For each suite (default: every folder of /work/shared/eval, or --eval-root, with corpus/ and cases/, and every suite
of bench/suites whose corpus can be rebuilt as its SOURCE.txt says: an installed package's files at the version named,
or a repository's folder at the commit named, from a git copy under /work/.mirror), it ingests the corpus into a
fresh data root with `ragstream ingest SUITE --path CORPUS`, runs each case's prompt (cases/NAME.md) with the
shipped defaults (offline: no LLM variables are passed on; no review pause: `run` without --review) and writes what
`ragstream run` prints, the final prompt, to OUT/SUITE/NAME.md (other styles with --styles, as `run --style S
--output` writes them). It drives only the `ragstream` command, so it runs the same on any layout of the package:
the `ragstream` found on PATH, with the checkout under test first on PYTHONPATH. The 74 cases take about 12 minutes
on a shared 2-core machine (one case at a time).

Run: python bench/prompt_snapshot.py OUT [--suite NAME ...] [--styles markdown,xml,json,plain] [--work DIR]
     python bench/prompt_snapshot.py /tmp/a && python bench/prompt_snapshot.py /tmp/b && diff -r /tmp/a /tmp/b
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SHARED_EVAL = Path("/work/shared/eval")
MIRRORS = Path("/work/.mirror")  # where `owner+name/repo` git directories of pinned repositories are found
SUFFIXES = {"markdown": ".md", "xml": ".xml", "json": ".json", "plain": ".txt"}
# Variables that would make a run use something else than the shipped defaults (an LLM, a server, another config).
FOREIGN_ENV = re.compile(r"^(RAGSTREAM_|OPENAI_|LANGSMITH_|LANGCHAIN_|OTEL_)")


class CorpusMissing(Exception):
    """A suite's corpus cannot be rebuilt here as its SOURCE.txt says (the suite is reported as skipped)."""


@dataclass(frozen=True)
class Suite:
    name: str
    cases: Path
    corpus: Callable[[Path], Path]  # builds (or finds) the corpus, given a scratch folder


def _installed(dist: str, version: str) -> importlib.metadata.Distribution:
    """The installed distribution, refused when its version is not the one the suite's SOURCE.txt names."""
    try:
        found = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError as exc:
        raise CorpusMissing(f"{dist} is not installed") from exc
    if found.version != version:
        raise CorpusMissing(f"{dist} {found.version} is installed, the suite was written on {version}")
    return found


def _source_version(source: str, dist: str) -> str:
    match = re.search(rf"\b{re.escape(dist)} (\d[\w.]*)", source)
    if not match:
        raise CorpusMissing(f"SOURCE.txt names no version of {dist}")
    return match.group(1).rstrip(".,")


def _package_files(dist: str, folder: str, pattern: str) -> Callable[[str, Path], Path]:
    """An installed package's files under `folder` matching `pattern`, with their paths below `folder`."""

    def build(source: str, scratch: Path) -> Path:
        found = _installed(dist, _source_version(source, dist))
        root = Path(str(found.locate_file(folder)))
        files = sorted(p for p in root.glob(pattern) if p.is_file())
        if not files:
            raise CorpusMissing(f"no {pattern} under {root}")
        return _copy(files, root, scratch)

    return build


def _readmes(source: str, scratch: Path) -> Path:
    """Each listed distribution's README (its dist-info METADATA), saved as <dist-info name>.md."""
    listed = re.findall(r"([A-Za-z][\w.-]*?) (\d[\w.]*\d)", source.split("Build:")[0].split("Corpus:", 1)[1])
    target = scratch / "corpus"
    target.mkdir(parents=True)
    for dist, version in listed:
        files = _installed(dist, version).files or []
        metadata = next(f for f in files if f.name == "METADATA" and f.parent.name.endswith(".dist-info"))
        shutil.copyfile(Path(str(metadata.locate())), target / f"{metadata.parent.name.split('-')[0]}.md")
    return target


def _git_subset(source: str, scratch: Path) -> Path:
    """A folder of a repository at the commit SOURCE.txt pins, from a local git copy of that repository."""
    match = re.search(r"([\w.-]+)/([\w.-]+) at ([0-9a-f]{40})[^,]*, (\S+/)", source)
    if not match:
        raise CorpusMissing("SOURCE.txt names no repository at a commit")
    owner, name, commit, folder = match.groups()
    git_dir = MIRRORS / f"{owner}+{name}" / "repo"
    if not git_dir.is_dir():
        raise CorpusMissing(f"no git copy of {owner}/{name} at {git_dir}")
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", commit, folder], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
    return scratch / folder


def _copy(files: list[Path], root: Path, scratch: Path) -> Path:
    target = scratch / "corpus"
    for path in files:
        dest = target / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return target


# How each bench/suites corpus is rebuilt from what its SOURCE.txt names.
BUILDERS: dict[str, Callable[[str, Path], Path]] = {
    "click-src": _package_files("click", "click", "*.py"),
    "jinja2-src": _package_files("jinja2", "jinja2", "*.py"),
    "playwright-skills": _package_files("playwright", "playwright/driver/package/lib/tools/skills", "**/*.md"),
    "poetry-docs": _git_subset,
    "readmes": _readmes,
}


def _kept(corpus: Path, _scratch: Path) -> Path:
    """A corpus copied into the suite's folder: used where it is."""
    return corpus


def discover(eval_root: Path, bench_suites: Path) -> tuple[list[Suite], list[str]]:
    """Every suite found, and a reason for each one whose corpus cannot be had."""
    suites: list[Suite] = []
    skipped: list[str] = []
    for folder in sorted(eval_root.iterdir()) if eval_root.is_dir() else []:
        if (folder / "corpus").is_dir() and (folder / "cases").is_dir():
            suites.append(Suite(folder.name, folder / "cases", partial(_kept, folder / "corpus")))
    for folder in sorted(bench_suites.iterdir()):
        if not (folder / "cases").is_dir():
            continue
        builder = BUILDERS.get(folder.name)
        if builder is None:
            skipped.append(f"{folder.name}: no corpus builder for its SOURCE.txt")
            continue
        source = (folder / "SOURCE.txt").read_text(encoding="utf-8")
        suites.append(Suite(folder.name, folder / "cases", partial(builder, source)))
    return suites, skipped


def clean_env(data_dir: Path, models_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not FOREIGN_ENV.match(k)}
    env.update(RAGSTREAM_DATA_DIR=str(data_dir), RAGSTREAM_MODELS_DIR=str(models_dir))
    return env


def ragstream(args: list[str], env: dict[str, str], log: Path) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(["ragstream", *args], env=env, capture_output=True)
    with log.open("ab") as handle:
        handle.write(b"$ ragstream " + " ".join(args).encode() + b"\n" + done.stderr + b"\n")
    return done


def snapshot_suite(suite: Suite, out: Path, work: Path, models: Path, styles: list[str]) -> list[str]:
    """Ingest the suite's corpus into a fresh root, write each case's final prompt; the failures, described."""
    scratch = work / suite.name
    scratch.mkdir(parents=True)
    corpus = suite.corpus(scratch)
    env = clean_env(scratch / "data", models)
    log = work / f"{suite.name}.log"
    ingest = ragstream(["ingest", suite.name, "--path", str(corpus), "--quiet"], env, log)
    if ingest.returncode != 0:
        return [f"{suite.name}: ingest exit {ingest.returncode} (see {log})"]
    target = out / suite.name
    target.mkdir(parents=True, exist_ok=True)
    failures = []
    for case in sorted(suite.cases.glob("*.md")):
        for style in styles:
            args = ["run", "--file", str(case), "--project", suite.name]
            dest = target / (case.stem + SUFFIXES[style])
            if style != "markdown":
                args += ["--style", style, "--output", str(dest)]
            done = ragstream(args, env, log)
            if done.returncode != 0:
                failures.append(f"{suite.name}/{case.stem} ({style}): exit {done.returncode} (see {log})")
            elif style == "markdown":
                dest.write_bytes(done.stdout)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for SUITE/CASE.md (must not exist or be empty)")
    parser.add_argument("--suite", action="append", help="only this suite (repeatable)")
    parser.add_argument("--styles", default="markdown", help="comma-separated: markdown,xml,json,plain")
    parser.add_argument("--eval-root", type=Path, default=SHARED_EVAL, help="the shared labelled suites")
    parser.add_argument("--work", type=Path, help="scratch folder for corpora, data roots and logs (kept)")
    args = parser.parse_args()
    styles = args.styles.split(",")
    if unknown := set(styles) - set(SUFFIXES):
        parser.error(f"unknown styles {sorted(unknown)}")
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty")
    work = args.work or Path(tempfile.mkdtemp(prefix="prompt-snapshot-"))
    work.mkdir(parents=True, exist_ok=True)
    suites, skipped = discover(args.eval_root, BENCH / "suites")
    if args.suite:
        suites = [s for s in suites if s.name in args.suite]
    failures = list(skipped)
    started = time.perf_counter()
    for suite in suites:
        began = time.perf_counter()
        try:
            failed = snapshot_suite(suite, args.out, work, work / "models", styles)
        except CorpusMissing as exc:
            failed = [f"{suite.name}: skipped, {exc}"]
        failures += failed
        cases = len(list(suite.cases.glob("*.md")))
        print(f"{suite.name}: {cases} cases in {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    print(f"{len(suites)} suites in {time.perf_counter() - started:.0f} s; work folder {work}", file=sys.stderr)
    for line in failures:
        print(f"NOT SNAPSHOT: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Projects and their documents: `projects` lists them, `ingest` indexes one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import open_workspace

if TYPE_CHECKING:
    from ragstream.settings import Settings


def register(sub: Any) -> None:
    projects = sub.add_parser("projects", help="list projects and what is indexed")
    projects.set_defaults(handler=cmd_projects)

    ingest = sub.add_parser("ingest", help="index a project's documents (only changed files are re-embedded)")
    ingest.add_argument("project")
    ingest.add_argument("--path", help="ingest this folder (remembered for the project) instead of doc_raw/PROJECT")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--no-ignore", action="store_true", help="ingest files that .gitignore, .ignore or .ragstreamignore exclude"
    )
    ingest.set_defaults(handler=cmd_ingest)


def cmd_projects(args: argparse.Namespace, settings: Settings) -> int:
    projects = open_workspace(settings).projects()
    if not projects:
        print(f"no projects under {settings.data_dir} (put files in {settings.data_dir / 'doc_raw' / '<project>'})")
    for project in projects:
        state = f"{len(project['files'])} files, {project['chunks']} chunks" if project["ingested"] else "not ingested"
        secrets = project["secrets"]
        print(f"{project['project']:24s} {state}" + (f", secrets: {len(secrets)}" if secrets else ""))
        for line in secrets:
            print(f"  secret  {line}")
    return 0


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if phase not in bars:
            unit = "file" if phase == "scan" else "chunk"
            # disable=None: no bar unless stderr is a terminal, so a pipe or a log gets no carriage returns
            # or escape codes (the summary on stdout says what was done)
            bars[phase] = tqdm(
                total=total, unit=unit, desc=phase, disable=True if args.quiet else None, file=sys.stderr
            )
            if bars[phase].disable and not args.quiet:  # a log still learns which phase runs, one plain line each
                print(f"{phase}: {total} {unit}s", file=sys.stderr, flush=True)
        bars[phase].update(done - bars[phase].n)

    try:
        stats = open_workspace(settings).ingest_docs(
            args.project,
            progress,
            source=Path(args.path) if args.path else None,
            ignore_files=False if args.no_ignore else None,
        )
    finally:
        for bar in bars.values():
            bar.close()
    print(stats.summary())
    for path, reason in sorted(stats.skipped.items()):
        print(f"  skipped {path}: {reason}")
    return 0

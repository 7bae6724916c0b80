"""A model's recorded condensed lines, checked again by today's line check, without the model (issue #36, item 5).

Why: a small model on a shared 2-core machine takes about a minute per A4 call, and its replies change from run to
run, so a change to the check (`ragstream/condensing/support.py`) cannot be measured by running the model again.
Replayed, the same lines meet the same excerpts (as A4 gave them to the model) and the same ask; only the check
differs, so supported/total before and after is the check's doing. With hand labels (`--labels`) it also says which
faithful lines the check withholds and which wrong ones it lets through.

It reads two kinds of record:
- `bench/real_llm.py --json` output: every line the model wrote in a run, recorded (`recorded_checks`) with the
  chunks A4 read, the asks it checked against, and the verdict the line got then;
- raw A4 replies as JSON lines (`{"ask", "excerpt_ids", "output": {"facts": [...], ...}}`, one per A4 call): the
  chunks are read back from the project's index under `--data-dir` and widened to whole sentences as A4 widens
  them, and each line is cited and sorted as `condenser.condense` does before its check.

Run: python bench/support_replay.py side.json --data-dir <the run's data dir>
     python bench/support_replay.py --data-dir D --project mkdocs-docs raw.jsonl [--labels labels.json] [--json out]
Labels are a JSON object: a line's text (without its citations) -> "faithful", "garbled" or "wrong".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragstream.condensing.condenser import SECTIONS, addressed_to_reader, cite  # noqa: E402
from ragstream.condensing.support import SupportCheck, Verdict  # noqa: E402
from ragstream.gate.ask_parts import asking_parts  # noqa: E402
from ragstream.rendering.excerpts import Sources, sentence_whole  # noqa: E402
from ragstream.services import Services  # noqa: E402
from ragstream.settings import Settings, load_settings  # noqa: E402
from ragstream.stages.a4 import support_check  # noqa: E402
from ragstream.stages.io import StageEnv  # noqa: E402
from ragstream.stages.options import RunOptions  # noqa: E402
from ragstream.state import Chunk, PromptBody, SuperPrompt  # noqa: E402
from ragstream.tenancy.projects import project_paths  # noqa: E402
from ragstream.text.sentences import TYPED, split  # noqa: E402

# The reasons `condenser.condense` gives a line it leaves out before the check (they are no verdict of the check)
NOT_CHECKED = ("addressed to the answering model", "cites no excerpt it was given")


@contextmanager
def recorded_checks() -> Iterator[list[dict[str, Any]]]:
    """Every call of the line check while the block runs: the asks, the chunks as A4 read them, and each line with
    its verdict. A bench observes the product's own check this way (it is not replaced: each call runs as is)."""
    calls: list[dict[str, Any]] = []
    original = SupportCheck.check

    def check(
        self: SupportCheck, lines: Sequence[tuple[str, list[str]]], chunks: dict[str, Chunk], asks: Sequence[str]
    ) -> list[Verdict]:
        verdicts = original(self, lines, chunks, asks)
        cited = {cid for _, ids in lines for cid in ids}
        calls.append(
            {
                "asks": list(asks),
                "chunks": {cid: chunk.model_dump(mode="json") for cid, chunk in chunks.items() if cid in cited},
                "lines": [
                    {"text": text, "ids": ids, "supported": v.supported, "reason": v.reason, "score": round(v.score, 3)}
                    for (text, ids), v in zip(lines, verdicts, strict=True)
                ],
            }
        )
        return verdicts

    SupportCheck.check = check  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        SupportCheck.check = original  # type: ignore[method-assign]


def a4_lines(calls: list[dict[str, Any]], reasons: dict[str, str], project: str) -> dict[str, Any]:
    """What a run's --json keeps of A4's lines: the checked ones (`recorded_checks`), those A4 left out before its
    check (`reasons` of the A4 report), and supported/total over both."""
    checked = [line for call in calls for line in call["lines"]]
    unchecked = [{"text": t, "reason": r} for t, r in reasons.items() if r.startswith(NOT_CHECKED)]
    return {
        "project": project,
        "calls": calls,
        "unchecked": unchecked,
        "supported": sum(line["supported"] for line in checked),
        "total": len(checked) + len(unchecked),
    }


def environment(data_dir: Path, project: str) -> tuple[Settings, StageEnv]:
    settings = load_settings(overrides={"data_dir": str(data_dir), "llm.provider": "local"})
    return settings, StageEnv(services=Services(settings), context=RunOptions(project=project))


def from_side_by_side(path: Path) -> list[dict[str, Any]]:
    """The A4 records of a `bench/real_llm.py --json` file (a suite's rows, or the sample project's runs)."""
    rows = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for row in rows:
        a4 = (row.get("model") or row).get("a4_lines")
        if a4:
            found.append({"case": row.get("case", ""), **a4})
    return found


def from_raw(path: Path, env: StageEnv, settings: Settings, project: str) -> list[dict[str, Any]]:
    """The A4 records of raw replies: each line cited and sorted as `condenser.condense` does, the chunks read back
    from the index and widened as A4 widens them, the asks as A4 builds them from the ask."""
    snapshot = env.services.searcher(project).snapshot()
    sources = Sources(project_paths(settings, project).source_dir(), settings, snapshot.document_text)
    found = []
    for k, raw in enumerate(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()):
        if raw.get("provider") != "openai" or not raw.get("output"):
            continue  # a call that failed, or the offline fallback's
        kept = sentence_whole(
            [snapshot.chunk(cid) for cid in raw["excerpt_ids"]], sources, settings.excerpts.sentence_reach_chars
        )
        ask = raw["ask"]
        asks = [ask, *split(ask, TYPED), *asking_parts(SuperPrompt(body=PromptBody(task=ask)), settings)]
        lines: list[dict[str, Any]] = []
        unchecked: list[dict[str, Any]] = []
        seen: set[str] = set()
        for key, _ in SECTIONS:
            for line in raw["output"].get(key, []):
                text, ids = cite(line, kept)
                if text in seen:
                    continue
                seen.add(text)
                if addressed_to_reader(text):
                    unchecked.append({"text": text, "reason": NOT_CHECKED[0]})
                elif text and ids:
                    lines.append({"text": text, "ids": ids})
                elif text:
                    unchecked.append({"text": text, "reason": NOT_CHECKED[1]})
        chunks = {c.id: c.model_dump(mode="json") for c in kept}
        call = {"asks": asks, "chunks": chunks, "lines": lines}
        found.append({"case": f"{path.stem}:{k}", "project": project, "calls": [call], "unchecked": unchecked})
    return found


def replay(record: dict[str, Any], check: SupportCheck) -> list[tuple[dict[str, Any], Verdict]]:
    """Each checked line of the record with today's verdict."""
    out = []
    for call in record["calls"]:
        chunks = {cid: Chunk.model_validate(c) for cid, c in call["chunks"].items()}
        lines = [(line["text"], line["ids"]) for line in call["lines"]]
        out += list(zip(call["lines"], check.check(lines, chunks, call["asks"]), strict=True))
    return out


def _flat(text: str) -> str:
    return " ".join(text.split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, nargs="+", help="real_llm.py --json files, or raw A4 replies (.jsonl)")
    parser.add_argument("--data-dir", type=Path, required=True, help="the run's data dir (its projects' indexes)")
    parser.add_argument("--project", help="for raw replies: the project whose index holds their excerpts")
    parser.add_argument("--labels", type=Path, help="JSON: a line's text -> faithful / garbled / wrong")
    parser.add_argument("--json", type=Path, help="also write each line's verdicts here")
    args = parser.parse_args()
    labels = {_flat(k): v for k, v in json.loads(args.labels.read_text()).items()} if args.labels else {}
    envs: dict[str, tuple[Settings, StageEnv, SupportCheck]] = {}

    def env_of(project: str) -> tuple[Settings, StageEnv, SupportCheck]:
        if project not in envs:
            settings, env = environment(args.data_dir, project)
            envs[project] = (settings, env, support_check(env, project))
        return envs[project]

    records = []
    for path in args.records:
        if path.suffix == ".jsonl":
            if not args.project:
                parser.error("raw replies (.jsonl) need --project")
            settings, env, _ = env_of(args.project)
            records += from_raw(path, env, settings, args.project)
        else:
            records += from_side_by_side(path)
    rows: list[dict[str, Any]] = []
    tally: Counter[tuple[str, bool]] = Counter()
    for record in records:
        check = env_of(record["project"])[2]
        print(f"== {record['case']}")
        for line, verdict in replay(record, check):
            label = labels.get(_flat(line["text"]), "")
            tally[(label, verdict.supported)] += 1
            was = "" if "supported" not in line else " (was kept)" if line["supported"] else " (was withheld)"
            mark = "KEPT    " if verdict.supported else "WITHHELD"
            print(f"  {mark} [{label or '-'}]{was} {line['text'][:200]} {line['ids']}")
            if not verdict.supported:
                print(f"           reason: {verdict.reason[:240]}")
            now = {"case": record["case"], "label": label, "now": verdict.supported, "why": verdict.reason}
            rows.append({**line, **now})
        for line in record["unchecked"]:
            print(f"  LEFT OUT (before the check) {line['text'][:160]}: {line['reason']}")
    total = len(rows) + sum(len(r["unchecked"]) for r in records)
    supported = sum(r["now"] for r in rows)
    print(f"supported/total: {supported}/{total} ({len(rows)} lines checked, {total - len(rows)} left out before)")
    for label in sorted({label for label, _ in tally}):
        print(f"  {label or 'unlabelled'}: kept {tally[(label, True)]}, withheld {tally[(label, False)]}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

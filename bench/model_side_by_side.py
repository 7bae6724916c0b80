"""Side by side: one labelled suite (../shared/eval/<suite>) offline and with a real model server.

Imported by bench/real_llm.py (`--suite`). Each case's prompt runs through the whole pipeline twice on the
same ingested corpus, with the `local` provider and with the `openai` provider on the server, and the final
prompts are judged by the suite's fields (../shared/eval/README.md). Per stage it records where the model
helped and where the stage's own evidence check overruled it:

- A2: labels the model chose that no words of the prompt state (dropped), label lines in the final prompt
  and whether each has stated evidence;
- A3: who decided each candidate (`judged_by`: strong / weak evidence unasked, the model in the band, an
  offline fallback), the model's verdicts against the offline decision in the band (added / dropped), the
  rule that overruled it, the answering files kept, its calls and its time;
- A4: condensed lines that cite a chunk, how many are verbatim in that chunk, the others (listed, to be
  judged by hand), and the lines the stage withheld;
- the final prompt's checks: expected file among the first five excerpts, key facts carried, condensed
  must-contain, must-not-contain, the user's role, not-covered named, no excerpts for a no-documents ask.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ragstream.app.session import RunSession
from ragstream.app.workspace import Workspace
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.rendering.ask import normalized_ask
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.state import Chunk, SuperPrompt
from ragstream.telemetry.events import collect_llm_calls
from ragstream.text.chunk_ids import CITATION, citations
from ragstream.text.rst import as_read

LABEL_LINE = re.compile(r"^(?:- )?(Audience|Tone|Depth|Confidence):", re.MULTILINE)
_SPACE = re.compile(r"\s+")


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def load_cases(suite: Path, limit: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, prompt, expectations) for the suite's first `limit` cases, in name order."""
    cases = []
    for md in sorted((suite / "cases").glob("*.md"))[:limit]:
        cases.append((md.stem, md.read_text(encoding="utf-8"), json.loads(md.with_suffix(".json").read_text())))
    return cases


def run_case(settings: Settings, project: str, prompt: str) -> tuple[SuperPrompt, dict[str, float], int]:
    """The built prompt, each stage's time (ms) and the number of A3 model calls."""
    ctl = RunSession(Workspace(settings, Services(settings)), checkpointer=memory_checkpointer())
    ctl.select_project(project)
    events: list[dict[str, Any]] = []
    ctl.on_event = events.append
    started = time.monotonic()
    sp = ctl.run_full_pipeline(prompt, pause_after="none").state
    stage_ms = {e["stage"]: e["duration_ms"] for e in events if e.get("event") == "stage_finish"}
    stage_ms["wall"] = (time.monotonic() - started) * 1000
    a3_calls = sum(1 for e in events if e.get("event") == "agent_call" and e["agent"].startswith("A3/"))
    return sp, stage_ms, a3_calls


def _condensed_lines(sp: SuperPrompt) -> list[tuple[str, list[str]]]:
    """(line without citations, cited ids) for every condensed line that cites a chunk."""
    out = []
    for line in sp.s_ctx_md.splitlines():
        ids = citations(line)
        if line.startswith("- ") and ids:
            out.append((" ".join(CITATION.sub("", line[2:]).split()), ids))
    return out


def judge(sp: SuperPrompt, expect: dict[str, Any]) -> dict[str, Any]:
    """The final prompt against the case's fields, and what each stage did."""
    prompt = sp.prompt_ready
    flat = _flat(prompt)
    build = sp.extras.build
    excerpt_files = list(dict.fromkeys(e.source for e in build.excerpts)) if build else []
    chunks = sp.chunk_by_id()
    kept_files = {chunks[cid].source_path for cid in sp.final_selection_ids if cid in chunks}
    expected = expect.get("expected_files")
    fenced = sp.s_ctx_md
    checks: dict[str, bool] = {}
    if expected:
        top = excerpt_files[:5]
        checks["expected_in_first_5"] = (
            all(f in top for f in expected) if expect.get("require_all_expected") else any(f in top for f in expected)
        )
        checks["answering_file_kept"] = any(f in kept_files for f in expected)
    facts = expect.get("key_facts", [])
    carried = [f for f in facts if _flat(f) in flat]
    if facts:
        checks["key_facts"] = len(carried) == len(facts)
    for phrase in expect.get("condensed_must_contain", []):
        checks[f"condensed:{phrase[:30]}"] = _flat(phrase) in _flat(fenced)
    for phrase in expect.get("must_not_contain", []):
        checks[f"lacks:{phrase[:30]}"] = phrase not in prompt
    for phrase in expect.get("system_must_contain", []):
        checks["user_role_in_system"] = phrase in prompt
    if expect.get("not_covered_terms"):
        notes = " ".join(
            line for line in prompt.splitlines() if "not cover" in line.lower() or "open issue" in line.lower()
        ) + " ".join(sp.extras.a3.uncovered if sp.extras.a3 else [])
        checks["not_covered_named"] = any(t.lower() in notes.lower() for t in expect["not_covered_terms"])
    if expect.get("no_documents"):
        checks["no_excerpts"] = not excerpt_files
    a2 = sp.extras.a2
    decisions = a2.decisions if a2 else {}
    label_lines = LABEL_LINE.findall(prompt) + (["System: You are an expert"] if "You are an expert" in prompt else [])
    field_of = {
        "Audience": "audience",
        "Tone": "tone",
        "Depth": "response_depth",
        "System: You are an expert": "system",
    }
    unstated = [
        name
        for name in label_lines
        if name in field_of
        and not decisions.get(field_of[name], "").startswith(("stated by", "kept_user_value", "the model chose"))
    ]
    checks["labels_only_with_stated_evidence"] = not unstated
    a3 = sp.extras.a3
    judged_by = Counter(a3.judged_by.values()) if a3 else Counter()
    lines = _condensed_lines(sp)
    # A line is verbatim when the excerpt the prompt shows for a chunk it cites holds it (read as its reader sees
    # it): A4 reads chunks widened to whole sentences and closed over their lists, as the excerpts show them.
    shown = {cid: _flat(as_read(e.text)) for e in (build.excerpts if build else []) for cid in e.chunks}
    verbatim = [line for line, ids in lines if any(_flat(as_read(line)) in shown.get(c, "") for c in ids)]
    other = [f"{line} [{', '.join(ids)}]" for line, ids in lines if line not in verbatim]
    a4 = sp.extras.a4
    return {
        "checks": checks,
        "passed": all(checks.values()),
        "key_facts_carried": f"{len(carried)}/{len(facts)}",
        "excerpt_files": excerpt_files[:5],
        "a2": {
            "label_lines": label_lines,
            "model_dropped": {k: v for k, v in decisions.items() if "the model chose" in v},
            "decisions": decisions,
        },
        "a3": {
            "kept": len(sp.final_selection_ids),
            "judged_by": dict(judged_by),
            "overruled": a3.overruled if a3 else "",
            "uncovered": a3.uncovered if a3 else [],
            "decisions": {cid: (d.decision, d.reason[:160]) for cid, d in (a3.decisions.items() if a3 else [])},
            "by": dict(a3.judged_by) if a3 else {},
        },
        "a4": {
            "cited_lines": len(lines),
            "verbatim_lines": len(verbatim),
            "other_lines": other,
            "withheld": list(a4.withheld_lines) + list(a4.unsupported_lines) if a4 else [],
            "reasons": dict(a4.reasons) if a4 else {},
            "agent": a4.agent if a4 else "",
            "llm": a4.llm.model_dump() if a4 and a4.llm else None,
        },
        "condensed": sp.s_ctx_md,
        "prompt": prompt,
    }


def model_stages(offline_sp: SuperPrompt, settings: Settings, project: str) -> dict[str, Any]:
    """A2 and A3 with the model on the offline run's own state (the same candidates, the same body): what a
    slow server can afford. Labels applied and dropped, A3's kept ids, who decided, its calls and time."""
    from ragstream.shaping.prompt_shaper import fixed_fields, shape
    from ragstream.stages import a3
    from ragstream.stages.io import StageEnv
    from ragstream.stages.options import RunOptions

    services = Services(settings)
    with collect_llm_calls() as a2_calls:
        started = time.monotonic()
        body, a2 = shape(offline_sp.body, fixed_fields(offline_sp), services.runner)
        a2_s = time.monotonic() - started
    with collect_llm_calls() as calls:
        started = time.monotonic()
        out = a3.run(offline_sp, StageEnv(services=services, context=RunOptions(project=project)))
        a3_s = time.monotonic() - started
    report = out.report
    chunks = offline_sp.chunk_by_id()
    labels = {f: getattr(body, f) for f in ("system", "audience", "tone", "depth")}
    return {
        "a2": {
            "applied": {k: v for k, v in labels.items() if v},
            "decisions": a2.decisions,
            "model_labels": a2.labels,
            "model_dropped": {k: v for k, v in a2.decisions.items() if "the model chose" in v},
            "calls": len(a2_calls),
            "seconds": round(a2_s, 1),
        },
        "a3": {
            "kept": list(out.selection or []),
            "kept_files": sorted({chunks[c].source_path for c in out.selection or [] if c in chunks}),
            "judged_by": dict(Counter(report.judged_by.values())),
            "by": dict(report.judged_by),
            "decisions": {cid: (d.decision, d.reason[:160]) for cid, d in report.decisions.items()},
            "overruled": report.overruled,
            "uncovered": report.uncovered,
            "llm": report.llm.model_dump() if report.llm else None,
            "calls": len(calls),
            "tokens_in": sum(e["tokens_in"] for e in calls),
            "tokens_out": sum(e["tokens_out"] for e in calls),
            "seconds": round(a3_s, 1),
        },
    }


_EVIDENCE = re.compile(r"cosine (-?[\d.]+), ([\d.]+) of the ask's word weight")


def _a3_judged(sp: SuperPrompt) -> list[Chunk]:
    """The candidates A3 judges in this run: its input less the near-duplicates it drops unasked."""
    from ragstream.gate.dedup import near_duplicates
    from ragstream.stages import Stage

    chunks = sp.chunk_by_id()
    candidates = [chunks[c] for c in sp.selection_before(Stage.A3) if c in chunks]
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    return [c for c in candidates if c.id not in dupes]


def a3_request_sizes(sp: SuperPrompt, settings: Settings) -> dict[str, int]:
    """What A3 would send the model for this run's candidates, one call per candidate about every candidate
    (A3/v1, before) against `gate.model_batch` per call about the band's candidates the offline evidence drops
    (A3/v2, after: it keeps the others unasked): calls and prompt tokens (counted by the prompt budget's
    tokenizer, not the model's). The evidence and the offline decisions are read from the offline run's report."""
    from ragstream.llm.factory import AgentFactory

    gate, budget = settings.gate, Services(settings).budget
    judged = _a3_judged(sp)
    factory, ask = AgentFactory(settings.agents_dir), normalized_ask(sp)
    decisions = sp.extras.a3.decisions if sp.extras.a3 else {}

    def tokens(version: str, payload: dict[str, Any]) -> int:
        messages, _ = factory.create("A3", version, payload).compose(payload)
        return sum(budget.count(m["content"]) for m in messages)

    def evidence(cid: str) -> float:
        found = _EVIDENCE.search(sp.extras.a3.decisions[cid].reason) if sp.extras.a3 else None
        return float(found.group(1)) + gate.words_weight * float(found.group(2)) if found else 0.0

    band = [c for c in judged if gate.weak_evidence <= evidence(c.id) < gate.strong_evidence]
    unsure = set(sp.extras.a3.unsure) if sp.extras.a3 else set()  # offline keeps them; the model path asks
    asked = [c for c in band if c.id in decisions and (decisions[c.id].decision != "keep" or c.id in unsure)]
    batches = [asked[i : i + gate.model_batch] for i in range(0, len(asked), gate.model_batch)]
    return {
        "candidates": len(judged),
        "calls_before": len(judged),
        "tokens_before": sum(tokens("v1", {"ask": ask, "passage": c.text}) for c in judged),
        "in_band": len(band),
        "asked_after": len(asked),
        "calls_after": len(batches),
        "tokens_after": sum(
            tokens("v2", {"ask": ask, "passages": [{"n": n, "passage": c.text} for n, c in enumerate(b, 1)]})
            for b in batches
        ),
    }


def a3_per_candidate(sp: SuperPrompt, settings: Settings) -> dict[str, Any]:
    """A3's call pattern before batching and the band, timed on the model server: one A3/v1 call per candidate
    about every candidate this run's A3 judged (no decision is used: only what those calls cost)."""
    runner = Services(settings).runner
    ask = normalized_ask(sp)
    payloads = [{"ask": ask, "passage": c.text} for c in _a3_judged(sp)]
    with collect_llm_calls() as calls:
        started = time.monotonic()
        runner.run_many("A3", payloads, "v1")
        seconds = time.monotonic() - started
    return {
        "calls": len(calls),
        "seconds": round(seconds, 1),
        "tokens_in": sum(e["tokens_in"] for e in calls),
        "tokens_out": sum(e["tokens_out"] for e in calls),
    }


def band_comparison(offline: dict[str, Any], model: dict[str, Any]) -> dict[str, list[str]]:
    """For the candidates the model decided: where it agreed with the offline decision, kept what offline
    dropped (added), or dropped what offline kept (dropped)."""
    found: dict[str, list[str]] = {"agreed": [], "added": [], "dropped": []}
    off = offline["a3"]["decisions"]
    for cid, who in model["a3"]["by"].items():
        if who != "model" or cid not in off:
            continue
        before, after = off[cid][0] == "keep", model["a3"]["decisions"][cid][0] == "keep"
        found["agreed" if before == after else "added" if after else "dropped"].append(cid)
    return found

"""The gate with a model: the A3 agent decides only the candidates in the evidence band, in batched calls."""

from __future__ import annotations

from typing import Any

from ragstream.gate.dedup import near_duplicates
from ragstream.gate.evidence import Weighed, decision_counts
from ragstream.llm.runner import FELL_BACK, AgentCall, AgentRunner
from ragstream.settings import GateSettings
from ragstream.state import A3Report, Chunk, ChunkDecision, LLMOutcomes

AGENT = "A3"


def _band(score: float, settings: GateSettings) -> str:
    """Where a candidate's offline evidence puts it: 'strong' (kept unasked), 'weak' (the offline decision
    stands unasked) or 'model' (the model decides)."""
    if score >= settings.strong_evidence:
        return "strong"
    return "model" if score >= settings.weak_evidence else "weak"


def _verdicts(call: AgentCall, size: int) -> dict[int, dict[str, str]]:
    """The batch's verdicts by passage number (1-based); a number outside the batch or given twice counts once."""
    found: dict[int, dict[str, str]] = {}
    for verdict in call.output.get("verdicts", []):
        if 1 <= verdict["n"] <= size and verdict["n"] not in found:
            found[verdict["n"]] = verdict
    return found


def gate(
    ask: str,
    candidates: list[Chunk],
    runner: AgentRunner,
    weighed: Weighed,
    settings: GateSettings,
    version: str = "v2",
) -> tuple[list[str], A3Report]:
    """The candidates kept with a model: it only adds, deciding the band's candidates the evidence drops.

    `weighed` is the offline gate's finding on the same candidates. A candidate whose evidence reaches
    `gate.strong_evidence` is kept and one under `gate.weak_evidence` keeps its offline decision, neither
    sent to the model: a small model's word never outweighs strong evidence either way. Between them, a
    candidate the offline evidence keeps stays without asking, so the model only adds what the evidence would
    drop: a small model is no second opinion on those. Qwen2.5-0.5B called every answering passage irrelevant
    in most prompts, and where some of its drops stood they cost key facts in four cases of the OWASP and
    rust-book suites (the answering file in one) against two they happened to help; asked about them and
    overruled, it cost half of A3's calls for nothing. The candidates it is asked about go to the A3 agent
    `gate.model_batch` at a time (one call per batch, a verdict per numbered passage with its reason); a
    passage the reply gives no verdict for, or a batch whose reply stays invalid, takes the offline decision.
    `judged_by` records who decided each candidate. Kept ids come in the offline gate's order (the order the
    candidates came in), then the model's additions in that order too.
    """
    evidence = weighed.report
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    judged = [c for c in candidates if c.id not in dupes]
    decisions = {
        cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}")
        for cid, other in dupes.items()
    }
    judged_by = dict.fromkeys(dupes, "duplicate")
    asked: list[Chunk] = []
    for chunk in judged:
        offline = evidence.decisions[chunk.id]
        band = _band(weighed.evidence.get(chunk.id, 0.0), settings)
        if band == "model" and offline.decision != "keep":
            asked.append(chunk)
            continue
        notes = {
            "strong": "strong evidence, kept without asking the model",
            "model": "kept by the evidence, not asked: the model only adds what the evidence drops",
            "weak": "weak evidence, not asked",
        }
        judged_by[chunk.id] = "evidence (kept)" if band == "model" else f"evidence ({band})"
        decisions[chunk.id] = ChunkDecision(
            decision="keep" if band == "strong" else offline.decision, reason=f"{notes[band]}: {offline.reason}"
        )
    batches = [asked[i : i + settings.model_batch] for i in range(0, len(asked), settings.model_batch)]

    def offline_batch(i: int, error: Exception) -> dict[str, Any]:
        return {
            "verdicts": [
                {"n": n, "decision": evidence.decisions[c.id].decision, "reason": "offline evidence"}
                for n, c in enumerate(batches[i], 1)
            ]
        }

    payloads = [
        {"ask": ask, "passages": [{"n": n, "passage": c.text} for n, c in enumerate(batch, 1)]} for batch in batches
    ]
    calls = runner.run_many(AGENT, payloads, version, fallback=offline_batch)
    for batch, call in zip(batches, calls, strict=True):
        verdicts = _verdicts(call, len(batch))
        for n, chunk in enumerate(batch, 1):
            offline = evidence.decisions[chunk.id]
            verdict = verdicts.get(n)
            if call.outcome == FELL_BACK or verdict is None:
                why = "the model's reply was invalid" if call.outcome == FELL_BACK else "the model gave no verdict"
                judged_by[chunk.id] = "offline fallback"
                decisions[chunk.id] = ChunkDecision(
                    decision=offline.decision, reason=f"{why}; offline evidence: {offline.reason}"
                )
                continue
            judged_by[chunk.id] = "model"
            reason = verdict["reason"].strip() or "no reason given"
            decisions[chunk.id] = ChunkDecision(
                decision=verdict["decision"],
                reason=f"{reason} ({call.source}; offline evidence: {offline.reason})",
            )
    order = {cid: i for i, cid in enumerate(weighed.kept)}
    position = {c.id: i for i, c in enumerate(candidates)}
    kept = sorted(
        (c.id for c in candidates if decisions[c.id].decision == "keep"),
        key=lambda cid: (order.get(cid, len(order)), position[cid]),
    )
    report = A3Report(
        agent=f"{AGENT}/{version}",
        provider=runner.provider_name,
        decisions={c.id: decisions[c.id] for c in candidates},
        counts=decision_counts(decisions),
        llm=LLMOutcomes.of(calls),
        judged_by={c.id: judged_by[c.id] for c in candidates},
    )
    return kept, report

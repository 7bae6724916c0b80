"""A4 Condenser: the selected chunks, within a token budget, condensed into s_ctx_md.

s_ctx_md has up to three parts (Facts, Constraints, Open issues; an empty one is left out); every line
cites the chunk ids it rests on. With an LLM, citations the model gives are checked against the
selection; a line without a valid citation is matched to the chunk that contains it (or shares most
words with it), and a line that matches nothing is dropped as unsupported. Each cited line is then
checked against the sentences of the chunks it cites (names, numbers, negation, an evidence score:
`a4_support`), and one they do not support is withheld, listed in the report with the reason. The
model is never called without excerpts, and when its reply stays invalid or none of its lines passes,
the offline extraction stands in. Offline, the lines are verbatim sentences extracted answer first for
each part of the ask (`extractive`), each with its evidence. Either way, a line addressed to the
answering model (an injected instruction, a role to play) is withheld and reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from ragstream.condensing.extractive import Evidence, Line, condense_extractively
from ragstream.condensing.support import SupportCheck
from ragstream.embedding.embedder import Embedder
from ragstream.errors import AgentReplyError
from ragstream.gate.evidence import weigh_all
from ragstream.llm.runner import AgentRunner
from ragstream.rendering.ask import normalized_ask
from ragstream.settings import CondenserSettings, GateSettings
from ragstream.state import A4Report, BudgetReport, Chunk, LineEvidence, LLMOutcomes, Span, SuperPrompt
from ragstream.text.chunk_ids import citations, uncite
from ragstream.tokens.budget import ContextBudget, TrimReport

AGENT = "A4"
SECTIONS = (("facts", "Facts"), ("constraints", "Constraints"), ("open_issues", "Open issues"))
_WORD = re.compile(r"\w+")
# Sentences addressed to the model reading the prompt, not statements about the subject: attempts to
# change its instructions or role, talk about prompts and system messages, or dictate its reply.
# Such a sentence may sit in a fenced excerpt (quoted, visibly a document's words) but is never
# copied into the condensed context, where it would read as part of the prompt.
_ADDRESSED_TO_READER = re.compile(
    r"""(?ix)
      \b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,60}\b(?:instructions?|prompts?|rules?|guidelines|everything|all)\b
    |
    \byou\s+(?:are|must|should|will|shall)\s+(?:now\s+)?(?:an?\s+|the\s+)?(?:ai|assistant|model|chatbot|language\s+model|gpt|llm|dan)\b
    | \bfrom\s+now\s+on\b
    | \bas\s+an?\s+(?:ai|assistant|language\s+model)\b
    | \b(?:developer\s+mode|jailbreak)
    | ^\W*(?:assistant|system|user)\s*:
    | \b(?:pretend\s+(?:to\s+be|you)|act\s+as|role-?\s?play)\b
    | ^\W*(?:please\s+)?(?:respond|reply|answer|say)\b
    | \b(?:respond|reply|answer)\s+only\s+with\b
    | \b(?:do\s+not|don't|never)\s+(?:tell|mention|reveal)\s+(?:the\s+)?user\b
    | \b(?:reveal|print|repeat|output|leak)\b[^.!?\n]{0,40}\b(?:instructions|prompt|api\s+keys?|passwords?|secrets?)\b
    """
)


def addressed_to_reader(sentence: str) -> bool:
    """True for a sentence that speaks to the answering model rather than about the documents' subject."""
    return bool(_ADDRESSED_TO_READER.search(sentence))


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def cite(line: str, chunks: list[Chunk]) -> tuple[str, list[str]]:
    """The line without citation brackets (a citation of a chunk not selected is no claim of the
    document's, so it goes too), and the selected chunk ids it rests on (maybe none)."""
    ids = {c.id for c in chunks}
    cited = [c for c in citations(line) if c in ids]
    text = uncite(line, set(citations(line)))
    if cited:
        return text, list(dict.fromkeys(cited))
    flat = " ".join(text.split()).lower()
    containing = [c.id for c in chunks if flat and flat in " ".join(c.text.split()).lower()]
    if containing:
        return text, containing[:1]
    mine = _words(text)
    best = max(chunks, key=lambda c: (len(mine & _words(c.text)), -chunks.index(c)), default=None)
    if best is not None and mine and len(mine & _words(best.text)) / len(mine) >= 0.5:
        return text, [best.id]
    return text, []


NOT_COVERED = "The documents do not cover: "
UNANSWERED = "No excerpt answers: "
WEAK = "Weak evidence only (a line above, no whole excerpt): "


def weakly_evidenced(lines: Sequence[Line], parts: Sequence[str], unanswered: Collection[str]) -> list[str]:
    """Those of `unanswered` a condensed line answers by A3's rule read as a sentence. No whole kept chunk had the
    evidence for the part, a sentence of one has: "No excerpt answers: how to serve the app under the /api path
    prefix" stood under the `--root-path` Fact that answers it (uvicorn). The sentence's evidence cannot tell such
    a line from a near miss ("Frozen-ness of classes is now inherited." for slowing the printing of a frozen class
    reached 0.555, the `--root-path` line 0.56), so neither "answered" nor "no excerpt answers" is said: the prompt
    says what was measured, weak evidence in a line it shows."""
    answered = {parts[p] for line in lines for p in line.answers if p < len(parts)}
    return [part for part in unanswered if part in answered]


def render_sctx(
    sections: dict[str, list[tuple[str, list[str]]]],
    uncovered: Sequence[str] = (),
    unanswered: Collection[str] = (),
    weak: Collection[str] = (),
) -> str:
    """The sections that have lines (an empty one is left out: a "none found" line would only fill space);
    the parts of the ask nothing covers come first among the Open issues, uncited (they are the
    pipeline's finding, not a document's words). Those `unanswered` (worded as the documents word things) are said
    to be unanswered by the excerpts, which is what was measured, not absent from the documents, which may treat
    them in other words; those of them in `weak` (`weakly_evidenced`) are said to have weak evidence only."""
    said = [(WEAK if part in weak else UNANSWERED if part in unanswered else NOT_COVERED) + part for part in uncovered]
    sections = {**sections, "open_issues": [(text, []) for text in said] + sections.get("open_issues", [])}
    blocks = []
    for key, title in SECTIONS:
        lines = [f"- {text}" + "".join(f" [{cid}]" for cid in ids) for text, ids in sections.get(key, [])]
        if lines:
            blocks.append(f"### {title}\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def _sort_in(
    sections: dict[str, list[tuple[str, list[str]]]],
    key: str,
    text: str,
    ids: list[str],
    withheld: list[str],
    unsupported: list[str],
) -> None:
    if addressed_to_reader(text):
        withheld.append(text)
    elif text and ids:
        sections.setdefault(key, []).append((text, ids))
    elif text:
        unsupported.append(text)


def beside(
    standing: Sequence[tuple[str, str, list[str]]],
    sections: dict[str, list[tuple[str, list[str]]]],
    words: Callable[[str], set[str]],
) -> tuple[dict[str, list[tuple[str, list[str]]]], int]:
    """The `standing` lines (section, text, cited ids) first in their sections, then the model's lines that
    say something a standing line does not (a line whose words are all one standing line's says it again).
    Every standing line stands, also one citing an excerpt the model was not given (the extraction's budget
    reserves the ask's pieces, the model call the ask, so the two may read one chunk apart): the model's
    prompt is never without a line the offline prompt has. Also how many lines stood."""
    stood = list(standing)
    merged: dict[str, list[tuple[str, list[str]]]] = {}
    for key, text, ids in stood:
        merged.setdefault(key, []).append((text, ids))
    said = [words(text) for _, text, _ in stood]
    for key, found in sections.items():
        for text, ids in found:
            if not any(words(text) <= line for line in said):
                merged.setdefault(key, []).append((text, ids))
    return merged, len(stood)


def condense(
    ask: str,
    selection: list[Chunk],
    runner: AgentRunner,
    budget: ContextBudget,
    offline: Callable[[str], tuple[str, list[str], A4Report]],
    check: SupportCheck,
    asks: Sequence[str] = (),
    version: str = "v1",
    uncovered: Sequence[str] = (),
    standing: Sequence[tuple[str, str, list[str]]] = (),
    whole: Callable[[list[Chunk]], list[Chunk]] | None = None,
    lacking: bool = False,
    unanswered: Sequence[str] = (),
    weak: Sequence[str] = (),
    first: Collection[str] = (),
) -> tuple[str, list[str], A4Report]:
    """With an LLM: s_ctx_md for the ask from the selection that fits the budget, the ids kept, the report.

    The model is not called without excerpts. Its lines may cite only the excerpts it was given, and each
    must say what they say and not restate `asks` (the prompt's sentences and clauses; `check`, see
    a4_support): a line that fails is withheld and the report lists it
    with the reason. When its reply stays invalid, or none of its lines passes, `offline(why)` condenses instead.
    The `standing` lines (the offline extraction's, verbatim and cited) stand beside the model's, so its
    lines add to what the extraction says and never take its place: on the OWASP suite a 0.5B model's three
    lines about session expiry replaced the sentence giving the 4-8 hour range the ask wanted. `weak`: the parts
    of `unanswered` the standing lines reach (`weakly_evidenced`); `first` as `read_first`.
    """
    kept, trim = read_first(selection, budget, budget.count(ask), first)
    kept = whole(kept) if whole is not None else kept
    if not kept:
        report = A4Report(
            agent="not called: no excerpts to condense",
            provider=runner.provider_name,
            budget=BudgetReport(**trim.as_dict(), method=budget.method),
            dropped_for_budget=trim.removed,
            uncovered=list(uncovered),
            unanswered=list(unanswered),
        )
        return render_sctx({}, uncovered, unanswered), [], report
    try:
        call = runner.run(AGENT, {"ask": ask, "excerpts": {c.id: c.text for c in kept}}, version, fallback=False)
    except AgentReplyError as exc:
        return offline(f"the model's reply was invalid ({exc}); used offline extraction")
    cited: dict[str, list[tuple[str, list[str]]]] = {}
    unsupported: list[str] = []
    withheld: list[str] = []
    reasons: dict[str, str] = {}
    seen: set[str] = set()
    for key, _ in SECTIONS:
        for line in call.output.get(key, []):
            text, ids = cite(line, kept)
            if text not in seen:
                seen.add(text)
                _sort_in(cited, key, text, ids, withheld, unsupported)
    reasons.update(dict.fromkeys(withheld, "addressed to the answering model, not about the documents"))
    reasons.update(dict.fromkeys(unsupported, "cites no excerpt it was given, and no excerpt holds its words"))
    sections: dict[str, list[tuple[str, list[str]]]] = {}
    flat = [(key, text, ids) for key, found in cited.items() for text, ids in found]
    verdicts = check.check([(text, ids) for _, text, ids in flat], {c.id: c for c in kept}, [ask, *asks])
    for (key, text, ids), verdict in zip(flat, verdicts, strict=True):
        if verdict.supported:
            sections.setdefault(key, []).append((text, ids))
        else:
            line = text + "".join(f" [{cid}]" for cid in ids)
            unsupported.append(line)
            reasons[line] = verdict.reason
    if not sections:
        text, ids, report = offline(
            f"none of the model's {len(seen)} lines rests on an excerpt it was given and says what it says; "
            "used offline extraction"
        )
        return text, ids, report.model_copy(update={"unsupported_lines": unsupported, "reasons": reasons})
    sections, stood = beside(standing, sections, check.words)
    outcomes = LLMOutcomes.of([call])
    if stood:
        outcomes.notes.append(f"{stood} lines of the offline extraction stand beside the model's")
    report = A4Report(
        agent=f"{AGENT}/{version}",
        provider=call.reply.provider,
        budget=BudgetReport(**trim.as_dict(), method=budget.method),
        dropped_for_budget=trim.removed,
        unsupported_lines=unsupported,
        withheld_lines=withheld,
        reasons=reasons,
        uncovered=list(uncovered),
        unanswered=list(unanswered),
        weakly_evidenced=list(weak),
        llm=outcomes,
    )
    ids = [c.id for c in kept]
    standing_ids = {cid for _, _, found in standing for cid in found}
    ids += [c.id for c in selection if c.id in standing_ids and c.id not in ids]
    return render_sctx(sections, uncovered, unanswered, weak), ids, report


def read_first(
    selection: list[Chunk], budget: ContextBudget, reserve: int, first: Collection[str] = ()
) -> tuple[list[Chunk], TrimReport]:
    """The chunks of the selection that fit A4's budget, those of `first` (the best answer to each part of the ask)
    taking it before the others, kept in the selection's order (the order the prompt shows them in)."""
    ahead = [c for c in selection if c.id in first] + [c for c in selection if c.id not in first]
    kept, trim = budget.fit("a4", ahead, key=lambda c: c.id, text=lambda c: c.text, reserve=reserve)
    order = {c.id: i for i, c in enumerate(selection)}
    return sorted(kept, key=lambda c: order[c.id]), trim


def within_share(
    lines: list[Line], kept: list[Chunk], budget: ContextBudget, settings: CondenserSettings
) -> list[Line]:
    """The lines that answer a part of the ask, then the most relevant per token of the others, whose tokens
    stay within `condenser.max_share` of the excerpts' (in their order).

    Offline, a condensed line is a sentence quoted from an excerpt the prompt also carries in full: it
    earns its tokens by pointing at what answers the ask and filing it (Fact, Constraint, Open issue),
    not by repeating the excerpts, so it is bounded by a share of them (or `condenser.min_tokens`, for
    short excerpts, where a few lines cost little). The excerpts counted are at most the prompt's ceiling: where
    it is below A4's, lines filling a share of A4's left no room for the excerpts they cite, and a line whose
    excerpts the prompt does not show is withdrawn (rendering/parts.py). The answering (`core`) lines always stay:
    they are the skeleton of the answer; the others fill what is left by relevance per token, not by what
    happens to fit.
    """
    read = min(sum(budget.count(c.text) for c in kept), budget.ceiling("prompt"))
    allowance = max(settings.max_share * read, settings.min_tokens)
    cost = [budget.count(f"- {line.text} [{line.chunk_id}]") for line in lines]
    chosen = {i for i, line in enumerate(lines) if line.core}
    used = sum(cost[i] for i in chosen)
    for i in sorted(set(range(len(lines))) - chosen, key=lambda i: (-lines[i].relevance / max(cost[i], 1), i)):
        if used + cost[i] <= allowance:
            chosen.add(i)
            used += cost[i]
    return [line for i, line in enumerate(lines) if i in chosen]


def a3_evidence(
    settings: GateSettings,
    rarity: dict[str, float],
    read: Mapping[str, str] | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> Evidence:
    """A3's absolute evidence (`weigh_all`) as the offline condenser asks it: each candidate line's evidence
    for one part of the ask, and whether A3 would keep a chunk on it. `read` gives a part as A3 read it (respelled;
    `embed` embeds it when it differs)."""

    def evidence(part: str, texts: list[str], vectors: np.ndarray, part_vector: np.ndarray):
        judged = (read or {}).get(part, part)
        if judged != part and embed is not None:
            part_vector = embed([judged])[0]
        lines = [
            Chunk(id=str(i), source_path="", sha256="", chunk_index=0, text=text, span=Span(start=0, end=len(text)))
            for i, text in enumerate(texts)
        ]
        found = weigh_all([judged], lines, vectors, part_vector[None, :], settings, rarity)
        decisions = found.report.decisions
        return (
            [found.evidence.get(str(i), -1.0) for i in range(len(texts))],
            [decisions[str(i)].decision == "keep" for i in range(len(texts))],
        )

    return evidence


def extracted(
    pieces: list[str],
    selection: list[Chunk],
    embedder: Embedder,
    budget: ContextBudget,
    settings: CondenserSettings,
    parts: Sequence[str] = (),
    evidence: Evidence | None = None,
    whole: Callable[[list[Chunk]], list[Chunk]] | None = None,
    lacking: bool = False,
    unsure: Collection[str] = (),
    first: Collection[str] = (),
) -> tuple[list[Line], list[Chunk], TrimReport]:
    """The offline extraction's lines within their share, the chunks that fit the budget (as `whole` widens them:
    the budget counts them as indexed, so the widening never changes which are read), and what was trimmed;
    `lacking` and `unsure` as `condense_extractively` has them, `first` as `read_first`."""
    kept, trim = read_first(selection, budget, budget.count("\n".join(pieces)), first)
    kept = whole(kept) if whole is not None else kept
    lines = condense_extractively(pieces, kept, embedder.embed_together, settings, parts, evidence, lacking, unsure)
    return within_share(lines, kept, budget, settings), kept, trim


def condense_offline(
    pieces: list[str],
    selection: list[Chunk],
    embedder: Embedder,
    budget: ContextBudget,
    settings: CondenserSettings,
    uncovered: Sequence[str] = (),
    parts: Sequence[str] = (),
    evidence: Evidence | None = None,
    whole: Callable[[list[Chunk]], list[Chunk]] | None = None,
    lacking: bool = False,
    unanswered: Sequence[str] = (),
    unsure: Collection[str] = (),
    first: Collection[str] = (),
) -> tuple[str, list[str], A4Report]:
    """Without a model: verbatim, cited sentences that answer each part of the ask first, then those most
    relevant to the prompt's query pieces (see `extractive`); `lacking`, `unsure` and `first` as `extracted` has
    them."""
    lines, kept, trim = extracted(
        pieces, selection, embedder, budget, settings, parts, evidence, whole, lacking, unsure, first
    )
    sections: dict[str, list[tuple[str, list[str]]]] = {}
    withheld: list[str] = []
    recorded: list[LineEvidence] = []
    for line in lines:
        _sort_in(sections, line.section, line.text, [line.chunk_id], withheld, [])
        if line.text not in withheld:
            recorded.append(
                LineEvidence(section=line.section, chunk=line.chunk_id, relevance=line.relevance, cue=line.cue)
            )
    weak = weakly_evidenced([line for line in lines if line.text not in withheld], parts, unanswered)
    report = A4Report(
        agent="offline extraction (no model)",
        provider="local",
        budget=BudgetReport(**trim.as_dict(), method=budget.method),
        dropped_for_budget=trim.removed,
        withheld_lines=withheld,
        lines=recorded,
        uncovered=list(uncovered),
        unanswered=list(unanswered),
        weakly_evidenced=list(weak),
    )
    return render_sctx(sections, uncovered, unanswered, weak), [c.id for c in kept], report


def uncovered(sp: SuperPrompt, selection: list[Chunk]) -> list[str]:
    """What the documents do not cover: A3's finding, or the whole ask when nothing was selected."""
    found = list(sp.extras.a3.uncovered) if sp.extras.a3 is not None else []
    if not selection and not found:
        found = [" ".join((sp.body.task or normalized_ask(sp)).split())]
    return found


def nothing_to_condense(sp: SuperPrompt) -> str:
    """No excerpts: nothing to say, unless retrieval failed and the run went on without it (the prompt says so)."""
    retrieval = sp.extras.retrieval
    if retrieval is None or not retrieval.failure:
        return ""
    return (
        f"### Open issues\n- No excerpts: retrieval from project '{retrieval.project}' failed ({retrieval.failure}); "
        "nothing here comes from the project's documents."
    )

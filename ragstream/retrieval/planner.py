"""The run's plan: the prompt's intent, and what retrieval does about it (retrieve or not, strategy,
candidate count, excerpt budget), with its confidence and reason.

The intents are those of the orchestration spec adapted to building a prompt (not answering it):
the spec's FAQ and factual lookup both look one thing up in the documents, so they are one
`factual`; `research` asks for research or breadth (a comparison, trade-offs, "in depth") and gets
the EXPLORATORY strategy and a larger excerpt budget; `conversational` (thanks, greetings) and `transform`
(rewrite, translate, shorten text the prompt itself gives) have nothing to look up, so they
retrieve nothing, and the plan says why.

Offline the rules below decide and record the words they rest on; with an LLM the PLAN agent
(`config/agents/PLAN/v1.json`) decides, where the rules only guess, whether anything is to be looked up,
and gives its reason (a lookup is then planned by the rules; a reply that stays invalid falls back
to the rules; see `by_model`). Either way a decision under
`plan.min_confidence` escalates: the run retrieves after all (never skips on a guess), with the
research candidate count. A strategy the user forced always wins (`source: user`).

The candidate count follows the ask, whoever chose the intent: `retrieval.max_candidates` for one
thing asked, `plan.candidates_per_part` more for each further part asked (the clauses of
text/asking.py: "how does X work, and what does Y do?" is two), `plan.breadth_candidates` more when
the ask names its breadth (`plan.breadth_cues`: "in depth", "compare", "pros and cons"), at most
`plan.research_candidates`.

Rules, in order (the cue lists are in `config/ragstream.json`, section `plan`):

1. transform: a transform verb opens a sentence of the task ("Rewrite", "Please translate") and
   the text to transform is in the prompt (after a colon, in a quoted or fenced block, or in the
   prompt's Context section); a verb aimed at "this"/"the following" with no text given is a
   guess (the text may be a document), so it escalates.
2. conversational: the prompt is social phrases only ("Thanks, that helped!"), with no question;
   one word besides them makes it a guess.
3. research: the words of the ask say so: a research cue ("researching", "investigate") or a
   breadth cue ("compare", "trade-offs", "in depth"). Neither punctuation nor the number of parts
   asked makes research: two plain questions are two lookups (more candidates, not another intent).
4. factual: a sentence that asks by the one rule of ragstream/text/asking.py (a question, or it opens
   with one of the prompt schema's `ask_openers`); otherwise factual as the default, a guess.
"""

from __future__ import annotations

import re

from ragstream.llm.runner import FELL_BACK, AgentRunner
from ragstream.preprocessing.enumerations import asked_enumerations, with_items
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.retrieval.strategy import choose_strategy
from ragstream.settings import Settings
from ragstream.state import Plan, SuperPrompt
from ragstream.state.reports import Intent, PlanSource
from ragstream.strategies import Strategy
from ragstream.text.asking import ask_of, clauses
from ragstream.text.phrases import any_phrase
from ragstream.text.sentences import TYPED, split

AGENT = "PLAN"
_OPENER = r"(?:^|(?<=[.!?:\n])\s*|(?<=^\W))\s*(?:please\s+|kindly\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
_QUOTED = re.compile(r"(?:\"[^\"]{20,}\"|“[^”]{20,}”|^>\s?.{20,}|~~~|```)", re.M)
_WORD = re.compile(r"[\w'’-]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _given_text(task: str, verb_end: int, context: str) -> str:
    """Where the prompt gives the text to transform: after a colon, a quoted/fenced block, or the Context."""
    rest = task[verb_end:]
    colon = rest.find(":")
    if colon >= 0 and len(_words(rest[colon + 1 :])) >= 5:
        return "the text after ':'"
    if _QUOTED.search(rest):
        return "a quoted or fenced block"
    paragraphs = [p for p in re.split(r"\n\s*\n", rest) if p.strip()]
    if len(paragraphs) > 1 and len(_words(" ".join(paragraphs[1:]))) >= 5:
        return "the paragraphs after the request"
    if len(_words(context)) >= 5:
        return "the prompt's Context section"
    return ""


def asked_parts(sp: SuperPrompt, settings: Settings) -> list[str]:
    """The parts the task asks, one per clause (text/asking.py) and one per item it enumerates
    (preprocessing/enumerations.py); a clause counts when it names two content words of its own, so "How do I read and
    write files?" stays one."""
    schema = load_prompt_schema(settings.prompt_schema_path)
    openers = schema.ask_openers
    skip = set(settings.gate.function_words) | {o for o in openers if " " not in o}

    def substantive(clause: str) -> bool:
        return sum(1 for w in _words(clause) if len(w) > 1 and w not in skip) >= 2

    task = sp.body.task or sp.raw_prompt
    return with_items(
        task, clauses(task, openers, substantive), asked_enumerations(task, schema, substantive), substantive
    )


def breadth_cue(sp: SuperPrompt, settings: Settings) -> str | None:
    """The words by which the ask names its breadth ("in depth", "compare"), if any."""
    found = any_phrase(settings.plan.breadth_cues).search(f"{sp.body.task or sp.raw_prompt}\n{sp.body.purpose or ''}")
    return found.group(0) if found else None


def classify(sp: SuperPrompt, settings: Settings) -> tuple[Intent, float, str, list[str]]:
    """(intent, confidence, reason, evidence) by the rules in the module docstring."""
    rules = settings.plan
    task = sp.body.task or sp.raw_prompt
    context = sp.body.context or ""
    verbs = any_phrase(rules.transform_verbs)
    for match in re.finditer(_OPENER + r"(" + verbs.pattern + r")", task, re.I | re.M):
        verb = match.group(1)
        given = _given_text(task, match.end(), context)
        deictic = any_phrase(rules.deictic_targets).search(task[match.end() : match.end() + 60])
        if given:
            evidence = [f"'{verb}'", given] + ([f"'{deictic.group(0)}'"] if deictic else [])
            return (
                "transform",
                0.9 if deictic else 0.8,
                f"'{verb}' asks to transform text the prompt gives ({given})",
                evidence,
            )
        if deictic:
            return (
                "transform",
                0.5,
                f"'{verb} {deictic.group(0)}' asks to transform text the prompt does not give "
                "(it may be in the documents)",
                [f"'{verb}'", f"'{deictic.group(0)}'"],
            )
    whole = sp.raw_prompt
    social = any_phrase(rules.social_phrases)
    found = [m.group(0) for m in social.finditer(whole)]
    if found and "?" not in whole:
        left = [w for w in _words(social.sub(" ", whole)) if w not in settings.gate.function_words]
        if not left:
            return (
                "conversational",
                0.9,
                f"only social phrases ({', '.join(repr(f) for f in found)}), no question",
                found,
            )
        if len(left) == 1:
            return (
                "conversational",
                0.5,
                f"social phrases ({', '.join(repr(f) for f in found)}) and one other word ('{left[0]}')",
                found,
            )
    research = any_phrase(rules.research_cues).search(f"{task}\n{sp.body.purpose or ''}")
    cue = research.group(0) if research else breadth_cue(sp, settings)
    if cue:
        return "research", 0.8, f"a research cue: '{cue}'", [cue]
    openers = load_prompt_schema(settings.prompt_schema_path).ask_openers
    asking = next((opener for s in split(task, TYPED) if (opener := ask_of(s, openers))), None)
    if asking:
        what = "a question" if asking == "?" else f"a sentence opens with '{asking}'"
        return "factual", 0.8, f"a request to look something up: {what}", [what]
    return "factual", 0.5, "no rule applies: looking it up is the default", []


def candidates_for(sp: SuperPrompt, settings: Settings) -> tuple[int, str]:
    """How many candidates the ask needs, and why (see the module docstring)."""
    rules = settings.plan
    parts = max(len(asked_parts(sp, settings)), 1)
    cue = breadth_cue(sp, settings)
    wanted = settings.retrieval.max_candidates + rules.candidates_per_part * (parts - 1)
    wanted += rules.breadth_candidates if cue else 0
    count = min(wanted, rules.research_candidates)
    why = f"{parts} part{'s' if parts > 1 else ''} asked" + (f", breadth named ('{cue}')" if cue else "")
    return count, f"{count} candidates for {why}"


def by_rules(sp: SuperPrompt, settings: Settings, forced: str | None = None) -> Plan:
    """The plan for `sp` by the rules (offline); escalated when unsure."""
    intent, confidence, reason, evidence = classify(sp, settings)
    return plan_for(sp, settings, intent, confidence, reason, evidence, "rules", forced)


def by_model(sp: SuperPrompt, settings: Settings, runner: AgentRunner, forced: str | None = None) -> Plan:
    """The plan for `sp` by the PLAN agent; escalated when unsure. A reply that stays invalid falls back to
    the rules' decision, recorded as theirs.

    The model does not overrule what the prompt's words state: when the rules decide on stated evidence
    (at least `plan.min_confidence`: text given to rewrite, only thanks, a research cue, a question) and the
    model names another intent, the rules' decision stands and its reason says what the model chose (a 0.5B
    model planned retrieval for "Shorten this to two sentences: ..." and the prompt then said the documents
    do not cover the paragraph). Where the rules only guess, the model decides whether there is anything to
    look up; a lookup it plans is the rules' plan (their strategy and candidates: unsure, they escalate to the
    research count), since its intent and confidence rest on no words of the prompt: a model sure of "research"
    retrieved 50 candidates by another strategy for OWASP c03 where offline took 60, and five chunks the offline
    gate kept, two of them answering, never reached the gate."""
    intent, confidence, reason, evidence = classify(sp, settings)
    payload = {key: getattr(sp.body, key) or "" for key in ("task", "purpose", "context")}
    ruled = {"intent": intent, "confidence": confidence, "reason": reason}
    call = runner.run(AGENT, payload, fallback=lambda _error: ruled)
    if call.outcome == FELL_BACK:
        return plan_for(sp, settings, intent, confidence, reason, evidence, "rules", forced)
    output = call.output
    if confidence >= settings.plan.min_confidence and output["intent"] != intent:
        reason += f" (the model chose {output['intent']}: '{output['reason']}'; the prompt's words decide)"
        return plan_for(sp, settings, intent, confidence, reason, evidence, "rules", forced)
    plan = plan_for(sp, settings, output["intent"], float(output["confidence"]), output["reason"], [], "llm", forced)
    if not plan.retrieve:
        return plan
    reason += f" (the model chose {output['intent']}: '{output['reason']}'; a lookup is planned by the rules)"
    return plan_for(sp, settings, intent, confidence, reason, evidence, "rules", forced)


def plan_for(
    sp: SuperPrompt,
    settings: Settings,
    intent: Intent,
    confidence: float,
    reason: str,
    evidence: list[str],
    source: PlanSource,
    forced: str | None = None,
) -> Plan:
    rules = settings.plan
    research = intent == "research"
    retrieve = intent in ("factual", "research")
    strategy: str | None = None
    if research:
        chosen, _ = choose_strategy(sp.body.task or sp.raw_prompt)
        strategy = (chosen if chosen is not Strategy.HYBRID else Strategy.EXPLORATORY).value
    candidates, sized = candidates_for(sp, settings)
    escalated = ""
    if confidence < rules.min_confidence:
        escalated = (
            f"confidence {confidence:.2f} is under {rules.min_confidence:.2f}: retrieving anyway, "
            f"with {rules.research_candidates} candidates"
        )
        retrieve, candidates = True, rules.research_candidates
    if not retrieve:
        reason += "; nothing to look up in the documents, so no retrieval"
    elif not escalated:
        reason += f"; {sized}"
    if forced:
        reason = f"strategy {forced} forced by the user (the plan alone: {intent}, {reason})"
        retrieve, strategy, source = True, forced, "user"
    return Plan(
        intent=intent,
        confidence=round(confidence, 4),
        reason=reason,
        evidence=evidence,
        source=source,
        retrieve=retrieve,
        strategy=strategy,
        candidates=candidates if retrieve else 0,
        budget=(rules.research_budget if research else settings.budget.ceilings["prompt"]) if retrieve else 0,
        escalated=escalated,
    )

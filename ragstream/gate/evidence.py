"""The offline evidence for each candidate: its cosine to a piece of the ask plus the share of the piece's
rarity-weighted content terms it holds (see the package docstring)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ragstream.code.symbols import lines_of, symbols_of
from ragstream.gate.dedup import near_duplicates
from ragstream.index.snapshot import bm25_tokens
from ragstream.settings import GateSettings
from ragstream.state import A3Report, Chunk, ChunkDecision


def stemmed_terms(text: str, settings: GateSettings, joined: bool = False) -> set[str]:
    """Content terms (stemmed, function words removed), as BM25 indexes them; with `joined`, a hyphenated term also
    as one word, as the BM25 index holds it ("no-store" as `no_store`): split, it is "store", "no" being a function
    word, the opposite of what it names."""
    return set(bm25_tokens([text], joined)[0]) - _function_stems(tuple(settings.function_words))


def topic_terms(text: str, settings: GateSettings) -> set[str]:
    """The content terms that name a topic: without the generic words ("fix", "a corrected version", "two").
    An ask left with none asks for work on the user's own text, not about something the documents could lack."""
    return stemmed_terms(text, settings) - _function_stems(tuple(settings.generic_words))


@functools.lru_cache(maxsize=8)
def _function_stems(words: tuple[str, ...]) -> frozenset[str]:
    """The configured function words as BM25 stems (tokenized once per configuration, not per term set)."""
    return frozenset(bm25_tokens([" ".join(words)])[0])


# What the user calls theirs: the lower-case words after "our"/"my" ("our own" too), at most two, up to a
# function word or a capitalized name ("our payment-gateway calls", "my library crate"; not "our Kafka cluster").
_OWNED = re.compile(r"\b(?:[Oo]ur|[Mm]y)\s+(?:own\s+)?([a-z][\w.+-]*)(?:\s+([a-z][\w.+-]*))?")


# A fenced block the user pasted (```, ~~~), to its closing fence or the text's end.
_PASTED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)


# A web address: a URL with its scheme, an e-mail address, or a host name (labels joined by dots), with the
# path or port after it; a host name counts only when its last label is a configured top-level domain, so
# "vercel.json" or "starlette.middleware.base" are no addresses.
_ADDRESS = re.compile(
    r"(?<![\w@.-])(?:(?P<scheme>[a-z][a-z0-9+.-]*://)\S+|(?:[\w.+-]+@)?(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+"
    r"(?P<suffix>[a-z]{2,})(?![\w-])(?:[:/][^\s`'\")\]]*)?)",
    re.IGNORECASE,
)


def addresses(text: str, settings: GateSettings) -> list[str]:
    """The web addresses in `text`: URLs, e-mail addresses, and host names ending in one of
    `gate.address_suffixes`."""
    suffixes = {s.lower() for s in settings.address_suffixes}
    return [
        m.group(0).rstrip(".,;:!?")  # the sentence's punctuation, not the address's
        for m in _ADDRESS.finditer(text)
        if m.group("scheme") or (m.group("suffix") or "").lower() in suffixes
    ]


def own_terms(texts: list[str], settings: GateSettings) -> set[str]:
    """The stems of what the user calls theirs ("our payment-gateway calls", "my library crate"), pasted (the
    traceback or code in a fenced block: `push_batch`, `ConnectionResetError`) or addresses (their site, a URL):
    the user's own things, which a corpus is not expected to hold. A word of them no document holds is no evidence
    against a chunk, and is not named as something the documents lack ("The documents do not cover:
    docs.acme-tools.io" for an ask MkDocs' page on custom domains answers). A capitalized name the user writes
    stays a name the documents may lack ("our Kafka cluster", "our CMS")."""
    function = set(settings.function_words)
    owned: set[str] = set()
    for text in texts:
        for address in addresses(text, settings):
            owned |= stemmed_terms(address, settings)
        for block in _PASTED.finditer(text):
            owned |= stemmed_terms(block.group(2), settings)
        for found in _OWNED.finditer(text):
            words = [w for w in found.groups() if w]
            if words[-1] in function or not stemmed_terms(words[-1], settings):
                words = words[:1]
            owned |= stemmed_terms(" ".join(words), settings)
    return owned


def rarity_of(frequency: dict[str, int], chunks: int) -> dict[str, float]:
    """BM25 idf of each term over the project's chunks: a word on every page (the product's own name)
    weighs next to nothing as evidence; a word on no page weighs most."""
    return {t: float(np.log(1 + (chunks - n + 0.5) / (n + 0.5))) for t, n in frequency.items()}


def word_share(terms: set[str], found: set[str], rarity: dict[str, float]) -> float:
    """The share of the terms' weight (idf) found: the product's name, on every page, counts for little."""
    total = sum(rarity.get(t, 0.0) for t in terms)
    return sum(rarity.get(t, 0.0) for t in terms & found) / total if total > 0 else 0.0


class Judged(NamedTuple):
    """A candidate's verdict: kept or not, why, and whether only its evidence fell short of the floor (it passed the
    cosine floor and holds enough of the ask's words: the band a model decides, `gate.neighbours.keep_unsure`)."""

    keep: bool
    why: str
    short: bool = False


def judge(cosine: float, words: float, settings: GateSettings, worded: bool = True) -> Judged:
    """Keep on evidence (cosine plus the weighted word share), and never on meaning alone unless it is strong: a
    chunk holding under `gate.min_word_share` of the ask's word weight (on tenacity's code, "retry" and "state",
    on every page) is kept only at `gate.strong_evidence`. MiniLM puts an English question about a package near
    all of its code: its constructor's parameter list was kept for "How can the retry state be persisted in
    Redis ...?" at cosine 0.57, and filled A4's window before the answer to another ask. An ask without word weight
    (`worded` False: no content word, or no rarity given) is judged on its cosine."""
    if cosine < settings.min_similarity:
        return Judged(False, f"cosine under {settings.min_similarity:g}")
    if worded and words < settings.min_word_share and cosine < settings.strong_evidence:
        share, strong = settings.min_word_share, settings.strong_evidence
        return Judged(False, f"under {share:g} of the ask's word weight, cosine under {strong:g}")
    evidence = cosine + settings.words_weight * words
    if evidence >= settings.min_evidence:
        return Judged(True, f"evidence {evidence:.2f} at least {settings.min_evidence:g}")
    return Judged(False, f"evidence {evidence:.2f} under {settings.min_evidence:g}", short=True)


@dataclass(frozen=True)
class Weighed:
    """The offline gate's finding: kept ids (in the candidates' order), the report, and per judged candidate
    its evidence and the cosine to the piece that earned it; `short` are those dropped only for evidence under the
    floor (past the cosine floor, holding enough of the ask's words)."""

    kept: list[str]
    report: A3Report
    evidence: dict[str, float]
    cosine: dict[str, float]
    short: frozenset[str] = frozenset()


def decision_counts(decisions: dict[str, ChunkDecision]) -> dict[str, int]:
    """How many candidates took each decision (the report's summary)."""
    counts: dict[str, int] = {}
    for d in decisions.values():
        counts[d.decision] = counts.get(d.decision, 0) + 1
    return counts


def weigh_all(
    pieces: list[str],
    candidates: list[Chunk],
    vectors: np.ndarray,
    piece_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float] | None = None,
) -> Weighed:
    """The offline gate: keep/drop each candidate from absolute evidence, the same for every corpus.

    `pieces` are what the chunk may answer: the prompt's query pieces (what retrieval searched with) and
    each asking clause. A chunk's evidence for a piece is its cosine to it plus `gate.words_weight` x the
    share of the piece's content-term weight the chunk holds, each term weighted by its rarity in the
    project (`Snapshot.rarity`; equal weights without one); its evidence is that of its best piece, so a
    chunk that answers one clause of a multi-part ask is kept for that clause. Neither measure is
    relative to the best candidate, so when nothing is relevant nothing is kept. Kept ids keep the order
    the candidates came in (the ReRanker's): the gate decides what stays, not what comes first. A4 and the
    Prompt Builder fill their budgets in that order, and reordering by the cosine to the piece that earned
    the keep cut answers: on seven documentation and code suites, 103 of 133 key facts held by kept chunks
    fell within A4's first 1,800 tokens in that order, 104 in the ReRanker's and 112 in fusion's.
    """
    dupes = near_duplicates([(c.id, c.text) for c in candidates])
    piece_terms = [stemmed_terms(p, settings, joined=True) for p in pieces]
    ask_terms = set().union(*piece_terms)
    rarity = rarity if rarity is not None else dict.fromkeys(ask_terms, 1.0)
    judged = [i for i, c in enumerate(candidates) if c.id not in dupes]
    weight = [sum(rarity.get(t, 0.0) for t in terms) for terms in piece_terms] or [0.0]
    cosine = vectors @ piece_vectors.T if len(candidates) and len(piece_vectors) else np.zeros((len(candidates), 1))
    decisions = {
        cid: ChunkDecision(decision="drop_duplicate", reason=f"near-duplicate of {other}")
        for cid, other in dupes.items()
    }
    scores: dict[str, float] = {}
    meaning: dict[str, float] = {}
    short: set[str] = set()
    tokens = bm25_tokens([own_words(candidates[i]) for i in judged], joined=True)  # one call: a fixed cost per call
    tokens = with_definition_words([candidates[i] for i in judged], tokens)
    for i, held in zip(judged, tokens, strict=True):
        shared = sorted(ask_terms & set(held))
        words = [word_share(terms, set(shared), rarity) for terms in piece_terms] or [0.0]
        score = [float(cosine[i, p]) + settings.words_weight * words[p] for p in range(len(words))]
        valid = [p for p in range(len(words)) if cosine[i, p] >= settings.min_similarity]
        best = max(valid, key=lambda p: score[p]) if valid else int(np.argmax(cosine[i, : len(words)]))
        keep, why, only_short = judge(float(cosine[i, best]), words[best], settings, weight[best] > 0)
        if only_short:
            short.add(candidates[i].id)
        scores[candidates[i].id], meaning[candidates[i].id] = score[best], float(cosine[i, best])
        evidence = f"cosine {float(cosine[i, best]):.2f}, {words[best]:.2f} of the ask's word weight" + (
            f" ({', '.join(shared[:6])})" if shared else ""
        )
        part = f" for '{shorten(pieces[best])}'" if len(pieces) > 1 else ""
        decisions[candidates[i].id] = ChunkDecision(
            decision="keep" if keep else "drop_irrelevant", reason=f"{evidence}{part}: {why}"
        )
    kept = [c.id for c in candidates if decisions[c.id].decision == "keep"]
    report = A3Report(
        agent="offline evidence (no model)",
        provider="local",
        decisions={c.id: decisions[c.id] for c in candidates},
        counts=decision_counts(decisions),
    )
    return Weighed(kept, report, scores, meaning, frozenset(short))


# A line of code that only names what is defined elsewhere: an import, or one name of a list ("before_sleep_log",
# in `__all__`; `retry_all,` in a parenthesized import).
_NAMING_LINE = re.compile(
    r"^[ \t]*(?:(?:from[ \t]+[\w.]+[ \t]+)?import\b.*|(?:pub[ \t]+)?use[ \t]+[\w:{}, \t*]+;?|#include\b.*"
    r"|export[ \t]+(?:\*|\{[^}]*\})[ \t]*from\b.*|[\"']?[A-Za-z_][\w.:]*[\"']?[ \t]*,?[ \t]*)$",
    re.M,
)


def own_words(chunk: Chunk) -> str:
    """The text whose words are a chunk's evidence: code without the lines that only name what is defined
    elsewhere (imports, `__all__`). A package's export list holds every name of the package, split into words
    ("before sleep log", "try again"), and so most words of any ask: kept first for "log every retry ... just
    before tenacity sleeps and tries again", above `before_sleep_log` itself."""
    return _NAMING_LINE.sub("", chunk.text) if "language" in chunk.metadata else chunk.text


def with_definition_words(chunks: list[Chunk], tokens: list[list[str]]) -> list[list[str]]:
    """Each chunk's words, a chunk holding part of a definition with the words of the other candidates holding
    the rest: a function cut in two is one answer ("log every retry with the exception's traceback":
    `before_sleep_log`'s signature in one chunk, its `traceback.format_exception` call in the next), and
    neither half alone holds the words of the ask."""
    parts: dict[tuple[str, str], set[str]] = {}
    keys: list[list[tuple[str, str]]] = []
    for chunk, held in zip(chunks, tokens, strict=True):
        lines = lines_of(chunk)
        own = [
            (chunk.source_path, s.name)
            for s in symbols_of(chunk)
            if s.part or (lines is not None and not lines[0] <= s.first <= s.last <= lines[1])
        ]
        keys.append(own)
        for key in own:
            parts.setdefault(key, set()).update(held)
    return [sorted(set(held).union(*(parts[k] for k in own))) for held, own in zip(tokens, keys, strict=True)]


def weigh(
    pieces: list[str],
    candidates: list[Chunk],
    vectors: np.ndarray,
    piece_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float] | None = None,
) -> tuple[list[str], A3Report]:
    """`weigh_all`'s kept ids (best evidence first) and report."""
    found = weigh_all(pieces, candidates, vectors, piece_vectors, settings, rarity)
    return found.kept, found.report


def shorten(text: str, words: int = 12) -> str:
    found = text.split()
    return " ".join(found[:words]) + (" ..." if len(found) > words else "")

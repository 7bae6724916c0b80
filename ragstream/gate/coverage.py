"""What the kept chunks do not cover: the parts of the ask, and names or identifiers no document contains."""

from __future__ import annotations

import re

import numpy as np

from ragstream.gate.evidence import judge, stemmed_terms, word_share
from ragstream.index.snapshot import Snapshot, bm25_tokens
from ragstream.settings import GateSettings
from ragstream.state import Chunk
from ragstream.text.asking import compared_sides
from ragstream.text.spelling import Vocabulary, english_words

_NAME = re.compile(r"(?<=\w[ ,;:(])[A-Z][\w.+-]*\w")  # a capitalized word that does not open the sentence
_UNIT = re.compile(r"\d[ \t]?$")  # right after a number, a short capitalized word is a unit ("a 2 GB export")


# A word shaped like a name whatever its case: an inner capital, a digit, or an inner - _ . (gRPC, i18next,
# cargo-tarpaulin, vercel.json): users write tools and files this way, and a corpus that never holds one
# does not cover it.
_IDENTIFIER = re.compile(
    r"(?<![\w.+-])(?=[\w.+-]*(?:[a-z][A-Z]|\d|[A-Za-z0-9][-_.][A-Za-z]))[A-Za-z_][\w.+-]*[A-Za-z0-9]"
)
_COMPOUND = re.compile(r"[a-z]+(?:-[a-z]+)+")  # lower-case words joined by hyphens, and nothing else
# A command-line option as the user writes it ("--json", "-v"): a name of the user's command or of the tool's.
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def _english_compound(word: str) -> bool:
    """An English compound ("rate-limited", "long-running"), not a name: each of its words is English. Named as
    what tenacity's source does not cover, "rate-limited" stood beside the ask about contention it answers."""
    return _COMPOUND.fullmatch(word) is not None and all(piece in english_words() for piece in word.split("-"))


# One corpus's text and words at a time (the newest asked for), held with the snapshot they were read from: an id
# is reused once its snapshot is freed, so another project's snapshot could have found them under its key.
_TEXT: tuple[Snapshot, str] | None = None
_VOCABULARY: tuple[Snapshot, Vocabulary] | None = None


def corpus_text(snapshot: Snapshot) -> str:
    """The corpus's text in lower case."""
    global _TEXT
    found = _TEXT
    if found is None or found[0] is not snapshot:
        found = _TEXT = (snapshot, "\n".join(c.text for c in snapshot.chunks).lower())
    return found[1]


def corpus_vocabulary(snapshot: Snapshot) -> Vocabulary:
    """The corpus's words and their counts (`text/spelling`)."""
    global _VOCABULARY
    found = _VOCABULARY
    if found is None or found[0] is not snapshot:
        found = _VOCABULARY = (snapshot, Vocabulary.of(corpus_text(snapshot)))
    return found[1]


def unmentioned(frequency: dict[str, int], snapshot: Snapshot | None) -> set[str]:
    """The terms no chunk holds, as an index term or as a word of its text, spelled or stemmed: "embed" (stemmed
    from "re-embedded") is absent from an index whose text says "embeds" and "re-embed" (stemmed "emb"), but the
    corpus mentions it; "tarpaulin" it does not, nor "redi" (Redis), which "predicate" holds inside a word and
    "redirect" starts with, nor "quic" (QUIC) beside "quick": a word that only starts with a term is no mention."""
    absent = {t for t, n in frequency.items() if n == 0}
    if snapshot is None or not absent:
        return absent
    vocabulary = corpus_vocabulary(snapshot)
    found = {t: vocabulary.starting_with(t) for t in absent}
    words = sorted({w for ws in found.values() for w in ws})
    stems = dict(zip(words, bm25_tokens(words), strict=True)) if words else {}
    return {t for t in absent if not any(w == t or t in stems[w] for w in found[t])}


def uncovered_parts(
    parts: list[str],
    part_vectors: np.ndarray,
    kept: list[Chunk],
    kept_vectors: np.ndarray,
    settings: GateSettings,
    rarity: dict[str, float],
    absent: set[str],
    model_kept: frozenset[str] = frozenset(),
    leaning: list[str] | tuple[str, ...] = (),
    leaning_vectors: np.ndarray | None = None,
) -> list[str]:
    """The parts of the ask (its asking sentences) no kept chunk covers, judged like a candidate; then,
    in covered parts and in the clauses that lean on the rest of their sentence ("... before it is sent",
    never judged whole), the names no document contains (`absent_names`).

    A part is judged without the command-line options no document holds ("--json": the user's own, or a tool's
    option the documents lack), which are named instead, and without the cosine floor: a kept chunk passed it for
    a piece of the ask, and on code MiniLM puts an English ask far from the code that answers it ("Make --json and
    --yaml mutually exclusive ..." at 0.13 from cobra's MarkFlagsMutuallyExclusive, kept for the ask's context),
    so the part was named not covered, whole, beside its answer.

    A sentence asking two things, one of whose clauses leans on the other ("How do I tell Black to leave that
    block alone, and how do I stop SonarQube from flagging those lines?"), is judged whole, and the whole
    rarely has a chunk's evidence when a chunk answers one clause: when a kept chunk covers one of its clauses
    (`leaning`, embedded as `leaning_vectors`), the sentence is not named; the names the documents lack in it
    are ("SonarQube").

    A chunk in `model_kept` (the model read it against the ask and kept it) covers a part whose evidence
    reaches `gate.weak_evidence`, the band where the model's word decides: a clause the fenced excerpt
    answers is not named as uncovered beside it. Under that band the model's keep counts for nothing."""
    if not kept:
        named = [name for clause in leaning for name in absent_names(clause, settings, absent, parts)]
        return _compared_once([*parts, *named], parts)
    texts = [set(tokens) for tokens in bm25_tokens([c.text for c in kept], joined=True)]  # as `weigh_all` reads
    # A kept chunk passed the cosine floor for some piece of the ask: for a part it is judged on its evidence alone.
    floorless = settings.model_copy(update={"min_similarity": -1.0})
    banded = floorless.model_copy(update={"min_evidence": min(settings.min_evidence, settings.weak_evidence)})
    judged_with = [banded if c.id in model_kept else floorless for c in kept]

    def covered(text: str, vector: np.ndarray) -> bool:
        terms = stemmed_terms(text, settings, joined=True) - _absent_flag_terms(text, settings, absent)
        cosine = kept_vectors @ vector
        worded = sum(rarity.get(t, 0.0) for t in terms) > 0
        return any(
            judge(float(cosine[k]), word_share(terms, texts[k], rarity), judged_with[k], worded).keep
            for k in range(len(kept))
        )

    clause_vectors = dict(zip(leaning, leaning_vectors if leaning_vectors is not None else [], strict=False))
    missing: list[str] = []
    for p, part in enumerate(parts):
        if not covered(part, part_vectors[p]):
            if not any(clause in part and covered(clause, vector) for clause, vector in clause_vectors.items()):
                missing.append(part)
                continue
        missing += absent_names(part, settings, absent, missing)
    for clause in leaning:
        missing += absent_names(clause, settings, absent, missing)
    return _compared_once(missing, parts)


_WORD = re.compile(r"[A-Za-z][\w+-]*")


def names_nothing_absent(part: str, settings: GateSettings, absent: set[str]) -> bool:
    """Whether `part` names nothing no document holds: no name (`absent_names`: Sentry, gRPC) and no word that is
    neither in any document nor an English word (`english_words`: "kafka", "gunicorn"). Such a part no kept chunk
    covers is only unanswered by the excerpts, not shown absent from the documents: the gate's evidence misses a
    paraphrase ("how the plugin should read each possible response status" beside blackd's list of "response
    codes"), or retrieval missed the page. An English word no document holds ("wins", "visitors") proves nothing:
    a small corpus lacks most of them."""
    if absent_names(part, settings, absent, []):
        return False
    words = [w for w in dict.fromkeys(_WORD.findall(part)) if w.lower() not in english_words()]
    return not any(set(terms) & absent for terms in bm25_tokens(words)) if words else True


def _compared_once(missing: list[str], parts: list[str]) -> list[str]:
    """A comparing clause and its sides named once: the side the documents lack when they cover the other, the
    clause alone when they cover neither."""
    sides = {part: [side for side in compared_sides(part) if side in parts] for part in missing}
    half = {part for part, found in sides.items() if any(side not in missing for side in found)}
    whole = {side for part, found in sides.items() if part not in half for side in found}
    return [part for part in missing if part not in half and part not in whole]


def _absent_flags(text: str, settings: GateSettings, absent: set[str]) -> list[str]:
    """The command-line options in `text` ("--json") whose words no document contains."""
    flags = dict.fromkeys(m.group(0) for m in _FLAG.finditer(text))
    return [flag for flag in flags if (stems := stemmed_terms(flag, settings)) and stems <= absent]


def _absent_flag_terms(text: str, settings: GateSettings, absent: set[str]) -> set[str]:
    """The words of the options no document holds."""
    return {t for flag in _absent_flags(text, settings, absent) for t in stemmed_terms(flag, settings)}


def absent_names(text: str, settings: GateSettings, absent: set[str], named: list[str]) -> list[str]:
    """Names in `text` (capitalized inside a sentence, as the user wrote them), command-line options ("--json")
    and identifier-shaped words (gRPC, cargo-tarpaulin, vercel.json) with a word no document contains; none
    already `named`."""
    found: list[str] = [flag for flag in _absent_flags(text, settings, absent) if flag not in named]
    names = (m.group(0) for m in _NAME.finditer(text) if len(m.group(0)) > 3 or not _UNIT.search(text[: m.start()]))
    for word in dict.fromkeys(names):
        stems = stemmed_terms(word, settings)
        if stems and stems <= absent and word not in named:
            found.append(word)
    for word in dict.fromkeys(_IDENTIFIER.findall(text)):
        if (
            word not in named
            and word not in found
            and not _english_compound(word)
            and {t for t in stemmed_terms(word, settings) if len(t) > 2} & absent
        ):
            found.append(word)
    return found

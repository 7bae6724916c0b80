"""An ask's misspelt words read as the corpus spells them, for judging evidence only.

"hw do i turn off ssl verificaton for a self signed cert" keeps nothing of httpx's docs, whose SSL page answers:
"verificaton" is in no document, so it weighs most of all the ask's words and no chunk holds it, and the gate names
the whole ask as uncovered. A lower-case word of the ask that no document holds and that is one edit from a word the
documents use (two for a long word) is read as that word. The user's text is never changed: the prompt quotes it as
written, and only the gate's evidence reads the respelled copy. A word the caller knows stays (a real word: one the
embedding model's vocabulary holds whole, or whose stem the corpus holds: "comes" is no misspelt "codes"); a
capitalized word is a name the documents may lack ("Celery"), a short one too often a real word one letter off
("shud", "func"), a word a prefix makes of a real word ("unsalted", "unencrypted") a real word, and a word with a
digit, a hyphen or an underscore an identifier: none is respelled.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

_WORD = re.compile(r"(?<![\w.-])[a-z]+(?![\w-])")
_CORPUS_WORD = re.compile(r"[a-z]+")
_TOKEN = re.compile(r"\w+")  # an identifier whole ("before_sleep_log") ...
_PART = re.compile(r"[a-z0-9]+")  # ... and its parts ("sleep")
MIN_LENGTH = 5  # shorter words are respelled into real words they were not meant as ("shud" -> "shut")
# Prefixes that make a word of a word ("unsalted", "unencrypted", "preloaded"): such a word is real when the rest is,
# and one or two edits from it lies its opposite ("unencrypted" -> "encrypted") or another word ("unwanted").
PREFIXES = (
    "un",
    "non",
    "in",
    "im",
    "ir",
    "il",
    "dis",
    "mis",
    "re",
    "pre",
    "de",
    "anti",
    "over",
    "under",
    "sub",
    "super",
    "inter",
    "multi",
    "co",
    "self",
)
MIN_REST = 4  # the rest a prefix leaves is a word of its own from this length
LONG = 8  # from this length, two edits


@dataclass
class Vocabulary:
    """The words of a corpus (lower case) with their counts, found by first letter and length."""

    counts: Counter[str]
    tokens: list[str] = field(default_factory=list)  # every distinct word, identifiers whole and in parts, sorted
    _by_key: dict[tuple[str, int], list[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for word in self.counts:
            self._by_key.setdefault((word[0], len(word)), []).append(word)

    @classmethod
    def of(cls, text: str) -> Vocabulary:
        lowered = text.lower()
        return cls(Counter(_CORPUS_WORD.findall(lowered)), sorted({*_TOKEN.findall(lowered), *_PART.findall(lowered)}))

    def starting_with(self, prefix: str) -> list[str]:
        """The corpus's words (digits and underscores kept) that start with `prefix`."""
        at = bisect_left(self.tokens, prefix)
        end = at
        while end < len(self.tokens) and self.tokens[end].startswith(prefix):
            end += 1
        return self.tokens[at:end]

    def nearest(self, word: str) -> str | None:
        """The most used corpus word within the edits allowed for `word`'s length (same first letter), if any."""
        limit = 2 if len(word) >= LONG else 1
        found: list[tuple[int, int, str]] = []
        for length in range(len(word) - limit, len(word) + limit + 1):
            for other in self._by_key.get((word[0], length), []):
                distance = edits(word, other, limit)
                if distance <= limit:
                    found.append((distance, -self.counts[other], other))
        return min(found)[2] if found else None


def edits(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance (insertions, deletions, substitutions, adjacent swaps), or `limit + 1`
    as soon as it is certain to exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1]))
            if before is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(row[len(b)], limit + 1)


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The whole words of the packaged MiniLM tokenizer's vocabulary (30,522 entries, word pieces aside): a word
    it holds whole is a real word, whatever the corpus says."""
    from ragstream.embedding.model_files import PACKAGED_DIR, model_tokenizer

    return frozenset(w for w in model_tokenizer(PACKAGED_DIR).get_vocab() if w.isalpha())


# A fenced block the user pasted (```, ~~~): their own text, never respelled.
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
MAX_LOOKUPS = 64  # unknown words looked up per ask: an ask's prose has a few; a pasted log outside a fence, thousands


class Respeller:
    """Respells the texts of one ask, each unknown word looked up once, at most `MAX_LOOKUPS` of them:
    a lookup scans the corpus words of its length and first letter (0.2 ms on a package's source), and a prompt may
    hold megabytes."""

    def __init__(
        self, vocabulary: Vocabulary, known: Callable[[str], bool], shorthand: Mapping[str, str] | None = None
    ) -> None:
        self.vocabulary = vocabulary
        self.known = known
        self.shorthand = shorthand or {}  # chat shorthand and the words it stands for ("hw": "how")
        self.found: dict[str, str] = {}

    def word(self, word: str) -> str:
        vocabulary = self.vocabulary
        if word in self.shorthand:
            return self.shorthand[word]
        if len(word) < MIN_LENGTH or word in vocabulary.counts or word in english_words():
            return word
        if word not in self.found:
            if len(self.found) >= MAX_LOOKUPS or self.known(word) or self._derived(word):
                return word
            self.found[word] = vocabulary.nearest(word) or word
        return self.found[word]

    def _derived(self, word: str) -> bool:
        """Whether `word` is a prefix and a word the corpus or English holds ("unsalted" beside "salted")."""
        return any(
            len(rest := word[len(prefix) :]) >= MIN_REST
            and (rest in self.vocabulary.counts or rest in english_words() or self.known(rest))
            for prefix in PREFIXES
            if word.startswith(prefix)
        )

    def __call__(self, text: str) -> str:
        """`text` with each lower-case word of `MIN_LENGTH` letters or more that the corpus never uses, that is no
        English word and that `known` does not know, replaced by its nearest corpus word, when there is one, and each
        word of chat shorthand by the words it stands for; pasted blocks as they are."""
        out, at = [], 0
        for block in _FENCED.finditer(text):
            out += [_WORD.sub(lambda m: self.word(m.group()), text[at : block.start()]), block.group()]
            at = block.end()
        out.append(_WORD.sub(lambda m: self.word(m.group()), text[at:]))
        return "".join(out)

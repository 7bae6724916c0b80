"""Whether a model's condensed line says what the excerpt it cites says.

A model's line may cite a real excerpt and still say something else: a flag described as doing what
the excerpt says it disables, a tool the excerpt never names, a setting renamed, a rule turned
around, the user's own question filed as a Fact. Word overlap alone does not see these, so each line
is checked against the sentences of the chunks it cites, in this order:

0. it ends as a sentence does (a line cut by the token cap, or copied from a sentence a chunk's edge cuts,
   says nothing whole; a closing code span ends only a line of its own), and it rests on whole sentences of
   what the chunk tells its reader (see `_passages`: HTML comments are notes to the document's editors);
1. it does not restate the prompt: its cosine to a sentence or clause of the ask reaches
   `support.restates_prompt` and beats its best cited sentence;
2. every name, identifier and number it holds occurs in a cited chunk: identifiers (code spans,
   flags, dotted or snake_case names, CamelCase) verbatim, names (a capitalized word inside the
   sentence) and numbers as words; an identifier or generic type the excerpt holds only inside a longer one is
   not the excerpt's ("Mutex<T> is a type that is safe to share ownership across multiple threads ..." where the
   excerpt says it of `Arc<Mutex<T>>`); and the content words no cited chunk holds carry at most
   `support.max_new_words` of its word weight (each word weighed by its rarity in the project), counted
   from `support.min_new_words` of them. "Session ID guessing and brute force detection should be
   implemented to minimize ..." on a sentence that says expiration timeouts minimize it, "... and it is
   stateless" on a sentence that never says so, "validated" for "invalidate": a small model's new
   words carry its errors. The configuration allows none (0.0 from one word): the offline extraction's
   lines stand beside a model's (a4_condenser.condense), so a model's line only adds, and is worth
   adding when the excerpt says it in its own words; a looser share lets paraphrases through, and
   their errors with them (on the OWASP suite 0.25 from two words caught 4 of 5);
3. its best-matching cited passages (one sentence, or two adjacent ones of one section: a heading between them
   begins another subject; those that hold the line's identifiers when it has any, so a flag is judged by what
   is said about it) reach `support.min_similarity` cosine (the product's own embedder);
4. among those best passages (within `support.margin` of the best), one agrees with it on negation
   ("not", "never", "disables" ... `support.negation_cues`) and on modality (an obligation such as
   "must" against a mere permission such as "may"); and when a passage without the line's identifiers is
   closer to it by more than the margin, the line takes its claim from there, so one of the passages near
   that one must agree too ("`search_case_insensitive` must be a command line option" beside "We could make
   this feature a command line option ..., but by instead making it an environment variable ...").
   A line of several sentences is judged sentence by sentence (a passage holds two at most, and a "won't" in
   its third is no negation of its first two). Agreeing is negating the same thing: the words a line denies
   weigh more among those the passage denies than among those it affirms, a clause with a cue being denied
   but for what comes before an opener (`support.negation_openers`: "The API does not allow the use of
   credentials in CORS requests." on "To allow any site to make CORS requests _without_ using the `*` wildcard
   (for example, to enable credentials), ..."); and a name the passage gives only as one to delete or remove
   (`support.removal_cues`) the line does not give as one to set or use ("To set the `google_analytics`
   configuration option, ..." on "Then set `theme.analytics.gtag` ... and delete the `google_analytics`
   configuration option");
5. it gives no doer to what the excerpt tells its reader to do: a line that repeats the opening words of a
   sentence of its nearest or best passages after a modal (`support.modal_cues`: "must", "should", "is used
   to" ...) says who does it ("CORS is used to change the request such that ..." on "- Change the request
   such that ..."),
   and the excerpt's instruction names no one but its reader ("The user must store the proposed new email
   address as a pending change." on "5. Store the proposed new email address as a pending change.", a step
   the system takes). Only the reader ("you", "we": no content word) may stand there;
6. it does not state alone what the excerpt says of a named thing: a line opening on the words that follow a
   nearest passage's "that", whose main clause names an identifier the line lacks ("Cookies are sent on both
   originating and cross-site requests." on "`None` specifies that cookies are sent on both originating and
   cross-site requests."), drops the condition its claim holds under. A section whose heading is a name alone
   (`section_name`: "### dev_addr", "#### `no-cache`") says its sentences of that name without repeating it, so a
   line restating them names it ("The `mkdocs serve` command can be used to set a different default address and
   port." on "### dev_addr / Determines the address used when running `mkdocs serve`. ... Allows a custom default
   to be set ...": what the setting does, given to the command); a line opening as such a sentence does is the
   sentence itself, its subject the excerpt's (`_opens_as`);
7. it does not state an exhibit's value alone: a number each cited sentence holding it gives as what a numbered
   exhibit does ("The `for` loop in Listing 8-8 will add `50` to each element.", `condenser.exhibit_nouns`) needs
   that exhibit in the line ("The `for` loop in Rust is used to add `50` to each element." is an example read as a
   rule);
8. it does not say of another subject what the excerpt says: where it repeats a run of a passage's words, the words
   before that run in its clause hold every name, identifier and number the passage's clause puts there ("The
   `max-age` directive indicates that the client allows ..." on "The `max-age=N` request directive indicates that
   ..."), and do not put another word where the passage's clause has its first one ("a client responds with a 401
   ..." on "The server responds to a client with a 401 ..."; "The expiration timeout limits ..." on "The idle
   timeout limits ...");
9. it does not write the ask's words into the excerpt's: no run of its words that a sentence of the ask holds is
   missing from the cited excerpt ("The API send instead of the wildcard to allow any site to access it ..." from
   "what should the API send instead?");
10. it restates one place of the excerpt: a sentence with the ones beside it (a list's lead-in with its items is one
   sentence), from which come all but `support.max_far_words` of its word weight, its subject aside (up to
   `SUBJECT_WORDS` words before the first one that place holds: "CSP is complex to configure and maintain." where a
   heading names CSP). "Cargo can update dependencies automatically by checking the _Cargo.lock_ file." holds only the
   excerpt's words, but "update" and "checked" come from sentences further on, and the excerpt says the versions stay
   "until you explicitly upgrade";
11. it does not give as advice for every reader what the excerpt advises for one goal: a line repeating the main
   clause of a sentence that opens on its reader's condition (`support.reader_conditions`: "If you want caches to
   always check for content updates ..., `no-cache` is the directive to use.") keeps half of that condition's
   content words ("The `no-cache` directive is the directive to use." does not);
12. it gives one sentence's claim its own subject: of the runs of `SUBJECT_RUN_WORDS` words it repeats, the one it
   ends on is its claim, and the words before that run hold no identifier, name or number the section of that
   sentence lacks, and at most `support.max_subject_words` of its content words ("The `watch` key determines ..."
   on "### watch / Determines ..."). "The `theme` configuration option in your `mkdocs.yml` config file supports
   almost every feature of MkDocs." repeats one sentence about setting the theme and another, under the next
   heading, about the default theme. A line opening on a purpose or condition (`support.condition_openers`) whose
   main clause is that run takes the purpose from the same sentence: "To enable Google Analytics, set to the
   default (`null`) Google Analytics is disabled for the site." puts one sentence's "To enable Google Analytics"
   over another's "When set to the default (`null`) Google Analytics is disabled";
13. it does not put a name where the sentence it copies has another: with `RENAME_CONTEXT_WORDS` words of a
   sentence on either side, a name of its own in place of one it lacks ("... by including an WWW-Authenticate
   request header with the credentials." on "... by including an {{HTTPHeader("Authorization")}} request header
   ..."). Rule 2 lets the name through where the excerpt holds it elsewhere;
14. it does not state as fact what the excerpt only supposes: a line repeating `CONDITION_RUN_WORDS` words in a row of
   what follows a sentence's `support.supposition_cues` ("let's say that", "suppose") supposes it too ("The `--name`
   CLI option is required and has a callback that can exit the program." on "But now let's say that the `--name`
   *CLI option* ... is required, and it has a callback that could exit the program:", a tutorial's next example).

Each verdict carries the reason a line fails, which the A4 report lists beside the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from ragstream.condensing.extractive import Sentence, ends_whole, is_prose, sentences_of
from ragstream.gate.coverage import _NAME
from ragstream.index.snapshot import bm25_tokens
from ragstream.settings import SupportSettings
from ragstream.state import Chunk
from ragstream.text.phrases import CODE_SPAN, any_phrase, as_typed, unquoted
from ragstream.text.sentences import MARKDOWN, split

_IDENTIFIER = re.compile(
    r"(?<![\w-])(?:--?[A-Za-z][\w-]*"  # a command-line flag
    r"|[A-Za-z_][\w-]*(?:(?:\.|::|/)[\w-]*[A-Za-z_][\w-]*)+"  # dotted, path-like or namespaced
    r"|\w*_\w+"  # snake_case
    r"|[a-z]+[A-Z]\w*"  # camelCase
    r"|[A-Z]\w*[a-z]\w*[A-Z]\w*)"  # CamelCase with an inner capital
    r"(?![\w-])"
)
# A generic type written without a code span (Mutex<T>, Arc<Mutex<T>>): a name the excerpt must hold on its own
_GENERIC = re.compile(r"(?<![\w<])[A-Za-z_]\w*<[^<>\s`]*(?:<[^<>\s`]*>[^<>\s`]*)*>")
_CLAUSE = re.compile(r"[,;:]\s+")
_LONE_NAME = re.compile(r"^[`*_]*([\w.:/<>=-]+?)[`*_]*:?$")  # a heading that is one name, in code or not
MIN_CLAUSE_WORDS = 4
# A line sharing this many words in a row with a sentence a chunk's edge cuts copies that sentence: "The third rule
# really only applies in method signatures, we'll look at ... means we don't have a lifetime." finishes, in its own
# words, a sentence the chunk stops in ("... means we don't have").
CUT_RUN_WORDS = 6
# A line repeating this many opening words of a passage after a modal restates that passage's instruction (rule 5).
INSTRUCTION_WORDS = 4
# A line repeating this many words in a row of a passage says what the passage says there, of its subject (rule 8).
SUBJECT_RUN_WORDS = 5
# A line holding this many words in a row of the ask that its excerpt lacks writes the ask into the excerpt (rule 9).
ASK_RUN_WORDS = 4
# A line may name its subject in this many words the place it restates lacks, as the excerpt's heading does (rule 10).
SUBJECT_WORDS = 2
# The opening of a line's nearest passage that places it in a sentence of the excerpt (rule 10).
PLACE_KEY_CHARS = 40
# A line repeating this many words of a sentence on either side of a name puts it in that sentence's place (rule 13).
RENAME_CONTEXT_WORDS = 3
_NAMEISH = re.compile(r"(?<![\w-])[A-Za-z][\w-]*[A-Z][\w-]*|(?<![\w-])[A-Z][\w-]+")  # a capital in it: a name
# A line repeating this many words in a row of a conditioned sentence's main clause restates its advice (rule 11).
CONDITION_RUN_WORDS = 4
_OPENING_CLAUSE = re.compile(r"^(.*?)[,;:](?:\s+|$)(.*)$", re.DOTALL)  # a line's opening clause, and the rest (rule 12)
_THAT = re.compile(r"^(.*?)\bthat\s+(.*)$", re.DOTALL)  # a main clause, and the clause it reports (rule 6)
# A code span or a name with inner punctuation (Cache-Control, no-store): rule 9 reads no run across one
_NAMED = re.compile(r"`[^`\n]*`|\w+(?:[-./:]\w+)+")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")  # a Markdown link's target: where it points, not what it names
_LIST_MARK = re.compile(r"^\W*\d+[.)]\s+")  # "5. Store ...": the step's number opens no instruction
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])")
_ABBREVIATION = re.compile(r"^(?:\w\.)+\w?$")  # e.g, i.e: not an identifier
_MIN_STEM = 3  # a stem that begins another counts as it from this length
_EMPHASIS = re.compile(r"(?<!\w)[*_]{1,3}|[*_]{1,3}(?!\w)")  # **bold**, __bold__, _em_ marks around words
# An HTML comment, or the part of one a chunk's edge cuts (it opens before the chunk, or closes after it).
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)|\A(?:(?!<!--).)*?-->", re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    """A line's support: whether it passes, why not, its best cosine to a cited passage, and that passage."""

    supported: bool
    reason: str
    score: float
    passage: str


def identifiers(line: str) -> list[str]:
    """Code spans, flags, dotted/snake_case/camelCase names in `line`: they must occur verbatim."""
    found = [m.strip() for m in CODE_SPAN.findall(line)]
    found += [m for m in _IDENTIFIER.findall(unquoted(line)) if not _ABBREVIATION.match(m)]
    return list(dict.fromkeys(f.rstrip(".,:;") for f in found if f.rstrip(".,:;")))


def names(line: str) -> list[str]:
    """Capitalized words inside a sentence (A3's rule for a name the user wrote) and numbers."""
    plain = unquoted(line)
    found = [re.sub(r"'s$", "", n) for n in _NAME.findall(plain)]
    return list(dict.fromkeys(found + _NUMBER.findall(plain)))


def _only_inside(name: str, text: str) -> str:
    """The longer name that holds `name` wherever `text` has it ("Arc<Mutex<T>>" for "Mutex<T>", "max-age=N" for
    "max-age"), or '' when `text` has it on its own somewhere: the line names a part of what the excerpt names."""
    plain = _EMPHASIS.sub(" ", text)
    longer = []
    for found in re.finditer(re.escape(name), plain):
        before, after = plain[: found.start()], plain[found.end() :]
        # \Z, not $: "$" also matches before a final line break, and "```http\nCache-Control: ..." read as the name
        # inside "ttp\nCache-Control" withheld every line about `Cache-Control` that an example's excerpt cites
        if not re.search(r"[\w<-]\Z", before) and not re.match(r"[\w>=-]", after):
            return ""
        start = len(before) - len(re.findall(r"[^\s`]*\Z", before)[0])
        longer.append(plain[start : found.end() + len(re.findall(r"^[^\s`]*", after)[0])].rstrip(".,;:"))
    return longer[0] if longer else ""


def _occurs(word: str, text: str, exact: bool) -> bool:
    if exact:
        return word in text
    return re.search(rf"(?<![\w]){re.escape(word.lower())}(?![\w])", _EMPHASIS.sub(" ", text).lower()) is not None


def _said(chunk: Chunk) -> str:
    """What a chunk says to its reader: its text without HTML comments. A comment is a note to the document's
    editors ("When updating the version of `rand` used, also update ..."); a line resting on its words says
    something the document never tells the reader."""
    return _HTML_COMMENT.sub(" ", chunk.text)


def _pieces(chunk: Chunk) -> tuple[list[str], list[str]]:
    """A chunk's sentences, and those of them its edge may cut: the first of a chunk that does not open its
    document, and a last one without its closing mark; none of a chunk widened to whole sentences (A4 reads
    chunks as the prompt shows them, `sentence_edges`), whose edges cut nothing."""
    pieces = split(_said(chunk), MARKDOWN)
    if chunk.metadata.get("sentence_edges"):
        return pieces, []
    cut = []
    if pieces and chunk.span.start > 0:
        cut, pieces = [pieces[0]], pieces[1:]
    if pieces and not ends_whole(pieces[-1]):
        cut, pieces = [*cut, pieces[-1]], pieces[:-1]
    return pieces, cut


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", _EMPHASIS.sub(" ", as_typed(text)).lower())


def _copied_cut(line: str, chunk: Chunk) -> str | None:
    """The sentence the chunk's edge cuts that `line` copies: they share a run of `CUT_RUN_WORDS` words as
    written which no whole sentence of the chunk holds (a phrase the chunk repeats is no copy of the cut one)."""
    whole, cut = _pieces(chunk)
    said = {tuple(w) for p in whole for w in _runs(_words(p))}
    mine = {tuple(w) for w in _runs(_words(line))}
    return next((p for p in cut if any(tuple(w) in mine - said for w in _runs(_words(p)))), None)


def _runs(words: list[str], size: int = CUT_RUN_WORDS) -> list[list[str]]:
    return [words[i : i + size] for i in range(len(words) - size + 1)]


def _worded(text: str) -> list[tuple[str, int]]:
    """`_words` of the text, each with where it starts in the text (emphasis marks are blanked, not removed)."""
    plain = _EMPHASIS.sub(lambda m: " " * len(m.group()), as_typed(text))
    return [(m.group().lower(), m.start()) for m in re.finditer(r"\w+", plain)]


def _clause_before(text: str, end: int) -> str:
    """The text before `end` back to the clause it is in: a sentence's end, a colon, semicolon or comma opens one
    ("In addition, the wildcard only works for requests made with the `crossorigin` attribute, and it prevents ...":
    what prevents is "it", not the attribute)."""
    return re.split(r"[.!?:;,](?:\s+|$)", text[:end])[-1]


def _sections(chunk: Chunk) -> list[tuple[str, list[str]]]:
    """The whole sentences of what `chunk` says, by section: each heading with the pieces under it (the first, before
    any heading, has none)."""
    found: list[tuple[str, list[str]]] = [("", [])]
    for piece in _pieces(chunk)[0]:
        if piece.lstrip().startswith("#"):
            found.append((piece, []))
        else:
            found[-1][1].append(piece)
    return found


def section_name(heading: str) -> str:
    """The name a heading consists of alone, else '': a setting, a directive, a key ("### dev_addr",
    "#### `no-cache`", "### watch"), which its section's sentences speak of without repeating it ("Determines the
    address used when running `mkdocs serve`."). A heading of words, or one capitalized word ("## Examples"), names
    a topic, not a thing."""
    title = heading.strip().lstrip("#").strip()
    found = _LONE_NAME.match(title)
    if found is None:
        return ""
    name = found.group(1)
    return name if "`" in title or name.islower() or identifiers(name) else ""


def _passages(chunk: Chunk) -> dict[str, str]:
    """A chunk's whole prose sentences (no heading, code or markup line: a chunk may begin inside a code block,
    so its fences are not paired), their clauses (a line may say one: "Since X, Y is not Z" holds X unnegated),
    and each two adjacent sentences of one section (a line may join them; a heading between them begins another
    subject), each with the name its section's heading consists of (`section_name`, or ''). As in the offline
    extraction, a sentence the chunk's edge may cut is none of them (see `_pieces`: "These hashes should be
    replaced with" says nothing a line may rest on)."""
    sentences: list[tuple[str, str]] = []
    pairs: list[tuple[str, str]] = []
    for heading, pieces in _sections(chunk):
        name = section_name(heading)
        prose = [s for s in pieces if is_prose(s)]
        sentences += [(s, name) for s in prose]
        pairs += [(f"{a} {b}", name) for a, b in zip(prose, prose[1:], strict=False)]
    clauses = [
        (c, name) for s, name in sentences for c in _CLAUSE.split(s) if c != s and len(c.split()) >= MIN_CLAUSE_WORDS
    ]
    found: dict[str, str] = {}
    for passage, name in sentences + clauses + pairs:
        found.setdefault(passage, name)
    return found


def _polar(text: str, cues: re.Pattern[str]) -> bool:
    """Whether `text` holds one of `cues`, outside code spans and hyphenated words ('no-cache' is a name), its
    Markdown emphasis read as words ("__Don't__ create a middleware" is negated) and a typographic apostrophe as
    the cues write it (an excerpt's "can’t" is "can't")."""
    plain = re.sub(r"\w+(?:-\w+)+", " ", _EMPHASIS.sub(" ", unquoted(as_typed(text))))
    return cues.search(plain) is not None


class SupportCheck:
    """Checks a model's lines against the chunks they cite (see the module docstring)."""

    def __init__(
        self,
        settings: SupportSettings,
        embed: Callable[[list[str]], np.ndarray],
        weigh: Callable[[str], dict[str, float]] | None = None,
        alone: Callable[[str], bool] | None = None,
        exhibits: Sequence[str] = (),
    ) -> None:
        """`weigh(text)` gives the text's content words (as the index stems them) with their rarity in the
        project; without it, words are not weighed (rule 2 checks names, identifiers and numbers only) and rule 5,
        which needs to tell the reader's "you" from a doer, is not applied.
        `alone(text)` says whether a line stands alone as the offline extraction's lines must (no opening
        "It"/"This" leaning on what came before, no narration such as "as shown in Listing 12-23"): a
        condensed line is read on its own, so "It can be used to run only the ignored tests." says nothing.
        `exhibits` are the nouns of a numbered exhibit ("Listing", "Figure": `condenser.exhibit_nouns`, rule 7)."""
        self.settings = settings
        self.embed = embed
        self.weigh = weigh
        self.alone = alone
        self.negation = any_phrase(settings.negation_cues)
        self.obligation = any_phrase(settings.obligation_cues)
        self.permission = any_phrase(settings.permission_cues)
        self.modal = any_phrase(settings.modal_cues) if settings.modal_cues else None
        self.reader = any_phrase(settings.reader_conditions) if settings.reader_conditions else None
        self.condition = any_phrase(settings.condition_openers) if settings.condition_openers else None
        self.supposition = any_phrase(settings.supposition_cues) if settings.supposition_cues else None
        self.opener = any_phrase(settings.negation_openers) if settings.negation_openers else None
        self.removal = any_phrase(settings.removal_cues) if settings.removal_cues else None
        nouns = "|".join(re.escape(noun) for noun in exhibits)
        self.exhibit = re.compile(rf"\b(?:{nouns})\s+\d+(?:[.-]\d+)*", re.IGNORECASE) if nouns else None

    def _agrees(self, line: str, passage: str) -> str:
        """'' when `passage` and `line` agree on negation and modality, else what differs."""
        negated = _polar(line, self.negation)
        if negated != _polar(passage, self.negation) or (negated and self._denies_affirmed(line, passage)):
            return "negation"
        if self._removes_affirmed(line, passage):
            return "negation"
        mine, theirs = self._mode(line), self._mode(passage)
        return "modality" if mine and theirs and mine != theirs else ""

    def _denies_affirmed(self, line: str, passage: str) -> bool:
        """Whether the words `line` denies weigh more among those `passage` affirms than among those it denies
        (rule 4): both hold a negation, but not of one thing. "The API does not allow the use of credentials in
        CORS requests." on "To allow any site to make CORS requests _without_ using the `*` wildcard (for example,
        to enable credentials), ...": the passage affirms allowing CORS requests and enabling credentials, and denies
        only the wildcard."""
        if self.weigh is None:
            return False
        denied, _ = self._negated(line)
        weights = self.weigh(denied)
        no, yes = (set(bm25_tokens([part])[0]) for part in self._negated(passage))
        against = sum(weight for word, weight in weights.items() if _held(word, yes) and not _held(word, no))
        return against > sum(weight for word, weight in weights.items() if _held(word, no))

    def _negated(self, text: str, removal: bool = False) -> tuple[str, str]:
        """What `text` denies, and what it affirms, clause by clause, its code spans kept: a clause holding a
        negation cue (as `_polar` finds them) is denied whole ("Google Analytics is disabled for the site"), but for
        the words before an opener (`support.negation_openers`: "To allow any site to make CORS requests" before
        "without using ..."); with `removal`, a removal cue (`support.removal_cues`) opens a denied part too ("Then set
        `theme.analytics.gtag` ... and delete the `google_analytics` configuration option")."""
        denied, affirmed = [], []
        openers = [self.opener, self.removal if removal else None]
        for clause in re.split(r"[.!?;:,](?:\s+|$)", _EMPHASIS.sub(" ", as_typed(text))):
            # the cues are the writer's words: none inside a code span or a hyphenated name, positions kept
            plain = re.sub(
                r"\w+(?:-\w+)+", lambda m: " " * len(m.group()), CODE_SPAN.sub(lambda m: " " * len(m.group()), clause)
            )
            opened = [m.start() for pattern in openers if pattern is not None and (m := pattern.search(plain))]
            if opened:
                affirmed.append(clause[: min(opened)])
                denied.append(clause[min(opened) :])
            else:
                (denied if self.negation.search(plain) else affirmed).append(clause)
        return " ".join(denied), " ".join(affirmed)

    def _removes_affirmed(self, line: str, passage: str) -> bool:
        """Whether `line` affirms a name (an identifier) that `passage` names only where it denies or removes it
        (rule 4): "To set the `google_analytics` configuration option, ..." on "Then set `theme.analytics.gtag` ...
        and delete the `google_analytics` configuration option ..."."""
        if self.removal is None:
            return False
        _, affirmed = self._negated(line, removal=True)
        denied, kept = self._negated(passage, removal=True)
        return any(
            _occurs(name, denied, exact=True) and not _occurs(name, kept, exact=True) for name in identifiers(affirmed)
        )

    def _mode(self, text: str) -> str:
        """'obligation' ("must"), 'permission' ("may"), or '' for neither or both."""
        obliged, allowed = _polar(text, self.obligation), _polar(text, self.permission)
        return "" if obliged == allowed else "obligation" if obliged else "permission"

    def check(
        self, lines: Sequence[tuple[str, list[str]]], chunks: dict[str, Chunk], asks: Sequence[str]
    ) -> list[Verdict]:
        """A verdict per (line, cited chunk ids), in order; `asks` are the prompt's sentences and clauses."""
        asks = list(dict.fromkeys(a for a in asks if a.strip()))
        units = {cid: _passages(chunks[cid]) for ids in (ids for _, ids in lines) for cid in ids if cid in chunks}
        texts = [text for text, _ in lines]
        pool = list(dict.fromkeys(p for found in units.values() for p in found))
        said = {text: statements(text) for text in texts}
        parts = list(dict.fromkeys(part for found in said.values() if len(found) > 1 for part in found))
        vectors = self.embed(texts + asks + pool + parts) if texts else np.zeros((0, 1))
        line_v, ask_v, pool_v, part_v = np.split(
            vectors, np.cumsum([len(texts), len(asks), len(pool)]) if texts else [0, 0, 0]
        )
        index = {p: i for i, p in enumerate(pool)}
        at = {p: i for i, p in enumerate(parts)}
        verdicts = []
        for k, (text, ids) in enumerate(lines):
            cited = [chunks[c] for c in ids if c in chunks]
            sections = {p: name for c in ids for p, name in units.get(c, {}).items()}
            each = [(part, part_v[at[part]]) for part in said[text]] if len(said[text]) > 1 else [(text, line_v[k])]
            verdicts.append(self._one(text, cited, sections, (line_v[k], each), (asks, ask_v), pool_v, index))
        return verdicts

    def _one(
        self,
        text: str,
        cited: list[Chunk],
        sections: dict[str, str],
        vectors: tuple[np.ndarray, list[tuple[str, np.ndarray]]],
        ask: tuple[list[str], np.ndarray],
        pool_vectors: np.ndarray,
        index: dict[str, int],
    ) -> Verdict:
        s = self.settings
        asks, ask_vectors = ask
        passages = list(sections)  # each with the name its section's heading consists of (`section_name`)
        vector, each = vectors  # the line's, and each of its statements' (the line's own when it makes one)
        whole = "\n".join(_said(c) for c in cited)
        if not ends_whole(text):
            return Verdict(False, "it does not end as a sentence does: cut off", 0.0, "")
        if self.alone is not None and not self.alone(text):
            return Verdict(False, "it does not stand alone: it leans on what came before or narrates", 0.0, "")
        if not passages:
            return Verdict(False, "the cited excerpt has no sentence to check it against", 0.0, "")
        copied = next((p for p in (_copied_cut(text, c) for c in cited) if p is not None), None)
        if copied is not None:
            return Verdict(False, f"it copies a sentence the cited chunk's edge cuts: '{_short(copied)}'", 0.0, copied)
        scores = {p: float(pool_vectors[index[p]] @ vector) for p in passages}
        best = max(scores, key=lambda p: scores[p])
        restates = float(np.max(ask_vectors @ vector)) if len(ask_vectors) else 0.0
        if restates >= s.restates_prompt and restates > scores[best]:
            return Verdict(False, f"restates the prompt (cosine {restates:.2f} to the ask)", scores[best], best)
        code = identifiers(text)
        missing = [w for w in code if not _occurs(w, whole, exact=True)]
        missing += [w for w in names(text) if w not in missing and not _occurs(w, whole, exact=False)]
        if missing:
            quoted = ", ".join(f"'{w}'" for w in missing)
            return Verdict(False, f"names {quoted}, which the cited excerpt does not contain", scores[best], best)
        named = [*code, *_GENERIC.findall(unquoted(text))]
        inside = next(((w, longer) for w in named if (longer := _only_inside(w, whole))), None)
        if inside is not None:
            return Verdict(
                False,
                f"names '{inside[0]}', which the cited excerpt holds only inside '{inside[1]}'",
                scores[best],
                best,
            )
        new, share = self._new_words(text, whole)
        if share > s.max_new_words and len(new) >= s.min_new_words:
            quoted = ", ".join(f"'{w}'" for w in new)
            return Verdict(
                False,
                f"says {quoted}, which the cited excerpt does not hold ({share:.2f} of its word weight, over "
                f"{s.max_new_words:g})",
                scores[best],
                best,
            )
        about = [p for p in passages if any(w in p for w in code)] or passages
        best = max(about, key=lambda p: scores[p])
        if scores[best] < s.min_similarity:
            return Verdict(
                False,
                f"evidence {scores[best]:.2f} under {s.min_similarity:g}: no cited sentence says it "
                f"(closest: '{_short(best)}')",
                scores[best],
                best,
            )
        closest = max(passages, key=lambda p: scores[p])
        for part, part_vector in each:
            differs = self._disagreement(part, {p: float(pool_vectors[index[p]] @ part_vector) for p in passages})
            if differs is not None:
                return Verdict(
                    False,
                    f"its {differs[0]} differs from what the cited excerpt says: '{_short(differs[1])}'",
                    scores[differs[1]],
                    differs[1],
                )
        near = [p for p in passages if scores[p] >= scores[closest] - s.margin]
        steps = [q for q in passages if any(q in p for p in [best, *near])]  # each sentence of those, pairs too
        doer = next(((p, who) for p in steps if (who := self._doer(text, p))), None)
        if doer is not None:
            return Verdict(
                False,
                f"it makes '{doer[1]}' the doer of what the cited excerpt tells its reader to do: '{_short(doer[0])}'",
                scores[doer[0]],
                doer[0],
            )
        dropped = next(((p, lacking) for p in near if (lacking := _dropped_subject(text, p))), None)
        if dropped is not None:
            quoted = ", ".join(f"'{w}'" for w in dropped[1])
            return Verdict(
                False,
                f"it states alone what the cited excerpt says of {quoted}: '{_short(dropped[0])}'",
                scores[dropped[0]],
                dropped[0],
            )
        judged = list(dict.fromkeys([best, *near]))
        unnamed = [sections[p] for p in judged if sections[p] and not _occurs(sections[p], text, exact=False)]
        if len(unnamed) == len(judged) and not any(_opens_as(text, p) for p in judged):
            return Verdict(
                False,
                f"it does not name '{unnamed[0]}', the heading the cited excerpt says it under: '{_short(closest)}'",
                scores[closest],
                closest,
            )
        exhibit = self._exhibit_value(text, cited)
        if exhibit is not None:
            return Verdict(
                False,
                f"it states '{exhibit[0]}' without {exhibit[1]}, whose value the cited excerpt says it is",
                scores[best],
                best,
            )
        subject = next(((p, why) for p in steps if (why := self._subject(text, p))), None)
        if subject is not None:
            return Verdict(False, f"{subject[1]}: '{_short(subject[0])}'", scores[subject[0]], subject[0])
        swap = next((found for c in cited for p in _pieces(c)[0] if (found := _renamed(text, p))), None)
        if swap is not None:
            quoted = f"it puts '{swap[0]}' where the cited excerpt says '{swap[1]}': '{_short(swap[2])}'"
            return Verdict(False, quoted, scores[best], swap[2])
        borrowed = self._borrowed(text, cited)
        if borrowed:
            return Verdict(False, borrowed, scores[best], best)
        grafted = self._grafted(text, whole, asks)
        if grafted:
            return Verdict(False, f"it writes the prompt's words '{grafted}' into the excerpt's", scores[best], best)
        far, share, place = self._far_words(text, cited, best)
        if far and share > s.max_far_words:
            quoted = ", ".join(f"'{w}'" for w in far)
            return Verdict(
                False,
                f"it joins {quoted} to what one place of the cited excerpt says ({share:.2f} of its word weight): "
                f"'{_short(place)}'",
                scores[best],
                best,
            )
        sentences = {p for c in cited for p in _pieces(c)[0]}
        dropped_if = next((p for p in steps if p in sentences and self._drops_condition(text, p)), None)
        if dropped_if is not None:
            return Verdict(
                False,
                f"it states without its condition what the cited excerpt advises only under it: '{_short(dropped_if)}'",
                scores[best],
                best,
            )
        supposed = next((p for p in steps if p in sentences and self._states_supposed(text, p)), None)
        if supposed is not None:
            return Verdict(
                False,
                f"it states as fact what the cited excerpt only supposes: '{_short(supposed)}'",
                scores[best],
                best,
            )
        return Verdict(True, "", scores[best], best)

    def _states_supposed(self, line: str, sentence: str) -> bool:
        """Whether `line` repeats `CONDITION_RUN_WORDS` words in a row of what `sentence` only supposes (after one of
        `support.supposition_cues`: "But now let's say that the `--name` option ... is required, and it has a callback
        that could exit the program:") without supposing it itself (rule 14): Typer's tutorial sets up its next example
        so, and a 0.5B model wrote "The `--name` CLI option is required and has a callback that can exit the program."
        """
        if self.supposition is None:
            return False
        typed = as_typed(sentence)
        found = self.supposition.search(typed)
        if found is None or self.supposition.search(as_typed(line)):
            return False
        mine, theirs = _words(line), _words(typed[found.end() :])
        return SequenceMatcher(None, mine, theirs, autojunk=False).find_longest_match().size >= CONDITION_RUN_WORDS

    def _disagreement(self, text: str, scores: dict[str, float]) -> tuple[str, str] | None:
        """What differs (negation, modality) between one statement of a line and the passages it is nearest, and
        the nearest of them, when none agrees with it (rule 4); None when one does, or none is near enough."""
        s = self.settings
        passages = list(scores)
        code = identifiers(text)
        about = [p for p in passages if any(w in p for w in code)] or passages
        best = max(about, key=lambda p: scores[p])
        closest = max(passages, key=lambda p: scores[p])
        for k, (among, top) in enumerate(((about, best), (passages, closest))):
            if k and scores[closest] <= scores[best] + s.margin:
                break  # no passage without its identifiers is clearly closer to the line than those with them
            near = sorted(
                (p for p in among if scores[p] >= max(s.min_similarity, scores[top] - s.margin)),
                key=lambda p: -scores[p],
            )
            differs = [self._agrees(text, p) for p in near]
            if near and all(differs):
                return differs[0], top
        return None

    def _drops_condition(self, line: str, sentence: str) -> bool:
        """Whether `line` repeats `CONDITION_RUN_WORDS` words in a row of the main clause of `sentence`, which opens on
        what its reader wants or does (`support.reader_conditions`: "If you want caches to always check for content
        updates while reusing stored content, `no-cache` is the directive to use."), and holds fewer than half of that
        condition's content words (rule 11): advice for one goal read as advice for every reader ("The `no-cache`
        directive is the directive to use."). A condition on the world, not the reader, may go where the main clause
        says it another way ("If no `SameSite` attribute is set, the cookie is treated as `Lax` by default.")."""
        plain = " ".join(_LIST_MARK.sub("", sentence).split())
        opening = self.reader.match(plain) if self.reader is not None else None
        if opening is None or "," not in plain:
            return False
        condition, main = plain.split(",", 1)
        mine, theirs = _words(line), _words(main)
        run = SequenceMatcher(None, mine, theirs, autojunk=False).find_longest_match()
        if run.size < CONDITION_RUN_WORDS:
            return False
        wanted = self.words(condition) - self.words(main)
        return len(wanted & self.words(line)) * 2 < len(wanted)

    def _far_words(self, line: str, cited: list[Chunk], nearest: str) -> tuple[list[str], float, str]:
        """The line's content words that no one place of each cited chunk holds (rule 10), their share of its word
        weight, and that place: of every sentence with the ones beside it (a list's lead-in with its items is one
        sentence; an item of a long list is read with its lead-in and every item), the one that leaves the least
        weight out. A line restates one place; words it joins from further away put another sentence's claim into
        this one's ("Cargo can update dependencies automatically by checking the _Cargo.lock_ file." on "Cargo
        figures out all the versions of the dependencies ... and then writes them to the _Cargo.lock_ file.", its
        "update" and "checked" from two sentences further on, and "automatically" from one saying the build is
        reproducible). Words before the first one the place holds are the line's subject, which the excerpt may
        name only in its heading or an earlier sentence ("CSP is complex to configure and maintain." on "Content
        Security Policy is complex to configure and maintain."). None when no sentence of the excerpt, as the
        extraction reads it, holds the line's `nearest` passage: a chunk that opens inside a code block reads its
        prose as code there, and where the line stands is not known."""
        opening = " ".join(nearest.split())[:PLACE_KEY_CHARS]
        units = {chunk.id: _units(chunk) for chunk in cited}
        if self.weigh is None or not any(opening in u.text for found in units.values() for u in found):
            return [], 0.0, ""
        weights = self.weigh(_EMPHASIS.sub(" ", line))
        total = sum(weights.values())
        order = list(dict.fromkeys(w for w in bm25_tokens([_EMPHASIS.sub(" ", line)])[0] if w in weights))
        places = []
        for chunk in cited:
            found = [(self._left_out(order, weights, place), place) for place in _places(chunk, units[chunk.id])]
            if found:
                places.append(min(found, key=lambda f: f[0][0])[1])
        if not places or total <= 0:
            return [], 0.0, ""
        far = self._left_out(order, weights, " ".join(places))[1]
        far_words = sorted(far, key=lambda w: (-weights[w], order.index(w)))  # rarest first, then as the line says
        return far_words, sum(weights[w] for w in far_words) / total, " ... ".join(places)

    def _left_out(self, order: list[str], weights: dict[str, float], place: str) -> tuple[float, set[str]]:
        """The weight of the line's words (in `order`) that `place` does not hold, but for up to `SUBJECT_WORDS` of
        them before the first one it holds (the subject the line names)."""
        held = set(bm25_tokens([_EMPHASIS.sub(" ", place)])[0])
        first = next((k for k, w in enumerate(order) if _held(w, held)), len(order))
        out = {w for w in order[min(first, SUBJECT_WORDS) :] if not _held(w, held)}
        return sum(weights[w] for w in out), out

    def _subject(self, line: str, passage: str) -> str:
        """Why `line` says of another subject what `passage` says (rule 8), else ''. The line repeats a run of
        `SUBJECT_RUN_WORDS` words of the passage, and before it, in its own clause, either lacks a name, identifier
        or number the passage's clause puts there ("The `max-age` directive indicates that the client allows ..."
        on "The `max-age=N` request directive indicates that ..."; 411's entry given 413's words), or opens on a
        word the passage puts after its own first one, which the line lacks ("a client responds with a 401 ..." on
        "The server responds to a client with a 401 ...")."""
        line, passage = _LINK_TARGET.sub("]", line), _LINK_TARGET.sub("]", _LIST_MARK.sub("", passage))
        mine, theirs = _worded(line), _worded(passage)
        run = SequenceMatcher(None, [w for w, _ in mine], [w for w, _ in theirs], autojunk=False).find_longest_match()
        if run.size < SUBJECT_RUN_WORDS or not run.a or not run.b:
            return ""
        before_mine = _clause_before(line, mine[run.a][1])
        before_theirs = _clause_before(passage, theirs[run.b][1])
        code = identifiers(before_theirs)
        numbers = _NUMBER.findall(CODE_SPAN.sub(" ", before_theirs))
        lacking = [n for n in code if n not in line] + [n for n in numbers if not _occurs(n, line, exact=False)]
        if lacking:
            return f"it says of another subject what the cited excerpt says of '{lacking[0]}'"
        shared = [(mine[run.a][0], 0)]  # the run's first word follows both clauses
        swapped = self._swapped(_worded(before_mine) + shared, _worded(before_theirs) + shared, line, passage)
        if swapped[0]:
            return f"it puts '{swapped[0]}' where the cited excerpt says '{swapped[1]}'"
        return ""

    def _borrowed(self, line: str, cited: list[Chunk]) -> str:
        """Why `line` gives the claim of one sentence another's subject or purpose (rule 12), else ''. Its claim is
        the longest run of a cited sentence's words it repeats (`SUBJECT_RUN_WORDS` at least); the words before that
        run, its subject, must come from that sentence's section: every identifier, name and number of them, and all
        but `support.max_subject_words` of their content words. A line opening on a purpose or condition
        (`support.condition_openers`) whose main clause is that run must have the purpose from that sentence."""
        mine = _worded(line)
        words = [w for w, _ in mine]
        claims = [
            (
                SequenceMatcher(None, words, [w for w, _ in _worded(sentence)], autojunk=False).find_longest_match(),
                sentence,
                " ".join([heading, *pieces]),
            )
            for chunk in cited
            for heading, pieces in _sections(chunk)
            for sentence in pieces
        ]
        claims = [c for c in claims if c[0].size >= SUBJECT_RUN_WORDS]
        if not claims:
            return ""
        # the claim is the run the line ends on: "The `theme` configuration option in your `mkdocs.yml` config file"
        # repeats one sentence, "supports almost every feature of MkDocs" what another says of the default theme
        run, sentence, section = max(claims, key=lambda c: (c[0].a + c[0].size, c[0].size))
        if not run.a:
            return ""
        subject = line[: mine[run.a][1]]
        opening = _OPENING_CLAUSE.match(subject)  # a purpose or condition, then the run as the main clause
        if self.condition is not None and self.condition.match(subject) and opening and not self.words(opening[2]):
            held = set(bm25_tokens([_EMPHASIS.sub(" ", sentence)])[0])
            if any(not _held(w, held) for w in self.words(opening[1])):
                return (
                    f"it sets '{opening[1].strip()}' over what the cited excerpt says under another condition: "
                    f"'{_short(sentence)}'"
                )
        others = [n for n in identifiers(subject) if not _occurs(n, section, exact=True)]
        others += [n for n in names(subject) if n not in others and not _occurs(n, section, exact=False)]
        held = set(bm25_tokens([_EMPHASIS.sub(" ", section)])[0])
        elsewhere = sorted(w for w in self.words(subject) if not _held(w, held))
        if others or len(elsewhere) > self.settings.max_subject_words:
            quoted = ", ".join(f"'{w}'" for w in others or elsewhere)
            return (
                f"it gives {quoted}, which the section of the sentence it repeats does not name, what that sentence "
                f"says of its own subject: '{_short(sentence)}'"
            )
        return ""

    def _swapped(
        self, mine: list[tuple[str, int]], theirs: list[tuple[str, int]], line: str, passage: str
    ) -> tuple[str, str]:
        """The line's first content word and the passage's, when the line puts its own where the passage puts its
        (the same word follows both), the passage's is nowhere in the line, and the line's is either one the
        passage's clause puts after its own ("a client responds" on "The server responds to a client": the roles
        turned around) or none the passage says ("The expiration timeout limits ..." on "The idle timeout limits
        ...": another thing). A word the passage says elsewhere names its subject in its own words ("Password hashing
        algorithms have been ..." on "Some modern hashing algorithms have been ... to securely store passwords")."""
        words = [w for w, _ in mine], [w for w, _ in theirs]
        at = [next((i for i, w in enumerate(found) if self.words(w)), -1) for found in words]
        if min(at) < 0 or at[0] + 1 >= len(words[0]) or at[1] + 1 >= len(words[1]):
            return ("", "")
        own, other = words[0][at[0]], words[1][at[1]]
        if own == other or words[0][at[0] + 1] != words[1][at[1] + 1] or self.words(other) & self.words(line):
            return ("", "")
        turned = own in words[1][at[1] + 1 :]
        return (own, other) if turned or not self.words(own) & self.words(passage) else ("", "")

    def _grafted(self, line: str, cited: str, asks: Sequence[str]) -> str:
        """A run of `ASK_RUN_WORDS` words of `line`, one of them a content word, that a sentence of the ask holds
        and the cited excerpt does not (rule 9): the ask's words written into the excerpt's make a sentence neither
        says ("The API send instead of the wildcard to allow any site to access it ..." from "what should the API
        send instead?" and "You can also configure a site to allow any site to access it ..."). A name the line
        writes as the ask does ("Cache-Control: no-store") is no run of the ask's words: rule 2 holds it to the
        excerpt's names."""
        said = {tuple(r) for r in _runs(_words(cited), ASK_RUN_WORDS)}
        asked = {tuple(r) for a in asks for r in _runs(_words(a), ASK_RUN_WORDS)}
        mine = [r for part in _NAMED.split(line) for r in _runs(_words(part), ASK_RUN_WORDS)]
        found = [r for r in mine if tuple(r) in asked - said and self.words(" ".join(r))]
        return " ".join(found[0]) if found else ""

    def _exhibit_value(self, line: str, cited: list[Chunk]) -> tuple[str, str] | None:
        """A number of `line` that each cited sentence holding it gives as a numbered exhibit's value ("The `for`
        loop in Listing 8-8 will add `50` to each element."), when the line names none of those exhibits (rule 7):
        an example's value stated alone reads as a rule ("The `for` loop in Rust is used to add `50` ..."). Returns
        the number and the exhibit."""
        if self.exhibit is None:
            return None
        named = {e.lower() for e in self.exhibit.findall(line)}
        sentences = [s for c in cited for s in _pieces(c)[0]]
        for number in _NUMBER.findall(self.exhibit.sub(" ", line.replace("`", " "))):
            holding = [s for s in sentences if number in _NUMBER.findall(self.exhibit.sub(" ", s.replace("`", " ")))]
            exhibits = [self.exhibit.findall(s) for s in holding]
            if holding and all(exhibits) and not named & {e.lower() for found in exhibits for e in found}:
                return number, exhibits[0][0]
        return None

    def _doer(self, line: str, passage: str) -> str:
        """The words `line` puts before a modal followed by `passage`'s opening words (rule 5), when they hold a
        content word ("the user"; "you" holds none), else ''."""
        opening = _words(_LIST_MARK.sub("", passage))[:INSTRUCTION_WORDS]
        mine = _words(line)
        if self.modal is None or self.weigh is None or len(opening) < INSTRUCTION_WORDS:
            return ""  # without `weigh`, "you" and "we" would be content words
        for i in range(1, len(mine) - INSTRUCTION_WORDS + 1):
            if mine[i : i + INSTRUCTION_WORDS] != opening:
                continue
            before = " ".join(mine[:i])
            ending = [m for m in self.modal.finditer(before) if not before[m.end() :].strip()]
            subject = before[: ending[-1].start()].strip() if ending else ""
            if subject and self.words(subject):
                return subject
        return ""

    def words(self, text: str) -> set[str]:
        """The text's content words as the index stems them (with `weigh`, its function words left out)."""
        return set(self.weigh(text)) if self.weigh is not None else set(bm25_tokens([text])[0])

    def _new_words(self, text: str, cited: str) -> tuple[list[str], float]:
        """The line's content words the cited text does not hold (rarest first), and their share of its weight."""
        if self.weigh is None:
            return [], 0.0
        weights = self.weigh(_EMPHASIS.sub(" ", text))
        total = sum(weights.values())
        held = set(bm25_tokens([_EMPHASIS.sub(" ", cited)])[0])
        new = sorted((w for w in weights if not _held(w, held)), key=lambda w: -weights[w])
        return new, sum(weights[w] for w in new) / total if total > 0 else 0.0


def statements(line: str) -> list[str]:
    """The sentences of a line that say something (`MIN_CLAUSE_WORDS` words at least: a list's "1." says
    nothing); the line itself when it has fewer than two. A line of three of the excerpt's sentences is judged
    sentence by sentence where one sentence's negation is at stake: no passage (two sentences at most) holds it
    whole, and its "won't" in the third sentence is no negation of the first two."""
    found = [part for part in split(line, MARKDOWN) if len(part.split()) >= MIN_CLAUSE_WORDS]
    return found if len(found) > 1 else [line]


def _opens_as(line: str, passage: str) -> bool:
    """Whether `line` opens on the first `MIN_CLAUSE_WORDS` words of `passage`: it is that sentence as the excerpt
    writes it ("Determines the address used ..."), its subject the excerpt's own, not one the line gives it."""
    opening = _words(_LIST_MARK.sub("", passage))[:MIN_CLAUSE_WORDS]
    return len(opening) == MIN_CLAUSE_WORDS and _words(_LIST_MARK.sub("", line))[:MIN_CLAUSE_WORDS] == opening


def _renamed(line: str, sentence: str) -> tuple[str, str, str] | None:
    """The name `line` puts where `sentence` has another, the sentence's, and the sentence (rule 13): the line
    repeats `RENAME_CONTEXT_WORDS` words of the sentence on either side of its own name, and the line lacks the
    sentence's ("... by including an WWW-Authenticate request header with the credentials." on "... by including an
    {{HTTPHeader("Authorization")}} request header with the credentials."). A name its excerpt holds elsewhere
    passes rule 2, but in this place the excerpt names another thing."""
    mine, theirs = _worded(line), _worded(sentence)
    ops = SequenceMatcher(None, [w for w, _ in mine], [w for w, _ in theirs], autojunk=False).get_opcodes()
    for k in range(1, len(ops) - 1):
        (before, *_, b1, b2), (tag, i1, i2, j1, j2), (after, a1, a2, *_) = ops[k - 1], ops[k], ops[k + 1]
        if tag != "replace" or before != "equal" or after != "equal":
            continue
        if min(b2 - b1, a2 - a1) < RENAME_CONTEXT_WORDS:
            continue
        # from where the name's token opens (a code span's backtick, a macro's braces) to the words that follow it
        own = line[line.rfind(" ", 0, mine[i1][1]) + 1 : mine[i2][1]].strip()
        other = sentence[sentence.rfind(" ", 0, theirs[j1][1]) + 1 : theirs[j2][1]].strip()
        named = [n for n in _NAMEISH.findall(own) if n.lower() not in other.lower()]
        lacking = [n for n in _NAMEISH.findall(other) if not _occurs(n, line, exact=False)]
        if named and lacking:
            return own, other, sentence
    return None


def _dropped_subject(line: str, passage: str) -> list[str]:
    """The identifiers of `passage`'s main clause that `line` lacks when it opens on the clause after its "that"
    (rule 6), else none."""
    found = _THAT.match(passage)
    if found is None:
        return []
    reported = _words(found.group(2))[:INSTRUCTION_WORDS]
    if len(reported) < INSTRUCTION_WORDS or _words(line)[:INSTRUCTION_WORDS] != reported:
        return []
    return [name for name in identifiers(found.group(1)) if name not in line]


def _units(chunk: Chunk) -> list[Sentence]:
    """The sentences of what `chunk` says as the offline extraction reads them, in order (a list's lead-in with its
    items is one)."""
    said = chunk.model_copy(update={"text": _said(chunk)})
    return sorted((u for u in sentences_of(said) if isinstance(u, Sentence)), key=lambda u: u.start)


def _places(chunk: Chunk, units: list[Sentence]) -> list[str]:
    """Each of `units` (the sentences of `chunk`) with the ones before and after it, as the chunk writes them (an
    item of a long list comes with its lead-in and every item)."""
    said = _said(chunk)
    places = []
    for k in range(len(units)):
        lo, hi = max(k - 1, 0), min(k + 1, len(units) - 1)
        leads = {u.lead for u in units[lo : hi + 1] if u.lead}
        listed = [j for j, u in enumerate(units) if u.lead in leads]
        lo, hi = min([lo, *listed]), max([hi, *listed])
        places.append(" ".join([*leads, said[units[lo].start : units[hi].end]]))
    return places


def _held(word: str, held: set[str]) -> bool:
    """The stem is the excerpt's, or one stem begins the other (the stemmer cuts "embeds" to "emb" and
    "embedded" to "embed"); a stem of fewer than `_MIN_STEM` letters matches only itself."""
    return word in held or any(
        min(len(word), len(h)) >= _MIN_STEM and (word.startswith(h) or h.startswith(word)) for h in held
    )


def _short(text: str, words: int = 24) -> str:
    found = text.split()
    return " ".join(found[:words]) + (" ..." if len(found) > words else "")

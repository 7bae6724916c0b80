""" "Not covered" on real corpora nobody tuned the gate for: a topic no document treats keeps nothing and is
named, and the missing half of a half-answered ask is named. A3's evidence threshold is calibrated against each
corpus (how strongly off-topic questions match it); the calibration is computed once per index generation and
stored beside it. Corpora: attrs' documentation (Markdown), httpx's source (Python) and four pages of uvicorn's
documentation (encode/uvicorn's docs at e6c7ce7: deployment, settings, server behaviour, index)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from ragstream.app.controller import AppController
from ragstream.gate.ask_parts import asking_parts
from ragstream.gate.calibration import NULL_FILE
from ragstream.ingestion.manager import IngestionManager
from ragstream.settings import Settings, load_settings
from ragstream.state import SuperPrompt
from ragstream.tenancy.projects import project_paths
from ragstream.text.chunk_ids import CITATION
from tests.helpers import preprocessed

ATTRS = Path(__file__).parent / "quality" / "corpora" / "attrs"
UVICORN = Path(__file__).parent / "quality" / "corpora" / "uvicorn"
COBRA = Path(__file__).parent / "quality" / "corpora" / "cobra"  # spf13/cobra's Go source at adbc881, tests left out
HTTPX = Path(httpx.__file__).parent
HTTPX_FILES = ("_client.py", "_models.py", "_urls.py", "_config.py")
OFF_TOPIC = "How do I configure the Splunk Universal Forwarder to ship our JSON log files to Splunk Cloud indexers?"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Settings]:
    root = tmp_path_factory.mktemp("not_covered")
    found = {}
    for name, source, files in (
        ("attrs", ATTRS, None),
        ("httpx", HTTPX, HTTPX_FILES),
        ("uvicorn", UVICORN, None),
        ("cobra", COBRA, None),
    ):
        settings = load_settings(overrides={"data_dir": str(root / name), "llm.provider": "local"})
        raw = settings.data_dir / "doc_raw" / name
        raw.mkdir(parents=True)
        for file in files or [p.name for p in source.iterdir() if p.is_file()]:
            shutil.copy(source / file, raw / file)
        IngestionManager(settings).ingest(name)
        found[name] = settings
    return found


def _run(settings: Settings, project: str, prompt: str) -> SuperPrompt:
    ctl = AppController(settings)
    ctl.select_project(project)
    return ctl.run_full_pipeline(prompt, pause_after="none")


def _section(sp: SuperPrompt, title: str) -> list[str]:
    lines, inside = [], False
    for line in sp.s_ctx_md.splitlines():
        if line.startswith("### "):
            inside = line[4:].strip() == title
        elif inside and line.startswith("- "):
            lines.append(line)
    return lines


@pytest.mark.parametrize("project", ["attrs", "httpx"])
def test_an_off_topic_question_keeps_nothing_and_is_named(corpora: dict[str, Settings], project: str) -> None:
    settings = corpora[project]
    sp = _run(settings, project, OFF_TOPIC)
    a3 = sp.extras.a3
    assert a3 is not None and a3.decisions, "A3 judged the candidates retrieval found"
    assert not sp.final_selection_ids, f"nothing is kept: {[d.reason for d in a3.decisions.values()][:3]}"
    for title in ("Facts", "Constraints"):
        assert not any(CITATION.search(line) for line in _section(sp, title)), sp.s_ctx_md
    assert any("Splunk" in line for line in _section(sp, "Open issues")), sp.s_ctx_md
    assert "off-topic questions" in a3.calibration, a3.calibration
    newest = sorted(project_paths(settings, project).index_dir.glob("g*"))[-1]
    assert (newest / NULL_FILE).is_file(), "the calibration is stored with the index generation"


def test_the_missing_half_of_an_ask_is_named_on_code(corpora: dict[str, Settings]) -> None:
    sp = _run(
        corpora["httpx"],
        "httpx",
        "How does the client build the request it sends after a redirect, and how do I export its spans to Jaeger?",
    )
    assert sp.final_selection_ids, "the covered half keeps its evidence"
    assert any("_client.py" in cid for cid in sp.final_selection_ids)
    assert any("Jaeger" in line for line in _section(sp, "Open issues")), sp.s_ctx_md


def test_each_side_of_a_comparison_is_judged_and_only_the_missing_side_is_named(corpora: dict[str, Settings]) -> None:
    """ "The difference between X and Y" asks about X and about Y: pages that treat only one side answer it in
    part. attrs' docs treat validators and never Kafka: the validator pages are kept, and the Open issues name
    the side they lack, not the whole question (before, the question as a whole kept nothing)."""
    sp = _run(corpora["attrs"], "attrs", "What's the difference between validators and kafka consumer groups?")
    assert sp.final_selection_ids, "the covered side keeps its evidence"
    assert any("validator" in line.lower() for line in _section(sp, "Facts")), sp.s_ctx_md
    assert _section(sp, "Open issues") == ["- The documents do not cover: kafka consumer groups"], sp.s_ctx_md
    neither = _run(
        corpora["attrs"], "attrs", "What's the difference between kafka consumer groups and raft leader leases?"
    )
    assert not neither.final_selection_ids
    assert neither.extras.a3 is not None and len(neither.extras.a3.uncovered) == 1, neither.extras.a3.uncovered


def test_a_sentence_whose_leaning_clause_the_documents_lack_names_only_what_they_lack(
    corpora: dict[str, Settings],
) -> None:
    """ "..., and how do I make PyCharm autocomplete it?" leans on the clause before it, so the sentence is judged
    whole, and a whole asking two things rarely has one chunk's evidence: attrs' docs answer its first clause
    (defaults), so the sentence is not named as uncovered; PyCharm, which no page mentions, is."""
    sp = _run(
        corpora["attrs"], "attrs", "How do I give a field a default value, and how do I make PyCharm autocomplete it?"
    )
    assert sp.final_selection_ids, "the answered clause keeps its evidence"
    assert _section(sp, "Open issues") == ["- The documents do not cover: PyCharm"], sp.s_ctx_md


def test_what_the_user_calls_theirs_is_neither_named_nor_held_against_the_documents(
    corpora: dict[str, Settings],
) -> None:
    """ "our invoice-ledger classes" are the user's own: no page of attrs' docs names them, and none has to. They
    are not named as something the documents lack, and the validator pages that answer are kept; a product the
    user names is still judged ("our Kafka consumer classes": no page treats Kafka)."""
    sp = _run(corpora["attrs"], "attrs", "How do I add a validator to the fields of our invoice-ledger classes?")
    assert any("validator" in line.lower() for line in _section(sp, "Facts")), sp.s_ctx_md
    assert _section(sp, "Open issues") == [], sp.s_ctx_md
    kafka = _run(corpora["attrs"], "attrs", "How do I add a validator to the fields of our Kafka consumer classes?")
    assert any("Kafka" in line for line in _section(kafka, "Open issues")), kafka.s_ctx_md


def test_a_name_the_documents_hold_only_inside_another_word_is_named(corpora: dict[str, Settings]) -> None:
    """attrs' docs say "array" but never Ray: a name is mentioned by a word that starts with it, not where it sits
    inside another word (so Redis was taken as mentioned by a corpus saying "predicate")."""
    sp = _run(corpora["attrs"], "attrs", "How do I add a validator to the fields of classes I send to Ray workers?")
    assert any("Ray" in line for line in _section(sp, "Open issues")), sp.s_ctx_md
    assert any("validator" in line.lower() for line in _section(sp, "Facts")), sp.s_ctx_md
    # Redis stems to "redi", which httpx's "redirect" starts with.
    redis = _run(corpora["httpx"], "httpx", "How do I set a timeout on the requests the client sends to Redis?")
    assert any("Redis" in line for line in _section(redis, "Open issues")), redis.s_ctx_md
    # QUIC stems to "quic", and attrs' "quick" starts with it: a word mentions a term that it stems to.
    quic = _run(corpora["attrs"], "attrs", "How do I add a validator to the fields of classes I send over QUIC?")
    assert any("QUIC" in line for line in _section(quic, "Open issues")), quic.s_ctx_md


@pytest.mark.parametrize(
    "address", ["https://api.fernhill-labs.com/v2", "api.fernhill-labs.com", "ops@fernhill-labs.com's gateway"]
)
def test_an_address_the_user_gives_is_theirs_and_not_named_as_missing(
    corpora: dict[str, Settings], address: str
) -> None:
    """A host name, URL or e-mail address is the user's own (MkDocs' custom-domain page answered "Publish our site
    under docs.acme-tools.io", and the prompt said the documents do not cover docs.acme-tools.io); httpx's source
    never holds it, and need not. A file name shaped like one ("vercel.json") is still a name the documents may
    lack (`test_gate_names.py`)."""
    sp = _run(corpora["httpx"], "httpx", f"How do I give the client a base URL so every request goes to {address}?")
    assert _section(sp, "Open issues") == [], sp.s_ctx_md
    assert any("base_url" in line for line in _section(sp, "Facts")), sp.s_ctx_md


def test_what_the_user_pasted_is_theirs_and_not_named_as_missing(corpora: dict[str, Settings]) -> None:
    """A traceback holds the user's own function and file names (`push_batch`, sync.py): httpx's source never
    holds them, and need not. The question about them is answered by its timeout configuration, and the prompt
    does not claim the documents miss what the user pasted."""
    prompt = (
        "Our sync job fails with this:\n\n```\nTraceback (most recent call last):\n"
        '  File "/app/sync.py", line 41, in main\n    push_batch(batch)\nhttpx.ReadTimeout: timed out\n```\n\n'
        "How do I give the client a longer read timeout so push_batch stops failing?"
    )
    sp = _run(corpora["httpx"], "httpx", prompt)
    assert _section(sp, "Open issues") == [], sp.s_ctx_md
    assert any("timeout" in line.lower() for line in _section(sp, "Facts")), sp.s_ctx_md


@pytest.mark.parametrize(
    "prompt",
    [
        "hw do i make an atribute imutable after the instanse is created?",
        "whats the diffrence between a convertor and a validater in attrs?",
    ],
)
def test_a_misspelt_ask_is_answered_and_quoted_as_written(corpora: dict[str, Settings], prompt: str) -> None:
    """Misspelt words are in no document: held against every chunk as the ask's rarest words, they kept nothing
    and the prompt said the documents do not cover the ask. The gate reads them as the documents spell them;
    the prompt quotes the user as written."""
    sp = _run(corpora["attrs"], "attrs", prompt)
    assert sp.final_selection_ids and _section(sp, "Facts"), sp.s_ctx_md
    assert _section(sp, "Open issues") == [], sp.s_ctx_md
    assert prompt in sp.prompt_ready


def test_a_yes_no_question_joined_to_an_answered_ask_is_named_when_nothing_answers_it(indexed: Settings) -> None:
    """A yes/no question after a join ("..., and can it export the prompt to PDF?") is an ask of its own,
    though it leans on "it": the sample project answers the first half and mentions PDF (ingestion reads
    it) but says nothing of exporting. Every word of it is one the documents hold, so the prompt says what was
    measured (no excerpt answers it), not that the documents lack it."""
    sp = _run(indexed, "demo", "How does RAGstream pause for human review, and can it export the prompt to PDF?")
    assert sp.final_selection_ids, "the answered half keeps its evidence"
    named = _section(sp, "Open issues")
    assert "- No excerpt answers: can it export the prompt to PDF?" in named, sp.s_ctx_md
    assert not any("human review" in line for line in named), "the answered half is not named as uncovered"
    assert "No excerpt answers all of this ask" in sp.system_md
    assert "do not cover" not in sp.system_md + sp.s_ctx_md


def test_a_part_only_unanswered_is_said_so_and_one_naming_what_no_document_holds_is_not_covered(
    corpora: dict[str, Settings],
) -> None:
    """Naming a part "not covered by the documents" when its words are all theirs claimed what nobody measured: on
    blackd's docs, "explain how the plugin should read each possible response status" was named so beside the list
    of response codes that answers it. Such a part is one no excerpt answers; a part naming something no document
    holds (Kubernetes) is not covered, and the prompt's System note says which of the two it found. A part a
    condensed line reaches by A3's rule, read as a sentence, has weak evidence only: "No excerpt answers: how to serve
    the app under the /api path prefix" stood under uvicorn's `--root-path` Fact that answers it, and the sentence's
    evidence cannot tell that line from this near miss ("Frozen-ness of classes is now inherited.", 0.555 against
    0.56), so the prompt says what was measured, whichever it is."""
    sp = _run(
        corpora["attrs"],
        "attrs",
        "How do I add a validator to an attribute, and how do I deploy the validated classes to Kubernetes?",
    )
    named = _section(sp, "Open issues")
    assert any(line.startswith("- The documents do not cover:") and "Kubernetes" in line for line in named), named
    assert "The documents do not cover all of this ask" in sp.system_md
    sp = _run(
        corpora["attrs"],
        "attrs",
        "How do I add a validator to an attribute, and how do I slow the printing of a frozen class in a terminal?",
    )
    part = "how do I slow the printing of a frozen class in a terminal?"
    assert _section(sp, "Open issues") == [f"- Weak evidence only (a line above, no whole excerpt): {part}"], (
        sp.s_ctx_md
    )
    assert "has weak evidence only" in sp.system_md and "do not cover" not in sp.system_md
    assert any("frozen" in line.lower() for line in _section(sp, "Facts")), "the line the evidence rests on is shown"
    assert sp.extras.a4.weakly_evidenced == sp.extras.a3.unanswered == [part], sp.extras.a4


def test_a_line_answering_an_unanswered_clause_of_a_leaning_sentence_is_said_to(corpora: dict[str, Settings]) -> None:
    """A3 judges "is it safe to trust X-Forwarded-For from anyone?" on its own and finds no whole excerpt answering
    it; A4 read the sentence whole ("How do I fix this, ..." leans on the sentences before it) and never weighed its
    lines for that clause, so "No excerpt answers" stood in the prompt under the Constraint that answers it ("as
    anyone can set these headers you must configure which 'clients' you will trust"). A part A3 found unanswered is
    one A4 weighs its lines for: the prompt says the evidence is a line's, never that none answers. (Asked
    "... from anyone?", the chunk holding that Constraint answers the clause whole, `X-Forwarded-For` weighing as one
    word.)"""
    sp = _run(
        corpora["uvicorn"],
        "uvicorn",
        "Our FastAPI app runs under uvicorn behind nginx. request.client.host always shows 127.0.0.1 instead of the "
        "visitor IP. How do I fix this, and is it safe to trust X-Forwarded-For from any machine?",
    )
    part = "is it safe to trust X-Forwarded-For from any machine?"
    assert sp.extras.a3.unanswered == [part], sp.extras.a3
    assert f"- Weak evidence only (a line above, no whole excerpt): {part}" in _section(sp, "Open issues"), sp.s_ctx_md
    assert not any(line.startswith("- No excerpt answers") for line in _section(sp, "Open issues")), sp.s_ctx_md
    assert any("anyone can set these headers" in line for line in sp.s_ctx_md.splitlines()), sp.s_ctx_md


@pytest.mark.parametrize(
    ("prompt", "judged"),
    [
        ("I keep getting this:\n\n```\nerror: run 7f3a is locked\n```\n\nWhat does it mean?", []),
        ("let v = vec![1]; v.iter().map(f);\n\nExplain why nothing gets printed here.", []),
        ("We can cache with no-store or with private, max-age=0.\n\nWhich one should I put on the account page?", []),
        ("The reranker and the gate score chunks.\n\nDon’t they both score chunks?", []),
        ("The reranker and the gate score chunks.\n\nDoesn't it decide alone?", []),
        ("Our deploy file:\n\n```yaml\nreplicas: 1\n```\n\nWhat would you fix before it goes live?", []),
        ("Our deploy file:\n\n```yaml\nreplicas: 1\n```\n\nWhat would you fix before we roll it out?", []),
        ("Two scripts follow.\n\n```sh\nrm -rf $D\n```\n\nPlease check both and send a tidier version of each.", []),
        ("let v = vec![1]; v.iter().map(f);\n\nExplain why nothing gets printed here and show the simplest fix.", []),
        (
            "Should I use StreamingResponse or FileResponse? What does each one give me in terms of headers?",
            ["Should I use StreamingResponse or FileResponse?"],
        ),
        (
            "There are three things I can't work out yet.\n\nHow do I rotate the signing keys?",
            ["How do I rotate the signing keys?"],
        ),
        (
            "Our config:\n\n```json\n{}\n```\n\nWhat would you change before we ship it, and how are secrets rotated?",
            ["how are secrets rotated?"],
        ),
        (
            "We redirect visitors by their Accept-Language header. Is that considered good practice, and how do I"
            " set fallbackLng in i18next?",
            ["how do I set fallbackLng in i18next?"],
        ),
        ("Our workers retry every failed job at once.\n\nIs that safe with a thousand workers?", []),
        (
            "How do I fix a Kerberos ticket that keeps expiring?",
            ["How do I fix a Kerberos ticket that keeps expiring?"],
        ),
        (
            "Which hosts does the gateway forward to, and does that need TLS?",
            ["Which hosts does the gateway forward to"],
        ),
        (
            "How do I generate Python stubs from a .proto file and serve them with a grpcio server?",
            ["How do I generate Python stubs from a .proto file and serve them with a grpcio server?"],
        ),
    ],
)
def test_a_question_about_text_the_user_gave_is_not_judged_alone_but_a_whole_ask_is(
    settings: Settings, prompt: str, judged: list[str]
) -> None:
    """ "What does it mean?" under a pasted error asks about the user's own text, not a topic the documents
    could lack, so it is never named as uncovered; nor is an ask naming only the work asked of it ("what would
    you fix", "check both", "the simplest fix" beside "here", "three things"). A sentence that names its subject
    before leaning on it ("... stubs ... serve them") or a topic beside the work ("fix a Kerberos ticket") is
    an ask of its own."""
    assert asking_parts(preprocessed(prompt, settings), settings, standalone=True) == judged


def test_the_users_own_option_names_are_named_not_the_ask_they_stand_in(corpora: dict[str, Settings]) -> None:
    """ "Make --json and --yaml mutually exclusive on our export command" asks what cobra's
    MarkFlagsMutuallyExclusive does; the options are the user's, and no file of cobra's holds them. Weighed with
    them, the ask (the chunks kept for it, at an English-to-Go cosine of 0.13) was named not covered, whole, and
    the condensed context held nothing else. The options are named; the ask is not."""
    prompt = (
        '{"task": "Make --json and --yaml mutually exclusive on our export command", '
        '"context": "cobra 1.8, both are bool flags", "output": "the Go lines to add"}'
    )
    sp = _run(corpora["cobra"], "cobra", prompt)
    issues = _section(sp, "Open issues")
    assert "- The documents do not cover: --json" in issues and "- The documents do not cover: --yaml" in issues
    assert not any("mutually exclusive" in line for line in issues), issues
    assert any("flag_groups.go" in line for line in _section(sp, "Facts")), sp.s_ctx_md


def test_a_documented_field_is_weighed_by_what_it_says_not_by_its_types_name(corpora: dict[str, Settings]) -> None:
    """Every field of cobra's `Command` is a line of "type `Command`", and weighed with that name every field matched
    an ask about a command: the undocumented-sounding ones filled the Facts and `Hidden`, the answer, was left out."""
    sp = _run(
        corpora["cobra"],
        "cobra",
        "I want an internal debug subcommand that still runs but never shows up in the help output. "
        "Which field of the cobra Command do I set?",
    )
    assert any("`Hidden bool`: Hidden defines" in line for line in _section(sp, "Facts")), sp.s_ctx_md

"""Offline A4 answer first (issue 36, deliverable 1): for each part of the ask, the sentences or list items
that answer it, in the ask's order; never a heading, label, bare link or cross-reference alone; a lead-in
with its items; code facts that say what a definition does; no filler lines. What answers is often not a
plain sentence: a command under the comment that says what it does, a table's row, a statement in bold, the
value a recommendation quotes, a sentence leaning on the one before it, a parameter in a docstring; on a
project in real Chroma, the condensed context carries those."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.app.controller import AppController
from ragstream.code.symbols import Symbol, symbols_to_metadata
from ragstream.condensing.condenser import a3_evidence, render_sctx, weakly_evidenced, within_share
from ragstream.condensing.extractive import (
    Line,
    condense_extractively,
    is_prose,
    references_of,
    sentences_of,
    stands_alone,
)
from ragstream.evaluation.checks import universal, verbatim_support
from ragstream.gate.evidence import stemmed_terms
from ragstream.ingestion.manager import IngestionManager
from ragstream.rendering.excerpts import shown_excerpts
from ragstream.rendering.parts import head_parts
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.state import A4Report, Chunk, Span, SuperPrompt
from ragstream.text.chunk_ids import CITATION
from tests.helpers import one_chunk, small_chunks_run


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return load_settings(overrides={"data_dir": str(tmp_path_factory.mktemp("first")), "llm.provider": "local"})


def test_a_github_alerts_marker_is_no_part_of_the_sentence_it_heads() -> None:
    """MDN writes notes as GitHub alerts; "> [!NOTE] > Some Web applications may use the `308 Permanent Redirect` in a
    non-standard way ..." was a line, its marker read as the sentence's first words. The marker heads the quote; the
    quote's sentences are the lines."""
    doc = (
        "The status code means the page moved for good.\n\n> [!NOTE]\n> Some applications use the code in a "
        "non-standard way for other purposes.\n\n>[!warning]\n> Never send the header twice in one response.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("308.md", doc))] == [
        "The status code means the page moved for good.",
        "> Some applications use the code in a non-standard way for other purposes.",
        "> Never send the header twice in one response.",
    ]


def test_a_numbered_heading_is_never_a_sentence() -> None:
    """Playwright's "### 2. Clean Up Old Traces" was a Fact, "Clean Up Old Traces": the heading's number read as a
    sentence's end, and what followed it as a sentence. A heading's line is no sentence, whatever it holds."""
    doc = (
        "## Steps\n\n### 1. Record a Trace Before Filing the Report\n\nRecording a trace takes one command.\n\n"
        "### 2. Clean Up Old Traces Every Week\n\nTraces can fill the disk over many runs.\n\n"
        "#### Step 3. Share the Folder With Your Team\n\nThe folder can be zipped and attached to the report.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("tracing.md", doc))] == [
        "Recording a trace takes one command.",
        "Traces can fill the disk over many runs.",
        "The folder can be zipped and attached to the report.",
    ]


def test_labels_links_tags_and_cross_references_are_never_a_line_alone(base: Settings) -> None:
    """A link reference definition block ("[docs_dir]: user-guide/configuration.md#docs_dir") is a link's target:
    it was a Fact of MkDocs' deploying page, as reStructuredText's ".. _First Steps with Celery: https://..." was of
    Flask's; a line opening on a bracketed phrase inside a paragraph is prose. A sentence that sends the reader to a
    link is no line, whatever the link's text holds ("Printing: ...") and whatever the link is for ("for a detailed
    explanation"): on Typer's docs, "You will learn how in [CLI Arguments with Environment Variables](...)." and
    "Read the [Environment Variables guide](...) for a detailed, cross-platform explanation" were Facts for "How do I
    make a CLI option read its value from an environment variable?". A list item that only names a feature, every
    word capitalized ("Keep-Alive & Connection Pooling", requests' feature list), is a label too."""
    doc = """# Citing data

**If no DOI is issued:**

**Note:** Keys must be rotated every ninety days by the owner.

You can see more details in [Starlette's official docs](https://www.starlette.io/background/).

[HTTP range requests](/en-US/docs/Web/HTTP/Guides/Range_requests) guide

The table below compares the features of each storage mode.

Listing 20-2 shows how to create a raw pointer to an arbitrary location in memory.

In Figure 3, the request goes through the proxy first.

For an overview of how to work with exceptions, see [Exceptions (Quickstart)](quickstart.md#exceptions).

If you encounter issues when setting up proxies, please refer to our [Troubleshooting guide](../guide.md#proxies).

You will learn how in [CLI Arguments with Environment Variables](tutorial/arguments/envvar.md).

Read the [Environment Variables guide](https://tiangolo.com/guides/environment-variables/) for a detailed explanation.

If you need a refresher, check the section in [Printing: "Standard Output"](printing.md#standard-output).

Read the file with `open()` and pass it to [parse](parse.md) to get a tree.

HTTPX supports [HTTP proxies](https://en.wikipedia.org/wiki/Proxy_server) through the `proxy` parameter.

<Listing number="2-2" caption="The output from running cargo build">

_**Disable Introspection & GraphiQL - JavaScript**_

**Disable introspection on every production server, whatever it serves.**

- : Browsers compress their messages before sending them over the network.

- Keep-Alive & Connection Pooling
- Sessions with Cookie Persistence
- Browser-style TLS/SSL Verification

Cargo uses only the versions of the dependencies you specified.

There are two
[types of GitHub Pages sites]: Project Pages sites, and User and Organization Pages sites.

[Installation Guide]: user-guide/installation.md
[docs_dir]: user-guide/configuration.md#docs_dir "docs_dir"
"""
    found = [s.text for s in sentences_of(one_chunk("doc.md", doc)) if s.listed or stands_alone(s.text, base.condenser)]
    assert found == [
        "Keys must be rotated every ninety days by the owner.",
        "Read the file with `open()` and pass it to [parse](parse.md) to get a tree.",
        "HTTPX supports [HTTP proxies](https://en.wikipedia.org/wiki/Proxy_server) through the `proxy` parameter.",
        "**Disable introspection on every production server, whatever it serves.**",
        "Browsers compress their messages before sending them over the network.",
        "Cargo uses only the versions of the dependencies you specified.",
        "There are two [types of GitHub Pages sites]: Project Pages sites, and User and Organization Pages sites.",
    ]
    # reStructuredText's target, its ".. " read as the end of the sentence before (Flask's Celery page)
    assert not is_prose("_First Steps with Celery: https://celery.readthedocs.io/en/latest/first-steps.html")
    assert is_prose("_Note:_ keep the factory small.")


def test_a_chunks_last_sentence_ending_in_a_code_span_may_be_cut_and_is_no_line() -> None:
    """Issue 40 (rust-book): a chunk ends "The iterator is stored in the `v1_iter`", its sentence goes on
    "variable." in the next chunk; the closing code span read as the sentence's end."""
    cut = "In Rust, iterators are lazy, so this code by itself does nothing.\n\nThe iterator is stored in the `v1_iter`"
    assert [s.text for s in sentences_of(one_chunk("doc.md", cut))] == [
        "In Rust, iterators are lazy, so this code by itself does nothing."
    ]
    whole = cut + " variable."
    assert "The iterator is stored in the `v1_iter` variable." in [
        s.text for s in sentences_of(one_chunk("d.md", whole))
    ]


def test_a_lead_in_comes_with_its_items_or_its_short_command(base: Settings) -> None:
    doc = """Those superpowers include the ability to:

1. Dereference a raw pointer.
1. Call an unsafe function or method.

To see the output of passing tests as well, pass `--show-output`:

```console
$ cargo test -- --show-output
```

To see the output of passing tests too, show it:

```console
$ cargo test -- --show-output
running 2 tests
test tests::this_test_will_pass ... ok
test tests::this_test_will_fail ... FAILED
```

Its hook must have this signature:

```{eval-rst}
.. function:: hook(cls: type) -> list
```
"""
    found = [s.text for s in sentences_of(one_chunk("doc.md", doc)) if s.listed or stands_alone(s.text, base.condenser)]
    assert found == [
        "Those superpowers include the ability to: 1. Dereference a raw pointer. 1. Call an unsafe function or method.",
        "To see the output of passing tests as well, pass `--show-output`: "
        "```console $ cargo test -- --show-output ```",
        "To see the output of passing tests too, show it: ```console $ cargo test -- --show-output",  # not its output
    ]


def test_an_item_leading_in_to_a_nested_list_comes_with_its_own_items_only() -> None:
    """A list item that leads in to a nested list ends where the outer list's next item begins: the items after it
    are lines of their own, not part of its list."""
    doc = """## Conditions of a simple request

- The only media types allowed for the Content-Type header are:
  - `application/x-www-form-urlencoded`
  - `multipart/form-data`
  - `text/plain`
- No event listeners are registered on the upload object used in the request.
- No readable stream object is used in the body of the request.
"""
    found = [s.text for s in sentences_of(one_chunk("cors.md", doc))]
    assert (
        "The only media types allowed for the Content-Type header are: - `application/x-www-form-urlencoded` - "
        "`multipart/form-data` - `text/plain`" in found
    )
    assert "No event listeners are registered on the upload object used in the request." in found
    assert "No readable stream object is used in the body of the request." in found


KEY_ROTATION = """# Rotating signing keys

Signing keys are rotated every ninety days by the platform team, who also keep the rotation log up to date.
To rotate a signing key without breaking anyone's session, do all of the following:

- Publish the new public key a day before signing anything with it.
- Keep the old public key until every token it signed has expired.
- Revoke the old private key once no service signs with it any more.
"""


SIGNING = """# Signing a release

Artifacts are signed by the build machine with the current key, then published.
To sign an artifact by hand after a failed build, run the release signing tool with:

```shell-session
$ keys sign --key current dist/app.tar.gz
```
"""


def test_a4_reads_a_chunk_ending_on_a_lead_in_with_the_list_its_excerpt_shows(tmp_path) -> None:
    """The excerpt of a chunk that stops on a lead-in always shows the list after it (it is closed before the
    budget is filled), so A4 reads that list too: the lead-in is a line with its items, not a promise without
    them, even where the chunk holding the items is not among A4's."""
    from ragstream.stages.a4 import whole
    from ragstream.stages.io import StageEnv
    from ragstream.stages.options import RunOptions

    settings = load_settings(
        overrides={
            "data_dir": str(tmp_path),
            "llm.provider": "local",
            "chunking.chunk_size": 200,
            "chunking.chunk_overlap": 0,
        }
    )
    raw = settings.data_dir / "doc_raw" / "keys"
    raw.mkdir(parents=True)
    (raw / "keys.md").write_text(KEY_ROTATION, encoding="utf-8")
    IngestionManager(settings).ingest("keys")
    services = Services(settings)
    first = services.searcher("keys").snapshot().chunks[0]
    assert "- Publish" not in first.text  # the chunk stops inside the lead-in
    [read] = whole(SuperPrompt(), StageEnv(services, RunOptions(project="keys")))([first])
    assert read.id == first.id
    lead_in = next(s for s in sentences_of(read) if s.text.startswith("To rotate a signing key"))
    assert lead_in.items and lead_in.text.endswith("Revoke the old private key once no service signs with it any more.")
    (raw / "sign.md").write_text(SIGNING, encoding="utf-8")  # a lead-in to a code block: the block is not read
    IngestionManager(settings).ingest("keys")
    stops = next(c for c in Services(settings).searcher("keys").snapshot().chunks if c.text.rstrip().endswith("with:"))
    [read] = whole(SuperPrompt(), StageEnv(services, RunOptions(project="keys")))([stops])
    assert read.text.rstrip().endswith("with:") and "```" not in read.text


BACKUPS = """# Backups

The backup job runs every night at two in the morning and writes to the archive volume.
Backups are kept for thirty days, after which they are deleted.
The archive volume is mounted read-only on every other host.
Operators receive a mail when a backup job fails.
"""
KEYS = """# Keys

The service reads its API keys from the environment at start-up.
To rotate the API keys, create a new key, deploy it, and revoke the old key after one hour.
Personal data at rest must be encrypted with the current key.
Key names are shown in the admin console.
"""


def test_each_part_of_the_ask_is_answered_first_in_the_asks_order_and_rules_stay_constraints(
    base: Settings,
) -> None:
    services = Services(base)
    chunks = [one_chunk("backups.md", BACKUPS), one_chunk("keys.md", KEYS)]  # the selection's order: backups first
    parts = ["How do I rotate the API keys?", "How long are backups kept?", "Must personal data be encrypted?"]
    settings = base.condenser.model_copy(update={"per_part": 1})
    lines = condense_extractively(
        parts, chunks, services.embedder.embed_together, settings, parts, a3_evidence(base.gate, {})
    )
    core = [line for line in lines if line.core]
    assert [line.text for line in core] == [
        "To rotate the API keys, create a new key, deploy it, and revoke the old key after one hour.",
        "Backups are kept for thirty days, after which they are deleted.",
        "Personal data at rest must be encrypted with the current key.",
    ]
    assert [line.part for line in lines] == sorted(line.part for line in lines)  # in the ask's order
    assert core[2].section == "constraints"
    tight = base.condenser.model_copy(update={"max_share": 0.01, "min_tokens": 0})
    kept = within_share(lines, chunks, services.budget, tight)
    assert [line.text for line in kept] == [line.text for line in core]  # the answer stays, whatever the budget


def test_an_empty_section_is_left_out_and_nothing_says_none_found() -> None:
    text = render_sctx({"facts": [("Backups are kept for thirty days.", ["backups.md@0000000000#0"])]})
    assert text == "### Facts\n- Backups are kept for thirty days. [backups.md@0000000000#0]"
    assert render_sctx({}) == ""
    assert render_sctx({}, ["rotating keys"]) == "### Open issues\n- The documents do not cover: rotating keys"


def test_a_lead_in_that_answers_makes_its_list_answer_though_the_items_dilute_it(base: Settings) -> None:
    """blackd's "can produce the following response codes:" answers "how the plugin should read each possible
    response status"; read with its four items (bodies, syntax errors, the blackened code) the line's evidence fell
    under the rule and the prompt said no excerpt answers the part, above that very list. A lead-in with its items
    is judged as the better of the two, the whole and the lead-in alone."""
    doc = """# Server

Apart from the above, `blackd` can produce the following response codes:

- `HTTP 204`: If the input is already well-formatted. The response body is empty.
- `HTTP 200`: If formatting was needed on the input. The response body contains the blackened Python code.
- `HTTP 400`: If the input contains a syntax error. Details of the error are returned in the response body.
- `HTTP 500`: If there was any other kind of error while trying to format the input.
"""
    services = Services(base)
    part = "explain how the plugin should read each possible response status."
    gate = base.gate.model_copy(update={"min_evidence": 0.5})
    rarity = dict.fromkeys(stemmed_terms(part, gate), 1.0)
    chunk = one_chunk("server.md", doc)
    lines = condense_extractively(
        [part], [chunk], services.embedder.embed_together, base.condenser, [part], a3_evidence(gate, rarity)
    )
    listed = [line for line in lines if line.text.startswith("Apart from the above")]
    assert listed and listed[0].core and listed[0].answers == (0,), lines
    assert "`HTTP 500`" in listed[0].text


def test_a_part_only_a_line_answers_has_weak_evidence_and_the_system_note_says_so(base: Settings) -> None:
    """A part no whole excerpt covers but one sentence of one reaches by A3's rule was said to be answered by no
    excerpt, under the Fact that answers it (uvicorn's `--root-path` line for "how to serve the app under the /api
    path prefix"): it has weak evidence only, and the System note asks the reader to check the line; a part no line
    reaches stays unanswered, and one naming what no document holds stays not covered."""
    chunk = "uvicorn.md@0000000000#0"
    root = "`--root-path <str>` - Set the ASGI `root_path` for applications submounted below a given URL path."
    parts = ["which proxies does it trust?", "how to serve the app under the /api path prefix"]
    lines = [
        Line("facts", "Trusts 127.0.0.1 by default.", chunk, 0.7, "", 0, True, (0,)),
        Line("facts", root, chunk, 0.56, "", 1, True, (1,)),
    ]
    unanswered = ["how to serve the app under the /api path prefix", "how do I rotate logs?"]
    assert weakly_evidenced(lines, parts, unanswered) == [parts[1]]
    assert weakly_evidenced(lines[:1], parts, unanswered) == []
    text = render_sctx({"facts": [(root, [chunk])]}, [*unanswered, "Kafka"], unanswered, [parts[1]])
    assert text.splitlines()[-3:] == [
        f"- Weak evidence only (a line above, no whole excerpt): {parts[1]}",
        "- No excerpt answers: how do I rotate logs?",
        "- The documents do not cover: Kafka",
    ]
    sp = SuperPrompt(raw_prompt="q")
    for uncovered, weak, note in (
        ([parts[1]], [parts[1]], "has weak evidence only"),
        ([parts[1], "how do I rotate logs?"], [parts[1]], "No excerpt answers all of this ask"),
        ([parts[1], "Kafka"], [parts[1]], "The documents do not cover all of this ask"),
    ):
        report = A4Report(agent="offline", uncovered=uncovered, unanswered=unanswered, weakly_evidenced=weak)
        sp.extras.a4 = report
        assert note in " ".join(head_parts(sp).notes()), (uncovered, weak)


def test_commands_table_rows_bold_statements_and_recommended_values_are_lines(base: Settings) -> None:
    doc = """# Sessions

Save the state once you are logged in, then load it in later runs.

```bash
# Save cookies and storage to a file
webctl state-save auth.json

# Restore state from the file
# written above
webctl state-load auth.json
```

| Header | Value and purpose |
| --- | --- |
| `X-Frame-Options` | `DENY`, so no other site can show the pages in a frame |

- **Change the filename to something generated by the application**
- **Uploads**

#### Recommendation

Serve uploaded files from a separate domain.

> `Content-Disposition: attachment`
"""
    found = [s.text for s in sentences_of(one_chunk("doc.md", doc)) if s.listed or stands_alone(s.text, base.condenser)]
    assert found == [
        "Save the state once you are logged in, then load it in later runs.",
        "**Change the filename to something generated by the application**",  # a bold heading ("Uploads") is not
        "Serve uploaded files from a separate domain. > `Content-Disposition: attachment`",
        "# Save cookies and storage to a file webctl state-save auth.json",  # verbatim, as every line
        "# Restore state from the file # written above webctl state-load auth.json",  # a comment's lines go together
        "`X-Frame-Options` | `DENY`, so no other site can show the pages in a frame",  # a row, never the header
    ]


BROWSER_CLI = """# Browser sessions

The `webctl` tool drives a browser from the command line. Each session has its own cookies, local storage and open tabs.

## Saving and restoring state

Logging in again for every run is slow. Save the state once you are logged in, then load it in later runs.

```bash
# Save cookies and storage to a file
webctl state-save auth.json

# Load the saved state into a new session
webctl state-load auth.json
webctl open https://example.com/dashboard
```

The state file holds session tokens. However, it is not encrypted. Keep it out of version control.

## Recording

```bash
# Record every action as a video
webctl video-start demo.webm
webctl video-stop
```
"""
HEADERS = """# Security headers

Send these headers on every HTML response of the portal.

| Header | Value and purpose |
| --- | --- |
| `X-Frame-Options` | `DENY`, so no other site can show the pages in a frame (clickjacking) |
| `X-Content-Type-Options` | `nosniff`, so browsers keep the declared content type |
| `Referrer-Policy` | `strict-origin-when-cross-origin`, so full URLs stay on the site |

## Uploads

Files that users upload need these checks:

- **Allow only the extensions the business needs**
- **Change the filename to something generated by the application**
- **Set a file size limit**

#### Recommendation

Serve uploaded files from a separate domain.

> `Content-Disposition: attachment`
"""
FORMATTING = '''"""Help text formatting for the command line tool."""


class HelpFormatter:
    """Lays out the help pages of a command.

    The formatter writes usage, options and epilog in sections, each indented under its heading.

    :param indent: how many spaces each nested section is indented by.
    :param wrap_width: the column at which help text is wrapped. When not given, the
                       terminal's width is used, but at most 78 columns.
    :param epilog: text shown after the options.
    """

    def __init__(self, indent: int = 2, wrap_width: int | None = None, epilog: str = "") -> None:
        self.indent = indent
        self.wrap_width = wrap_width
        self.epilog = epilog

    def write_usage(self, program: str, arguments: str) -> str:
        """The usage line: the program's name, then its arguments."""
        return f"Usage: {program} {arguments}"


def render_help_page(
    program: str,
    arguments: str,
    page_width: int = 78,
    indent: int = 2,
    epilog: str = "",
    color: bool = False,
) -> str:
    return HelpFormatter(indent, page_width, epilog).write_usage(program, arguments)
'''


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A project of a CLI's docs, a security page and a Python module, ingested into real Chroma."""
    settings = load_settings(overrides={"data_dir": str(tmp_path_factory.mktemp("tools")), "llm.provider": "local"})
    raw = settings.data_dir / "doc_raw" / "tools"
    raw.mkdir(parents=True)
    for name, text in (("browser-cli.md", BROWSER_CLI), ("headers.md", HEADERS), ("formatting.py", FORMATTING)):
        (raw / name).write_text(text, encoding="utf-8")
    IngestionManager(settings).ingest("tools")
    return settings


def _condensed(settings: Settings, prompt: str) -> list[str]:
    ctl = AppController(settings)
    ctl.select_project("tools")
    sp = ctl.run_full_pipeline(prompt, pause_after="none")
    return [line for line in sp.s_ctx_md.splitlines() if line.startswith("- ")]


def test_the_command_that_answers_comes_with_the_comment_that_says_what_it_does(tools: Settings) -> None:
    lines = _condensed(tools, "How do I save the browser's login state and load it again in a later run?")
    saving = "- # Save cookies and storage to a file webctl state-save auth.json"
    assert any(line.startswith(saving) for line in lines), lines


def test_in_a_shell_session_a_comment_describes_its_commands_not_their_output() -> None:
    """Typer's docs show terminal sessions with "//" comments over commands and over what they print; a comment with
    the output under it ("// Some weird broken error message ⛔️" over "(eval):1: command not found: ...") was a Fact.
    In a block with "$ " command lines a comment comes with its commands only; elsewhere with the code under it."""
    doc = (
        "It will look something like:\n\n```console\n// Run it normally\n$ typer ./main.py run --name Camila\n\n"
        "// See the extra message printed\nValidating name\nHello Camila\n\n// Some weird broken error message\n"
        "(eval):1: command not found: Validating\n```\n\n```python\n# Save state to a file\nstate.save(path)\n```\n"
    )
    found = [s.text for s in sentences_of(one_chunk("callback.md", doc)) if s.code]
    assert found == [
        "// Run it normally $ typer ./main.py run --name Camila",
        "# Save state to a file state.save(path)",
    ]


CONFLICTING_FLAGS = """\
To keep a page out of every cache, send the store flag:

```http
Cache-Policy: no-store
```

When flags conflict, the strictest one wins, so listing all of them adds nothing:

```http example-bad
# conflicting flags
Cache-Policy: private, revalidate, no-store

# acts as the store flag alone
Cache-Policy: no-store
```

A list that names the same flag twice is read as one:

```http
# the flag named twice
Cache-Policy: no-store, no-store

# equivalent to
Cache-Policy: no-store
```

Compiling this fails, since the borrow outlives its owner:

```rust,ignore,does_not_compile
// keep a reference to the buffer
let kept = &buffer;
```

```compile_fail
let kept = &buffer;
```
"""


def test_code_its_document_marks_as_wrong_or_a_comment_running_into_it_is_never_a_line(base: Settings) -> None:
    """MDN marks an example of what not to send "```http example-bad"; its "# equivalent to" over
    `Cache-Control: no-store` was a Fact for "no-cache or no-store?", alone and as a recommendation. Code its document
    marks as wrong or failing (an info string's "example-bad", "does_not_compile", "compile_fail") gives no line and
    comes with no sentence; a comment ending on a word that goes on into the code under it ("# equivalent to") says
    what that code is to code it does not hold, and is no line either. The good example's lines stay."""
    question = "Which cache policy flags keep a page out of caches, and can I combine them?"
    texts = _lines_of(base, CONFLICTING_FLAGS, question)
    joined = " | ".join(texts)
    assert "To keep a page out of every cache, send the store flag: ```http Cache-Policy: no-store ```" in texts, texts
    assert "# the flag named twice Cache-Policy: no-store, no-store" in texts, texts
    for wrong in ("# conflicting flags", "# acts as the store flag", "# equivalent to", "keep a reference", "&buffer"):
        assert wrong not in joined, (wrong, texts)


def test_a_header_written_one_parameter_per_line_is_quoted_whole_when_it_is_short(tools: Settings) -> None:
    """A header Black wrote one parameter per line was named by its parameters' names alone, for its six lines:
    tenacity's `before_sleep_log(logger, log_level, exc_info, sec_format)` hid `exc_info: bool = False`, the answer
    to "including the exception's full traceback". Its length decides, not its line count."""
    lines = _condensed(tools, "Which arguments does render_help_page take to set the page width and the colors?")
    whole = (
        "- function `render_help_page(program: str, arguments: str, page_width: int = 78, indent: int = 2, epilog: "
        'str = "", color: bool = False) -> str`'
    )
    assert any(line.startswith(whole) for line in lines), lines


def test_a_definition_whose_header_is_too_long_to_quote_is_named_with_its_parameters(base: Settings) -> None:
    """A header too long to quote named the function alone, saying nothing of what it takes: its parameters' names
    say that. A comment closing a header's line ("# type: ignore[override]") is said to the tools: no part of it."""
    source = (
        "    def __init__(\n        self,\n"
        "        multiplier: typing.Union[int, float] = 1,\n        max: _utils.time_unit_type = _utils.MAX_WAIT,\n"
        "        exp_base: typing.Union[int, float] = 2,\n        min: _utils.time_unit_type = 0,\n    ) -> None:\n"
        "        self.multiplier = multiplier\n\n"
        "    def __call__(  # type: ignore[override]\n        self, retry_state: RetryCallState\n    ) -> float:\n"
        "        return self.multiplier * 2\n"
    )
    chunk = _code_chunk(
        source,
        10,
        [
            Symbol("method", "wait_exponential.__init__", 10, 17, ""),
            Symbol("method", "wait_exponential.__call__", 19, 22, ""),
        ],
    )
    ask = "Which parameters does wait_exponential take for its multiplier and maximum, and what does calling it return?"
    found = _code_lines(base, ask, [chunk])
    texts = [line.text for line in found]
    assert "method `wait_exponential.__init__(multiplier, max, exp_base, min)` (retrying.py:10-17)" in texts, texts
    assert "method `wait_exponential.__call__(self, retry_state: RetryCallState) -> float` (retrying.py:19-22)" in texts


def test_a_definition_cut_between_chunks_is_named_from_the_chunk_holding_its_header(base: Settings) -> None:
    """The chunk holding the end of `before_sleep_log`'s body came first, and its line named the function alone,
    "(part shown)", while the chunk before it, holding its header, was there too: the line comes from that one."""
    head = _code_chunk(
        "def before_sleep_log(\n    logger: LoggerProtocol,\n    log_level: int,\n    exc_info: bool = False,\n"
        ') -> Callable[["RetryCallState"], None]:\n'
        '    """Before sleep strategy that logs to some logger the attempt."""\n'
        "    def log_it(retry_state):\n        msg = describe(retry_state)\n",
        30,
        [Symbol("function", "before_sleep_log", 30, 48, "Before sleep strategy that logs to some logger the attempt.")],
    )
    body = _code_chunk(
        "        if exc_info and retry_state.outcome.failed:\n            msg += format_exception(ex)\n"
        "        logger.log(log_level, msg)\n\n    return log_it\n",
        38,
        [
            Symbol(
                "function",
                "before_sleep_log",
                30,
                48,
                "Before sleep strategy that logs to some logger the attempt.",
                part=True,
            )
        ],
    )
    body = body.model_copy(update={"id": "retrying.py@0000000000#1", "chunk_index": 1})
    found = _code_lines(base, "Log each retry with the exception's traceback before sleeping", [body, head])
    named = [line.text for line in found if "before_sleep_log" in line.text]
    assert len(named) == 1, named
    assert named[0].startswith(
        'function `before_sleep_log(logger: LoggerProtocol, log_level: int, exc_info: bool = False) -> Callable[["Retr'
    ), named


def _code_lines(base: Settings, ask: str, chunks: list[Chunk]) -> list[Line]:
    """The condensed lines of code chunks for one ask, every candidate over any relevance."""
    settings = base.condenser.model_copy(update={"min_relevance": -1.0})
    return condense_extractively([ask], chunks, Services(base).embedder.embed_together, settings)


def _code_chunk(
    text: str, first_line: int, symbols: list[Symbol], path: str = "retrying.py", language: str = "python"
) -> Chunk:
    return one_chunk(path, text).model_copy(
        update={
            "metadata": {
                "kind": "text",
                "language": language,
                "line_start": first_line,
                "line_end": first_line + text.count("\n"),
                "symbols": symbols_to_metadata(symbols),
            }
        }
    )


def test_an_undocumented_definition_internal_to_its_module_is_no_line(base: Settings) -> None:
    """tenacity's `_begin_iter`, `_run_wait` and `_add_action_func` were Facts, signature alone, for "retry only when my
    function returns None": helpers of the code around them, nothing a user calls. An undocumented definition its
    language marks internal (a leading underscore, a private class's method; Go's lower-case initial) gives no line;
    a documented one, and an undocumented public one (its signature says how to call it), do."""
    source = (
        "class Retrying:\n    def __init__(self, stop: Stop, wait: Wait) -> None:\n        self.stop = stop\n\n"
        "    def _begin_iter(self, retry_state: RetryCallState) -> None:\n        self.iter_state.reset()\n\n"
        "    def _after_hook(self, retry_state: RetryCallState) -> None:\n"
        '        """Call the after hook once the attempt is over."""\n\n'
        "class _Sleeper:\n    def __init__(self, seconds: float) -> None:\n        self.seconds = seconds\n"
    )
    chunk = _code_chunk(
        source,
        1,
        [
            Symbol("class", "Retrying", 1, 10, ""),
            Symbol("method", "Retrying.__init__", 2, 3, ""),
            Symbol("method", "Retrying._begin_iter", 5, 6, ""),
            Symbol("method", "Retrying._after_hook", 8, 9, "Call the after hook once the attempt is over."),
            Symbol("method", "_Sleeper.__init__", 12, 13, ""),
        ],
    )
    found = _code_lines(base, "How does Retrying begin each attempt, sleep and call its hooks?", [chunk])
    texts = " | ".join(line.text for line in found)
    assert "`Retrying.__init__(self, stop: Stop, wait: Wait) -> None`" in texts, texts
    assert "`Retrying._after_hook(self, retry_state: RetryCallState) -> None`" in texts, texts
    assert "_begin_iter" not in texts and "_Sleeper" not in texts, texts
    source = "func helpPresent(cmd *Command) bool {\n\treturn false\n}\n"
    go = _code_chunk(source, 1, [Symbol("function", "helpPresent", 1, 3, "")], "args.go", "go")
    assert not _code_lines(base, "Is the help flag present on the command?", [go])


def test_a_header_the_chunk_cuts_names_the_parameters_it_holds_and_a_bare_name_is_no_line(base: Settings) -> None:
    """A long parameter list split between chunks left the line "method `Retrying.__init__` (retrying.py:10-40)",
    saying nothing of what it takes; a chunk holding only the end of a body (no header, no docstring) gave one
    naming the method alone. The first names the parameters the chunk holds, then "..."; the second is no line. An
    overload stub's header ends at its "...": it is quoted."""
    cut = _code_chunk(
        "    def __init__(\n        self,\n        sleep: Callable[[float], None] = sleep,\n"
        "        stop: StopBase = stop_never,\n        wait: WaitBase = wait_none(),\n",
        10,
        [Symbol("method", "Retrying.__init__", 10, 40, "")],
    )
    tail = _code_chunk(
        "            self.sleep(do)\n        else:\n            return do\n",
        60,
        [Symbol("method", "Retrying.__call__", 41, 62, "", part=True)],
    )
    stub = _code_chunk(
        "@overload\ndef retry(func: WrappedFn) -> WrappedFn: ...\n", 70, [Symbol("function", "retry", 70, 71, "")]
    )
    found = _code_lines(base, "How do I configure the retrying object's sleep, stop and wait?", [cut, tail, stub])
    texts = [line.text for line in found]
    assert "method `Retrying.__init__(sleep, stop, wait, ...)` (retrying.py:10-40)" in texts, texts
    assert "function `retry(func: WrappedFn) -> WrappedFn` (retrying.py:70-71)" in texts, texts
    assert not any("Retrying.__call__" in text for text in texts), texts


def test_an_undocumented_signature_that_takes_and_returns_nothing_is_no_line(base: Settings) -> None:
    """On httpx's source, "Which exception do I get reading a streaming response before read()?" listed
    "method `ResponseNotRead.__init__(self) -> None`" beside each exception class: it says nothing the class's line
    does not. A signature that takes a parameter, or returns something, still says what the definition takes."""
    source = (
        "class ResponseNotRead(StreamError):\n"
        '    """Attempted to access streaming response content, without having called `read()`."""\n\n'
        "    def __init__(self) -> None:\n        super().__init__(MESSAGE)\n\n"
        "    def __enter__(self: T) -> T:\n        return self\n\n"
        "    def reset(self, message: str) -> None:\n        self.message = message\n"
    )
    chunk = _code_chunk(
        source,
        1,
        [
            Symbol("class", "ResponseNotRead", 1, 12, "Attempted to access streaming response content."),
            Symbol("method", "ResponseNotRead.__init__", 4, 5, ""),
            Symbol("method", "ResponseNotRead.__enter__", 7, 8, ""),
            Symbol("method", "ResponseNotRead.reset", 10, 11, ""),
        ],
    )
    found = _code_lines(base, "Which exception do I get reading a streaming response before read()?", [chunk])
    named = [line.text.split("`")[1] for line in found]
    assert "ResponseNotRead(StreamError)" in named, named
    assert "ResponseNotRead.__enter__(self: T) -> T" in named, named
    assert "ResponseNotRead.reset(self, message: str) -> None" in named, named
    assert not any("__init__" in name for name in named), named


def test_a_docstring_paragraph_the_chunk_cuts_inside_its_code_block_is_no_detail(base: Settings) -> None:
    """httpx's `request` docstring ends "Usage:" and a fenced example; a chunk cut inside that example gave the Fact
    "function `request` ...: Sends an HTTP request. Usage: ``` >>> import httpx", its fence never closed. A paragraph
    whose code block the chunk holds whole still comes with its lead-in."""
    cut = _code_chunk(
        'def request(method, url):\n    """\n    Sends an HTTP request.\n\n    Usage:\n\n    ```\n'
        "    >>> import httpx\n",
        1,
        [Symbol("function", "request", 1, 30, "Sends an HTTP request.", part=True)],
    )
    whole = _code_chunk(
        'def stream(method, url):\n    """\n    Streams an HTTP request.\n\n    Usage:\n\n    ```\n'
        "    >>> with httpx.stream('GET', url) as response:\n    ...     body = response.read()\n    ```\n"
        '    """\n    return Stream(method, url)\n',
        40,
        [Symbol("function", "stream", 40, 51, "Streams an HTTP request.")],
    )
    found = _code_lines(base, "How do I send a request and stream the response with httpx?", [cut, whole])
    texts = [line.text for line in found]
    assert not any("import httpx" in text for text in texts), texts
    assert any("Usage:" in text and "httpx.stream('GET', url)" in text for text in texts), texts


def test_a_table_row_answers_a_question_about_its_record(tools: Settings) -> None:
    lines = _condensed(tools, "Which response header stops other sites from showing our pages in a frame?")
    assert any("`X-Frame-Options` | `DENY`, so no other site can show the pages in a frame" in line for line in lines)
    assert not any("| Header |" in line or "---" in line for line in lines)  # the header and rule are no record


def test_a_sentence_that_leans_on_the_one_before_comes_with_it(tools: Settings) -> None:
    lines = _condensed(tools, "Is the saved state file encrypted?")
    assert any("The state file holds session tokens. However, it is not encrypted." in line for line in lines)
    assert not any(line.startswith("- However,") for line in lines)  # never the half that leans on nothing


def test_the_docstring_field_that_answers_is_the_definitions_fact_and_it_is_named_once(tools: Settings) -> None:
    lines = _condensed(tools, "Which setting controls the column where the help text wraps?")
    named = [line for line in lines if "`HelpFormatter" in line]
    assert len(named) == 1, lines
    assert named[0].startswith(
        "- class `HelpFormatter` (formatting.py:4-22): Lays out the help pages of a command. "
        ":param wrap_width: the column at which help text is wrapped."
    )


def test_a_chunk_that_opens_on_a_paragraph_gives_its_first_sentence_and_one_that_opens_mid_sentence_not() -> None:
    """The splitter starts a window after whitespace, so a chunk whose text opens on a line break began on a
    blank line: its first sentence is whole. One opening on a word may have cut a sentence: the chunk before
    holds that one whole."""

    def later_chunk(text: str) -> Chunk:
        return one_chunk("tests.md", text).model_copy(update={"span": Span(start=400, end=400 + len(text))})

    whole = "\nIf we want to see printed values for passing tests as well, we pass a flag to the binary.\n\nMore."
    assert [s.text for s in sentences_of(later_chunk(whole))][0].startswith("If we want to see printed values")
    cut = "also show the output of successful tests with a flag.\n\nThe flag is passed after two dashes."
    assert [s.text for s in sentences_of(later_chunk(cut))] == ["The flag is passed after two dashes."]


def test_a_changelog_entry_is_never_filler_but_answers_what_changed(base: Settings) -> None:
    """Release notes filled the condensed context beside the pages on how things work ("Fix bug where --log-config
    disables uvicorn loggers (#512)" for how long shutdown waits): an entry of a changelog is a line only when it
    answers a part of the ask."""
    guide = one_chunk(
        "server.md",
        "# Shutdown\n\nThe server waits for open requests to finish before it stops. The timeout for that wait is "
        "set with the graceful shutdown option. Logs are written to standard error by default.\n",
    )
    notes = one_chunk(
        "docs/release-notes.md",
        "# 0.30\n\n- Fix bug where the log config disables the server loggers on shutdown.\n"
        "- The graceful shutdown timeout now defaults to thirty seconds for every server.\n",
    )
    embed = Services(base).embedder.embed_together
    settings = base.condenser.model_copy(update={"min_relevance": -1.0})
    evidence = a3_evidence(base.gate, {})
    ask = ["How long does the server wait for open requests when it shuts down?"]
    lines = condense_extractively(ask, [guide, notes], embed, settings, ask, evidence)
    assert lines and not any(line.chunk_id == notes.id and not line.core for line in lines), lines
    changed = ["What changed in the default graceful shutdown timeout?"]
    lines = condense_extractively(changed, [guide, notes], embed, settings, changed, evidence)
    assert any(line.chunk_id == notes.id and "thirty seconds" in line.text for line in lines), lines


def test_the_chunks_a3_kept_unsure_give_filler_lines_only_after_the_others(base: Settings) -> None:
    """A3 keeps its unsure band last, to fill only the room the sure chunks leave; their sentences then competed for
    the condensed lines on strength alone, and mdn's lost-update ask lost "If the hashes don't match ... a `412
    Precondition Failed` error is thrown" to a line on how browsers name a downloaded file."""
    sure = one_chunk(
        "412.md", "If the hashes don't match, the article was edited in between and a 412 Precondition Failed is sent."
    )
    unsure = one_chunk("download.md", "Browsers save an article another editor changed under the name it gives.")
    embed = Services(base).embedder.embed_together
    settings = base.condenser.model_copy(update={"min_relevance": -1.0, "max_lines": 1})

    def unanswered(part: str, texts: list[str], vectors: np.ndarray, part_vector: np.ndarray):
        return list(vectors @ part_vector), [False] * len(texts)  # no line answers a part: both are filler

    ask = ["How do I stop an editor's save from wiping out another editor's changes to an article?"]
    first = condense_extractively(ask, [sure, unsure], embed, settings, ask, unanswered)
    assert [line.chunk_id for line in first] == [unsure.id]  # the stronger line, were both chunks sure
    lines = condense_extractively(ask, [sure, unsure], embed, settings, ask, unanswered, unsure={unsure.id})
    assert [line.chunk_id for line in lines] == [sure.id]


def test_a_code_block_inside_a_blockquote_is_code_not_prose() -> None:
    """MkDocs' configuration page quotes a whole example in a callout ("> ```python"), and a chunk opened inside it:
    its code line "> log.warning(f\"Documentation file ... contains a non-HTTPS link\") > ```" was a Fact, since
    a quoted fence was no fence."""
    doc = (
        '>         log.warning(f"Documentation file {path} contains a non-HTTPS link here")\n> ```\n\n'
        "This does not enable any new abilities compared to plugins.\n"
    )
    chunk = one_chunk("configuration.md", doc)
    chunk = chunk.model_copy(update={"metadata": {**chunk.metadata, "opens_in_code": True}})
    texts = [s.text for s in sentences_of(chunk)]
    assert texts == ["This does not enable any new abilities compared to plugins."], texts


def test_a_chunk_inside_a_code_block_that_holds_no_fence_line_is_code_throughout() -> None:
    """Starlette's test fixture filled a chunk from inside its block to past its window, no fence line in it:
    "yield  # Run the tests." and "drop_database(url)  # Drop the test database." were Facts, read as sentences,
    since only a fence line the chunk held told code from prose."""
    doc = (
        "    url = settings.DATABASE_URL\n    create_database(url)     # Create the test database.\n"
        "    yield                    # Run the tests.\n    drop_database(url)       # Drop the test database.\n\n\n"
        "@pytest.fixture()\ndef client():\n    # Our fixture runs the lifespan. It is created in a context manager.\n"
    )
    chunk = one_chunk("config.md", doc)
    assert [s.text for s in sentences_of(chunk)], "read as prose, the code gives sentences"
    inside = chunk.model_copy(update={"metadata": {**chunk.metadata, "opens_in_code": True}})
    assert [s.text for s in sentences_of(inside)] == []


def test_a_bold_word_the_sentence_goes_on_from_is_its_subject_not_a_label() -> None:
    """Left out as a label, "**Do not** just open the app url ..." became "just open the app url ...", the opposite
    of what the document says, and "**Docker** is a popular choice ..." lost its subject. A bold opening ended by a
    colon or a full stop is a label, and the sentence after it stands alone."""
    doc = (
        "**Do not** just open the app url, always go through the test first.\n\n"
        "**Docker** is a popular choice for modern application deployment.\n\n"
        "**For flat indexes** (i.e., `--find-links` locations), uv assumes the contents never change.\n\n"
        "**Note:** the config file must be valid YAML.\n\n"
        "**Set a filename length limit.** Long names break the storage layer.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("guide.md", doc))] == [
        "**Do not** just open the app url, always go through the test first.",
        "**Docker** is a popular choice for modern application deployment.",
        "**For flat indexes** (i.e., `--find-links` locations), uv assumes the contents never change.",
        "the config file must be valid YAML.",
        "Long names break the storage layer.",
    ]


def test_a_list_item_of_several_sentences_is_one_line_without_a_tail_that_says_nothing() -> None:
    """An item's first sentence alone dropped what qualifies it: "`allow_credentials` - Indicate that cookies should
    be supported ..." without "Also, `allow_origins` ... cannot be set to `['*']` ...", the answer to "the browser
    refuses to send the cookie". The whole item is one line; an issue number or a "See [here](...)" ending it is not
    part of that line, and an item too long for one line gives its sentences."""
    long_item = " ".join(f"Sentence {n} of the long item says one more thing about the option." for n in range(12))
    doc = (
        "# Options\n\nThe middleware takes these arguments:\n\n"
        "* `allow_credentials` - Indicate that cookies should be supported for cross-origin requests. Defaults to "
        "`False`. Also, `allow_origins` cannot be set to `['*']` for credentials to be allowed.\n"
        "* `strict` - Fails the build on any warning from the checker. (#2951)\n"
        "* `algorithms` - The relying party must not read the algorithm from the token header. It must hard-code "
        "them. See [here](https://example.org/jwt.confusion.html) and [here](https://example.org/v?x=1).\n"
        f"* `verbose` - {long_item}\n\nThe end of the page is a sentence of its own.\n"
    )
    texts = [s.text for s in sentences_of(one_chunk("options.md", doc))]
    assert (
        "`allow_credentials` - Indicate that cookies should be supported for cross-origin requests. Defaults to "
        "`False`. Also, `allow_origins` cannot be set to `['*']` for credentials to be allowed." in texts
    ), texts
    assert "`strict` - Fails the build on any warning from the checker." in texts, texts
    assert (
        "`algorithms` - The relying party must not read the algorithm from the token header. It must hard-code them."
        in texts
    ), texts
    assert "Sentence 3 of the long item says one more thing about the option." in texts, texts


def test_a_list_whose_items_run_on_into_each_other_gives_no_item_as_a_line() -> None:
    """A chunk opening inside Black's exit codes gave the line "code 1 if some files would be reformatted; or": a
    clause of the sentence its list's lead-in ("_Black_ will exit with:") opens, which only that lead-in gives a
    meaning (under "A request is rejected when:", an item says the opposite of itself alone). A list one of whose
    items ends with ";", "or" or "and" is one sentence: none of its items is a line (its last, "code 123 if there
    was an internal error", no more than the others); a list whose items end their own sentences still gives them."""
    doc = (
        "- code 0 if nothing would change;\n- code 1 if some files would be reformatted; or\n"
        "- code 123 if there was an internal error\n\nThe exit code tells a CI job whether the check passed.\n\n"
        "- check out the slides from the conference talk, or\n\n- read the tutorial about progress bars\n\n"
        "Other ways to learn the tool are listed on the wiki page.\n\n"
        "- Run the formatter again with `--verbose` to see each file.\n- Pin the formatter's version in CI.\n"
    )
    texts = [s.text for s in sentences_of(one_chunk("exit-codes.md", doc))]
    led = "_Black_ will exit with:\n\n" + doc  # with its lead-in, the list is one line: items ending in ";" are prose
    assert [s.text for s in sentences_of(one_chunk("exit-codes.md", led))][0] == (
        "_Black_ will exit with: - code 0 if nothing would change; - code 1 if some files would be reformatted; or "
        "- code 123 if there was an internal error"
    )
    assert texts == [
        "The exit code tells a CI job whether the check passed.",
        "Other ways to learn the tool are listed on the wiki page.",
        "Run the formatter again with `--verbose` to see each file.",
        "Pin the formatter's version in CI.",
    ], texts


def test_an_item_of_a_list_too_long_for_one_line_is_scored_with_its_lead_in() -> None:
    """A long list's items stand alone as lines, but what they answer is in the lead-in ("... to implement a
    secure reset:"): each is scored with it, and its line is the item alone."""
    items = "\n".join(
        f"- Step {n} keeps the {word} consistent across every request made."
        for n, word in enumerate(["message", "timing", "rate", "log", "token", "mail"] * 4)
    )
    doc = f"# Reset\n\nWhen a user asks for a reset, follow these steps to implement a secure reset:\n\n{items}\n"
    found = [s for s in sentences_of(one_chunk("reset.md", doc)) if s.text.startswith("Step 0 ")]
    assert found and found[0].text == "Step 0 keeps the message consistent across every request made."
    assert found[0].scored.startswith("When a user asks for a reset, follow these steps to implement a secure reset:")


ROTATION = """# Signing keys

The billing service signs every access token it issues with a key from the vault.

Rotate the signing keys of the billing service every ninety days, keep the previous key valid for one more day
so that tokens issued just before the rotation still verify, and record every rotation in the audit log.

Tokens carry the id of the key that signed them in their header.
"""


def test_a_sentence_the_chunk_window_cuts_is_quoted_whole_and_lies_in_the_excerpt_the_prompt_shows(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Chunks are character windows: the answer here is longer than one, so no chunk holds it whole and A4,
    reading chunks as indexed, had no candidate for it. A4 reads them widened to whole sentences from the
    document, as the Prompt Builder shows them, so the line is the whole sentence and its excerpt holds it."""
    sp = small_chunks_run(
        tmp_path_factory, "keys.md", ROTATION, 160, "How often do we rotate the billing service's signing keys?"
    )
    sentence = " ".join(ROTATION.split("\n\n")[2].split())
    assert not any(sentence in " ".join(c.text.split()) for c in sp.chunk_by_id().values())  # no chunk holds it
    line = next((line for line in sp.s_ctx_md.splitlines() if sentence in line), None)
    assert line is not None, sp.s_ctx_md
    shown = {cid: excerpt.text for excerpt in shown_excerpts(sp) for cid in excerpt.id.split()}
    assert all(sentence in " ".join(shown[cid].split()) for cid in CITATION.findall(line))
    cited = next(check for check in universal(sp, {}, verbatim_support) if check.name == "condensed_cited_shown")
    assert cited.passed, cited.lines  # `ragstream eval` judges a line against the excerpt as shown


def test_a_chunk_that_opens_inside_a_table_gives_its_rows() -> None:
    """A table longer than a chunk is cut: the next chunk opens on the end of a row, then rows, with the header
    and rule in the chunk before. Its rows are records all the same."""
    text = (
        "spoofed certificates. |\n"
        "| `X-Content-Type-Options: nosniff` | Browsers keep the declared content type and never sniff it. |\n"
        "| `X-Frame-Options: DENY` | No other site may show the pages in a frame. |\n"
    )
    later = one_chunk("headers.md", text).model_copy(update={"span": Span(start=900, end=900 + len(text))})
    assert [s.text for s in sentences_of(later)] == [
        "`X-Content-Type-Options: nosniff` | Browsers keep the declared content type and never sniff it.",
        "`X-Frame-Options: DENY` | No other site may show the pages in a frame.",
    ]


def test_an_html_comment_is_never_a_line_and_a_sentence_holding_one_reads_without_it() -> None:
    """An HTML comment is a note to the document's editors, never rendered: the Rust book marks every link it
    keeps out of link checks with `<!-- ignore -->`, and its sentences are the answer all the same."""
    doc = (
        "<!-- Old headings. Do not remove or links may break. -->\n\n"
        "Plain counters shared by threads have simpler types in the [`std::sync::atomic` module][atomic]<!-- ignore"
        " --> of the standard library.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("shared.md", doc))] == [
        "Plain counters shared by threads have simpler types in the [`std::sync::atomic` module][atomic] of the "
        "standard library."
    ]


UNSAFE = """# Unsafe code

Unsafe code lets a program do what the checker cannot prove safe, and the programmer answers for it.
You can take four actions in unsafe code that you cannot take in checked code, which we call unsafe powers.
Those powers include the ability to:

1. Read through a raw address.
1. Call a foreign function.
1. Write a global variable.
1. Implement an unchecked interface.

Unsafe code does not turn off the checker: borrowing is still checked inside an unsafe block.
Keep unsafe blocks small, so that a memory bug is easy to find when one happens.
Unsafe code is needed because hardware and operating systems are not safe to use.
"""


def test_a_line_that_announces_a_list_comes_with_the_list(base: Settings) -> None:
    """ "You can take four actions ..." answers "which actions" only with the list after it: the list is chosen
    with the sentence that announces it, right after it (or in its line, when the list's lead-in leans on it: "Those
    powers include ..."), even when other sentences outscore the list."""
    services = Services(base)
    ask = ["Which actions does unsafe code allow that checked code doesn't?"]
    settings = base.condenser.model_copy(update={"max_lines": 3})
    lines = condense_extractively(
        ask,
        [one_chunk("unsafe.md", UNSAFE)],
        services.embedder.embed_together,
        settings,
        ask,
        a3_evidence(base.gate, {}),
    )
    texts = [line.text for line in lines]
    announcing = next(i for i, text in enumerate(texts) if text.startswith("You can take four actions"))
    with_list = " ".join(texts[announcing : announcing + 2])
    assert "unsafe powers. Those powers include the ability to: 1. Read through a raw address." in with_list, texts
    assert "Implement an unchecked interface." in with_list and len(lines) <= 3


def test_a_lead_in_still_introduces_its_command_across_an_html_comment() -> None:
    """The Rust book puts "<!-- manual-regeneration ... -->" between "... if you ran `cargo update`:" and the
    session: a comment is never read, so the lead-in comes with the command, and the line shows no comment."""
    doc = """# Updating a crate

If the rand crate has released two new versions, you would see the following if
you ran `cargo update`:

<!-- manual-regeneration
cd listings/ch02
cargo update
-->

```console
$ cargo update
    Updating crates.io index
```

Cargo ignores the 0.999.0 release.
"""
    lead = next(s for s in sentences_of(one_chunk("ch02.md", doc)) if s.text.startswith("If the rand crate"))
    assert lead.listed and "$ cargo update" in lead.text and "manual-regeneration" not in lead.text


SOCKET = """# The daemon socket

The daemon listens on a UNIX socket owned by root.
Granting containers access to it is the same as granting them full control of the host.
Logs of the daemon rotate every night.
Environments which report that they support colour get coloured logs.
"""


def test_a_sentence_leaning_on_the_one_before_through_a_pronoun_is_read_with_it(base: Settings) -> None:
    """ "Granting containers access to it is ..." answers what mounting the socket means only with the sentence
    naming the socket: the two are one line. A pronoun of the sentence's own ("Environments which report that
    they ...") leaves the sentence alone, and a line is never lost for pairing."""
    services = Services(base)
    ask = ["Is it safe to mount the daemon socket into a container?"]
    lines = condense_extractively(
        ask, [one_chunk("socket.md", SOCKET)], services.embedder.embed_together, base.condenser, ask
    )
    texts = [line.text for line in lines]
    assert (
        "The daemon listens on a UNIX socket owned by root. "
        "Granting containers access to it is the same as granting them full control of the host."
    ) in texts, texts
    assert not any(text.startswith("Granting containers") for text in texts)
    colour = ["Which environments get coloured logs?"]
    lines = condense_extractively(
        colour, [one_chunk("socket.md", SOCKET)], services.embedder.embed_together, base.condenser, colour
    )
    assert "Environments which report that they support colour get coloured logs." in [line.text for line in lines]


STORE_FLAG = """# Not storing responses

You may think the store flag is the right way to keep a page out of every cache.
However, it is not recommended for most pages, because it also turns off the back/forward cache.

The store flag takes no value.
"""


def _lines_of(base: Settings, doc: str, question: str) -> list[str]:
    """The condensed lines of one document for one question (every candidate over any relevance), whitespace
    collapsed."""
    ask = [question]
    lines = condense_extractively(
        ask,
        [one_chunk("page.md", doc)],
        Services(base).embedder.embed_together,
        base.condenser.model_copy(update={"min_relevance": -1.0}),
        ask,
    )
    return [" ".join(line.text.split()) for line in lines]


def test_a_sentence_the_next_one_qualifies_is_never_a_line_without_it(base: Settings) -> None:
    """ "You may think the store flag is the right way ..." alone says what its document goes on to deny: the
    sentence opening "However, ..." qualifies it, and the two are one line or neither is (on MDN's caching guide the
    premise alone was a Fact for "no-cache or no-store?" and the reason against `no-store` was none). A sentence
    nothing qualifies stands alone."""
    texts = _lines_of(base, STORE_FLAG, "Should I use the store flag to keep pages out of caches?")
    assert (
        "You may think the store flag is the right way to keep a page out of every cache. However, it is not "
        "recommended for most pages, because it also turns off the back/forward cache."
    ) in texts, texts
    assert "You may think the store flag is the right way to keep a page out of every cache." not in texts, texts
    assert "The store flag takes no value." in texts, texts


REGISTRY = """# Registries

To specify a dependency from a registry other than crates.io, set the `registry` key to the name of the registry:

```toml
[dependencies]
some-crate = { version = "1.0", registry = "my-registry" }
```

where `my-registry` is the registry name configured in the `.cargo/config.toml` file.

- with `--locked`, the lockfile is never rewritten by the build.

`--offline` for air-gapped builds keeps cargo from touching the network.
"""


def test_the_rest_of_a_sentence_a_code_block_interrupted_is_read_with_it(base: Settings) -> None:
    """Cargo's docs go on after a TOML block with "where `my-registry` is the registry name configured in ...": that
    was a Fact of its own, a clause without its sentence. Opening in lower case with a word that goes on from
    something, it is read with the sentence and block before it; a list item may open so and stands alone, and so does
    a sentence whose code span comes first ("`--offline` for air-gapped builds ...")."""
    texts = _lines_of(base, REGISTRY, "How do I depend on a crate from another registry?")
    assert any(
        t.startswith("To specify a dependency from a registry other than crates.io")
        and t.endswith("where `my-registry` is the registry name configured in the `.cargo/config.toml` file.")
        for t in texts
    ), texts
    assert not any(t.startswith("where") for t in texts), texts
    assert "with `--locked`, the lockfile is never rewritten by the build." in texts, texts
    assert "`--offline` for air-gapped builds keeps cargo from touching the network." in texts, texts  # its own


BUSTING = """# Static assets

A modern practice for static files is to put a hash in their URLs and never change a file once it is served. That's
called the cache-busting pattern.

```html
<script src="https://example.com/app.3f9a1c2e.js"></script>
```

Here's the header such files are served with:

```http
Cache-Control: max-age=31536000, immutable
```
"""


def test_a_sentence_with_its_code_that_leans_on_the_one_before_is_read_with_it(base: Settings) -> None:
    """MDN's "That's called the **cache-busting** pattern. ```html <script src=...>```" was a Fact alone: carrying
    its code, it stood as any sentence with its block does, though "That" names what the sentence before says. It is
    read with that sentence; with none before it in its paragraph ("Here's the header such files are served with:"
    after a block), it stands with its code as before."""
    texts = _lines_of(base, BUSTING, "How do I make browsers cache hashed static files for a year?")
    assert (
        "A modern practice for static files is to put a hash in their URLs and never change a file once it is "
        "served. That's called the cache-busting pattern. ```html "
        '<script src="https://example.com/app.3f9a1c2e.js"></script> ```'
    ) in texts, texts
    assert not any(t.startswith("That's called") for t in texts), texts
    assert any(t.startswith("Here's the header such files are served with:") for t in texts), texts


MIGRATE = """# Migrating

Reformatting a whole code base hides the authors of the lines it touches from `git blame`.

So when migrating, reformat everything and commit the changes as one commit of their own.

- The hook formats the files of every later commit.

Therefore the hook must be installed on every developer's machine.
"""


def test_a_paragraph_that_opens_by_going_on_from_the_one_before_is_read_with_that_ones_last_sentence(
    base: Settings,
) -> None:
    """ "So when migrating, reformat everything and commit ..." opens its paragraph by going on from the last
    sentence of the paragraph before: the two are one line (dropped, the condensed context lost black's advice on
    the one big commit). After a list it goes on from no sentence, and it is no line."""
    services = Services(base)
    ask = ["How should I commit the reformatting when I migrate a code base, and where must the hook be installed?"]
    lines = condense_extractively(
        ask, [one_chunk("migrate.md", MIGRATE)], services.embedder.embed_together, base.condenser, ask
    )
    texts = [" ".join(line.text.split()) for line in lines]
    assert (
        "Reformatting a whole code base hides the authors of the lines it touches from `git blame`. So when"
        " migrating, reformat everything and commit the changes as one commit of their own."
    ) in texts, texts
    assert not any(text.startswith(("So when", "Therefore")) for text in texts), texts


def test_the_sentences_of_a_myst_admonition_are_prose_and_a_code_block_stays_code() -> None:
    """Sphinx docs written in MyST put their warnings in "```{warning}" fences: blackd's "It is intended for local
    use only" was read as code and was never a line."""
    doc = """# blackd

```{warning}
`blackd` should not be run as a publicly accessible server as there are no security
precautions in place to prevent abuse. **It is intended for local use only**.
```

```python
print("The value is printed here as an example.")
```
"""
    assert [s.text for s in sentences_of(one_chunk("blackd.md", doc))] == [
        "`blackd` should not be run as a publicly accessible server as there are no security precautions in place"
        " to prevent abuse.",
        "**It is intended for local use only**.",
    ]


OPTIONAL = """# Optional arguments

To make a CLI argument optional, use `typer.Argument()` and make sure to provide a default value, for example `"World"`:

{* docs_src/arguments/optional/tutorial002.py hl[9] *}

When we generated the project, the tool wrote this code for us:

```python
import typer


def main(name: str = typer.Argument("World")):
    print(f"Hello {name}")
```

All we did there achieves the same thing as before, a **required** *CLI argument*:

```python
import typer


def main(name: str):
    print(f"Hello {name}")
```

Run the following command in a terminal to see the help text of the program:

```console
python main.py --help
Usage: main.py [OPTIONS] [NAME]
Options:
  --help  Show this message and exit.
```
"""


PROFILE_DEFAULTS = """\
The built-in settings of the `fast` build profile are:

```toml
[profile.fast]
optimize = 3
debug-info = false
checks = false
inline = true
units = 16
incremental = false
```

When a build starts, the tool creates a `.cache/builds/` folder holding several files per target:

```text
.cache/builds/app.log
.cache/builds/app.timings
.cache/builds/app.deps
.cache/builds/app.hash
```
"""


def test_a_lead_in_whose_last_word_wants_the_code_after_it_says_nothing_alone() -> None:
    """Cargo's "The default settings for the `dev` profile are:" stood as a Fact without the settings (a block too long
    to come along): a lead-in ending on a word that wants its complement ("are", "include", "to", "as") says what it
    says in the code after it. One that states something before its colon stays a line."""
    found = [s.text for s in sentences_of(one_chunk("profiles.md", PROFILE_DEFAULTS))]
    assert found == [
        "When a build starts, the tool creates a `.cache/builds/` folder holding several files per target:"
    ], found


def test_a_lead_in_to_code_that_says_the_answer_is_a_line_one_that_points_at_the_code_is_not(base: Settings) -> None:
    """ "To make a CLI argument optional, use `typer.Argument()` and ... provide a default value" answers how, with
    the code after it too long to come along: left out as a mere lead-in, the condensed context lost Typer's
    answer. A lead-in that points at the code ("this code", "the following command") or back ("All we did there
    achieves ...") says nothing alone, and one
    that does not answer the ask is no filler: it ends on what the line does not show."""
    services = Services(base)
    chunk = one_chunk("optional.md", OPTIONAL)
    assert [s.text for s in sentences_of(chunk)] == [
        "To make a CLI argument optional, use `typer.Argument()` and make sure to provide a default value, for example"
        ' `"World"`:'
    ]
    ask = ["How do I make a CLI argument optional with a default value?"]
    lines = condense_extractively(ask, [chunk], services.embedder.embed_together, base.condenser, ask)
    assert [line.text for line in lines][:1] == [s.text for s in sentences_of(chunk)]

    def never_enough(part: str, texts: list[str], vectors, part_vector) -> tuple[list[float], list[bool]]:
        return [float(v @ part_vector) for v in vectors], [False] * len(texts)

    near = ["How do I pass a name to the program on the command line?"]
    assert not condense_extractively(
        near, [chunk], services.embedder.embed_together, base.condenser, near, never_enough
    )


def test_a_sentence_followed_by_a_short_code_block_is_one_line_with_it(base: Settings) -> None:
    """MDN's "You can add a long `max-age` value and `immutable` because the content will never change." is
    followed by the two lines that set it: the header value is the answer, and quoted without it the line said
    what to do but not how. A sentence before a longer block is a line alone (the block stays in the excerpt)."""
    text = (
        "# Caching static assets\n\n"
        "You can add a long `max-age` value and `immutable` because the content will never change.\n\n"
        "```http\n# /assets/*\nCache-Control: max-age=31536000, immutable\n```\n\n"
        "Use `no-cache` for the HTML page itself so that every deploy shows at once.\n\n"
        '```http\n# /index.html\nCache-Control: no-cache\nVary: Accept-Encoding\nETag: "33a64df5"\n```\n'
    )
    assert [s.text for s in sentences_of(one_chunk("cache-control.md", text))] == [
        "You can add a long `max-age` value and `immutable` because the content will never change. ```http "
        "# /assets/* Cache-Control: max-age=31536000, immutable ```",
        "Use `no-cache` for the HTML page itself so that every deploy shows at once.",
    ]


def test_a_sentence_followed_by_a_settings_block_of_a_few_lines_is_one_line_with_it() -> None:
    """Black's "To use the pre-commit mirror, add this to your `.pre-commit-config.yaml`:" is followed by the five
    lines that do it: a settings block (TOML, YAML, INI, an env file) says its values in up to six lines, where a
    command says it in three; quoted without it, the line said where to put the settings but not which. Code in
    another language stays a line alone beyond three lines."""
    text = (
        "To use the pre-commit mirror, add this to your `.pre-commit-config.yaml` file:\n\n"
        "```yaml\nrepos:\n  - repo: https://github.com/psf/black-pre-commit-mirror\n    rev: 26.1.0\n"
        "    hooks:\n      - id: black\n```\n\n"
        "You can also call the formatter from your own script with these lines:\n\n"
        "```python\nimport black\nmode = black.Mode()\nsrc = open('a.py').read()\n"
        "out = black.format_str(src, mode=mode)\n```\n"
    )
    assert [s.text for s in sentences_of(one_chunk("integrations.md", text))] == [
        "To use the pre-commit mirror, add this to your `.pre-commit-config.yaml` file: ```yaml repos: - repo: "
        "https://github.com/psf/black-pre-commit-mirror rev: 26.1.0 hooks: - id: black ```",
    ]


def test_a_sentence_said_twice_in_a_file_is_one_line_the_longer_one(base: Settings) -> None:
    """Neighbouring chunks overlap: a sentence at the end of one opens the next, where it pairs with the sentence
    leaning on it; a page's bold summary of a rule is an item of its list too. Each is quoted once, in the longer
    line when both are chosen."""
    text = (
        "# Line length\n\n"
        "Black defaults to 88 characters per line, which happens to be 10% over 80.\n\n"
        "You can also increase the line length, but people with sight disabilities find lines over 100\n"
        "characters harder to read. It also hurts side-by-side diff review on typical screens.\n\n"
        "**Keep the default line length of 88 characters.**\n\n"
        "To pick a line length, follow these rules:\n\n"
        "- Keep the default line length of 88 characters.\n"
        "- Raise it only when the whole team reads code on wide screens.\n"
    )
    cut = text.index(" It also")
    shared = text.index("\nYou can also")  # the splitter opens a window after whitespace: here, a blank line
    first = Chunk(
        id="style.md@0123456789#0",
        source_path="style.md",
        sha256="0" * 64,
        chunk_index=0,
        text=text[:cut],
        span=Span(start=0, end=cut),
    )
    second = Chunk(
        id="style.md@0123456789#1",
        source_path="style.md",
        sha256="0" * 64,
        chunk_index=1,
        text=text[shared:],
        span=Span(start=shared, end=len(text)),
    )
    ask = ["Why does Black default to 88 characters per line, and should we increase the line length?"]
    services = Services(base)
    lines = condense_extractively(ask, [first, second], services.embedder.embed_together, base.condenser, ask)
    texts = [" ".join(line.text.replace("*", "").split()) for line in lines]
    assert any(t.startswith("You can also increase the line length") for t in texts), texts
    assert not [t for t in texts if any(t != other and t.lstrip("- ") in other for other in texts)], texts


def test_a_chunk_that_opens_inside_a_docstring_gives_no_paragraph_from_mid_sentence() -> None:
    """A long docstring cut by the chunk window: the chunk opens on the end of a sentence whose start it does not
    hold ("silently downgraded. It has no effect ..."). That paragraph is no line of the definition's; the next,
    whole, is."""
    text = (
        "        silently downgraded. It has no effect on Windows.\n\n"
        "        :param timeout: seconds to wait for the lock; a negative value waits forever.\n"
        '        """\n'
        "        self.timeout = timeout\n"
    )
    symbol = Symbol("method", "BaseFileLock.__init__", 805, 920, "Create a new lock object.", part=True)
    chunk = one_chunk("_api.py", text).model_copy(
        update={
            "metadata": {
                "kind": "text",
                "language": "python",
                "line_start": 860,
                "line_end": 863,
                "symbols": symbols_to_metadata([symbol]),
            }
        }
    )
    details = [r.text for r in references_of(chunk) if r.detail is not None]
    assert details and not any("silently downgraded" in d for d in details), details
    assert any(":param timeout: seconds to wait for the lock" in d for d in details), details


FACTORIES = """# Application factories

The downside is that you cannot use the application object at import time.
How do you get access to the application with the config? Use the current app proxy inside a request.

## Open questions

- Should the factory read the config from the environment?
"""


def test_a_question_in_a_documents_prose_is_no_line_a_listed_or_open_one_is_an_open_issue(base: Settings) -> None:
    """Flask's "How do you get access to the application with the config?" is answered by the sentence after it;
    filed as an Open issue, it read as a question the documents leave open. A listed question (notes' "Open
    questions") stays one."""
    services = Services(base)
    ask = ["How do I get the application's config inside a view?"]
    lines = condense_extractively(
        ask, [one_chunk("factories.md", FACTORIES)], services.embedder.embed_together, base.condenser, ask
    )
    texts = {line.text: line.section for line in lines}
    assert not any(text.startswith("How do you get access") for text in texts), texts
    assert texts.get("Should the factory read the config from the environment?") == "open_issues", texts


CHECKLIST = """## What do reviewers look for?

Code reviews should look at:

-   **Design**: Is the code well-designed and appropriate for your system?
-   **Tests**: Does the code have correct and well-designed automated tests?

## Still open

-   Should reviewers block a change on missing documentation?
"""

UNDECIDED = """Review policy
=============

Open questions:

- Do we require two approvals for changes to the billing service?
"""


def test_a_checklist_of_questions_is_what_the_document_asks_not_an_open_issue(base: Settings) -> None:
    """Google's review guide lists the questions a reviewer asks ("Code reviews should look at: - **Design**: Is the
    code well-designed ...?"): each was filed as an Open issue, read as a question the documents leave open. A
    listed question is one only under a heading or lead-in that names an open point, in Markdown or
    reStructuredText."""
    services = Services(base)
    ask = ["What should a reviewer look at in a change, and what is still undecided about reviews?"]
    lines = condense_extractively(
        ask,
        [one_chunk("review.md", CHECKLIST), one_chunk("notes.rst", UNDECIDED)],
        services.embedder.embed_together,
        base.condenser.model_copy(update={"min_relevance": -1.0}),
        ask,
    )
    sections = {line.text: line.section for line in lines}
    [checklist] = [text for text in sections if "Is the code well-designed" in text]
    assert "Does the code have correct and well-designed automated tests?" in checklist, sections
    assert sections[checklist] != "open_issues", sections
    assert sections.get("Should reviewers block a change on missing documentation?") == "open_issues", sections
    [billing] = [text for text in sections if "two approvals" in text]
    assert sections[billing] == "open_issues", sections


DEPLOY = """# Deploying

Run the deploy script from the repository root:

```
./deploy.sh --env production --region eu-west-1 --service billing
./deploy.sh --env production --region us-east-2 --service billing
./deploy.sh --env production --region ap-south-1 --service billing
./deploy.sh --verify --all-regions
```

The deploy script refuses to run while the working tree has uncommitted changes.
"""


def test_a_chunk_that_opens_inside_a_code_block_gives_the_sentences_after_the_block(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A code block longer than a chunk is cut: the next chunk opens inside it, so the first fence line it holds
    closes the block. Read as an opener, it hid the sentence after the block, the answer, and offered the
    block's commands as prose."""
    sp = small_chunks_run(
        tmp_path_factory, "deploy.md", DEPLOY, 200, "Will the deploy script run with uncommitted changes?"
    )
    answer = "The deploy script refuses to run while the working tree has uncommitted changes."
    holding = [c for c in sp.chunk_by_id().values() if answer in " ".join(c.text.split())]
    assert holding and all(not c.text.lstrip().startswith(("#", "Run")) for c in holding)  # opens in the block
    assert all(c.text.count("```") == 1 for c in holding)
    assert answer in sp.s_ctx_md, sp.s_ctx_md
    assert "./deploy.sh" not in sp.s_ctx_md.split("### Open issues")[0]


JOBS = """# Jobs

The scheduler reads its jobs from `jobs.toml` once, at startup. Editing the file this way needs a restart of
the scheduler before any change takes effect.

This is the layout older releases used. Storing the jobs this way keeps every schedule out of the database.
"""


def test_a_sentence_pointing_back_with_a_demonstrative_is_read_with_the_one_before_or_not_at_all(
    base: Settings,
) -> None:
    """ "Editing the file this way needs a restart" says which edit only with the sentence before it: the two
    are one line. Where that sentence cannot stand beside it ("This is the layout older releases used."), the
    sentence alone names no way at all and is no line."""
    services = Services(base)
    ask = ["Does changing jobs.toml need a restart of the scheduler, and where are the schedules stored?"]
    lines = condense_extractively(
        ask, [one_chunk("jobs.md", JOBS)], services.embedder.embed_together, base.condenser, ask
    )
    texts = [" ".join(line.text.split()) for line in lines]
    assert (
        "The scheduler reads its jobs from `jobs.toml` once, at startup. Editing the file this way needs a restart"
        " of the scheduler before any change takes effect."
    ) in texts, texts
    assert not any(text.startswith(("Editing the file", "Storing the jobs")) for text in texts), texts


REVIEW = """# Human review

At the pause a person can edit the condensed context and choose which chunks stay selected. See retrieval.md for how
chunks are found and ingestion.md for how documents are indexed.
"""


def test_a_cross_reference_after_a_sentence_is_not_read_with_it(base: Settings) -> None:
    """ "See retrieval.md for how chunks are found" sends the reader elsewhere: it continues nothing, so the line is
    the sentence before it alone, and the pointer is no line."""
    services = Services(base)
    ask = ["What can a person edit at the pause, and where do I read how chunks are found?"]
    lines = condense_extractively(
        ask, [one_chunk("review.md", REVIEW)], services.embedder.embed_together, base.condenser, ask
    )
    texts = [" ".join(line.text.split()) for line in lines]
    assert "At the pause a person can edit the condensed context and choose which chunks stay selected." in texts
    assert not any("See retrieval.md" in text for text in texts), texts


HOSTING = """# Deploying your docs

Read the Docs offers free documentation hosting and builds the site on every push.
Any host that serves static files can serve the built site.
GitHub Pages serves the site from the gh-pages branch of the repository.
"""


def test_near_misses_of_a_topic_the_documents_lack_are_no_facts(base: Settings) -> None:
    """The gate named a part no document covers and no sentence has the evidence to answer any part: lines
    chosen by relevance alone are the near misses ("Read the Docs offers free hosting" for publishing versions
    with mike), and none is filed. When a sentence answers a part, the others still fill beside it."""
    services = Services(base)
    ask = ["How do I publish two versions of the docs side by side with mike?"]
    chunks = [one_chunk("deploying.md", HOSTING)]
    evidence = a3_evidence(base.gate, {})
    near = condense_extractively(ask, chunks, services.embedder.embed_together, base.condenser, ask, evidence)
    assert near and not any(line.core for line in near)  # relevant enough to fill, never evidence of an answer
    assert (
        condense_extractively(
            ask, chunks, services.embedder.embed_together, base.condenser, ask, evidence, lacking=True
        )
        == []
    )
    answered = ["Which branch does GitHub Pages serve the site from, and can mike keep old versions online?"]
    lines = condense_extractively(
        answered, chunks, services.embedder.embed_together, base.condenser, answered, evidence, lacking=True
    )
    assert any(line.core and "gh-pages" in line.text for line in lines), lines


DOMAIN = """# Custom domains

The hosting service supports custom domains for every site it serves. Besides the steps in the host's own guide,
you need to take one additional step so that the generator keeps your custom domain after each deploy. Put a file
named `CNAME` holding the bare domain at the root of the docs folder.

Search engines usually index a new site within a day.
"""


def test_a_sentence_that_counts_out_a_step_comes_with_the_sentence_that_gives_it(base: Settings) -> None:
    """ "... you need to take one additional step so that the generator keeps your custom domain" answers the ask
    best and says nothing of the step: the sentence after it, the step itself, comes with it even where the lines
    are too few for it to win a place of its own."""
    services = Services(base)
    few = base.condenser.model_copy(update={"max_lines": 2, "per_part": 1})
    ask = ["How do I keep my custom domain after each deploy of the generated site?"]
    lines = condense_extractively(ask, [one_chunk("domains.md", DOMAIN)], services.embedder.embed_together, few, ask)
    texts = [" ".join(line.text.split()) for line in lines]
    announcing = next(k for k, text in enumerate(texts) if "one additional step" in text)
    assert texts[announcing + 1 : announcing + 2] == [
        "Put a file named `CNAME` holding the bare domain at the root of the docs folder."
    ], texts


SETTINGS_PAGE = """## Installation

Install the generator with pip and run it from the folder that holds the config file.

### dev_addr

Determines the address used when running the preview server. Must be of the format `IP:PORT`.

### watch

Determines additional directories to watch when running the preview server.

### strict

Set `strict` to abort the build on the first warning.

### hidden

An item annotated with #[doc(hidden)] is left out of the pages.
"""


def test_a_sentence_under_a_heading_that_is_a_name_is_named_by_it(base: Settings) -> None:
    """A reference page names each setting in its heading and then says what it does without the name:
    "Determines the address used ..." alone says of nothing what it does. The line is named by the heading
    (a plain word only where it is code: "watch" in the sentence is a verb); a sentence naming it, or one under a
    title ("Installation"), stays as written; `ragstream eval` finds the line in the excerpt that shows it."""
    page = one_chunk("configuration.md", SETTINGS_PAGE)
    texts = [s.shown for s in sentences_of(page)]
    assert texts == [
        "Install the generator with pip and run it from the folder that holds the config file.",
        "`dev_addr`: Determines the address used when running the preview server.",
        "`dev_addr`: Must be of the format `IP:PORT`.",
        "`watch`: Determines additional directories to watch when running the preview server.",
        "Set `strict` to abort the build on the first warning.",
        "An item annotated with #[doc(hidden)] is left out of the pages.",
    ]
    verdicts = verbatim_support([(text, [page.id]) for text in texts], {page.id: page}, [])
    assert all(ok for ok, _ in verdicts), verdicts
    assert verbatim_support([("`site_url`: Must be of the format `IP:PORT`.", [page.id])], {page.id: page}, []) == [
        (False, "its words are not in the cited excerpt")
    ]


RETRY_TS = """export type Policy = {
\t/**
\tHow many times a failed request is sent again before the error reaches the caller.

\t@default 2
\t*/
\tlimit?: number;

\t/**
\tThe status codes that make a request worth sending again.

\t@default [408, 429, 500, 502, 503, 504]
\t*/
\tstatusCodes?: number[];
};

/**
Sends the request and retries it under the policy.
*/
export function send(url: string, policy: Policy): Promise<Response> {
\treturn fetch(url);
}
"""


def test_a_member_its_doc_comment_documents_is_a_line_of_its_type(tmp_path_factory: pytest.TempPathFactory) -> None:
    """TypeScript (as Java, Kotlin, C# and Rust) documents a type's fields in doc comments: on ky's source the
    answer to "how many times does it retry by default?" was `limit`'s "@default 2", and the condensed context said
    only "type `RetryOptions =`". A documented member is a line of its type, with its declaration; a definition's
    own doc comment stays its own line's."""
    sp = small_chunks_run(
        tmp_path_factory, "policy.ts", RETRY_TS, 1000, "Which status codes are retried, and how many times by default?"
    )
    lines = sp.s_ctx_md.splitlines()
    assert any("`limit?: number`: How many times a failed request is sent again" in line for line in lines), lines
    assert any("`statusCodes?: number[]`" in line and "@default [408, 429" in line for line in lines), lines
    assert not any("`export function send" in line for line in lines), lines


COMMAND_GO = """package cli

// Mode configures how errors are reported
type Mode string

// Command is one command of an application.
type Command struct {
\t// Hidden defines whether this command is left out of the list of available commands in the help output.
\tHidden bool

\t// SilenceUsage is an option to silence the usage text when the command returns an error.
\tSilenceUsage bool
}

// Execute runs the command with the process's arguments.
func (c *Command) Execute() error {
\t// the usage text is printed when parsing the arguments fails
\treturn c.run()
}
"""


def test_a_go_field_its_comment_documents_is_a_line_of_its_type(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Go documents a struct's fields with the "//" lines above them: on cobra's source the answer to "how do I stop
    the usage text on an error?" was `SilenceUsage`'s comment, and the condensed context said only "type
    `Command`". A field is a line of its type (which is not said again on each field's line); a comment inside a
    function is about a statement, no member; and a definition that is all header ("type Mode string") is quoted
    alone, never with the comment and the definition after it."""
    sp = small_chunks_run(
        tmp_path_factory,
        "command.go",
        COMMAND_GO,
        1000,
        "How do I hide a command from the help output, and stop the usage text when it returns an error?",
    )
    lines = sp.s_ctx_md.splitlines()
    assert any(
        "(command.go:6-13): `SilenceUsage bool`: SilenceUsage is an option to silence the usage text" in line
        for line in lines
    ), lines
    assert any("`Hidden bool`: Hidden defines whether this command is left out" in line for line in lines), lines
    assert not any("`Hidden bool`" in line and "Command is one command" in line for line in lines), lines
    assert not any("the usage text is printed when parsing" in line for line in lines), lines
    chunk = next(c for c in sp.base_context_chunks if c.source_path == "command.go")
    mode = next(r for r in references_of(chunk) if r.symbol.name == "Mode")
    assert mode.text == "type `Mode string` (command.go:3-4): Mode configures how errors are reported"


BACKUP_RUNS = """# Backups

The backup job runs every night at two in the morning and writes to the archive volume.

The archive volume holds one folder per night, named by the date the backup job ran.

A backup job that finds the archive volume full stops and writes nothing to it.

The backup job compresses each folder before it writes it to the archive volume.
"""
KEY_ROTATION_ONLY = """# API keys

To rotate the API keys, create a new key, deploy it, and revoke the old key after one hour.
"""


def test_the_best_answer_to_each_part_of_the_ask_is_read_though_the_first_parts_chunks_fill_the_budget(
    tmp_path,
) -> None:
    """A4 reads the selection within its budget: in the selection's order the chunks on the first part of the ask
    filled it and the answer to the second was never read. The best-evidenced chunk for each part is read first,
    and the chunks read stay in the selection's order."""
    from ragstream.stages import a4
    from ragstream.stages.io import StageEnv
    from ragstream.stages.options import RunOptions

    overrides = {
        "data_dir": str(tmp_path),
        "llm.provider": "local",
        "chunking.chunk_size": 120,
        "chunking.chunk_overlap": 0,
    }
    settings = load_settings(overrides=overrides)
    raw = settings.data_dir / "doc_raw" / "ops"
    raw.mkdir(parents=True)
    (raw / "backups.md").write_text(BACKUP_RUNS, encoding="utf-8")
    (raw / "keys.md").write_text(KEY_ROTATION_ONLY, encoding="utf-8")
    IngestionManager(settings).ingest("ops")
    ctl = AppController(settings)
    ctl.select_project("ops")
    prompt = "When does the backup job run and where does it write to? How do I rotate the API keys?"
    sp = ctl.run_full_pipeline(prompt, pause_after="none")
    chunks = Services(settings).searcher("ops").snapshot().chunks
    backups = [c.id for c in chunks if c.source_path == "backups.md"]
    [keys] = [c.id for c in chunks if c.source_path == "keys.md"]
    assert len(backups) >= 3
    sp.views_by_stage["a3"] = [*backups, keys]  # the answer to the second part comes last
    tight = load_settings(overrides={**overrides, "budget.ceilings.a4": 120})
    env = StageEnv(Services(tight), RunOptions(project="ops"))
    done = a4.run(sp, env)
    assert done.selection is not None and keys in done.selection
    assert done.selection[-1] == keys and len(done.selection) < len(backups) + 1  # the budget still cuts
    assert "To rotate the API keys, create a new key" in done.updates["s_ctx_md"]
    assert "The backup job runs every night" in done.updates["s_ctx_md"]

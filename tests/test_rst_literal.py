"""reStructuredText's literal text in the condensed context (issue 36): Sphinx documentation marks code by
indentation alone, under a "::" paragraph or a code directive. Read as prose, a console session's output became
Facts ("'pipx' already seems to be installed." on pipx's docs) and a lead-in never came with the command under it;
a paragraph right under its section title was read with the title."""

from __future__ import annotations

import pytest

from ragstream.condensing.extractive import sentences_of
from ragstream.evaluation.checks import verbatim_support
from tests.helpers import one_chunk, small_chunks_run

PRIVATE_INDEX = """####################
 Use a private index
####################

Install packages from a private index by passing the index options through to the installer.

*************
 One command
*************

Pass ``--index-url`` directly, or forward installer options with ``--tool-args``:

.. code-block:: console
   :caption: two ways

    $ tool install my-package --index-url https://pkgs.example.com/simple/
    $ tool install my-package --tool-args="--extra-index-url https://pkgs.example.com/simple/"

Quote ``--tool-args`` so the tool passes the whole string through.

***************
 Reinstall all
***************

Reinstall every package from a snapshot file::

    $ tool install-all snapshot.json
    'black' already seems to be installed. Not modifying existing installation in '/opt/tool/venvs/black'.
    'tool' already seems to be installed. Not modifying existing installation in '/opt/tool/venvs/tool'.

    $ tool install-all snapshot.json --force
    Installing to existing environment 'black'
      These apps are now globally available

The snapshot records each package's version, so reinstalling gives back the versions you had.
"""


def test_a_literal_block_is_code_and_a_lead_in_comes_with_its_short_command() -> None:
    """A code directive's short block comes with its lead-in, each line as code (the directive and its options are
    markup); a "::" paragraph before a long console session comes with the command it opens with, shown with ":"
    as the paragraph reads; the session's output is no line, and no paragraph is read with its title."""
    assert [s.text for s in sentences_of(one_chunk("private-index.rst", PRIVATE_INDEX))] == [
        "Install packages from a private index by passing the index options through to the installer.",
        "Pass ``--index-url`` directly, or forward installer options with ``--tool-args``: "
        "`$ tool install my-package --index-url https://pkgs.example.com/simple/` "
        '`$ tool install my-package --tool-args="--extra-index-url https://pkgs.example.com/simple/"`',
        "Quote ``--tool-args`` so the tool passes the whole string through.",
        "Reinstall every package from a snapshot file: `$ tool install-all snapshot.json`",
        "The snapshot records each package's version, so reinstalling gives back the versions you had.",
    ]


def test_a_line_with_its_command_quotes_the_document_as_it_reads() -> None:
    """The evaluation's verbatim judge reads the cited chunk as the line does: without the directive's lines."""
    chunk = one_chunk("private-index.rst", PRIVATE_INDEX)
    lines = [(s.text, [chunk.id]) for s in sentences_of(chunk)]
    assert verbatim_support(lines, {chunk.id: chunk}, []) == [(True, "")] * len(lines)


def test_a_chunk_that_opens_inside_a_literal_block_gives_none_of_its_lines(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The session is longer than a chunk: the next chunk opens inside it, where nothing marks it as code but the
    document before the chunk. Its output lines were Facts; the sentence after the block is the answer."""
    sp = small_chunks_run(
        tmp_path_factory,
        "private-index.rst",
        PRIVATE_INDEX,
        250,
        "When I reinstall every package from a snapshot, is an existing installation modified, and do I get back "
        "the versions I had?",
    )
    chunks = sp.chunk_by_id().values()
    assert any("already seems" in c.text and "::" not in c.text for c in chunks), "a chunk opens inside the session"
    output = ("already seems", "Not modifying", "Installing to existing", "globally available")
    assert not any(line in sp.s_ctx_md for line in output), sp.s_ctx_md
    assert "The snapshot records each package's version" in sp.s_ctx_md, sp.s_ctx_md


def test_a_line_of_backticks_in_restructuredtext_is_a_titles_underline_not_a_fence() -> None:
    """click's docs underline titles with backticks ("Defining the Lazy Group" over a line of them): read as
    Markdown fences, two such underlines hid every sentence between them and offered code comments as lines."""
    text = (
        "Lazy Loading\n````````````\n\nA group can load its subcommands only when they are invoked.\n\n"
        "Defining the Lazy Group\n```````````````````````\n\n"
        "The group keeps a map from command names to import paths.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("complex.rst", text))] == [
        "A group can load its subcommands only when they are invoked.",
        "The group keeps a map from command names to import paths.",
    ]


def test_a_directives_text_is_read_without_its_marker_and_a_bare_link_is_no_line() -> None:
    """ ".. note:: Neither the connect nor read timeouts ..." read "note:: Neither ..." (its ".." taken for a
    sentence's end) as a Fact of requests' docs, and a list of reStructuredText links ("`Blog post about Requests via
    Yum <https://...>`_") gave each link as a line: a bare link is never one, in either markup."""
    text = (
        "Timeouts\n--------\n\n"
        ".. note:: Neither the connect nor read timeouts are wall clock time.\n\n"
        "- `Blog post about the client via a package manager <https://example.com/post>`_\n"
        "- `Review of the client library <https://example.com/review>`_\n\n"
        "Most requests to external servers should have a timeout attached.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("advanced.rst", text))] == [
        "Neither the connect nor read timeouts are wall clock time.",
        "Most requests to external servers should have a timeout attached.",
    ]


COMPARED = """Compared with other tools
=========================

.. list-table::
   :header-rows: 1
   :widths: 30 35 35

   * - Task
     - tool
     - other
   * - Add a dependency to an installed app
     - ``tool inject app extra-package``
     - ``other install app --with extra-package``
   * - Upgrade every app
     - ``tool upgrade-all``
     - ``other upgrade --all``
"""


def test_a_list_table_row_is_one_line_of_its_cells() -> None:
    """A list-table's row is a record, as a Markdown table's row is: read as list items, its cells were lines of a
    few words ("- - Install editable from path") and the command beside them none. The header row is no line."""
    chunk = one_chunk("compared.rst", COMPARED)
    lines = [s.text for s in sentences_of(chunk)]
    assert lines == [
        "Add a dependency to an installed app | ``tool inject app extra-package`` | "
        "``other install app --with extra-package``",
        "Upgrade every app | ``tool upgrade-all`` | ``other upgrade --all``",
    ]
    assert verbatim_support([(line, [chunk.id]) for line in lines], {chunk.id: chunk}, []) == [(True, "")] * 2


def test_a_sentence_a_wrapped_role_opens_a_line_of_is_prose_and_a_field_list_stays_markup() -> None:
    """Sphinx prose wraps wherever it likes, so a role often opens a line ("... Flask will raise a\\n:exc:`~werkzeug.
    exceptions.RequestEntityTooLarge` exception."): read as a field list, the sentence that answered "what does the
    client get when the upload is too large" was no line. A field (":param width:") and a directive's options stay
    markup."""
    text = (
        "The code above will limit the maximum allowed payload to 16 megabytes.\n"
        "If a larger file is transmitted, Flask will raise a\n"
        ":exc:`~werkzeug.exceptions.RequestEntityTooLarge` exception.\n\n"
        "Use the pattern from\n:py:meth:`flask.Flask.app_context` in a ``with`` block.\n\n"
        ".. note::\n   :class: tip\n\n   Flask pushes the context for each request.\n\n"
        ":param width: the maximum width of the help text\n"
    )
    assert [s.text for s in sentences_of(one_chunk("uploads.rst", text))] == [
        "The code above will limit the maximum allowed payload to 16 megabytes.",
        "If a larger file is transmitted, Flask will raise a "
        ":exc:`~werkzeug.exceptions.RequestEntityTooLarge` exception.",
        "Use the pattern from :py:meth:`flask.Flask.app_context` in a ``with`` block.",
        "Flask pushes the context for each request.",
    ]


def test_a_block_of_header_fields_is_no_sentence() -> None:
    """A PEP opens with its header ("PEP: 723", "Title: Inline script metadata", "Author: ..."): read as prose it was
    one long Fact, "PEP: 723 Title: Inline script metadata Author: ... Status: Final ...". A sentence holding one
    label ("Note: keep the block short.") is still one."""
    text = (
        "PEP: 723\nTitle: Inline script metadata\nAuthor: Jane Doe <jane@example.org>\nStatus: Final\n"
        "Created: 04-Aug-2023\n\n"
        "Abstract\n========\n\nThis PEP specifies a metadata format that can be embedded in single-file scripts.\n\n"
        "Note: keep the metadata block short, since tools read it before the script runs.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("pep-0723.rst", text))] == [
        "This PEP specifies a metadata format that can be embedded in single-file scripts.",
        "Note: keep the metadata block short, since tools read it before the script runs.",
    ]


YEAR_FIELD = """# Seconds

Croniter can repeat a job every second from the start date::

    >>> base = datetime(2017, 3, 26, tzinfo=timezone.utc)
    >>> itr = croniter('* * * * * *', base)
    >>> itr.get_next(datetime)
    datetime.datetime(2017, 3, 26, 0, 0, 1, tzinfo=datetime.timezone.utc)
    >>> itr.get_next(datetime)
    datetime.datetime(2017, 3, 26, 0, 0, 2, tzinfo=datetime.timezone.utc)

About year
==========
Croniter also supports a year field, written after the seconds field.
"""


def test_a_chunk_opening_inside_a_literal_block_of_a_markdown_file_reads_the_prose_after_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """PyPI readmes are often reStructuredText in a `.md` file. A chunk opening inside an indented "::" block holds
    no fence line; read as inside a fenced block, all of it was code, and croniter's "Croniter also support year
    field." was lost with the session. The literal block ends where its indent does."""
    sp = small_chunks_run(tmp_path_factory, "croniter.md", YEAR_FIELD, 250, "Does croniter support a year field?")
    chunks = sp.chunk_by_id().values()
    assert any(">>>" in c.text and "::" not in c.text for c in chunks), "a chunk opens inside the session"
    assert "Croniter also supports a year field" in sp.s_ctx_md, sp.s_ctx_md
    assert "tzinfo=datetime.timezone.utc" not in sp.s_ctx_md, sp.s_ctx_md


def test_a_titles_tilde_underline_in_a_markdown_file_is_no_fence() -> None:
    """tqdm's readme is reStructuredText saved as `.md`: each of its 29 "~~~~" title underlines was taken for a fence,
    and what was code and what prose flipped at each one (its FAQ's answers were read as code, its session output
    as prose). An underline as long as its title is no fence; a fence is still one, also closing after a line as
    long as itself."""
    doc = (
        "Install\n~~~~~~~\n\nRun pip install on the package to get the latest release.\n\n"
        "Upgrade\n~~~~~~~\n\nRun pip install with the upgrade flag to replace it in place.\n\n"
        "~~~~\nfirst = 1\nsecond = 2\nthird = 3\nlast\n~~~~\n\nThe block above holds four lines of code.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("tqdm.md", doc))] == [
        "Run pip install on the package to get the latest release.",
        "Run pip install with the upgrade flag to replace it in place.",
        "The block above holds four lines of code.",
    ]


def test_a_fence_nested_in_a_longer_one_is_its_content_not_its_end() -> None:
    """pip's MyST pages wrap an example in "````{admonition} Example" holding "```" blocks; paired by count, the inner
    fences closed the outer one and opened the next: the file tree inside became a Fact ("pkg_dir ├── setup.py ...")
    and prose after the block was hidden as code. A block closes at a bare run of its own character at least as
    long as its opening's."""
    doc = (
        "Install from a subdirectory with the fragment.\n\n````{admonition} Example\nIf your layout is:\n\n```\n"
        "pkg_dir\n├── setup.py  # setup.py for package pkg\n└── module.py\nother_dir\n└── some_file\n```\n\n"
        "Then the package is found in its own folder.\n````\n\nThe fragment is read by the installer alone.\n"
    )
    assert [s.text for s in sentences_of(one_chunk("vcs.md", doc))] == [
        "Install from a subdirectory with the fragment.",
        "Then the package is found in its own folder.",
        "The fragment is read by the installer alone.",
    ]

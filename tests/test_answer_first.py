"""Offline A4 answer first (issue 36, deliverable 1): for each part of the ask, the sentences or list items
that answer it, in the ask's order; never a heading, label, bare link or cross-reference alone; a lead-in
with its items; code facts that say what a definition does; no filler lines."""

from __future__ import annotations

import pytest

from ragstream.condensing.condenser import a3_evidence, render_sctx, within_share
from ragstream.condensing.extractive import condense_extractively, sentences_of, stands_alone
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from tests.helpers import one_chunk


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return load_settings(overrides={"data_dir": str(tmp_path_factory.mktemp("first")), "llm.provider": "local"})


def test_labels_links_tags_and_cross_references_are_never_a_line_alone(base: Settings) -> None:
    doc = """# Citing data

**If no DOI is issued:**

**Note:** Keys must be rotated every ninety days by the owner.

You can see more details in [Starlette's official docs](https://www.starlette.io/background/).

[HTTP range requests](/en-US/docs/Web/HTTP/Guides/Range_requests) guide

The table below compares the features of each storage mode.

<Listing number="2-2" caption="The output from running cargo build">

- : Browsers compress their messages before sending them over the network.

Cargo uses only the versions of the dependencies you specified.
"""
    found = [s.text for s in sentences_of(one_chunk("doc.md", doc)) if s.listed or stands_alone(s.text, base.condenser)]
    assert found == [
        "Keys must be rotated every ninety days by the owner.",
        "Browsers compress their messages before sending them over the network.",
        "Cargo uses only the versions of the dependencies you specified.",
    ]


def test_a_lead_in_comes_with_its_items_or_its_short_command(base: Settings) -> None:
    doc = """Those superpowers include the ability to:

1. Dereference a raw pointer.
1. Call an unsafe function or method.

To see the output of passing tests as well, pass `--show-output`:

```console
$ cargo test -- --show-output
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
    ]


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

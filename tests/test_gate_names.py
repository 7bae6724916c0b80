"""What may be named as missing from the documents: not a web address the user gives (file and module names
shaped like one still are), not a unit after a number."""

from __future__ import annotations

import pytest

from ragstream.gate.coverage import absent_names
from ragstream.gate.evidence import addresses, own_terms, stemmed_terms
from ragstream.settings import GateSettings, load_settings


@pytest.fixture(scope="module")
def gate() -> GateSettings:
    return load_settings().gate


def test_urls_mail_and_host_names_are_addresses_file_and_module_names_are_not(gate: GateSettings) -> None:
    text = (
        "Publish our site under docs.acme-tools.io, mail ops@fernhill-labs.com, call http://localhost:8000/docs; "
        "set it in vercel.json, import starlette.middleware.base, e.g. on Node.js."
    )
    assert addresses(text, gate) == ["docs.acme-tools.io", "ops@fernhill-labs.com", "http://localhost:8000/docs"]


def test_an_address_is_not_named_as_missing_a_file_name_is(gate: GateSettings) -> None:
    ask = "How do I serve the site at docs.acme-tools.io and configure the redirect in vercel.json?"
    absent = stemmed_terms("acme vercel", gate) - own_terms([ask], gate)
    assert absent_names(ask, gate, absent, []) == ["vercel.json"]


def test_a_unit_after_a_number_is_no_name_a_name_after_a_number_is(gate: GateSettings) -> None:
    """ "a 2 GB CSV export" was answered by Starlette's FileResponse docs, and the prompt said they do not cover
    "GB"."""
    absent = stemmed_terms("gb mb celery", gate)
    assert absent_names("It serves a 2 GB export and 30MB files through 4 Celery workers.", gate, absent, []) == [
        "Celery"
    ]


def test_an_english_compound_is_no_name_a_tool_joined_by_a_hyphen_is(gate: GateSettings) -> None:
    """ "rate-limited" was named as what tenacity's source does not cover, beside the ask about contention it
    answers: its words are English, as those of "long-running" are; "cargo-tarpaulin" names a tool."""
    absent = stemmed_terms("limited running tarpaulin", gate)
    ask = "Which wait suits long-running workers against a rate-limited database, and does cargo-tarpaulin help?"
    assert absent_names(ask, gate, absent, []) == ["cargo-tarpaulin"]

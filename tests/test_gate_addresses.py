"""Web addresses the user writes are theirs; file and module names shaped like them are not addresses."""

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

"""Planted secrets never leave: redacted before anything is stored or sent, listed by type, file and line."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ragstream.app.cli import main
from ragstream.app.controller import AppController
from ragstream.index.manifest import Manifest
from ragstream.ingestion.manager import IngestionManager
from ragstream.secrets.scan import scan
from ragstream.settings import Settings, load_settings
from ragstream.tenancy.projects import project_paths
from tests.openai_server import FakeOpenAIServer, schema_responder

RNG = random.Random(30)


def _token(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def _private_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()


AWS_KEY = "AKIA" + _token(string.ascii_uppercase + string.digits, 16)
GITHUB_TOKEN = "ghp_" + _token(string.ascii_letters + string.digits, 36)
DB_PASSWORD = "pw-" + _token(string.ascii_letters + string.digits, 18)
PEM = _private_key()
PEM_BODY = [line for line in PEM.splitlines() if not line.startswith("-----")]
ENV_KEY = "sk-" + _token(string.ascii_letters + string.digits, 40)
PROMPT_KEY = "xoxb-" + "-".join(_token(string.digits, 12) for _ in range(2)) + "-" + _token(string.ascii_letters, 24)
VALUES = [AWS_KEY, GITHUB_TOKEN, DB_PASSWORD, ENV_KEY, PROMPT_KEY, *PEM_BODY]

DEPLOY = f"""# Deploying the billing service

The billing service runs in the eu-west cluster. Deployments go through the release pipeline.
The pipeline uploads artifacts with the access key {AWS_KEY} to the artifact bucket.
Rollbacks restore the previous artifact from the bucket.

The TLS key for the staging proxy is kept here for now:

{PEM}
Rotate this key every ninety days. The proxy reloads it without downtime.
Health checks run every ten seconds against the status endpoint.
"""
SETTINGS = f"""# billing service settings
service:
  name: billing
  replicas: 3
  region: eu-west
github:
  api_token: "{GITHUB_TOKEN}"
  org: billing-team
database:
  host: db.internal
  port: 5432
  password: "{DB_PASSWORD}"
  pool_size: 10
"""


@pytest.fixture()
def planted(tmp_path: Path) -> Path:
    root = tmp_path / "billing"
    files = {
        "docs/deploy.md": DEPLOY,
        "config/settings.yaml": SETTINGS,
        ".env": f"OPENAI_API_KEY={ENV_KEY}\n",
        "keys/proxy.pem": PEM,
        "config/ci.yaml": f'aws_access_key_id: "{AWS_KEY}"\ngithub_token: "{GITHUB_TOKEN}"\n',
        "docs/overview.md": "# Overview\nBilling turns usage records into invoices every night.\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _everything_under(root: Path) -> bytes:
    """Every file the product wrote, except Chroma's HNSW segment files: hnswlib writes them from malloc'd buffers it
    never zeroes, so they may hold whatever the process freed before, a secret the scanner then redacted among it
    (chroma-core/chroma#7688, open; seen here about one run in ten). What Chroma stores of a chunk, its text and
    metadata, is in chroma.sqlite3, which is read."""
    return b"\n".join(
        p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not (p.suffix == ".bin" and p.parent.parent.name == "chroma")
    )


def test_scan_redacts_in_place_and_keeps_line_numbers() -> None:
    settings = load_settings().secrets
    scanned = scan(DEPLOY, "docs/deploy.md", settings)
    assert {(f.type, f.line) for f in scanned.findings} == {("AWS Access Key", 4), ("Private Key", 9)}
    assert scanned.text.count("\n") == DEPLOY.count("\n")
    assert "with the access key [REDACTED: AWS Access Key] to the artifact bucket." in scanned.text
    assert scanned.text.splitlines()[8] == "[REDACTED: Private Key]"
    assert not any(v in scanned.text for v in VALUES)
    yaml = scan(SETTINGS, "config/settings.yaml", settings)
    assert (
        'api_token: "[REDACTED: GitHub Token]"' in yaml.text and 'password: "[REDACTED: Secret Keyword]"' in yaml.text
    )
    assert [(f.type, f.line) for f in yaml.findings] == [("GitHub Token", 7), ("Secret Keyword", 12)]
    off = scan(DEPLOY, "docs/deploy.md", settings.model_copy(update={"scan": False}))
    assert off.text == DEPLOY and off.findings == []


def test_planted_keys_never_reach_the_data_root_the_prompt_or_the_llm(
    settings: Settings, planted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = IngestionManager(settings).ingest("billing", planted)
    assert stats.skipped[".env"] == "holds secrets by its name (matches '.env')"
    assert stats.skipped["keys/proxy.pem"] == "holds secrets by its name (matches '*.pem')"
    assert stats.skipped["config/ci.yaml"].startswith(
        "mostly secrets (2 of 2 lines: AWS Access Key (line 1), GitHub Token (line 2)"
    )
    manifest = Manifest.load(project_paths(settings, "billing").manifest_path)
    assert set(manifest.files) == {"docs/deploy.md", "config/settings.yaml", "docs/overview.md"}

    assert main(["--data-dir", str(settings.data_dir), "projects"]) == 0
    listing = capsys.readouterr().out
    for line in (
        "docs/deploy.md:4: AWS Access Key (redacted)",
        "docs/deploy.md:9: Private Key (redacted)",
        "config/settings.yaml:7: GitHub Token (redacted)",
        "config/settings.yaml:12: Secret Keyword (redacted)",
        ".env: skipped, holds secrets by its name (matches '.env')",
    ):
        assert line in listing

    with FakeOpenAIServer() as server:
        server.responder = schema_responder
        online = load_settings(
            overrides={
                "data_dir": str(settings.data_dir),
                "llm.provider": "openai",
                "llm.base_url": server.url,
                "llm.api_key": "sk-test-local-server-0000",
            }
        )
        events: list[dict] = []
        ctl = AppController(online)
        ctl.on_event = events.append
        prompt = (
            f"# Task\nHow is the billing service deployed and which key does the pipeline use?\n"
            f"# Context\nOur Slack bot token is {PROMPT_KEY} if that matters.\n"
        )
        sp = ctl.run_full_pipeline(prompt, project="billing", pause_after="none", send=True)
        assert events[0] == {"event": "prompt_secrets", "findings": [{"type": "Slack Token", "line": 4}]}
        assert sp.preprocessing is not None and sp.answer is not None
        assert "[REDACTED: Slack Token]" in sp.raw_prompt
        assert "[REDACTED: AWS Access Key]" in sp.prompt_ready or "[REDACTED: Private Key]" in sp.prompt_ready
        requests = repr(server.requests)
    assert len(server.requests) > 3
    for value in VALUES:
        assert value not in sp.prompt_ready and value not in requests
    data = _everything_under(settings.data_dir)
    assert b"[REDACTED: Slack Token]" in data  # the checkpoints and memory hold the prompt, redacted
    leaked = [v[:8] + "..." for v in VALUES if v.encode() in data]
    assert leaked == [], f"secret values under the data root: {leaked}"


def test_run_warns_about_a_secret_in_the_prompt_before_any_stage(
    settings: Settings, planted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(settings.data_dir)]
    assert main([*data, "ingest", "billing", "--path", str(planted), "--quiet"]) == 0
    capsys.readouterr()
    assert (
        main(
            [*data, "run", f"# Task\nSummarize the deployment.\n# Context\naws key {AWS_KEY}\n", "--project", "billing"]
        )
        == 0
    )
    captured = capsys.readouterr()
    warning = captured.err.index("warning: your prompt holds secrets: AWS Access Key (line 4)")
    assert warning < captured.err.index("> preprocess")
    assert AWS_KEY not in captured.out and "[REDACTED: AWS Access Key]" in captured.out
    assert AWS_KEY.encode() not in _everything_under(settings.data_dir)


def test_scanning_off_keeps_text_as_it_is(tmp_path: Path, planted: Path) -> None:
    settings = load_settings(
        overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local", "secrets.scan": False}
    )
    stats = IngestionManager(settings).ingest("billing", planted)
    assert "config/ci.yaml" not in stats.skipped and stats.secrets == {}
    assert AWS_KEY.encode() in _everything_under(settings.data_dir)


def test_reingest_keeps_findings_and_a_scanner_change_rescans(tmp_path: Path, planted: Path) -> None:
    on = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    first = IngestionManager(on).ingest("billing", planted)
    again = IngestionManager(on).ingest("billing", planted)
    assert again.unchanged == 3 and again.chunks_written == 0 and again.secrets == first.secrets
    assert Manifest.load(project_paths(on, "billing").manifest_path).secret_lines()[:2] == [
        "config/settings.yaml:7: GitHub Token (redacted)",
        "config/settings.yaml:12: Secret Keyword (redacted)",
    ]
    assert AWS_KEY.encode() not in _everything_under(on.data_dir)
    off = IngestionManager(on.model_copy(update={"secrets": on.secrets.model_copy(update={"scan": False})})).ingest(
        "billing", planted
    )
    assert off.unchanged == 0 and off.secrets == {}  # the scanner is part of how files were cut: all re-chunked


def test_a_secret_typed_into_an_edit_is_redacted_too(settings: Settings, planted: Path) -> None:
    IngestionManager(settings).ingest("billing", planted)
    ctl = AppController(settings)
    events: list[dict] = []
    ctl.on_event = events.append
    ctl.run_full_pipeline("# Task\nHow is billing deployed?", project="billing")  # pauses after A4
    sp = ctl.edit(s_ctx_md=ctl.sp.s_ctx_md + f"\n- the deploy key is {AWS_KEY}")
    assert "[REDACTED: AWS Access Key]" in sp.s_ctx_md and events[-1]["event"] == "prompt_secrets"
    assert "[REDACTED: AWS Access Key]" in ctl.resume().prompt_ready
    assert AWS_KEY.encode() not in _everything_under(settings.data_dir)

"""The strategies are named for what they search with (KEYWORD is BM25, DENSE is vectors), and the seed's
names (SEMANTIC was BM25, PRECISE was vectors) keep their meaning wherever a user or a config gives one.
Old checkpoints are in test_legacy_checkpoints.py."""

from __future__ import annotations

import json

import pytest

from ragstream.app.cli import main
from ragstream.errors import InputError
from ragstream.settings import ConfidenceSettings, Settings
from ragstream.stages.options import RunOptions
from ragstream.strategies import SEED_NAMES, Strategy


def test_a_seed_name_means_what_it_meant_and_never_a_current_strategy() -> None:
    assert Strategy("SEMANTIC") is Strategy.KEYWORD and Strategy("PRECISE") is Strategy.DENSE
    assert not set(SEED_NAMES) & set(Strategy.__members__)
    assert all(Strategy(s.value) is s for s in Strategy)
    with pytest.raises(ValueError):
        Strategy("BM25")


@pytest.mark.parametrize(
    ("given", "meant"),
    [("SEMANTIC", "KEYWORD"), ("PRECISE", "DENSE"), ("KEYWORD", "KEYWORD"), ("DENSE", "DENSE"), ("HYBRID", "HYBRID")],
)
def test_run_options_take_either_name(given: str, meant: str) -> None:
    assert RunOptions(strategy=given).strategy == meant


def test_an_unknown_strategy_is_refused_naming_the_current_ones() -> None:
    with pytest.raises(InputError, match="unknown retrieval strategy 'semantic'.*KEYWORD"):
        RunOptions(strategy="semantic")


def test_a_config_naming_the_seed_strategies_reads(indexed: Settings) -> None:
    confidence = indexed.retrieval.confidence.model_dump()
    old = ConfidenceSettings.model_validate({**confidence, "rerun_strategies": ["PRECISE", "SEMANTIC"]})
    assert old.rerun_strategies == [Strategy.DENSE, Strategy.KEYWORD]


def test_the_cli_takes_a_seed_name_and_reports_todays(indexed: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--data-dir", str(indexed.data_dir), "run", "Where is ERR_BUDGET_4711 raised?", "--project", "demo"]
    assert main([*argv, "--strategy", "SEMANTIC", "--json"]) == 0
    retrieval = json.loads(capsys.readouterr().out)["run_metadata"]["retrieval"]
    assert retrieval["strategy"] == "KEYWORD"
    assert main([*argv, "--strategy", "KEYWORD", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_metadata"]["retrieval"] == retrieval

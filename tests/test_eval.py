"""`ragstream eval` (issue 37): suites in their three formats, judged through the real graph, and bad suites
refused with one line before anything is ingested.

The small suite tests/data/eval/ops.jsonl (over tests/quality/corpora/ops) is the CI suite: it runs with
thresholds, so a change that loses the answer or a check fails here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragstream.app.cli import main
from ragstream.evaluation.checks import unclosed_fence, universal
from ragstream.evaluation.metrics import Ranked, rank_metrics, wilcoxon_signed_rank
from ragstream.evaluation.suite import Relevant, load_suite
from ragstream.state import PromptBody, SuperPrompt

HERE = Path(__file__).parent
OPS_SUITE = HERE / "data" / "eval" / "ops.jsonl"
OPS_CORPUS = HERE / "quality" / "corpora" / "ops"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSTREAM_LLM_PROVIDER", "local")


def _eval(data: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), "eval", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _folder_suite(root: Path) -> Path:
    """A case-folder suite over two documents, as ../shared/eval lays one out."""
    (root / "corpus" / "guide").mkdir(parents=True)
    (root / "corpus" / "guide" / "tea.md").write_text(
        "# Tea\n\nGreen tea is steeped at 80 degrees for two minutes.\n\nBlack tea takes boiling water.\n",
        encoding="utf-8",
    )
    (root / "corpus" / "bikes.md").write_text(
        "# Bikes\n\nA chain is oiled every 300 kilometres. Tyres are pumped to 4 bar.\n", encoding="utf-8"
    )
    (root / "cases").mkdir()
    (root / "cases" / "c01.md").write_text("How hot should the water be for green tea?\n", encoding="utf-8")
    (root / "cases" / "c01.json").write_text(
        json.dumps(
            {
                "kind": "plain question",
                "expected_files": ["guide/tea.md"],
                "key_facts": ["80 degrees"],
                "must_not_contain": ["You are an expert"],
            }
        ),
        encoding="utf-8",
    )
    return root


def _nothing_created(data: Path) -> None:
    assert not (data / "chroma_db").exists() and not (data / "doc_raw").exists(), "a bad suite changed the data root"


def test_ci_suite_meets_its_thresholds_and_a_second_run_embeds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    thresholds = ["--min", "fused.hit@5=1", "--min", "gated.mrr@10=0.75", "--min", "check.key_facts=0.75"]
    args = [str(OPS_SUITE), "--corpus", str(OPS_CORPUS), *thresholds]
    code, out, err = _eval(data, capsys, *args, "--json")
    assert code == 0, err
    result = json.loads(out)
    summary, run = result["summary"], result["run"]
    assert summary["cases"] == 5 and summary["retrieval_cases"] == 4 and summary["errors"] == 0
    assert set(summary["retrieval"]) == {"keyword", "dense", "fused", "reranked", "gated"}
    assert summary["checks"]["not_covered_named"] == {"passed": 1, "of": 1, "rate": 1.0}
    assert summary["checks"]["fences_closed"]["rate"] == 1.0
    assert {"retrieval", "a3", "a4", "build", "total"} <= set(summary["latency_ms"])
    assert summary["tokens"]["prompt"]["median"] > summary["tokens"]["excerpts"]["median"] > 0
    lock = next(c for c in run["cases"] if c["name"] == "lock-error")
    assert "What does ERR_LOCK_2209 mean?" in lock["final_prompt"]
    assert run["support_check"] and run["corpus_fingerprint"] and run["config_digest"]

    code, out, err = _eval(data, capsys, *args)
    assert code == 0, err
    assert "0 chunks written" in out and "cases passed:" in out and "retrieval (4 cases" in out


def test_min_below_a_threshold_exits_1_and_says_which(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _eval(
        tmp_path / "data", capsys, str(OPS_SUITE), "--corpus", str(OPS_CORPUS), "--limit", "1", "--min", "score=1.01"
    )
    assert code == 1
    assert "below threshold: score" in err


def test_folder_suite_is_judged_field_by_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _folder_suite(tmp_path / "tea-suite")
    code, out, err = _eval(tmp_path / "data", capsys, str(suite), "--json")
    assert code == 0, err
    case = json.loads(out)["run"]["cases"][0]
    checks = {c["name"]: c for c in case["checks"]}
    assert checks["expected_files"]["passed"] and checks["key_facts"]["passed"], checks
    assert checks["must_not_contain"]["passed"] and checks["user_lines_kept"]["passed"]
    assert json.loads(out)["run"]["project"] == "eval-tea-suite"
    # the answer in the condensed context itself is counted apart, phrase by phrase, and does not fail a case
    condensed = checks["key_facts_condensed"]
    assert condensed["soft"] and condensed["wanted"] == 1
    assert condensed["passed"] == ("80 degrees" in case["final_prompt"].split("## Source excerpts")[0])
    assert json.loads(out)["summary"]["phrases"]["key_facts"] == {"found": 1, "of": 1, "rate": 1.0}


def test_a_folder_of_cases_runs_over_a_corpus_kept_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _folder_suite(tmp_path / "tea-suite")
    elsewhere = tmp_path / "installed-docs"
    (suite / "corpus").rename(elsewhere)  # the suite holds only cases, as bench/suites/ does
    code, out, err = _eval(tmp_path / "data", capsys, str(suite), "--corpus", str(elsewhere), "--json")
    assert code == 0, err
    checks = {c["name"]: c for c in json.loads(out)["run"]["cases"][0]["checks"]}
    assert checks["expected_files"]["passed"] and checks["key_facts"]["passed"], checks
    code, out, err = _eval(tmp_path / "data2", capsys, str(suite))
    assert code == 2 and "missing folder corpus/" in err


def test_save_then_compare_pairs_the_cases_and_refuses_another_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    ops = [str(OPS_SUITE), "--corpus", str(OPS_CORPUS), "--limit", "2"]
    code, _, err = _eval(data, capsys, *ops, "--save", "base")
    assert code == 0 and "saved the run as 'base'" in err and (data / "eval" / "base.json").is_file()
    code, out, err = _eval(data, capsys, *ops, "--skip", "rerank", "--compare", "base", "--json")
    assert code == 0, err
    compared = json.loads(out)["compare"]
    assert compared["paired_cases"] == 2 and compared["before_config"] != compared["after_config"]
    assert compared["after_options"]["skip"] == ["rerank"]
    row = compared["figures"]["reranked.ndcg@10"]
    assert row["pairs"] == 2 and 0.0 <= row["p"] <= 1.0
    code, out, _ = _eval(data, capsys, *ops, "--compare", "base")
    assert code == 0 and "compared with 'base' over 2 paired cases (same configuration)" in out
    code, out, err = _eval(data, capsys, str(_folder_suite(tmp_path / "other")), "--compare", "base")
    assert code == 2 and out == "" and "refusing to compare: run 'base' is over another corpus" in err
    code, _, err = _eval(data, capsys, *ops, "--compare", "nothing-saved")
    assert code == 2 and "no saved run 'nothing-saved' (saved: base)" in err


def test_html_report_and_the_gui_open_a_saved_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    data, page = tmp_path / "data", tmp_path / "report.html"
    code, _, err = _eval(
        data, capsys, str(OPS_SUITE), "--corpus", str(OPS_CORPUS), "--limit", "2", "--html", str(page), "--save", "ops2"
    )
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "Retrieval per stage" in html and 'class="bar"' in html and "Failing cases" in html
    assert "<script" not in html and "http://" not in html and "https://" not in html  # self-contained
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(data))
    app = AppTest.from_file(str(HERE.parent / "ragstream" / "app" / "ui_streamlit.py"), default_timeout=300)
    app.run()
    assert not app.exception
    assert next(s for s in app.selectbox if s.key == "eval_run").value == "ops2"
    assert any("ops: " in c.value and "cases pass every check" in c.value for c in app.caption)


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("missing_json", "missing file c01.json"),
        ("no_prompt", "no prompt (missing c01.md"),
        ("empty_prompt", "the prompt is empty"),
        ("unknown_field", "unknown field 'expected_file'"),
        ("path_not_in_corpus", "relevant path 'guide/coffee.md' is not in the corpus"),
        ("no_corpus", "missing folder corpus/"),
    ],
)
def test_bad_folder_suite_is_refused_with_one_line_and_changes_nothing(
    breakage: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _folder_suite(tmp_path / "suite")
    spec = suite / "cases" / "c01.json"
    if breakage == "missing_json":
        spec.unlink()
    elif breakage == "no_prompt":
        (suite / "cases" / "c01.md").unlink()
    elif breakage == "empty_prompt":
        (suite / "cases" / "c01.md").write_text("  \n", encoding="utf-8")
    elif breakage == "unknown_field":
        spec.write_text(json.dumps({"expected_file": ["guide/tea.md"]}), encoding="utf-8")
    elif breakage == "path_not_in_corpus":
        spec.write_text(json.dumps({"expected_files": ["guide/coffee.md"]}), encoding="utf-8")
    elif breakage == "no_corpus":
        shutil.rmtree(suite / "corpus")
    data = tmp_path / "data"
    code, out, err = _eval(data, capsys, str(suite))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    _nothing_created(data)


def test_a_project_holding_other_documents_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    (data / "doc_raw" / "mine").mkdir(parents=True)
    (data / "doc_raw" / "mine" / "notes.md").write_text("My own notes.\n", encoding="utf-8")
    suite = _folder_suite(tmp_path / "suite")
    code, _, err = _eval(data, capsys, str(suite), "--project", "mine")
    assert code == 2 and "project 'mine' holds other documents" in err
    assert [p.name for p in (data / "doc_raw" / "mine").iterdir()] == ["notes.md"] and not (data / "chroma_db").exists()


def test_bad_jsonl_and_beir_suites_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("Alpha.\n", encoding="utf-8")
    suite = tmp_path / "s.jsonl"
    data = tmp_path / "data"
    for line, message in (
        ('{"relevant": [{"path": "a.md"}]}', "no prompt (a non-empty 'question' is required)"),
        ('{"question": "q?", "relevant": [{"path": "b.md"}]}', "relevant path 'b.md' is not in the corpus"),
        ('{"question": "q?", "answer": "x"}', "unknown field 'answer'"),
        ('{"question": "q?", "relevant": [{"path": "a.md", "lines": [3, 1]}]}', "first <= last"),
    ):
        suite.write_text(line + "\n", encoding="utf-8")
        code, _, err = _eval(data, capsys, str(suite))
        assert code == 2 and message in err and err.count("\n") == 1, err
    code, _, err = _eval(data, capsys, str(tmp_path / "nowhere.jsonl"))
    assert code == 2 and "no such file or folder" in err
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "Alpha."}\n', encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "alpha?"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td9\t1\n", encoding="utf-8")
    code, _, err = _eval(data, capsys, str(beir))
    assert code == 2 and "relevant document 'd9' is not in the corpus" in err
    (beir / "queries.jsonl").unlink()
    code, _, err = _eval(data, capsys, str(beir))
    assert code == 2 and "missing file queries.jsonl" in err
    _nothing_created(data)


def test_beir_suite_runs_with_documents_as_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    beir = tmp_path / "tiny-beir"
    (beir / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "Vitamin D", "text": "Vitamin D is made in the skin under sunlight."},
        {"_id": "d2", "title": "Coffee", "text": "Caffeine blocks adenosine receptors in the brain."},
    ]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "Caffeine acts on adenosine receptors."}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n", encoding="utf-8")
    code, out, err = _eval(tmp_path / "data", capsys, str(beir), "--json")
    assert code == 0, err
    case = json.loads(out)["run"]["cases"][0]
    assert case["retrieval"]["keyword"]["hit@1"] == 1.0
    assert (tmp_path / "data" / "doc_raw" / "eval-tiny-beir" / "d2.txt").read_text().startswith("Coffee\n\nCaffeine")


def test_rank_metrics_count_a_document_once_and_lines_by_overlap() -> None:
    ranking = [Ranked("a.md", (1, 5)), Ranked("b.md", (1, 9)), Ranked("b.md", (10, 20)), Ranked("c.md")]
    by_file = rank_metrics(ranking, [Relevant("b.md")])
    assert by_file["hit@1"] == 0.0 and by_file["hit@5"] == 1.0 and by_file["mrr@10"] == 0.5
    by_lines = rank_metrics(ranking, [Relevant("b.md", (12, 14))])
    assert by_lines["mrr@10"] == pytest.approx(1 / 3)
    both = rank_metrics(ranking, [Relevant("a.md"), Relevant("c.md")])
    ideal = 1 + 1 / 1.584962500721156
    assert both["ndcg@10"] == pytest.approx((1 + 1 / 2.321928094887362) / ideal)
    assert rank_metrics([], [Relevant("a.md")]) == {"hit@1": 0.0, "hit@5": 0.0, "mrr@10": 0.0, "ndcg@10": 0.0}


def test_wilcoxon_exact_p_value_matches_the_tables() -> None:
    # n = 6, all positive: the smallest two-sided exact p is 2 / 2^6.
    assert wilcoxon_signed_rank([1, 2, 3, 4, 5, 6]) == (pytest.approx(2 / 64), 6)
    p, n = wilcoxon_signed_rank([0.5, -0.25, 0, 0.75, 0.1, -0.05, 0.3, 0.2])
    assert n == 7 and p == pytest.approx(0.15625)  # W+ = 23 of 28 (scipy.stats.wilcoxon, exact)
    assert wilcoxon_signed_rank([0, 0]) == (1.0, 0)
    tied_p, _ = wilcoxon_signed_rank([1, 1, 1, -1])
    assert tied_p == pytest.approx(10 / 16)  # |W+ - 5| >= 3 in 10 of the 16 sign patterns


def test_an_unclosed_fence_is_found() -> None:
    assert unclosed_fence("~~~~a\n```\nx\n~~~~\n") is None
    assert unclosed_fence("text\n~~~~excerpt\nbody\n~~~\n") == "~~~~excerpt"


def test_a_jsonl_suite_finds_the_corpus_named_like_it() -> None:
    suite = load_suite(HERE.parent / "examples" / "sample_project.jsonl")
    assert suite.corpus == HERE.parent / "examples" / "sample_project" and len(suite.cases) == 5
    assert suite.cases[3].relevant == (Relevant("budget.py", (4, 6)),)
    assert suite.cases[4].fields["expected_files"] == [] and "expected_files" in suite.cases[0].fields


def test_universal_checks_quote_what_fails() -> None:
    raw = "# Question\nAct as a reviewer. Is the lock held?\nKeep it short.\n"
    prompt = (
        "## System\nYou are an expert.\n\n## Task\nAct as a reviewer.\nIs the lock held?\n\n"
        '## Condensed context\n~~~~condensed-context from="the excerpts below"\n### Facts\n'
        "- The lock is held. [a.md@0123456789#0]\n- The lock is held. [a.md@0123456789#0]\n### Open issues\n"
        "- none found in the selected excerpts\n### Constraints\n- none found in the selected excerpts\n~~~~\n\n"
        '## Source excerpts\n~~~~excerpt chunk="a.md@0123456789#1"\nThe lock is held.\n'
    )
    condensed = prompt.split('from="the excerpts below"\n', 1)[1].split("~~~~", 1)[0]
    body = PromptBody(depth="detailed", tone="short")
    sp = SuperPrompt(raw_prompt=raw, prompt_ready=prompt, s_ctx_md=condensed, body=body)
    checks = {c.name: c for c in universal(sp, {})}
    assert checks["user_lines_kept"].lines == ["Keep it short."]  # the heading may be normalized, sentences split
    assert checks["no_unasked_role"].lines == ["You are an expert."]
    assert checks["no_unasked_label"].lines == ["depth: detailed"]  # "short" is the user's word
    assert checks["fences_closed"].lines == ['~~~~excerpt chunk="a.md@0123456789#1"']
    assert checks["condensed_cited_shown"].lines[0].startswith("not shown: - The lock is held.")
    assert checks["no_repeated_line"].lines == ["- the lock is held. [a.md@0123456789#0]"]  # not the "none found" notes


def test_a_json_prompts_values_are_the_users_lines_and_its_keys_headers() -> None:
    """A prompt that is one JSON object is read as keys and values: the keys may become headings, the values must
    be in the prompt word for word, the quotes and escapes around them are JSON's."""
    raw = '{"task": "Explain why nothing prints.", "context": "v.iter().map(|x| println!(\\"{x}\\"));",\n "level": 2}'
    kept = '## Task\nExplain why nothing prints.\n\n## Context\nv.iter().map(|x| println!("{x}"));\n\n### level\n2\n'
    check = {c.name: c for c in universal(SuperPrompt(raw_prompt=raw, prompt_ready=kept), {})}["user_lines_kept"]
    assert check.passed, check.lines
    lost = kept.replace("### level\n2\n", "")
    check = {c.name: c for c in universal(SuperPrompt(raw_prompt=raw, prompt_ready=lost), {})}["user_lines_kept"]
    assert check.lines == ["2"]


def test_the_progress_bar_is_drawn_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from ragstream.app.cli.eval import _progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _progress() is None  # a pipe or a file gets no escape codes
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    show = _progress()
    assert show is not None
    show(1, 2, "c01")
    show(2, 2, "c02")
    assert "2/2" in terminal.getvalue() and "c02" in terminal.getvalue()


def test_a_condensed_sentence_quoted_again_inside_another_line_is_a_repeat() -> None:
    """The same sentence alone and again with the sentence after it (two neighbouring chunks), or an item alone
    and in its list, says one thing twice; a short line inside a longer one is no such repeat."""
    condensed = (
        "### Facts\n"
        "- You can also increase the line length, but long lines are harder to read. [s.md@0123456789#0]\n"
        "- You can also increase the line length, but long lines are harder to read. It also hurts diff review."
        " [s.md@0123456789#1]\n"
        "- The default is 88. [s.md@0123456789#1]\n"
        "- Black's default is 88 characters, which is 10% over 80. [s.md@0123456789#1]\n"
    )
    prompt = (
        f'## Task\nWhy 88?\n\n## Condensed context\n~~~~condensed-context from="the excerpts below"\n{condensed}~~~~\n'
    )
    sp = SuperPrompt(raw_prompt="Why 88?", prompt_ready=prompt, s_ctx_md=condensed)
    checks = {c.name: c for c in universal(sp, {})}
    assert checks["no_repeated_line"].lines == [
        "you can also increase the line length, but long lines are harder to read."
    ]


def test_the_checks_read_the_condensed_context_the_final_prompt_shows() -> None:
    """A4's text may still hold a line citing a chunk the prompt budget left out; the builder withdraws it, so no
    user sees it. Judged on A4's text, such a line failed `condensed_cited_shown` and counted as a cited Fact of an
    ask nothing answers, and a key fact only it held counted as carried."""
    from ragstream.evaluation.checks import judge
    from ragstream.evaluation.suite import Case

    built = "### Facts\n- Shown fact. [a.md@0123456789#0]\n"
    written = (
        built
        + "- Withdrawn fact about Celery. [b.md@0123456789#4]\n### Open issues\n- The documents do not cover: Celery\n"
    )
    built += "### Open issues\n- The documents do not cover: Celery\n"
    prompt = (
        f'## Task\nHow?\n\n## Condensed context\n~~~~condensed-context from="the excerpts below"\n{built}~~~~\n\n'
        '## Source excerpts\n~~~~excerpt chunk="a.md@0123456789#0"\nShown fact.\n~~~~\n'
    )
    sp = SuperPrompt(raw_prompt="How?", prompt_ready=prompt, s_ctx_md=written)
    case = Case("c", "How?", {"expected_files": [], "not_covered_terms": ["Celery"], "key_facts": ["Withdrawn fact"]})
    checks = {c.name: c for c in judge(case, sp, {})}
    assert checks["condensed_cited_shown"].passed, checks["condensed_cited_shown"].lines
    assert checks["nothing_cited"].lines == ["- Shown fact. [a.md@0123456789#0]"]
    assert checks["not_covered_named"].passed
    assert not checks["key_facts"].passed

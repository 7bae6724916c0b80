"""The prompt-quality suite: the final prompt never invents and never loses (cases in cases.yaml).

Every case runs the whole pipeline offline (the default `local` provider) on real, ingested corpora,
then checks what the case expects plus the invariants every final prompt must hold.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from ragstream.app.controller import AppController
from ragstream.condensing.condenser import SECTIONS, render_sctx
from ragstream.condensing.extractive import references_of, states
from ragstream.errors import RagstreamError
from ragstream.evaluation.checks import verbatim_support
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.rendering.excerpts import shown_excerpts
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.state import SuperPrompt
from ragstream.text.chunk_ids import CITATION, source_of
from ragstream.text.rst import as_read
from tests.helpers import unfenced

HERE = Path(__file__).parent
SAMPLE = HERE.parents[1] / "examples" / "sample_project"  # corpus "sample": the demo's own documents
CASES = yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8"))
TITLES = {title: key for key, title in SECTIONS}


@pytest.fixture(scope="session")
def quality_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("quality")


def _project(root: Path, corpora: list[str]) -> tuple[Settings, str]:
    """A data root per case (memory and caches stay apart) whose project links one shared ingested index."""
    name = "-".join(sorted(corpora))
    shared = load_settings(overrides={"data_dir": str(root / "shared"), "llm.provider": "local"})
    if not (shared.data_dir / "chroma_db" / name).exists():
        for corpus in corpora:
            source = SAMPLE if corpus == "sample" else HERE / "corpora" / corpus
            shutil.copytree(source, shared.data_dir / "doc_raw" / name, dirs_exist_ok=True)
        IngestionManager(shared).ingest(name)
    return shared, name


def _blocks(prompt: str) -> dict[str, str]:
    """The final prompt's "## title" blocks."""
    parts = re.split(r"^## (.+)$", prompt, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _condensed(sp: SuperPrompt) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {key: [] for key, _ in SECTIONS}
    current = None
    for line in sp.s_ctx_md.splitlines():
        if line.startswith("### "):
            current = TITLES.get(line[4:].strip())
        elif line.startswith("- ") and current:
            sections[current].append(line)
    return sections


def _files(ids: list[str]) -> set[str]:
    return {Path(source_of(cid)).name for cid in ids}


# A condensed line is prose that stands on its own (issue 24): no markup, no dangling reference, no
# narration or cross-reference, no lead-in without its items unless it says the answer itself (`states`: "... you can
# always subclass a slotted class as a dict class ...:" before its code); a Constraint is a rule, not an example.
_MARKUP = re.compile(r"<!--|-->|^\W*---|^\s*\.\. |^:\w+:|^\W*(?:https?://\S+|\[[^\]]*\]\([^)]*\))\W*$|^\s*(?:>>>|\$ )")
_DANGLING = re.compile(r"^(?:it|this|that|these|those|they|here|see)\b", re.IGNORECASE)
_NARRATION = re.compile(
    r"\b(?:in the next (?:chapter|section)|as we saw|as you saw|let's say|let us say|you'll see|we'll see)\b",
    re.IGNORECASE,
)
_EXAMPLE = re.compile(r"\b(?:for example|for instance|e\.g\.|let's say|suppose|imagine)\b", re.IGNORECASE)


def _prose(sp: SuperPrompt) -> None:
    for section, lines in _condensed(sp).items():
        for line in lines:
            text = " ".join(CITATION.sub("", line[2:]).split())
            if not CITATION.search(line) or text.startswith(("class ", "function ", "method ")):
                continue  # the pipeline's own notes, and code references, are not document sentences
            assert not _MARKUP.search(text), f"a condensed line is markup, not prose: {line}"
            listed = re.search(r"[:.]\s+(?:(?:[-*+]|\d+[.)]|```|~~~)\s|`)", text)  # with its items or code
            assert listed or not _DANGLING.match(text), f"a condensed line does not stand on its own: {line}"
            assert not _NARRATION.search(text), f"a condensed line is narration: {line}"
            assert not text.endswith(":") or states(text), f"a condensed line is a lead-in without its items: {line}"
            if section == "constraints":
                assert not _EXAMPLE.search(text), f"a Constraint is an example, not a rule: {line}"


def _invariants(sp: SuperPrompt) -> None:
    chunks = sp.chunk_by_id()
    shown = {cid: excerpt.text for excerpt in shown_excerpts(sp) for cid in excerpt.id.split()}
    selected = set(sp.final_selection_ids)
    for line in sp.s_ctx_md.splitlines():
        cited = CITATION.findall(line)
        assert set(cited) <= selected, f"a condensed line cites an unselected chunk: {line}"
        if cited:
            text = " ".join(CITATION.sub("", line[2:]).split())
            chunk = chunks[cited[0]]
            if "language" in chunk.metadata:  # code: a reference to a definition the chunk holds
                references = {" ".join(r.text.split()) for r in references_of(chunk)}  # a docstring field too
                assert text in references, f"a condensed line names no definition of the chunk it cites: {line}"
            else:  # the chunk as the prompt shows it or as read (no directives), HTML comments (never rendered) aside;
                # a line named by its section's heading ("`Pre-computation`: Move expensive work ...") as eval judges it
                texts = (shown[cited[0]], as_read(shown[cited[0]]))
                as_shown = {cited[0]: chunk.model_copy(update={"text": shown[cited[0]]})}
                assert (
                    any(text in " ".join(re.sub(r"<!--.*?-->", "", t, flags=re.S).split()) for t in texts)
                    or (verbatim_support([(text, cited[:1])], as_shown, [])[0][0])
                ), f"a condensed line is not verbatim from the excerpt showing the chunk it cites: {line}"
    assert sp.s_ctx_md == "" or "~~~~condensed-context" in sp.prompt_ready
    named = re.findall(r'^~{4,}\w* ?excerpt [^\n]*?chunk="([^"]*)"', sp.prompt_ready, flags=re.MULTILINE)
    attached = {cid for ids in named for cid in ids.split()}
    for chunk_id in selected:  # an excerpt widened over neighbouring chunks names them all
        assert chunk_id in attached, f"{chunk_id} is selected but not attached as a fenced excerpt"


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=[pytest.mark.xfail(strict=True, reason=c["xfail"])] if "xfail" in c else []) for c in CASES],
    ids=[c["id"] for c in CASES],
)
def test_quality_case(case: dict, quality_root: Path) -> None:
    shared, project = _project(quality_root, case["corpora"])
    settings = shared.model_copy(update={"data_dir": quality_root / case["id"]})
    (settings.data_dir / "chroma_db").mkdir(parents=True)
    (settings.data_dir / "chroma_db" / project).symlink_to(shared.data_dir / "chroma_db" / project)
    services = Services(settings)
    for prompt, answer in case.get("memory", []):
        services.memory.record(project, prompt, answer)
    if "agent00_cache" in case:
        settings.cache_dir.mkdir(parents=True, exist_ok=True)
        (settings.cache_dir / "agent00_header_map.json").write_text(json.dumps(case["agent00_cache"]), encoding="utf-8")
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=services)
    ctl.select_project(project)
    options = case.get("options", {})
    run_options = {"pause_after": "none", **{k: v for k, v in options.items() if k in ("strategy", "skip")}}
    run_options["history_profile"] = options.get("history_profile")
    if "expect_error" in case:
        with pytest.raises(RagstreamError, match=case["expect_error"]):
            ctl.run_full_pipeline(case["prompt"], **run_options)
    else:
        ctl.run_full_pipeline(case["prompt"], **run_options)
    sp = ctl.sp
    prompt = sp.prompt_ready
    blocks = _blocks(prompt)

    for text in case.get("prompt_has", []):
        assert text in prompt
    for text in case.get("prompt_lacks", []):
        assert text not in prompt
    for text in case.get("unfenced_lacks", []):
        assert text not in unfenced(prompt)
    for title, texts in case.get("block", {}).items():
        assert title in blocks, f"no '## {title}' block in the prompt"
        for text in texts:
            assert text in blocks[title], f"'{text}' is not under '## {title}'"
    for field, value in case.get("body", {}).items():
        assert getattr(sp.body, field) == value, field
    condensed = _condensed(sp)
    for section, texts in case.get("condensed", {}).items():
        for text in texts:
            assert any(text in line for line in condensed[section]), f"'{text}' not under {section}: {condensed}"
    for text in case.get("condensed_lacks", []):
        assert text not in sp.s_ctx_md
    if "selected" in case:
        assert set(case["selected"]) <= _files(sp.final_selection_ids)
    if "not_selected" in case:
        assert not set(case["not_selected"]) & _files(sp.final_selection_ids)
    for name in case.get("a3_dropped", []):
        decisions = {Path(source_of(cid)).name: d for cid, d in sp.extras.a3.decisions.items()}
        assert decisions[name].decision == "drop_irrelevant" and re.search(r"cosine -?\d\.\d\d", decisions[name].reason)
    if "task_rule" in case:
        assert sp.preprocessing.task_rule == case["task_rule"]
    if "strategy" in case:
        assert sp.extras.retrieval.strategy == case["strategy"], sp.extras.retrieval.strategy_reason
    if "expect_error" not in case:
        _invariants(sp)
        _prose(sp)
    for text in case.get("task_lacks", []):
        assert text not in (sp.body.task or ""), f"'{text}' is still in the Task"
    opens = " ".join(_condensed(sp)["open_issues"])
    cited = {section: [line for line in lines if CITATION.search(line)] for section, lines in _condensed(sp).items()}
    flagged = ("do not cover", "No excerpt answers")  # not in the documents, or (their words all) in no excerpt
    if case.get("covered"):  # nor is it only weakly evidenced
        assert cited["facts"] and not any(flag in opens for flag in (*flagged, "Weak evidence only")), sp.s_ctx_md
    if case.get("not_covered"):
        assert not cited["facts"] and not cited["constraints"], sp.s_ctx_md
        assert any(flag in opens and flag in blocks["System"] for flag in flagged), sp.s_ctx_md
    for text in case.get("uncovered", []):
        assert any("do not cover" in line and text in line for line in _condensed(sp)["open_issues"]), sp.s_ctx_md
    if "useful" in case:
        lines = [line.lower() for section in _condensed(sp).values() for line in section]
        assert any(term.lower() in line for line in lines for term in case["useful"]), sp.s_ctx_md
    if set(case["corpora"]) & {"attrs", "click"} and sp.attachments_md:
        skeleton = services.budget.count(render_sctx({}, sp.extras.a4.uncovered))  # section titles and notes, not lines
        condensed, excerpts = services.budget.count(sp.s_ctx_md) - skeleton, services.budget.count(sp.attachments_md)
        assert condensed <= excerpts / 3, f"the condensed lines ({condensed} tokens) repeat the excerpts ({excerpts})"


def test_the_suite_has_forty_cases_or_more() -> None:
    assert len(CASES) >= 40 and len({c["id"] for c in CASES}) == len(CASES)

"""Streamlit GUI: one RunSession in the browser session, one button per stage, Run all, the review as a form.

Run with `ragstream gui`. Everything the pipeline does happens in the session and its workspace; this file
only draws widgets and forwards clicks. Each render reads the thread once (`RunSession.current`) and
draws every panel from that RunResult.
"""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from ragstream.app.session import RunResult, RunSession
from ragstream.errors import RagstreamError
from ragstream.ingestion.loader import SUPPORTED_SUFFIXES
from ragstream.orchestration.metadata import summary_lines
from ragstream.rendering.styles import MEDIA_TYPES, STYLES, SUFFIXES
from ragstream.secrets.scan import describe
from ragstream.stages import REGISTRY, Stage
from ragstream.stages.options import RunOptions

STAGE_BUTTONS = tuple((Stage(spec.name), spec.label) for spec in REGISTRY)
UPLOAD_TYPES = sorted(s.lstrip(".") for s in SUPPORTED_SUFFIXES if s.count(".") == 1)


def session() -> RunSession:
    if "session" not in st.session_state:
        st.session_state.session = RunSession()
    return st.session_state.session


def attempt(action, *args, **kwargs) -> bool:
    """Run a session or workspace call; a typed error is shown (a session call also keeps it in last_error)."""
    try:
        action(*args, **kwargs)
        return True
    except RagstreamError as exc:
        st.session_state.flash = str(exc)
        return False


def sidebar(ctl: RunSession) -> None:
    strict = st.sidebar.toggle(
        "Strict mode", key="strict", help="Headers PreProcessing cannot map wait for your decision before retrieval."
    )
    ctl.options = RunOptions(strict=strict)  # what the widgets choose: the runs, steps and resumes of this session
    st.sidebar.header("Project")
    workspace = ctl.workspace
    projects = workspace.project_names()
    if projects:
        recent = workspace.most_recent_project() or projects[0]
        current = ctl.active_project if ctl.active_project in projects else recent
        choice = st.sidebar.selectbox("Active project", projects, index=projects.index(current), key="project")
        if choice != ctl.active_project:
            ctl.select_project(choice)
    new_name = st.sidebar.text_input("New project name", key="new_project")
    if st.sidebar.button("Create project", key="create_project") and new_name:
        if attempt(lambda: ctl.select_project(workspace.create_project(new_name))):
            st.rerun()
    if not ctl.active_project:
        st.sidebar.info("Create a project, upload documents, then ingest.")
        return
    uploads = st.sidebar.file_uploader("Add documents", type=UPLOAD_TYPES, accept_multiple_files=True, key="uploads")
    for upload in uploads or []:
        try:
            workspace.save_document(upload.name, upload.getvalue(), ctl.active_project)
        except RagstreamError as exc:
            st.sidebar.warning(str(exc))
    if st.sidebar.button("Ingest", key="ingest"):
        bar = st.sidebar.progress(0.0, text="scanning")

        def progress(phase: str, done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{phase} {done}/{total}")

        try:
            stats = workspace.ingest_docs(ctl.active_project, progress=progress)
            st.session_state.ingest_summary = stats.summary()
            st.session_state.ingest_skipped = stats.skipped
        except RagstreamError as exc:
            st.session_state.flash = str(exc)
    if "ingest_summary" in st.session_state:
        st.sidebar.success(st.session_state.ingest_summary)
        for path, reason in st.session_state.get("ingest_skipped", {}).items():
            st.sidebar.caption(f"skipped {path}: {reason}")
    project = workspace.project_overview(ctl.active_project)
    files = project["files"]
    if files:
        st.sidebar.dataframe(
            pd.DataFrame([{"file": f["file"], "chunks": f["chunks"], "secrets": f["secrets"]} for f in files]),
            hide_index=True,
            column_config={"secrets": st.column_config.NumberColumn(help="secrets redacted before indexing")},
        )
    if project["secrets"]:
        st.sidebar.warning(
            "Secrets found (redacted before indexing; values never kept):\n\n"
            + "\n".join(f"- {line}" for line in project["secrets"])
        )


BUTTON_ROWS = 2  # eight stage buttons in two rows, so their labels fit a laptop-width window


MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<$])")


def plain(text: str) -> str:
    """Document text shown as itself: Markdown characters escaped, so a preview never renders as headings or links."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def waiting_for(now: RunResult, kind: str) -> dict | None:
    """The interrupt the thread waits on, when it is of `kind` ("review" or strict mode's "headers")."""
    waiting = now.waiting
    return waiting if waiting is not None and waiting.get("kind") == kind else None


def why_disabled(stage: Stage, prompt: str, legal: set[Stage]) -> str | None:
    """Why a stage's button cannot be clicked now (None: it can), shown as the button's tooltip."""
    if not prompt.strip():
        return "Type a prompt first."
    if stage is Stage.PREPROCESS or stage in legal:
        return None
    following = legal - {Stage.PREPROCESS}  # PreProcessing can always start over; the next step is another stage
    if following:
        return f"Runs in order: next is {dict(STAGE_BUTTONS)[min(following, key=ORDER.index)]}."
    return "This run is finished or waiting for your answer below; change the prompt to start a new one."


ORDER = [stage for stage, _ in STAGE_BUTTONS]


def stage_buttons(ctl: RunSession, now: RunResult, prompt: str) -> None:
    legal = set(ctl.allowed_stages(now.state))
    if not prompt.strip():
        st.caption(
            "Type a prompt above to enable PreProcessing and Run all; each later stage opens when its turn comes."
        )
    per_row = -(-len(STAGE_BUTTONS) // BUTTON_ROWS)
    for start in range(0, len(STAGE_BUTTONS), per_row):
        row = STAGE_BUTTONS[start : start + per_row]
        for column, (stage, label) in zip(st.columns(per_row), row, strict=False):
            reason = why_disabled(stage, prompt, legal)
            if column.button(
                label, key=f"stage_{stage.node}", disabled=reason is not None, help=reason, use_container_width=True
            ):
                attempt(ctl.run_stage, stage, prompt)
                st.session_state.auto_run = False
                st.rerun()
    left, right, _ = st.columns([1, 1, 4])
    if left.button("Run all", key="run_all", type="primary", disabled=not prompt.strip()):
        attempt(ctl.run_full_pipeline, prompt)
        st.session_state.auto_run = True
        st.rerun()
    review = waiting_for(now, "review")
    if right.button("Continue", key="continue", disabled=review is None) and review is not None:
        if attempt(ctl.resume, review_answer(review) or None):
            for key in [k for k in st.session_state if str(k).startswith(REVIEW_KEYS)]:
                del st.session_state[key]
        st.rerun()


REVIEW_KEYS = ("sctx_edit", "keep_", "label_", "format_edit")
LABELS_PER_ROW = 3  # wide enough for a label a person typed, such as an audience of several words


def review_answer(review: dict) -> dict:
    """The review's answer from the form: only what the person changed (empty: accept as is)."""
    state = st.session_state
    answer: dict = {}
    chunks = [c["id"] for c in review["chunks"]]
    kept = [cid for cid in chunks if state.get(f"keep_{cid}", True)]
    if kept != chunks:
        answer["final_selection_ids"] = kept
    if "sctx_edit" in state and state["sctx_edit"] != review["S_CTX_MD"]:
        answer["S_CTX_MD"] = state["sctx_edit"]
    for name, value in review["labels"].items():
        chosen = state.get(f"label_{name}", value or "")
        if chosen != (value or ""):
            answer[name] = chosen
    if "format_edit" in state and state["format_edit"] != (review["format"] or ""):
        answer["format"] = state["format_edit"]
    return answer


def review_panel(ctl: RunSession, now: RunResult) -> None:
    """The review interrupt as a form: keep boxes per chunk, the condensed context, the labels, the format."""
    review = waiting_for(now, "review")
    if review is None:
        return
    st.subheader(f"Review after {review['after']}")
    if review["chunks"]:
        st.markdown("**Chunks sent to the model** (untick to leave one out)")
    for chunk in review["chunks"]:
        lines = f", lines {chunk['lines']}" if chunk["lines"] else ""
        st.checkbox(f"{chunk['source']}{lines}", value=True, key=f"keep_{chunk['id']}", help=chunk["id"])
        st.caption(plain(chunk["preview"]))
    if review["S_CTX_MD"]:
        st.text_area("Condensed context (editable)", review["S_CTX_MD"], height=260, key="sctx_edit")
    options = ctl.workspace.label_choices()
    labels = list(review["labels"].items())
    columns = [c for start in range(0, len(labels), LABELS_PER_ROW) for c in st.columns(LABELS_PER_ROW)]
    for column, (name, value) in zip(columns, labels, strict=False):
        choices = ["", *dict.fromkeys([*([value] if value else []), *options.get(name, [])])]
        column.selectbox(name.capitalize(), choices, index=choices.index(value or ""), key=f"label_{name}")
    st.text_input("Format", review["format"] or "", key="format_edit")
    st.caption("Press Continue to apply these edits (as the review's answer) and run on.")


def headers_panel(ctl: RunSession, now: RunResult) -> None:
    """Strict mode: one choice per header PreProcessing could not map."""
    question = waiting_for(now, "headers")
    if question is None:
        return
    st.subheader("Strict mode: what are these sections?")
    decisions = {}
    for i, row in enumerate(question["headers"]):
        st.markdown(f"**{plain(row['header'])}**")
        st.caption(f"{plain(row['preview'])} ({row['reason']})")
        choices = row["choices"]
        decisions[row["header"]] = st.selectbox(
            f"Decision for {row['header']}",
            choices,
            index=choices.index("keep"),
            key=f"decide_{i}",
            label_visibility="collapsed",
        )
    if st.button("Apply decisions", key="decide", type="primary"):
        if st.session_state.get("auto_run"):
            attempt(ctl.resume, {"decisions": decisions})  # and the run goes on
        else:
            attempt(ctl.decide, decisions)
        st.rerun()


def send_panel(ctl: RunSession, now: RunResult) -> None:
    """Send the built prompt to the configured LLM; the answer appears as it streams, then the critic's verdict."""
    offline = ctl.services.offline
    clicked = st.button(
        "Send", key="send", disabled=offline, help="needs OPENAI_API_KEY or OPENAI_BASE_URL" if offline else None
    )
    if offline:
        st.caption(
            "Sending needs an LLM (OPENAI_API_KEY or OPENAI_BASE_URL); offline, the SuperPrompt above is the product."
        )
    if clicked:
        shown = st.empty()
        streamed: list[str] = []

        def show(token: str) -> None:
            streamed.append(token)
            shown.markdown("".join(streamed))

        attempt(ctl.send, on_token=show)
        st.rerun()
    answer = now.state.answer
    if answer is not None:
        st.subheader("Answer")
        st.markdown(answer.text)
        verdict = (
            f"not judged by the critic ({answer.not_judged})"
            if answer.not_judged
            else "accepted by the critic"
            if answer.accepted
            else "not accepted by the critic"
        )
        st.caption(
            f"{verdict} after {answer.retries} regeneration(s); {answer.usage.input_tokens} tokens in, "
            f"{answer.usage.output_tokens} out"
        )


def metadata_panel(now: RunResult) -> None:
    """The run's plan and metadata record: what was decided (intent, retrieval, budgets) and spent."""
    meta = now.state.run_metadata
    if meta.stage == "raw":
        return
    st.caption("\n".join(f"- {plain(line)}" for line in summary_lines(meta)[1:]))
    with st.expander("Run metadata (JSON)"):
        st.json(meta.model_dump(mode="json"))


def telemetry_panel(ctl: RunSession) -> None:
    summary = ctl.trace_summary()
    if not summary["stages"]:
        return
    st.subheader("Stages")
    frame = pd.DataFrame(
        [{"stage": stage, "ms": info["duration_ms"], **info["counts"]} for stage, info in summary["stages"].items()]
    ).set_index("stage")
    st.bar_chart(frame["ms"], sort=False)  # in run order, as the stages ran
    st.dataframe(frame)
    llm = summary["llm"]
    if llm["calls"]:
        st.caption(
            f"LLM: {llm['calls']} calls, {llm['tokens_in']} tokens in, {llm['tokens_out']} out, ~${llm['cost_usd']:.6f}"
        )
    else:
        st.caption(f"LLM: none (offline: {summary['offline_steps']} deterministic agent steps, no model, no cost)")


def tokens_panel(ctl: RunSession, now: RunResult) -> None:
    """The built prompt's tokens per section and per excerpt, and what counted them."""
    report = ctl.token_breakdown(now.state)
    st.subheader(f"Tokens: {report['total']}")
    st.caption(report["label"])
    rows = [{"part": s["section"], "tokens": s["tokens"]} for s in report["sections"] if s["section"] != "excerpts"]
    rows += [{"part": e["chunk"], "tokens": e["tokens"]} for e in report["excerpts"]]
    st.bar_chart(pd.DataFrame(rows).set_index("part")["tokens"], horizontal=True, sort=False)  # prompt order


def eval_panel(ctl: RunSession) -> None:
    """A run saved by `ragstream eval --save NAME`, shown as the report page the CLI writes (in its own frame)."""
    from streamlit.components.v1 import html

    from ragstream.evaluation.html import render_html
    from ragstream.evaluation.store import load_run, saved_runs

    names = saved_runs(ctl.settings)
    if not names:
        return
    with st.expander("Saved eval reports"):
        name = st.selectbox("Saved run", names, key="eval_run")
        try:
            saved = load_run(ctl.settings, name)
        except RagstreamError as exc:
            st.error(str(exc))
            return
        summary = saved["summary"]
        st.caption(
            f"{saved['run']['suite']}: {summary['cases_passed']}/{summary['cases']} cases pass every check, "
            f"mean check score {summary['score']:.3f}"
        )
        html(render_html(saved["run"], summary), height=720, scrolling=True)


def main() -> None:
    st.set_page_config(page_title="RAGstream", layout="wide")
    ctl = session()
    st.title("RAGstream")
    sidebar(ctl)
    prompt = st.text_area("Prompt", height=180, key="prompt", placeholder="# Task\nWhat should the LLM do?")
    now = ctl.current()  # every panel below draws this one read of the thread; a click re-runs the page
    stage_buttons(ctl, now, prompt)
    flash = st.session_state.pop("flash", None)
    if flash or ctl.last_error:
        st.error(flash or ctl.last_error)
    if ctl.prompt_secrets:
        st.warning(
            f"Your prompt holds secrets: {describe(ctl.prompt_secrets)}. Each was replaced by "
            "[REDACTED: <type>] before anything was stored or sent."
        )
    headers_panel(ctl, now)
    review_panel(ctl, now)
    sp = now.state
    st.subheader(f"SuperPrompt - stage: {sp.stage.value}")
    st.code(sp.prompt_ready or "(run PreProcessing to see the prompt)", language="markdown", wrap_lines=True)
    if sp.stage is Stage.BUILD:
        style = st.selectbox("Download style", STYLES, key="download_style")
        st.download_button(
            "Download prompt",
            ctl.export_prompt(style, sp),
            file_name=f"superprompt{SUFFIXES[style]}",
            mime=MEDIA_TYPES[style],
            key="download",
        )
        tokens_panel(ctl, now)
        send_panel(ctl, now)
    metadata_panel(now)
    telemetry_panel(ctl)
    eval_panel(ctl)


main()

"""Streamlit GUI: one AppController in the session, one button per stage, Run all, review at the A4 pause.

Run with `ragstream gui`. Everything the pipeline does happens in the controller; this file only
draws widgets and forwards clicks.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from ragstream.app.controller import AppController
from ragstream.errors import RagstreamError
from ragstream.ingestion.loader import HTML_SUFFIXES, PDF_SUFFIXES, TEXT_SUFFIXES, unsafe_name_reason
from ragstream.ingestion.manifest import Manifest
from ragstream.context.telemetry import summarize
from ragstream.orchestration.export import MEDIA_TYPES, STYLES, SUFFIXES, export_prompt
from ragstream.orchestration.metadata import summary_lines
from ragstream.prompt_view import escape_attr
from ragstream.projects import list_projects, project_paths, validate_project_name
from ragstream.secret_scan import describe
from ragstream.stages import REGISTRY, Stage, allowed_stages

STAGE_BUTTONS = tuple((Stage(spec.name), spec.label) for spec in REGISTRY)
UPLOAD_TYPES = sorted(s.lstrip(".") for s in TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES if s.count(".") == 1)


def controller() -> AppController:
    if "controller" not in st.session_state:
        st.session_state.controller = AppController()
    return st.session_state.controller


def attempt(action, *args, **kwargs) -> bool:
    """Run a controller call; a typed error is shown (the controller also keeps it in last_error)."""
    try:
        action(*args, **kwargs)
        return True
    except RagstreamError as exc:
        st.session_state.flash = str(exc)
        return False


def sidebar(ctl: AppController) -> None:
    st.sidebar.header("Project")
    projects = list_projects(ctl.settings)
    if projects:
        current = ctl.active_project if ctl.active_project in projects else projects[0]
        choice = st.sidebar.selectbox("Active project", projects, index=projects.index(current), key="project")
        if choice != ctl.active_project:
            ctl.select_project(choice)
    new_name = st.sidebar.text_input("New project name", key="new_project")
    if st.sidebar.button("Create project", key="create_project") and new_name:
        try:
            paths = project_paths(ctl.settings, validate_project_name(new_name.strip()))
            paths.raw_dir.mkdir(parents=True, exist_ok=True)
            ctl.select_project(paths.name)
            st.rerun()
        except RagstreamError as exc:
            st.session_state.flash = str(exc)
    if not ctl.active_project:
        st.sidebar.info("Create a project, upload documents, then ingest.")
        return
    paths = project_paths(ctl.settings, ctl.active_project)
    uploads = st.sidebar.file_uploader("Add documents", type=UPLOAD_TYPES, accept_multiple_files=True, key="uploads")
    for upload in uploads or []:
        name = Path(upload.name).name
        unsafe = unsafe_name_reason(name)
        if unsafe is not None:
            st.sidebar.warning(f"{escape_attr(name)}: {unsafe}, not saved")
            continue
        if upload.size > ctl.settings.ingestion.max_file_bytes:
            st.sidebar.warning(f"{name}: larger than {ctl.settings.ingestion.max_file_bytes:,} bytes, not saved")
            continue
        paths.raw_dir.mkdir(parents=True, exist_ok=True)
        (paths.raw_dir / name).write_bytes(upload.getvalue())
    if st.sidebar.button("Ingest", key="ingest"):
        bar = st.sidebar.progress(0.0, text="scanning")

        def progress(phase: str, done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{phase} {done}/{total}")

        try:
            stats = ctl.ingest_docs(ctl.active_project, progress=progress)
            st.session_state.ingest_summary = stats.summary()
            st.session_state.ingest_skipped = stats.skipped
        except RagstreamError as exc:
            st.session_state.flash = str(exc)
    if "ingest_summary" in st.session_state:
        st.sidebar.success(st.session_state.ingest_summary)
        for path, reason in st.session_state.get("ingest_skipped", {}).items():
            st.sidebar.caption(f"skipped {path}: {reason}")
    manifest = Manifest.load(paths.manifest_path)
    if manifest.files:
        st.sidebar.dataframe(
            pd.DataFrame([{"file": p, "chunks": len(f.chunk_ids), "secrets redacted": len(f.secrets)}
                          for p, f in sorted(manifest.files.items())]),
            hide_index=True,
        )
    secrets = manifest.secret_lines()
    if secrets:
        st.sidebar.warning("Secrets found (redacted before indexing; values never kept):\n\n"
                           + "\n".join(f"- {line}" for line in secrets))


def stage_buttons(ctl: AppController, prompt: str) -> None:
    sp = ctl.sp
    legal = set(allowed_stages(sp))
    columns = st.columns(len(STAGE_BUTTONS))
    for column, (stage, label) in zip(columns, STAGE_BUTTONS):
        enabled = bool(prompt.strip()) if stage is Stage.PREPROCESS else stage in legal
        if column.button(label, key=f"stage_{stage.value}", disabled=not enabled, use_container_width=True):
            attempt(ctl.run_stage, stage, prompt)
            st.session_state.auto_run = False
            st.rerun()
    left, right, _ = st.columns([1, 1, 4])
    if left.button("Run all", key="run_all", type="primary", disabled=not prompt.strip()):
        attempt(ctl.run_full_pipeline, prompt)
        st.session_state.auto_run = True
        st.rerun()
    paused = bool(st.session_state.get("auto_run")) and bool(ctl.paused_before)
    if right.button("Continue", key="continue", disabled=not paused):
        edited = "sctx_edit" not in st.session_state or attempt(
            ctl.edit, S_CTX_MD=st.session_state["sctx_edit"], final_selection_ids=kept_chunks(ctl)
        )
        if edited and attempt(ctl.resume):
            for key in ("sctx_edit", "chunks_edit"):
                st.session_state.pop(key, None)
        st.rerun()


def review_rows(ctl: AppController) -> list[dict]:
    sp = ctl.sp
    selected = set(sp.final_selection_ids)
    return [
        {
            "keep": c.id in selected,
            "chunk": c.id,
            "source": c.source_path,
            "span": f"{c.span.start}-{c.span.end}",
            **{k: round(v, 4) for k, v in sorted(c.scores.items())},
        }
        for c in sp.base_context_chunks
        if c.id in sp.views_by_stage.get("retrieval", [])
    ]


def kept_chunks(ctl: AppController) -> list[str]:
    """The chunk ids ticked in the review table, including edits not yet drawn back."""
    rows = review_rows(ctl)
    for index, change in st.session_state.get("chunks_edit", {}).get("edited_rows", {}).items():
        if "keep" in change:
            rows[int(index)]["keep"] = bool(change["keep"])
    return [r["chunk"] for r in rows if r["keep"]]


def review_panel(ctl: AppController) -> None:
    """At the A4 pause: the condensed context and the chunk selection, both editable."""
    sp = ctl.sp
    if sp.stage is not Stage.A4 or not ctl.paused_before or not st.session_state.get("auto_run"):
        return
    st.subheader("Review after A4")
    st.text_area("Condensed context (editable)", sp.S_CTX_MD, height=260, key="sctx_edit")
    rows = review_rows(ctl)
    locked = [col for col in (rows[0] if rows else {}) if col != "keep"]
    st.data_editor(pd.DataFrame(rows), hide_index=True, disabled=locked, key="chunks_edit")
    st.caption("Press Continue to apply these edits as A4's output and run A5 and the Prompt Builder.")


def send_panel(ctl: AppController) -> None:
    """Send the built prompt to the configured LLM; the answer appears as it streams, then the critic's verdict."""
    offline = ctl.services.offline
    clicked = st.button("Send", key="send", disabled=offline, help="needs OPENAI_API_KEY or OPENAI_BASE_URL" if offline else None)
    if offline:
        st.caption("Sending needs an LLM (OPENAI_API_KEY or OPENAI_BASE_URL); offline, the SuperPrompt above is the product.")
    if clicked:
        shown = st.empty()
        streamed: list[str] = []

        def show(token: str) -> None:
            streamed.append(token)
            shown.markdown("".join(streamed))

        attempt(ctl.send, on_token=show)
        st.rerun()
    answer = ctl.sp.answer
    if answer is not None:
        st.subheader("Answer")
        st.markdown(answer.text)
        verdict = "accepted by the critic" if answer.accepted else "not accepted by the critic"
        st.caption(f"{verdict} after {answer.retries} regeneration(s); {answer.usage.input_tokens} tokens in, "
                   f"{answer.usage.output_tokens} out")


def metadata_panel(ctl: AppController) -> None:
    """The run's plan and metadata record: what was decided (intent, retrieval, budgets) and spent."""
    meta = ctl.sp.run_metadata
    if meta.stage == "raw":
        return
    lines = summary_lines(meta)
    st.caption(" \n".join(lines[1:]))
    with st.expander("Run metadata (JSON)"):
        st.json(meta.model_dump(mode="json"))


def telemetry_panel(ctl: AppController) -> None:
    summary = summarize(ctl.trace())
    if not summary["stages"]:
        return
    st.subheader("Stages")
    frame = pd.DataFrame(
        [{"stage": stage, "ms": info["duration_ms"], **info["counts"]} for stage, info in summary["stages"].items()]
    ).set_index("stage")
    st.bar_chart(frame["ms"])
    st.dataframe(frame)
    llm = summary["llm"]
    if llm["calls"]:
        st.caption(f"LLM: {llm['calls']} calls, {llm['tokens_in']} tokens in, {llm['tokens_out']} out, ~${llm['cost_usd']:.6f}")
    else:
        st.caption(f"LLM: none (offline: {summary['offline_steps']} deterministic agent steps, no model, no cost)")


def tokens_panel(ctl: AppController) -> None:
    """The built prompt's tokens per section and per excerpt, and what counted them."""
    report = ctl.token_breakdown()
    st.subheader(f"Tokens: {report['total']}")
    st.caption(report["label"])
    rows = [{"part": s["section"], "tokens": s["tokens"]} for s in report["sections"] if s["section"] != "excerpts"]
    rows += [{"part": e["chunk"], "tokens": e["tokens"]} for e in report["excerpts"]]
    st.bar_chart(pd.DataFrame(rows).set_index("part")["tokens"], horizontal=True)


def main() -> None:
    st.set_page_config(page_title="RAGstream", layout="wide")
    ctl = controller()
    st.title("RAGstream")
    sidebar(ctl)
    prompt = st.text_area("Prompt", height=180, key="prompt", placeholder="# Task\nWhat should the LLM do?")
    stage_buttons(ctl, prompt)
    flash = st.session_state.pop("flash", None)
    if flash or ctl.last_error:
        st.error(flash or ctl.last_error)
    if ctl.prompt_secrets:
        st.warning(f"Your prompt holds secrets: {describe(ctl.prompt_secrets)}. Each was replaced by "
                   "[REDACTED: <type>] before anything was stored or sent.")
    review_panel(ctl)
    sp = ctl.sp
    st.subheader(f"SuperPrompt - stage: {sp.stage.value}")
    st.code(sp.prompt_ready or "(run PreProcessing to see the prompt)", language="markdown")
    if sp.stage is Stage.BUILD:
        style = st.selectbox("Download style", STYLES, key="download_style")
        st.download_button("Download prompt", export_prompt(sp, style), file_name=f"superprompt{SUFFIXES[style]}",
                           mime=MEDIA_TYPES[style], key="download")
        tokens_panel(ctl)
        send_panel(ctl)
    metadata_panel(ctl)
    telemetry_panel(ctl)


main()

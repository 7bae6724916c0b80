"""The HTML report of a run: one self-contained page (inline CSS, no script, nothing fetched), so it opens from a
file, an attachment or a CI artifact as it is.

It shows the totals, a bar per retrieval stage and metric, each check's pass rate, tokens and latency, and
every failing case with the lines that failed, quoted, and its final prompt.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ragstream.evaluation.metrics import STAGE_METRICS
from ragstream.evaluation.report import options_text

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1d2330;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #dde}
.meta{color:#5a6275} table{border-collapse:collapse;margin:.5em 0} td,th{padding:3px 10px;text-align:left}
th{background:#f0f2f7} tr:nth-child(even) td{background:#fafbfd}
.bar{display:inline-block;height:12px;background:#4a7bd0;border-radius:2px;vertical-align:middle}
.track{display:inline-block;width:160px;background:#e6e9f0;border-radius:2px;margin-right:6px}
.ok{color:#1f7a3a} .bad{color:#b3261e;font-weight:600}
.stage{display:grid;grid-template-columns:90px repeat(4,1fr);gap:4px 14px;align-items:center}
.case{border:1px solid #e2e5ee;border-radius:6px;padding:.6em 1em;margin:.8em 0}
blockquote{margin:.3em 0 .3em 1em;padding:.2em .8em;border-left:3px solid #b3261e;background:#fff5f4;
white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12.5px}
pre{white-space:pre-wrap;background:#f6f7fa;padding:.8em;border-radius:4px;font-size:12px;max-height:40em;overflow:auto}
"""


def _bar(value: float) -> str:
    width = max(0.0, min(1.0, value)) * 100
    return f'<span class="track"><span class="bar" style="width:{width:.1f}%"></span></span>{value:.3f}'


def render_html(run: dict[str, Any], summary: dict[str, Any]) -> str:
    """The page for a run and its summary (report.summarize)."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>ragstream eval: {escape(run['suite'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>ragstream eval: {escape(run['suite'])}</h1>",
        f"<p class='meta'>{escape(run['kind'])} suite, project {escape(run['project'])}, {summary['cases']} cases, "
        f"started {escape(run.get('started', ''))}; configuration {escape(run['config_digest'])}, corpus "
        f"{escape(run['corpus_fingerprint'])}; options: {escape(options_text(run.get('options', {})))}</p>",
        f"<p><b>{summary['cases_passed']}/{summary['cases']}</b> cases pass every check "
        f"({summary['pass_rate']:.0%}); mean check score <b>{summary['score']:.3f}</b>"
        + (f"; <span class='bad'>{summary['errors']} errors</span>" if summary["errors"] else "")
        + "</p>",
    ]
    if summary["retrieval"]:
        parts.append(f"<h2>Retrieval per stage ({summary['retrieval_cases']} cases with relevant passages)</h2>")
        parts.append("<div class='stage'><b>stage</b>" + "".join(f"<b>{m}</b>" for m in STAGE_METRICS))
        for stage, metrics in summary["retrieval"].items():
            parts.append(
                f"<span>{escape(stage)}</span>" + "".join(f"<span>{_bar(metrics[m])}</span>" for m in STAGE_METRICS)
            )
        parts.append("</div>")
    parts.append("<h2>Checks</h2><table><tr><th>check</th><th>passed</th><th>rate</th></tr>")
    for name, row in summary["checks"].items():
        parts.append(
            f"<tr><td>{escape(name)}</td><td>{row['passed']}/{row['of']}</td><td>{_bar(row['rate'])}</td></tr>"
        )
    parts.append(f"</table><p class='meta'>condensed lines judged by: {escape(run['support_check'])}</p>")
    parts.append("<h2>Tokens and latency</h2><table><tr><th></th><th>median</th><th>p95</th></tr>")
    for kind, row in summary["tokens"].items():
        parts.append(f"<tr><td>{escape(kind)} tokens</td><td>{row['median']:.0f}</td><td>{row['p95']:.0f}</td></tr>")
    for stage, row in summary["latency_ms"].items():
        parts.append(f"<tr><td>{escape(stage)} ms</td><td>{row['median']:.0f}</td><td>{row['p95']:.0f}</td></tr>")
    parts.append("</table>")
    failing = [c for c in run["cases"] if not c.get("passed")]
    parts.append(f"<h2>Failing cases ({len(failing)})</h2>")
    for case in failing:
        parts.append(_case(case))
    parts.append("</body></html>")
    return "\n".join(parts)


def _case(case: dict[str, Any]) -> str:
    out = [f"<div class='case'><b>{escape(case['name'])}</b> <span class='meta'>{escape(case.get('kind', ''))}</span>"]
    if case.get("error"):
        out.append(f"<blockquote>{escape(case['error'])}</blockquote></div>")
        return "".join(out)
    for check in case["checks"]:
        if check["passed"] or check["soft"]:
            continue
        out.append(
            f"<div><span class='bad'>{escape(check['name'])}</span> <span class='meta'>{escape(check['detail'])}</span>"
        )
        out.extend(f"<blockquote>{escape(line)}</blockquote>" for line in check["lines"])
        out.append("</div>")
    out.append(
        f"<details><summary>the prompt as written</summary><pre>{escape(case['prompt'])}</pre></details>"
        f"<details><summary>the final prompt</summary><pre>{escape(case['final_prompt'])}</pre></details></div>"
    )
    return "".join(out)

"""Rich display in Jupyter: the HTML and Markdown views of results, verdicts, launch results,
main-agent runs and traces, registered in one table at the end of this module (see
:mod:`outrider._views`, through which each class's ``_repr_html_`` finds its view).

Everything that comes from a model, a file or a trace is escaped, and bounded: one text is
embedded up to :data:`MAX_TEXT` characters, a list up to :data:`MAX_ITEMS` items (the objects
themselves hold the whole). Colours are inherited from the notebook's theme except a status badge
in mid-tone colours that read on light and dark backgrounds; borders and shading are translucent
grey. Long parts (long summaries, long lists, the step timeline) are folded into ``<details>``.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from outrider import _core, _views
from outrider._mainrun import MainRunResult
from outrider.exceptions import TraceError
from outrider.trace import Trace, _load_recorded, _timed, describe

__all__ = ["MAX_ITEMS", "MAX_TEXT", "STATUS_COLOURS", "batch_html", "launch_html", "trace_html"]

STATUS_COLOURS: dict[str, str] = {
    "completed": "#2da44e",
    "PASS": "#2da44e",
    "partial": "#bf8700",
    "PARTIAL": "#bf8700",
    "unverified": "#8a63d2",
    "UNVERIFIED": "#8a63d2",
    "failed": "#d1242f",
    "FAIL": "#d1242f",
    "error": "#d1242f",
}
"""Badge colours: mid-tones readable on white and on dark backgrounds. Any other status uses
the inherited text colour."""

LONG_TEXT = 600
"""Characters of a summary or answer shown before the rest is folded away."""
LONG_LIST = 8
"""Items of a list shown open; longer lists start folded."""
MAX_TIMELINE = 300
"""Events shown in a timeline; the rest are counted (``Trace.to_pandas()`` has all)."""
MAX_TEXT = 20_000
"""Characters of any one text (an answer, a task, an error, a list item) embedded in a display,
folded part included; the rest is left out with a note of how much."""
MAX_ITEMS = 200
"""Items of a list, or rows of a children table, embedded in a display; the rest are counted."""

_SURROGATE = re.compile("[\ud800-\udfff]")

_BOX = (
    "border:1px solid rgba(127,127,127,.35);border-radius:6px;padding:.5em .8em;margin:.3em 0;"
    "color:inherit;background:transparent;line-height:1.45;max-width:100%;overflow-x:auto"
)
_MUTED = "opacity:.75"
_CELL = "text-align:left;vertical-align:top;padding:.15em .6em;border-top:1px solid rgba(127,127,127,.25)"
_CODE = "background:rgba(127,127,127,.12);color:inherit;padding:0 .25em;border-radius:3px"


def _clip(value: Any, limit: int = MAX_TEXT) -> str:
    """``value`` as text of at most ``limit`` characters (and a note of what was left out), lone
    surrogates (which cannot be sent as UTF-8) replaced."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters not shown)"
    return _SURROGATE.sub("\ufffd", text)


def _e(value: Any) -> str:
    return html.escape(_clip(value), quote=True)


def _badge(status: str | None) -> str:
    if not status:
        return ""
    colour = STATUS_COLOURS.get(status, "inherit")
    return (
        f'<span style="border:1px solid currentColor;border-radius:999px;padding:0 .55em;'
        f'font-weight:600;color:{colour}">{_e(status)}</span>'
    )


def _thousands(n: int | float) -> str:
    return f"{n:,.0f}".replace(",", "\u202f")


def _text_block(text: str, *, label: str = "more") -> str:
    """A paragraph, the tail folded away when long; newlines kept."""
    style = "white-space:pre-wrap;margin:.4em 0"
    if len(text) <= LONG_TEXT:
        return f'<div style="{style}">{_e(text)}</div>'
    return (
        f'<div style="{style}">{_e(text[:LONG_TEXT])}…</div>'
        f"<details><summary>{_e(label)} ({_thousands(len(text))} characters)</summary>"
        f'<div style="{style}">{_e(text)}</div></details>'
    )


def _more(items: Sequence[Any], what: str = "more") -> str:
    return f"… {len(items) - MAX_ITEMS:,} {what} not shown"


def _list(title: str, items: Sequence[str], *, code: bool = False) -> str:
    if not items:
        return ""
    cells = "".join(
        f'<li><code style="{_CODE}">{_e(i)}</code></li>' if code else f"<li>{_e(i)}</li>"
        for i in items[:MAX_ITEMS]
    )
    if len(items) > MAX_ITEMS:
        cells += f'<li style="{_MUTED}">{_more(items)}</li>'
    opened = " open" if len(items) <= LONG_LIST else ""
    return (
        f"<details{opened}><summary><strong>{_e(title)}</strong> ({len(items)})</summary>"
        f'<ul style="margin:.2em 0 .4em 0">{cells}</ul></details>'
    )


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    shown = [f"{_e(k)}: <strong>{_e(v)}</strong>" for k, v in pairs if v not in (None, "", {})]
    return f'<div style="{_MUTED};margin:.2em 0">{" · ".join(shown)}</div>' if shown else ""


def _tools(usage: Mapping[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(usage.items())) or "none"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _header(kind: str, status: str | None, extra: str = "") -> str:
    return (
        f'<div style="display:flex;flex-wrap:wrap;gap:.6em;align-items:baseline">'
        f"<strong>{_e(kind)}</strong>{_badge(status)}{extra}</div>"
    )


def _box(inner: str) -> str:
    return f'<div class="outrider-view" style="{_BOX}">{inner}</div>'


# --- results ----------------------------------------------------------------------------------


def _explore_body(r: Any) -> str:
    return (
        _text_block(r.summary, label="whole summary")
        + _list("Findings", r.findings)
        + _list("Evidence", r.evidence, code=True)
        + _list("Open questions", r.unresolved_questions)
    )


def explore_html(r: Any) -> str:
    return _box(
        _header("ExploreResult", r.status)
        + _explore_body(r)
        + _facts([("terminal reason", r.terminal_reason), ("tools", _tools(r.tool_usage))])
    )


def _verification_body(r: Any) -> str:
    return (
        _list("Reasons", r.reasons)
        + _list("Findings", r.findings)
        + _list("Evidence", r.evidence, code=True)
    )


def verification_html(r: Any) -> str:
    return _box(
        _header("VerificationResult", r.verdict)
        + _verification_body(r)
        + _facts(
            [
                ("terminal reason", r.terminal_reason),
                ("tools", _tools(r.tool_usage)),
                ("tokens", _thousands(r.token_usage)),
                ("child", r.child_session_id),
            ]
        )
    )


def custom_json(result: Any) -> str | None:
    """An ``output_schema`` answer (a pydantic instance or a dict) as indented JSON; None for
    any other result."""
    if result is None or isinstance(result, (_core.ExploreResult, _core.VerificationResult, str)):
        return None
    dump = getattr(result, "model_dump_json", None)
    if callable(dump):
        return str(dump(indent=2))
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def _result_body(result: Any) -> str:
    if isinstance(result, _core.ExploreResult):
        return _explore_body(result)
    if isinstance(result, _core.VerificationResult):
        return _header("verdict", result.verdict) + _verification_body(result)
    answer = custom_json(result)
    if answer is not None:
        return f"<div><strong>{_e(type(result).__name__)}:</strong></div>" + _text_block(
            answer, label="whole answer"
        )
    return ""


def _launch_trace(r: Any) -> Trace | str:
    """The launch's trace, or why there is none to show. A result may have been rebuilt from a
    dict (``from_dict``, pickle), so its ``trace_path`` is data: only the trace file of its child
    is read (named ``trace-<child_session_id>.jsonl``, a regular file holding that session), never
    a FIFO, a device or any other file it names."""
    if r.trace_path is None:
        return "" if r.trace_error else "no trace file (kept in memory)"
    try:
        return _load_recorded(r.trace_path, r.child_session_id, beside=None, what="this child")
    except TraceError as err:
        return str(err)


_RAN_OUT = {
    "max_steps": "the child ran out of steps; this is its wrap-up answer",
    "token_budget": "the child ran out of tokens; this is its wrap-up answer",
    "timeout": "the child ran out of time; this is its wrap-up answer",
    "completion_gate_blocked": (
        "the completion gate kept refusing the child's answers; these are the places it saw"
    ),
}


def partial_why(r: Any) -> str | None:
    """Why a launch is ``partial`` (or ``unverified``), in words: a badge beside "terminal
    reason: completed" says nothing by itself."""
    if r.status == "unverified":
        return "some cited evidence was not found in the files, or not seen by the child"
    if r.status != "partial":
        return None
    if getattr(r, "schema_errors", None):
        return (
            f"the child's answer did not fit {r.output_schema} after the gate's retries; the "
            "result is the object as it was written"
        )
    if r.terminal_reason in _RAN_OUT:
        return _RAN_OUT[r.terminal_reason]
    result = r.result
    notes = [
        q.removeprefix("outrider: ")
        for q in getattr(result, "unresolved_questions", ())
        if q.startswith("outrider: ")
    ]
    if notes:
        return "; ".join(notes)
    if isinstance(result, _core.VerificationResult):
        return f"the verification child's verdict was {result.verdict}"
    if getattr(r, "output_schema", None) is not None:
        return "see error" if r.error else "the child's answer says so (its status field)"
    return "the child itself said its answer is partial (see its open questions)"


def model_label(r: Any) -> str:
    """``light model (gpt-4.1-mini)``: the route and the model behind it."""
    name = getattr(r, "model_name", "")
    if r.model_used == "offline" or not name:
        return f"{r.model_used} model" if r.model_used != "offline" else "offline scout"
    return f"{r.model_used} model ({name})"


def launch_html(r: Any) -> str:
    """A launch result: the question, status, answer, usage, and its trace's step timeline."""
    tokens = _thousands(r.token_usage) + (" (estimated)" if r.usage_estimated else "")
    reason = r.terminal_reason + (f" ({r.failure_reason})" if r.failure_reason else "")
    parts = [
        _header(
            "SubagentLaunchResult",
            r.status,
            f'<span style="{_MUTED}">{_e(r.profile_name)} · {_e(model_label(r))}</span>',
        )
    ]
    if r.task:
        parts.append(
            f"<div><strong>asked:</strong> {_text_block(r.task, label='whole task')}</div>"
        )
    why = partial_why(r)
    if why:
        parts.append(f"<div><strong>why {_e(r.status)}:</strong> {_e(why)}</div>")
    if r.error:
        parts.append(f"<div><strong>error:</strong> {_e(r.error)}</div>")
    if r.ungrounded_evidence:
        parts.append(
            _list(
                "Evidence not found in the files",
                [f"{c['evidence']}: {c['message']}" for c in r.ungrounded_evidence],
            )
        )
    parts.append(_result_body(r.result))
    if getattr(r, "output_schema", None) is not None:
        # Your object need not hold its evidence: it is kept beside it.
        parts.append(_list("Evidence", list(r.evidence), code=True))
        parts.append(_list("Does not fit the schema", list(r.schema_errors)))
    parts.append(
        _facts(
            [
                ("terminal reason", reason),
                ("tools", _tools(r.tool_usage)),
                ("tokens", tokens),
                ("model calls", r.model_calls),
                ("elapsed", f"{_thousands(r.elapsed_ms)} ms"),
                ("repair", r.repair),
            ]
        )
    )
    if r.trace_error:
        parts.append(f"<div><strong>trace error:</strong> {_e(r.trace_error)}</div>")
    trace = _launch_trace(r)
    if isinstance(trace, Trace):
        parts.append(_timeline(trace))
        parts.append(f'<div style="{_MUTED};font-size:.85em">trace: {_e(r.trace_path)}</div>')
    elif trace:
        parts.append(f'<div style="{_MUTED};font-size:.85em">{_e(trace)}</div>')
    return _box("".join(parts))


def _main_facts(r: Any) -> list[tuple[str, Any]]:
    children = len(r.children)
    return [
        ("terminal reason", r.terminal_reason),
        ("steps", r.steps),
        ("model calls", r.model_calls),
        ("tools", _tools(r.tool_usage)),
        ("main agent tokens", _thousands(r.token_usage)),
        (
            "total tokens",
            f"{_thousands(r.total_token_usage)} (with {children} "
            f"{'child' if children == 1 else 'children'})",
        ),
    ]


def main_run_html(r: Any) -> str:
    """A main-agent run: the question, the answer, usage with its children's, each child."""
    status = "failed" if r.error else r.terminal_reason
    parts = [
        _header(
            "MainAgent run",
            status,
            f'<span style="{_MUTED}">main model ({_e(r.model_name)})</span>',
        ),
        f"<div><strong>asked:</strong></div>{_text_block(r.task, label='whole task')}",
    ]
    if r.error:
        parts.append(f"<div><strong>error:</strong> {_e(r.error)}</div>")
    if r.final_text:
        parts.append("<div><strong>answer:</strong></div>")
        parts.append(_text_block(r.final_text, label="whole answer"))
    parts.append(_facts(_main_facts(r)))
    for i, child in enumerate(r.children, 1):
        parts.append(
            f"<details><summary>child {i}: {_e(child.status)} · {_e(child.task[:80])}</summary>"
            + launch_html(child)
            + "</details>"
        )
    if r.trace_path:
        parts.append(f'<div style="{_MUTED};font-size:.85em">trace: {_e(r.trace_path)}</div>')
    return _box("".join(parts))


def main_run_md(r: Any) -> str:
    status = "failed" if r.error else r.terminal_reason
    lines = [
        f"**MainAgent run** · {_md_code(status)} · main model ({_md(r.model_name)})",
        "",
        f"**asked:** {_md(r.task)}",
    ]
    if r.error:
        lines += ["", f"**error:** {_md(r.error)}"]
    if r.final_text:
        lines += ["", "**answer:**", *_md_summary(r.final_text)]
    lines += _md_facts(_main_facts(r))
    for i, child in enumerate(r.children, 1):
        lines += ["", f"**child {i}:** {_md_code(child.status)} · {_md(child.task)}"]
    return "\n".join(lines) + "\n"


def verdict_html(v: Any) -> str:
    parts = [_header("CompletionVerdict", v.verdict)]
    if v.feedback:
        parts.append(_text_block(v.feedback, label="whole feedback"))
    parts.append(_list("Reasons", v.reasons))
    if v.launch is not None:
        parts.append(
            "<details><summary>verification child</summary>" + launch_html(v.launch) + "</details>"
        )
    return _box("".join(parts))


# --- traces -----------------------------------------------------------------------------------


def _timeline(trace: Trace, *, opened: bool = False) -> str:
    rows = []
    for e, ms in _timed(trace, MAX_TIMELINE):
        rows.append(
            f'<tr><td style="{_CELL}">{e["step"]}</td>'
            f'<td style="{_CELL};white-space:nowrap">{ms:.1f}</td>'
            f'<td style="{_CELL}"><code style="{_CODE}">{_e(e["event"])}</code></td>'
            f'<td style="{_CELL};white-space:pre-wrap">{_e(describe(e))}</td></tr>'
        )
    more = len(trace.events) - MAX_TIMELINE
    if more > 0:
        rows.append(
            f'<tr><td colspan="4" style="{_CELL};{_MUTED}">… {more} more events '
            "(Trace.to_pandas() has them all)</td></tr>"
        )
    steps = max((s.number for s in trace.steps), default=0)
    head = "".join(
        f'<th style="{_CELL};border-top:none">{h}</th>' for h in ("step", "ms", "event", "detail")
    )
    return (
        f"<details{' open' if opened else ''}><summary><strong>Timeline</strong> "
        f"({_plural(steps, 'step')}, {_plural(len(trace.events), 'event')})</summary>"
        f'<table style="border-collapse:collapse;font-size:.88em;margin:.3em 0;color:inherit;'
        f'background:transparent"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table></details>"
    )


def trace_html(t: Trace) -> str:
    parts = [
        _header(
            "Trace",
            t.terminal_reason or "unfinished",
            f'<span style="{_MUTED}">{_e(t.session_id)}</span>',
        )
    ]
    if t.truncated:
        parts.append(
            f"<div><strong>truncated:</strong> line {t.skipped_line} was cut short and skipped"
            "</div>"
        )
    if t.error:
        parts.append(f"<div><strong>error:</strong> {_e(t.error)}</div>")
    if t.task:
        parts.append(
            f"<details><summary><strong>Task</strong></summary>{_text_block(t.task)}</details>"
        )
    tokens = _thousands(t.token_usage) + (" (estimated)" if t.usage_estimated else "")
    parts.append(
        _facts(
            [
                ("profile", t.profile),
                ("model", t.model),
                ("tools", _tools(t.tool_usage)),
                ("tokens", tokens),
                ("model calls", t.model_calls),
                ("elapsed", f"{_thousands(t.elapsed_ms)} ms"),
            ]
        )
    )
    if t.final_text:
        parts.append(
            "<details><summary><strong>Final answer</strong></summary>"
            + _text_block(t.final_text)
            + "</details>"
        )
    if t.child_refs:
        head = "".join(
            f'<th style="{_CELL};border-top:none">{h}</th>'
            for h in ("child", "profile", "outcome", "reason", "tokens", "ms")
        )
        rows = "".join(
            "<tr>"
            + "".join(
                f'<td style="{_CELL}">{_e(v)}</td>'
                for v in (
                    c.session_id,
                    c.profile or "",
                    c.outcome or "running",
                    c.terminal_reason or "",
                    "" if c.token_usage is None else c.token_usage,
                    "" if c.elapsed_ms is None else c.elapsed_ms,
                )
            )
            + "</tr>"
            for c in t.child_refs[:MAX_ITEMS]
        )
        if len(t.child_refs) > MAX_ITEMS:
            rows += (
                f'<tr><td colspan="6" style="{_CELL};{_MUTED}">{_more(t.child_refs, "more children")}'
                "</td></tr>"
            )
        parts.append(
            f"<details open><summary><strong>Children</strong> ({len(t.child_refs)})</summary>"
            f'<table style="border-collapse:collapse;font-size:.88em;color:inherit;'
            f'background:transparent"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
            "</table></details>"
        )
    parts.append(_timeline(t, opened=len(t.events) <= 40))
    if t.path is not None:
        parts.append(f'<div style="{_MUTED};font-size:.85em">{_e(t.path)}</div>')
    return _box("".join(parts))


# --- markdown ---------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_MD_LEADING = re.compile(r"^(\d+)([.)])|^([#+>-])")


def _md(value: Any) -> str:
    """Inline Markdown text: HTML escaped, Markdown punctuation backslash-escaped, one line
    (so model output cannot open a heading, a list, a link, a table cell or raw HTML)."""
    text = " ".join(_clip(value).split())
    text = _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return _MD_LEADING.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", text)


def _md_code(value: str) -> str:
    text = " ".join(_clip(value).split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell_code(value: str) -> str:
    """A code span inside a table cell. A table splits its cells at every ``|`` not escaped by
    a backslash, code spans included (GFM), and then reads ``\\|`` as ``|``: so a ``|`` is
    escaped. A ``\\`` just before a ``|`` would make that escape a literal backslash, and code
    spans have no escape for it, so such a value is written as escaped text instead."""
    if "\\|" in value:
        return _md(value)
    return _md_code(value).replace("|", "\\|")


def _md_list(title: str, items: Sequence[str], *, code: bool = False) -> list[str]:
    if not items:
        return []
    lines = [f"- {_md_code(i) if code else _md(i)}" for i in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        lines.append(f"- {_more(items)}")
    if len(items) > LONG_LIST:
        return [
            "",
            f"<details><summary>{html.escape(title)} ({len(items)})</summary>",
            "",
            *lines,
            "",
            "</details>",
        ]
    return ["", f"**{_md(title)}** ({len(items)})", "", *lines]


def _md_summary(text: str) -> list[str]:
    if len(text) <= LONG_TEXT:
        return ["", _md(text)]
    return [
        "",
        _md(text[:LONG_TEXT]) + "…",
        "",
        f"<details><summary>whole text ({len(text)} characters)</summary>",
        "",
        _md(text),
        "",
        "</details>",
    ]


def _md_facts(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    shown = [f"{_md(k)}: **{_md(v)}**" for k, v in pairs if v not in (None, "", {})]
    return ["", " · ".join(shown)] if shown else []


def _md_timeline(trace: Trace) -> list[str]:
    rows = [
        f"| {e['step']} | {ms:.1f} | {_md_cell_code(e['event'])} | {_md(describe(e))} |"
        for e, ms in _timed(trace, MAX_TIMELINE)
    ]
    more = len(trace.events) - MAX_TIMELINE
    steps = max((s.number for s in trace.steps), default=0)
    return [
        "",
        f"<details><summary>Timeline ({_plural(steps, 'step')}, "
        f"{_plural(len(trace.events), 'event')})</summary>",
        "",
        "| step | ms | event | detail |",
        "|---:|---:|---|---|",
        *rows,
        *([f"\n… {more} more events"] if more > 0 else []),
        "",
        "</details>",
    ]


def explore_md(r: Any) -> str:
    lines = [f"**ExploreResult** · {_md_code(r.status)}"]
    lines += _md_summary(r.summary)
    lines += _md_list("Findings", r.findings)
    lines += _md_list("Evidence", r.evidence, code=True)
    lines += _md_list("Open questions", r.unresolved_questions)
    lines += _md_facts([("terminal reason", r.terminal_reason), ("tools", _tools(r.tool_usage))])
    return "\n".join(lines) + "\n"


def verification_md(r: Any) -> str:
    lines = [f"**VerificationResult** · {_md_code(r.verdict)}"]
    lines += _md_list("Reasons", r.reasons)
    lines += _md_list("Findings", r.findings)
    lines += _md_list("Evidence", r.evidence, code=True)
    lines += _md_facts(
        [
            ("terminal reason", r.terminal_reason),
            ("tools", _tools(r.tool_usage)),
            ("tokens", r.token_usage),
        ]
    )
    return "\n".join(lines) + "\n"


def launch_md(r: Any) -> str:
    lines = [
        f"**SubagentLaunchResult** · {_md_code(r.status)} · {_md(r.profile_name)} · "
        f"{_md(model_label(r))}"
    ]
    if r.task:
        lines += ["", f"**asked:** {_md(r.task)}"]
    why = partial_why(r)
    if why:
        lines += ["", f"**why {r.status}:** {_md(why)}"]
    if r.error:
        lines += ["", f"**error:** {_md(r.error)}"]
    if r.ungrounded_evidence:
        lines += _md_list(
            "Evidence not found in the files",
            [f"{c['evidence']}: {c['message']}" for c in r.ungrounded_evidence],
        )
    result = r.result
    if isinstance(result, _core.ExploreResult):
        lines += _md_summary(result.summary)
        lines += _md_list("Findings", result.findings)
        lines += _md_list("Evidence", result.evidence, code=True)
        lines += _md_list("Open questions", result.unresolved_questions)
    elif isinstance(result, _core.VerificationResult):
        lines += ["", f"verdict: {_md_code(result.verdict)}"]
        lines += _md_list("Reasons", result.reasons)
        lines += _md_list("Evidence", result.evidence, code=True)
    elif (answer := custom_json(result)) is not None:
        lines += ["", f"**{_md(type(result).__name__)}:**", "", "```json", answer, "```"]
        lines += _md_list("Evidence", r.evidence, code=True)
        lines += _md_list("Does not fit the schema", r.schema_errors)
    tokens = str(r.token_usage) + (" (estimated)" if r.usage_estimated else "")
    lines += _md_facts(
        [
            (
                "terminal reason",
                r.terminal_reason + (f" ({r.failure_reason})" if r.failure_reason else ""),
            ),
            ("tools", _tools(r.tool_usage)),
            ("tokens", tokens),
            ("model calls", r.model_calls),
            ("elapsed", f"{r.elapsed_ms} ms"),
        ]
    )
    if r.trace_error:
        lines += ["", f"**trace error:** {_md(r.trace_error)}"]
    trace = _launch_trace(r)
    if isinstance(trace, Trace):
        lines += _md_timeline(trace)
    elif trace:
        lines += ["", _md(trace)]
    return "\n".join(lines) + "\n"


def verdict_md(v: Any) -> str:
    lines = [f"**CompletionVerdict** · {_md_code(v.verdict)}"]
    if v.feedback:
        lines += _md_summary(v.feedback)
    lines += _md_list("Reasons", v.reasons)
    if v.launch is not None:
        lines += [
            "",
            f"verification child: {_md_code(v.launch.status)}, {v.launch.token_usage} tokens",
        ]
    return "\n".join(lines) + "\n"


def trace_md(t: Trace) -> str:
    lines = [f"**Trace** {_md_code(t.session_id)} · {_md_code(t.terminal_reason or 'unfinished')}"]
    if t.truncated:
        lines += ["", f"**truncated:** line {t.skipped_line} was cut short and skipped"]
    if t.error:
        lines += ["", f"**error:** {_md(t.error)}"]
    lines += _md_facts(
        [
            ("profile", t.profile),
            ("tools", _tools(t.tool_usage)),
            ("tokens", t.token_usage),
            ("model calls", t.model_calls),
            ("elapsed", f"{t.elapsed_ms:.0f} ms"),
        ]
    )
    if t.child_refs:
        lines += ["", "| child | profile | outcome | tokens |", "|---|---|---|---:|"]
        lines += [
            f"| {_md_cell_code(c.session_id)} | {_md(c.profile or '')} | "
            f"{_md(c.outcome or 'running')} | {c.token_usage if c.token_usage is not None else ''} |"
            for c in t.child_refs[:MAX_ITEMS]
        ]
        if len(t.child_refs) > MAX_ITEMS:
            lines.append(f"| {_more(t.child_refs, 'more children')} | | | |")
    lines += _md_timeline(t)
    return "\n".join(lines) + "\n"


# --- batches ----------------------------------------------------------------------------------

BATCH_EXCERPT = 240
"""Characters of a task's summary (or error) shown in a batch's answers table."""


def _one_line(value: Any, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def batch_html(run: Any) -> str:
    """A batch (``BatchRun``): its summary, then a table of its answers, one row per task: id,
    status, question, summary excerpt (the error for a failed task) and top evidence."""
    from outrider.batch._answers import answer_record

    rows = run.rows
    cells = []
    for row in rows[:MAX_ITEMS]:
        r = answer_record(row)
        text = r["summary"] if r["summary"] is not None else (r["error"] or "")
        if not text and r["result"] is not None:
            text = json.dumps(r["result"], ensure_ascii=False, default=str)
        if r["status"] in ("failed", "error") and r["reason"]:
            text = f"{r['reason']}: {text}" if text else r["reason"]
        evidence = r["evidence"] or []
        top = f'<code style="{_CODE}">{_e(evidence[0])}</code>' if evidence else ""
        if len(evidence) > 1:
            top += f' <span style="{_MUTED}">+{len(evidence) - 1}</span>'
        cells.append(
            f'<tr><td style="{_CELL}"><code style="{_CODE}">{_e(r["id"])}</code></td>'
            f'<td style="{_CELL}">{_badge(r["status"])}</td>'
            f'<td style="{_CELL}">{_e(_one_line(r["question"] or "", BATCH_EXCERPT // 2))}</td>'
            f'<td style="{_CELL}">{_e(_one_line(text, BATCH_EXCERPT))}</td>'
            f'<td style="{_CELL}">{top}</td></tr>'
        )
    if len(rows) > MAX_ITEMS:
        cells.append(
            f'<tr><td style="{_CELL};{_MUTED}" colspan="5">{_more(rows, "more tasks")} '
            "(<code>to_pandas()</code> has all)</td></tr>"
        )
    head = "".join(
        f'<th style="{_CELL}">{h}</th>'
        for h in ("task", "status", "question", "answer", "top evidence")
    )
    table = (
        f"<details open><summary><strong>answers</strong> ({len(rows)})</summary>"
        f'<table style="border-collapse:collapse"><tr>{head}</tr>{"".join(cells)}</table>'
        "</details>"
        if rows
        else ""
    )
    where = (
        f'<div style="{_MUTED};font-size:.85em">manifest: {_e(run.out)}</div>' if run.out else ""
    )
    return _box(run.summary._repr_html_() + table + where)


# The one table of Jupyter views: every outrider type that shows itself, with its renderers.
_views.register(
    {
        _core.ExploreResult: (explore_html, explore_md),
        _core.VerificationResult: (verification_html, verification_md),
        _core.SubagentLaunchResult: (launch_html, launch_md),
        _core.CompletionVerdict: (verdict_html, verdict_md),
        Trace: (trace_html, trace_md),
        MainRunResult: (main_run_html, main_run_md),
    }
)

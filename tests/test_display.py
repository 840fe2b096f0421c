"""Jupyter display: _repr_html_ / _repr_markdown_ of results, verdicts, launches and traces."""

from __future__ import annotations

import json
import pathlib
import re
from html.parser import HTMLParser

import pytest

import outrider
from outrider._display import LONG_LIST, STATUS_COLOURS, _md
from outrider.testing import ScriptedLLM, call, final

EVIL = "<script>alert('x')</script> & <img src=x onerror=alert(1)>"
ALLOWED_TAGS = {
    "div",
    "span",
    "strong",
    "details",
    "summary",
    "ul",
    "li",
    "code",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}


class TagChecker(HTMLParser):
    """Collects tags and checks that every one opened is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.extend(attrs)
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_html(markup: str) -> TagChecker:
    """Well formed, only our tags and attributes, and theme-safe colours."""
    checker = TagChecker()
    checker.feed(markup)
    checker.close()
    assert checker.stack == []
    assert checker.tags <= ALLOWED_TAGS, checker.tags - ALLOWED_TAGS
    assert {name for name, _ in checker.attrs} <= {"style", "class", "open", "colspan"}
    allowed_colours = {"inherit", "currentColor", *STATUS_COLOURS.values()}
    for name, value in checker.attrs:
        if name != "style" or value is None:
            continue
        for prop, val in re.findall(r"(?:^|;)\s*([a-z-]+)\s*:\s*([^;]+)", value):
            if prop == "color":
                assert val.strip() in allowed_colours, value
            if prop.startswith("background"):
                assert val.strip() == "transparent" or val.startswith("rgba(127,127,127,"), value
            if prop.startswith("border") and "#" in val:
                raise AssertionError(f"hard-coded border colour: {value}")
    return checker


def text_of(markup: str) -> str:
    return "".join(check_html(markup).text)


def test_an_explore_result_renders_escaped_in_html_and_markdown() -> None:
    result = outrider.ExploreResult(
        "completed",
        f"main is in app.py {EVIL}",
        findings=[EVIL, "plain"],
        evidence=["app.py:1", "<b>:2"],
        unresolved_questions=["| a | b |"],
        tool_usage={"Grep": 2, "Read": 1},
        terminal_reason="completed",
    )
    markup = result._repr_html_()
    assert "<script" not in markup and "<img" not in markup and "<b>" not in markup
    assert "&lt;script&gt;" in markup
    text = text_of(markup)
    assert f"main is in app.py {EVIL}" in text and "app.py:1" in text and "<b>:2" in text
    assert "Grep x2, Read x1" in text and "completed" in text
    assert f"color:{STATUS_COLOURS['completed']}" in markup

    assert result._repr_markdown_() == (
        "**ExploreResult** · `completed`\n"
        "\n"
        "main is in app.py &lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;img src=x "
        "onerror=alert(1)&gt;\n"
        "\n"
        "**Findings** (2)\n"
        "\n"
        "- &lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;\n"
        "- plain\n"
        "\n"
        "**Evidence** (2)\n"
        "\n"
        "- `app.py:1`\n"
        "- `<b>:2`\n"
        "\n"
        "**Open questions** (1)\n"
        "\n"
        "- \\| a \\| b \\|\n"
        "\n"
        "terminal reason: **completed** · tools: **Grep x2, Read x1**\n"
    )


def test_long_summaries_and_lists_are_folded() -> None:
    many = [f"src/m{i}.py:{i + 1}" for i in range(LONG_LIST + 1)]
    long = outrider.ExploreResult("partial", "x" * 5000, evidence=many)
    markup = long._repr_html_()
    check_html(markup)
    assert "whole summary (5\u202f000 characters)" in markup
    assert markup.count("x" * 5000) == 1  # the full text only inside the fold
    assert "<details><summary><strong>Evidence</strong> (9)" in markup  # closed: long list
    short = outrider.ExploreResult("partial", "short", evidence=many[:2])
    assert "<details open><summary><strong>Evidence</strong> (2)" in short._repr_html_()
    md = long._repr_markdown_()
    assert "<details><summary>Evidence (9)</summary>" in md and "whole text (5000 characters)" in md


def test_a_launch_shows_status_usage_and_its_step_timeline(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # The file holds the markup the summary quotes: a summary may only name what the child saw.
    (repo / "app.py").write_text(f"# {EVIL}\ndef main():\n    return 1\n")
    llm = ScriptedLLM(
        [
            # The Read shows the line the answer cites (evidence must be observed).
            [call("Grep", pattern="<script>"), call("Read", path="app.py")],
            final(status="completed", summary=EVIL, evidence=["app.py:1"]),
        ]
    )
    result = outrider.SubagentLauncher(repo, llm, trace_dir=tmp_path / "t").launch(
        outrider.SubagentRequest(task="Find <script> tags")
    )
    markup = result._repr_html_()
    assert "<script" not in markup and "<img" not in markup
    text = text_of(markup)
    assert result.trace_path is not None
    trace = outrider.Trace.load(result.trace_path)
    for expected in (
        "SubagentLaunchResult",
        "completed",
        EVIL,
        "app.py:1",
        "Grep x1, Read x1",
        f"{result.token_usage:,}".replace(",", "\u202f") + " (estimated)",
        f"{result.elapsed_ms} ms",
        "terminal reason",
        f"Timeline ({len(trace.steps) - 1} steps, {len(trace.events)} events)",
        result.trace_path,
    ):
        assert expected in text, expected
    assert markup.count("<tr>") == len(trace.events) + 1  # + the header row
    md = result._repr_markdown_()
    assert "<script" not in md
    assert f"Timeline (2 steps, {len(trace.events)} events)" in md
    assert md.count("\n| ") == len(trace.events) + 1


def test_failed_unverified_and_traceless_launches(repo: pathlib.Path) -> None:
    failed = outrider.SubagentLauncher(
        repo, ScriptedLLM([RuntimeError(f"provider said {EVIL}")]), trace_dir=False
    ).launch(outrider.SubagentRequest(task="x"))
    assert failed.status == "failed"
    markup = failed._repr_html_()
    text = text_of(markup)
    assert "<script" not in markup and "provider said <script>" in text
    assert "runtime_error (model_error)" in text and "no trace file (kept in memory)" in text
    assert f"color:{STATUS_COLOURS['failed']}" in markup
    assert "**error:** " in failed._repr_markdown_()

    bad = final(status="completed", summary="s", evidence=["app.py:99"])
    unverified = outrider.SubagentLauncher(repo, ScriptedLLM([bad] * 3), trace_dir=False).launch(
        outrider.SubagentRequest(task="x")
    )
    assert unverified.status == "unverified"
    text = text_of(unverified._repr_html_())
    assert "Evidence not found in the files" in text and "app.py:99" in text


def test_verdicts_render_with_their_verification_child(repo: pathlib.Path) -> None:
    answer = json.dumps({"verdict": "FAIL", "reasons": [EVIL], "findings": [], "evidence": []})
    # The verification child Reads before its verdict (min_tool_calls=1).
    llm = ScriptedLLM([[call("Read", path="app.py")], answer])
    verdict = outrider.SubagentLauncher(repo, llm, trace_dir=False).verify("x")
    markup = verdict._repr_html_()
    text = text_of(markup)
    assert verdict.verdict == "FAIL" and "<script" not in markup
    assert "CompletionVerdict" in text and EVIL in text and "verification child" in text
    assert verdict.launch is not None and isinstance(
        verdict.launch.result, outrider.VerificationResult
    )
    inner = verdict.launch.result._repr_html_()
    assert "VerificationResult" in text_of(inner) and "<script" not in inner
    md = verdict._repr_markdown_()
    assert md.startswith("**CompletionVerdict** · `FAIL`") and "<script" not in md
    assert "<script" not in verdict.launch.result._repr_markdown_()


def test_traces_render_with_children_and_a_truncation_notice(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    main = ScriptedLLM(
        [[call("Task", description="d", prompt=EVIL, subagent_type="explore")], EVIL]
    )
    # The child Reads what it cites, so it completes (min_tool_calls, observed evidence).
    light = ScriptedLLM(
        [
            [call("Read", path="app.py")],
            final(status="completed", summary="s", evidence=["app.py:1"]),
        ]
    )
    run = outrider.MainAgent(repo, main, light, trace_dir=tmp_path / "t").run(EVIL)
    parent = outrider.Trace.load(run["trace_path"])
    markup = parent._repr_html_()
    assert "<script" not in markup and "<img" not in markup
    text = text_of(markup)
    child = parent.child_refs[0]
    assert child.outcome == "completed"
    assert "Children (1)" in text and child.session_id in text and "completed" in text
    assert "Timeline (2 steps" in text and EVIL in text
    assert "<script" not in parent._repr_markdown_()
    assert f"`{child.session_id}`" in parent._repr_markdown_()

    lines = pathlib.Path(run["trace_path"]).read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:20])
    truncated = outrider.Trace.load(cut)
    assert "line 6 was cut short and skipped" in text_of(truncated._repr_html_())
    assert "unfinished" in text_of(truncated._repr_html_())
    assert "**truncated:** line 6" in truncated._repr_markdown_()


def _luminance(colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def _contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


@pytest.mark.parametrize("status", sorted(STATUS_COLOURS))
def test_badge_colours_read_on_light_and_dark_backgrounds(status: str) -> None:
    """WCAG's 3:1 for bold text and UI parts, against white and a dark notebook (#1e1e1e)."""
    lum = _luminance(STATUS_COLOURS[status])
    assert _contrast(lum, _luminance("#ffffff")) >= 3.0, status
    assert _contrast(lum, _luminance("#1e1e1e")) >= 3.0, status


def test_a_trace_that_could_not_be_written_is_said_so(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    traces = tmp_path / "traces"
    llm = ScriptedLLM([final(status="partial", summary="s")])
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=traces)
    traces.rmdir()  # the launcher made it; now no trace file can be created in it
    result = launcher.launch(outrider.SubagentRequest(task="x"))
    assert result.trace_path is None and result.trace_error is not None
    text = text_of(result._repr_html_())
    assert f"trace error: {result.trace_error}" in text and "kept in memory" not in text
    assert f"**trace error:** {_md(result.trace_error)}" in result._repr_markdown_()
    # A trace file deleted since the launch: the view says why there is no timeline.
    kept = outrider.SubagentLauncher(
        repo, ScriptedLLM([final(status="partial", summary="s")]), trace_dir=tmp_path / "t2"
    ).launch(outrider.SubagentRequest(task="x"))
    assert kept.trace_path is not None
    pathlib.Path(kept.trace_path).unlink()
    assert "cannot read trace" in text_of(kept._repr_html_())

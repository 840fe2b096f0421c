"""Traces read back, displays and the command line, tried as an attacker would (issue 17, items 4,
7 and 8): paths to FIFOs, devices and foreign files, lines nested 100k deep or holding 5000-digit
numbers, payload fields of the wrong type, huge answers, ``|`` in Markdown tables, control
characters on the terminal, bad LLM_* settings, pydantic given a non-dict Mapping."""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import pathlib
import pickle
import re
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import outrider
from outrider import cli
from outrider.testing import ScriptedLLM, call, final
from outrider.trace import MAX_DEPTH, MAX_TRACE_BYTES

TS = "2026-12-03T10:00:00.000Z"
HEX = "0123456789abcdef0123456789abcdef"
CHILD = f"child-{HEX}"


def event(name: str, payload: Any = None, *, step: int = 0, session: str = "s") -> dict[str, Any]:
    return {
        "ts": TS,
        "session_id": session,
        "step": step,
        "event": name,
        "payload": {} if payload is None else payload,
    }


def write_trace(path: pathlib.Path, *events: dict[str, Any]) -> pathlib.Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.fixture
def fifo(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A FIFO named like a child's trace. Should a reader block on it (a regression), a writer
    opens and closes it after 5 s, so the test fails on its assertions instead of hanging."""
    path = tmp_path / f"trace-{CHILD}.jsonl"
    os.mkfifo(path)
    done = threading.Event()

    def unblock() -> None:
        if not done.wait(5):
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    yield path
    done.set()
    thread.join()


def quick(fn: Any, *args: Any) -> tuple[Any, float]:
    started = time.monotonic()
    return fn(*args), time.monotonic() - started


def load_error(path: Any, **kwargs: Any) -> outrider.TraceError:
    started = time.monotonic()
    with pytest.raises(outrider.TraceError) as info:
        outrider.Trace.load(path, **kwargs)
    assert time.monotonic() - started < 3, "Trace.load waited"
    return info.value


# --- Trace.load: what is opened, and how much ---------------------------------------------------


@pytest.mark.timeout(30)
def test_a_fifo_is_refused_without_waiting(fifo: pathlib.Path) -> None:
    err = load_error(fifo)
    assert str(err) == (
        f"cannot read trace '{fifo}': Is a FIFO (named pipe); a trace is a regular file "
        "(trace-*.jsonl)"
    )
    assert err.path == str(fifo)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/stdin", "/dev/tty"])
def test_devices_are_refused_without_reading(device: str, tmp_path: pathlib.Path) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    err = load_error(device)
    assert f"cannot read trace '{device}'" in str(err)
    assert "a trace is a regular file" in str(err) or "No such" in str(err)
    # Through a symlink that looks like a trace, too.
    link = tmp_path / f"trace-{CHILD}.jsonl"
    link.symlink_to(device)
    assert "a trace is a regular file" in str(load_error(link))


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path: pathlib.Path) -> None:
    # Sparse: as large as the cap allows plus one, costing no disk and, refused, no memory.
    big = tmp_path / f"trace-{CHILD}.jsonl"
    with big.open("wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)
    err = load_error(big)
    assert f"it is {MAX_TRACE_BYTES + 1:,} bytes, more than the {MAX_TRACE_BYTES:,}" in str(err)
    assert "Trace.load(path, max_bytes=...) reads a larger one" in str(err)
    small = write_trace(tmp_path / "t.jsonl", *[event("x")] * 20)
    assert "more than the 100 a trace may be" in str(load_error(small, max_bytes=100))
    assert len(outrider.Trace.load(small, max_bytes=small.stat().st_size)) == 20
    with pytest.raises(outrider.ConfigError, match="max_bytes: must be at least 0, got -1"):
        outrider.Trace.load(small, max_bytes=-1)
    with pytest.raises(outrider.ArgumentTypeError, match="max_bytes: expected an int, got str"):
        outrider.Trace.load(small, max_bytes="1")  # type: ignore[arg-type]


def test_a_path_with_a_nul_is_a_trace_error(tmp_path: pathlib.Path) -> None:
    err = load_error(str(tmp_path / "a\x00b.jsonl"))
    assert "cannot read trace" in str(err) and "null" in str(err)


# --- Trace.load: what a line may hold -------------------------------------------------------------


def test_a_line_nested_100k_deep_is_a_trace_error_naming_the_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "deep.jsonl"
    deep = '{"ts": "' + TS + '", "session_id": "s", "step": 0, "event": "x", "payload": '
    deep += '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}"
    path.write_text(json.dumps(event("x")) + "\n" + deep + "\n" + json.dumps(event("y")) + "\n")
    err = load_error(path)
    assert err.line == 2 and err.path == str(path)
    assert f"'{path}' line 2 is not a trace event: it nests deeper than the {MAX_DEPTH}" in str(err)
    # The last line too: nesting is not a line cut short.
    path.write_text(json.dumps(event("x")) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    assert load_error(path).line == 2


def test_nesting_is_capped_below_what_recursion_would_reach(tmp_path: pathlib.Path) -> None:
    def nested(levels: int) -> Any:
        value: Any = 1
        for _ in range(levels):
            value = [value]
        return value

    ok = write_trace(tmp_path / "ok.jsonl", event("x", {"args": nested(MAX_DEPTH - 3)}))
    trace = outrider.Trace.load(ok)
    assert trace.to_records()[0]["detail"].startswith("{")
    assert "<table" in trace._repr_html_()
    pickle.loads(pickle.dumps(trace))
    bad = write_trace(tmp_path / "bad.jsonl", event("x", {"args": nested(MAX_DEPTH)}))
    assert "nests deeper than the 256 levels" in str(load_error(bad))


def test_a_5000_digit_number_is_a_trace_error_naming_the_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "digits.jsonl"
    line = json.dumps(event("x")).replace('"step": 0', '"step": ' + "9" * 5000)
    path.write_text(f"{json.dumps(event('x'))}\n{line}\n{json.dumps(event('x'))}\n")
    err = load_error(path)
    assert err.line == 2
    assert "line 2 is not a trace event: not JSON that Python reads" in str(err)
    assert "4300 digits" in str(err)
    # A large number Python does read, as a step: refused by what a step is.
    path.write_text(json.dumps(event("x")).replace('"step": 0', '"step": ' + "9" * 40) + "\n")
    assert "step must be a whole number from 0 to 2**63 - 1" in str(load_error(path))
    path.write_text(json.dumps(event("x")).replace('"step": 0', '"step": -1') + "\n")
    assert "got -1" in str(load_error(path))


@pytest.mark.parametrize(
    "field",
    [
        {"ts": "9" * 1_000_000},
        {"ts": ["x"] * 1_000_000},
        {"step": "s" * 1_000_000},
        {"step": {"k": "v" * 1_000_000}},
        {"payload": "p" * 1_000_000},
    ],
    ids=["long-ts", "list-ts", "long-step", "dict-step", "string-payload"],
)
def test_an_error_echoes_at_most_a_little_of_the_file(
    tmp_path: pathlib.Path, field: dict[str, Any]
) -> None:
    path = write_trace(tmp_path / "t.jsonl", {**event("x"), **field})
    err = load_error(path)
    assert err.line == 1
    assert len(str(err)) < 500, len(str(err))


def test_a_cut_short_last_line_is_still_skipped(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(event("x")) + "\n" + json.dumps(event("y"))[:30] + "\n\n  \n")
    trace = outrider.Trace.load(path)
    assert (len(trace), trace.truncated, trace.skipped_line) == (1, True, 2)


# --- wrong-typed payload fields -------------------------------------------------------------------

KEYS = [
    "profile", "model", "max_steps", "tools", "content", "tool_calls", "usage", "raw", "tool",
    "args", "tool_call_id", "status", "error_code", "result", "verdict", "feedback", "repair",
    "reason", "details", "kind", "message", "child_session_id", "failure_reason",
    "terminal_reason", "trace_path", "elapsed_ms", "token_usage", "tool_usage", "steps",
    "tools_used", "total_usage", "model_calls", "usage_estimated", "name", "arguments",
    "total_tokens", "prompt_tokens", "completion_tokens", "text", "error",
]  # fmt: skip
EVENTS = [
    "run_start", "user_input", "model_output", "tool_call", "tool_result",
    "completion_gate_verdict", "terminal", "wrap_up", "model_error", "subagent_requested",
    "subagent_started", "subagent_completed", "subagent_failed", "session_summary", "run_end",
    "other",
]  # fmt: skip
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=12,
)
payloads = st.dictionaries(st.sampled_from(KEYS), values)
lines = st.tuples(st.sampled_from(EVENTS), payloads, st.integers(0, 3))


def show_everything(trace: outrider.Trace) -> None:
    trace.to_records()
    trace.to_pandas()
    trace._repr_html_()
    trace._repr_markdown_()
    repr(trace)
    for step in trace.steps:
        _ = (step.model_output, step.text, step.total_tokens, step.elapsed_ms)
    _ = (trace.tool_calls, trace.child_refs, trace.usage, trace.tool_usage, trace.final_text)
    _ = (trace.profile, trace.model, trace.task, trace.terminal_reason, trace.error)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, min_size=1, max_size=6))
def test_payload_fields_of_any_type_are_shown_not_raised(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, dict[str, Any], int]]
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "t.jsonl"
    write_trace(path, *(event(name, payload, step=step) for name, payload, step in rows))
    show_everything(outrider.Trace.load(path))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["trace", str(path)]) == 0, err.getvalue()


def test_the_reported_wrong_types_render(tmp_path: pathlib.Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        event("run_start", {"profile": 3, "tools": 5, "model": []}),
        event("model_output", {"tool_calls": "xx", "usage": "u", "raw": 5}, step=1),
        event("model_output", {"tool_calls": [{"name": 1}, 7], "usage": [1]}, step=1),
        event("tool_result", {"tool": 1, "status": 2, "result": "x", "error_code": 5}, step=1),
        event("terminal", {"details": "x", "reason": 5}),
        event("completion_gate_verdict", {"feedback": 5, "repair": {}}),
        event("subagent_completed", {"child_session_id": "c", "tool_usage": [1, 2]}),
        event("session_summary", {"total_usage": "x", "steps": 10**30}),
        event("model_output", {"usage": {"total_tokens": 10**30}}, step=2),
    )
    trace = outrider.Trace.load(path)
    show_everything(trace)
    assert trace.token_usage == 0  # a count beyond 2**63 is no count
    assert [r["detail"] for r in trace.to_records()][:3] == [
        "3 on [], None steps, tools ",
        "answer 5  [? tokens]",
        "calls 1(), 7  [? tokens]",
    ]


# --- children and results rebuilt from data -------------------------------------------------------


def parent_trace(tmp_path: pathlib.Path, trace_path: Any, child: str = CHILD) -> outrider.Trace:
    payload = {"child_session_id": child, "profile": "explore", "trace_path": trace_path}
    return outrider.Trace.load(
        write_trace(
            tmp_path / "parent.jsonl",
            event("run_start", {"profile": "main"}, session="main-1"),
            event("subagent_started", payload, session="main-1"),
        )
    )


@pytest.mark.timeout(30)
def test_children_do_not_follow_a_fifo(tmp_path: pathlib.Path, fifo: pathlib.Path) -> None:
    parent = parent_trace(tmp_path, str(fifo))
    with pytest.raises(outrider.TraceError, match=r"Is a FIFO \(named pipe\)"):
        quick(lambda: parent.children)


@pytest.mark.parametrize("target", ["/etc/passwd", "/dev/zero", "x\x00y", "../../etc/shadow"])
def test_children_only_follow_a_path_named_as_their_trace(
    tmp_path: pathlib.Path, target: str
) -> None:
    parent = parent_trace(tmp_path, target)
    with pytest.raises(outrider.TraceError) as info:
        _ = parent.children
    assert "was not opened: a trace path read from data must name a file" in str(info.value)
    assert f"'trace-{CHILD}.jsonl'" in str(info.value)
    # A file named as another child's trace is not this child's either.
    other = write_trace(tmp_path / f"trace-child-{'f' * 32}.jsonl", event("x", session=CHILD))
    with pytest.raises(outrider.TraceError, match="was not opened"):
        _ = parent_trace(tmp_path, str(other)).children


def test_children_must_hold_their_own_session(tmp_path: pathlib.Path) -> None:
    theirs = write_trace(tmp_path / f"trace-{CHILD}.jsonl", event("x", session="child-other"))
    with pytest.raises(outrider.TraceError, match=r"holds session 'child-other', not child"):
        _ = parent_trace(tmp_path, str(theirs)).children
    write_trace(theirs, event("run_start", {"profile": "explore"}, session=CHILD))
    (child,) = parent_trace(tmp_path, theirs.name).children  # relative: beside the parent
    assert (child.session_id, child.profile) == (CHILD, "explore")


def test_a_real_main_agent_still_loads_its_children(tmp_path: pathlib.Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 1\n")
    main = ScriptedLLM(
        [[call("Task", description="d", prompt="Where is main?", subagent_type="explore")], "ok"]
    )
    light = ScriptedLLM(
        [
            [call("Read", path="app.py")],
            final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
        ]
    )
    run = outrider.MainAgent(repo, main, light, trace_dir=tmp_path / "traces").run("How?")
    parent = outrider.Trace.load(run["trace_path"])
    (child,) = parent.children
    assert child.session_id == parent.child_refs[0].session_id


@pytest.fixture
def launch(tmp_path: pathlib.Path) -> outrider.SubagentLaunchResult:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 1\n")
    llm = ScriptedLLM(
        [
            [call("Read", path="app.py")],
            final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
        ]
    )
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=tmp_path / "traces")
    return launcher.launch(outrider.SubagentRequest(task="Find main"))


def displays(result: outrider.SubagentLaunchResult) -> tuple[str, str]:
    started = time.monotonic()
    shown = (result._repr_html_(), result._repr_markdown_())
    assert time.monotonic() - started < 3, "the display waited"
    return shown


@pytest.mark.timeout(30)
def test_a_rebuilt_result_displays_only_its_own_trace(
    launch: outrider.SubagentLaunchResult, tmp_path: pathlib.Path, fifo: pathlib.Path
) -> None:
    data = launch.to_dict()
    assert data["child_session_id"] and data["trace_path"]
    same = outrider.SubagentLaunchResult.from_dict(data)
    assert all("Timeline" in shown for shown in displays(same))
    assert "Timeline" in pickle.loads(pickle.dumps(launch))._repr_html_()

    hexid = data["child_session_id"].removeprefix("child-")
    os.rename(fifo, tmp_path / f"trace-child-{hexid}.jsonl")
    zero = tmp_path / "dev" / f"trace-child-{hexid}.jsonl"
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")
    (tmp_path / "o").mkdir()
    other = write_trace(tmp_path / "o" / pathlib.Path(data["trace_path"]).name, event("x"))
    for path, why in [
        (tmp_path / f"trace-child-{hexid}.jsonl", "Is a FIFO"),
        (zero, "Is a character device"),
        ("/etc/passwd", "was not opened"),
        ("/dev/zero", "was not opened"),
        (other, "holds session 's', not this child"),
    ]:
        rebuilt = outrider.SubagentLaunchResult.from_dict({**data, "trace_path": str(path)})
        for shown in (*displays(rebuilt), *displays(pickle.loads(pickle.dumps(rebuilt)))):
            assert "Timeline" not in shown, (path, shown)
            assert why in html.unescape(shown).replace("\\", ""), (path, shown)


# --- displays are bounded -------------------------------------------------------------------------


def test_a_huge_answer_is_not_embedded_whole(tmp_path: pathlib.Path) -> None:
    answer = "word " * 1_200_000  # 6 MB
    path = write_trace(
        tmp_path / "t.jsonl",
        event("run_start", {"profile": "explore"}, session="s" * 100_000),
        event("user_input", {"content": answer}),
        event("model_output", {"raw": answer}, step=1),
        event("terminal", {"reason": "completed", "details": {"error": answer}}, step=1),
        *[event("subagent_started", {"child_session_id": f"c{i}"}) for i in range(1000)],
    )
    trace = outrider.Trace.load(path)
    html, md = trace._repr_html_(), trace._repr_markdown_()
    assert len(html) < 600_000 and len(md) < 600_000, (len(html), len(md))
    assert "more characters not shown" in html and "more characters not shown" in md
    assert "800 more children not shown" in html and "800 more children not shown" in md
    assert len(repr(trace)) < 1000


def test_a_huge_result_is_not_embedded_whole() -> None:
    result = outrider.ExploreResult(
        "completed", "s" * 5_000_000, findings=["f" * 1000] * 10_000, evidence=["a.py:1"] * 5000
    )
    html, md = result._repr_html_(), result._repr_markdown_()
    assert len(html) < 600_000 and len(md) < 600_000, (len(html), len(md))
    assert "9,800 more not shown" in html and "9,800 more not shown" in md


# --- Markdown tables ------------------------------------------------------------------------------


def gfm_cells(row: str) -> list[str]:
    """A GFM table row's cells: split at each ``|`` not escaped by a backslash (code spans
    included), then ``\\|`` read as ``|``, as cmark-gfm and marked do."""
    cells, cell, i = [], "", 0
    body = row.strip()[1:-1] if row.strip().endswith("|") else row.strip()[1:]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            cell += body[i : i + 2]
            i += 2
        elif body[i] == "|":
            cells.append(cell)
            cell, i = "", i + 1
        else:
            cell, i = cell + body[i], i + 1
    return [*cells, cell]


@pytest.mark.parametrize("name", ["a|b", "a`|`b", "a\\|b", "|", "a\\", "``|``"])
def test_a_pipe_in_a_table_cell_does_not_split_it(tmp_path: pathlib.Path, name: str) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        event(name, {"x": name}, session=name),
        event("subagent_started", {"child_session_id": name, "profile": name}, session=name),
    )
    md = outrider.Trace.load(path)._repr_markdown_()
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert len(rows) == 7  # a header, a rule and a row for the child; and for two events
    for row in rows:
        assert len(gfm_cells(row)) == 4, (row, gfm_cells(row))
    # And a renderer shows the value itself in its cell.
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    cells = [
        html.unescape(re.sub(r"<[^>]+>", "", cell))
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", rendered, re.S)
    ]
    # The child's session id and profile; then the first event's step, ms and name.
    assert (cells[0], cells[1], cells[6]) == (name, name, name), cells


# --- the command line -----------------------------------------------------------------------------

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
EVIL = "x\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e\r\x08y"


def run_cli(
    *args: str, cwd: pathlib.Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
    return subprocess.run(
        [sys.executable, "-m", "outrider", *args],
        cwd=cwd,
        env={**base, "PYTHONIOENCODING": "utf-8", **(env or {})},
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=60,
        check=False,
    )


def refused(out: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("outrider: ") and out.stderr.count("\n") == 1, out.stderr
    for part in parts:
        assert part in out.stderr, out.stderr
    assert not CONTROL.search(out.stdout + out.stderr)


@pytest.mark.timeout(60)
def test_cli_trace_refuses_what_is_not_a_trace(tmp_path: pathlib.Path, fifo: pathlib.Path) -> None:
    started = time.monotonic()
    refused(run_cli("trace", str(fifo), cwd=tmp_path), "Is a FIFO")
    assert time.monotonic() - started < 20
    refused(run_cli("trace", "/dev/zero", cwd=tmp_path), "Is a character device")
    refused(run_cli("trace", str(tmp_path), cwd=tmp_path), "Is a directory")
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    refused(run_cli("trace", str(deep), cwd=tmp_path), f"'{deep}' line 1", "nests deeper")
    digits = tmp_path / "digits.jsonl"
    digits.write_text(json.dumps(event("x")).replace('"step": 0', '"step": ' + "9" * 5000))
    refused(run_cli("trace", str(digits), cwd=tmp_path), f"'{digits}' line 1", "4300 digits")
    refused(run_cli("trace", "/etc/passwd", cwd=tmp_path), "'/etc/passwd' line 1")
    evil = tmp_path / f"{EVIL}.jsonl"
    evil.write_text("not json\n")
    refused(run_cli("trace", str(evil), cwd=tmp_path), "\\x1b]0;pwned\\x07", "\\x9b31m\\u202e")


def test_cli_trace_escapes_what_the_trace_holds(tmp_path: pathlib.Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        event("run_start", {"profile": EVIL, "model": EVIL, "tools": [EVIL]}, session=EVIL),
        event(EVIL, {"x": EVIL}, session=EVIL),
        event("model_output", {"raw": EVIL}, step=1, session=EVIL),
        event("subagent_started", {"child_session_id": EVIL, "trace_path": EVIL}, session=EVIL),
    )
    out = run_cli("trace", str(path), cwd=tmp_path)
    assert (out.returncode, out.stderr) == (0, "")
    assert not CONTROL.search(out.stdout), out.stdout
    assert out.stdout.startswith("session x\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202e\\x0d\\x08y\n")
    assert len(out.stdout.splitlines()) == 5
    assert "trace=x\\x1b]0;pwned" in out.stdout


def test_cli_trace_prints_what_parses_and_names_each_line_that_does_not(
    tmp_path: pathlib.Path,
) -> None:
    # Mixed timestamp formats (#36): the lines that parse are shown, each other line is named
    # on stderr with why; once printed nothing and exited 0.
    path = tmp_path / "mixed.jsonl"
    lines = [
        event("run_start"),
        {**event("model_output", step=1), "ts": "2026-12-05 10:00:01.5"},
        {**event("model_output", step=2), "ts": 1796480000},
        {**event("model_output", step=3), "ts": "Sat, 05 Dec 2026 10:00:02 GMT"},
        {**event("terminal", {"reason": "completed"}, step=4), "ts": "2026-12-05T10:00:03+00:00"},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"
    path.write_text(text)
    out = run_cli("trace", str(path), cwd=tmp_path)
    assert out.returncode == 0, (out.stdout, out.stderr)
    shown = out.stdout.splitlines()
    assert shown[0] == "session s" and len(shown) == 4, out.stdout
    assert [row.split()[0] for row in shown[1:]] == ["0", "1", "4"], out.stdout
    notes = out.stderr.splitlines()
    assert len(notes) == 3, out.stderr
    for note, number, why in zip(
        notes,
        (3, 4, 6),
        ("ts must be an ISO 8601 string, got 1796480000", "Sat, 05 Dec 2026", "nests deeper"),
        strict=True,
    ):
        assert note.startswith(f"outrider: note: line {number} of {path} is not a trace event"), (
            note
        )
        assert why in note, note
    assert "Traceback" not in out.stderr
    # Through the API too: strict by default, lenient on request.
    with pytest.raises(outrider.TraceError, match="line 3 is not a trace event"):
        outrider.Trace.load(path)
    trace = outrider.Trace.load(path, skip_bad_lines=True)
    assert [n for n, _ in trace.bad_lines] == [3, 4, 6] and trace.bad_line_count == 3
    assert len(trace.events) == 3


def test_cli_trace_notes_a_cut_short_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(event("x")) + "\n" + json.dumps(event("y"))[:20])
    out = run_cli("trace", str(path), cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("session s\n")
    assert out.stderr == (
        f"outrider: note: line 2 of {path} was cut short (the writer stopped mid-line) and is "
        "not shown\n"
    )


@pytest.fixture
def evil_repo(tmp_path: pathlib.Path) -> pathlib.Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / f"{EVIL.replace(chr(8), '')}_auth.py").write_text(
        "session_token = 1  # \x1b]8;;http://evil\x07link\x1b]8;;\x07\n"
    )
    return repo


def test_cli_explore_escapes_file_names_and_answers(
    evil_repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    args = ["explore", "Where is session_token defined?", "--root", str(evil_repo)]
    args += ["--model", "offline", "--trace-dir", str(tmp_path / "traces")]
    out = run_cli(*args, cwd=tmp_path)
    assert out.returncode in (0, 3), out.stderr
    assert "Traceback" not in out.stderr
    assert "\\x1b]0;pwned\\x07" in out.stdout, out.stdout
    assert not CONTROL.search(out.stdout), out.stdout
    assert not CONTROL.search(out.stderr), out.stderr  # the library's warnings too
    as_json = run_cli(*args, "--json", cwd=tmp_path)
    assert not CONTROL.search(as_json.stdout), as_json.stdout
    data = json.loads(as_json.stdout)
    # Escaped for the terminal, the same strings once read back.
    assert any("\x1b]0;pwned\x07" in e and "\u202e" in e for e in data["result"]["evidence"])
    trace = run_cli("trace", data["trace_path"], cwd=tmp_path)
    assert trace.returncode == 0 and not CONTROL.search(trace.stdout + trace.stderr)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("LLM_TIMEOUT", "abc", "LLM_TIMEOUT: 'abc' is not a number of seconds"),
        ("LLM_TIMEOUT", "-1", "LLM_TIMEOUT: -1 is not a positive number of seconds"),
        ("LLM_MAX_RETRIES", "two", "LLM_MAX_RETRIES: 'two' is not a whole number >= 0"),
        ("LLM_BASE_URL", "ftp://x", "LLM_BASE_URL: 'ftp://x' is not an http(s) URL"),
        (
            "LLM_BASE_URL",
            "http://\x1b]0;pwned\x07x/",
            "LLM_BASE_URL: 'http://\\x1b]0;pwned\\x07x/'",
        ),
        ("LLM_TIMEOUT", "1\x9b31m", "LLM_TIMEOUT: '1\\x9b31m' is not a number"),
    ],
)
def test_cli_a_bad_llm_setting_is_a_usage_error(
    tmp_path: pathlib.Path, name: str, value: str, message: str
) -> None:
    env = {"LLM_MODEL_ID": "m", "LLM_BASE_URL": "http://127.0.0.1:9/v1", name: value}
    for command in (["explore", "x"], ["mcp"]):
        out = run_cli(
            *command, "--root", str(tmp_path), "--env-file", "none", cwd=tmp_path, env=env
        )
        refused(out, message)


def test_cli_usage_errors_are_escaped(tmp_path: pathlib.Path) -> None:
    out = run_cli("explore", "x", EVIL, "--root", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unrecognized arguments: x\\x1b]0;pwned\\x07" in out.stderr
    assert not CONTROL.search(out.stderr)
    missing = run_cli("explore", "x", "--root", str(tmp_path / EVIL), cwd=tmp_path)
    refused(missing, "is not a directory")


def test_cli_output_survives_an_ascii_terminal(
    evil_repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    path = write_trace(tmp_path / "t.jsonl", event("run_start", {"profile": "é → ü"}))
    out = run_cli("trace", str(path), cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "\\xe9 \\u2192 \\xfc" in out.stdout


# --- pydantic -------------------------------------------------------------------------------------


class Report(pydantic.BaseModel):
    result: outrider.ExploreResult


class ReadOnly(Mapping[str, Any]):
    def __init__(self, data: dict[Any, Any], *, broken: bool = False) -> None:
        self.data, self.broken = data, broken

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        if self.broken:
            raise KeyError("gone")
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_pydantic_takes_any_mapping_and_refuses_with_a_validation_error() -> None:
    fields = {"status": "completed", "summary": "found", "evidence": ["a.py:1"]}
    expected = outrider.ExploreResult.from_dict(fields)
    assert Report(result=types.MappingProxyType(fields)).result == expected  # type: ignore[arg-type]
    assert Report(result=ReadOnly(fields)).result == expected  # type: ignore[arg-type]
    for bad, message in [
        (ReadOnly({"status": "nope", "summary": "s"}), "'nope' is not a valid"),
        ({1: 2}, "key: must be str, got int"),
        (types.MappingProxyType({1: 2}), "key: must be str, got int"),
        (ReadOnly(fields, broken=True), "could not be read as a dict"),
    ]:
        with pytest.raises(pydantic.ValidationError, match=re.escape(message)):
            Report(result=bad)  # type: ignore[arg-type]
    adapter = pydantic.TypeAdapter(outrider.SubagentLaunchResult)
    with pytest.raises(pydantic.ValidationError):
        adapter.validate_python(types.MappingProxyType({"status": 5}))

"""outrider.Trace: reading real traces written by launches and by a main agent."""

from __future__ import annotations

import json
import pathlib
import pickle
from datetime import datetime, timezone

import pytest

import outrider
from outrider.testing import ScriptedLLM, call, final
from outrider.trace import RECORD_COLUMNS, TraceChild, TraceToolCall, event_time
from outrider.types import TraceEvent


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "util.py").write_text("def helper():\n    return 2\n")
    return root


def child_launch(repo: pathlib.Path, trace_dir: pathlib.Path) -> outrider.SubagentLaunchResult:
    llm = ScriptedLLM(
        [
            [call("Grep", pattern="def main"), call("Glob", pattern="*.py")],
            [call("Read", path="missing.py")],
            final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
        ]
    )
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=trace_dir)
    return launcher.launch(outrider.SubagentRequest(task="Find the entry point"))


def test_a_child_trace_reads_back_with_steps_tool_calls_and_totals(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    result = child_launch(repo, tmp_path / "traces")
    assert result.trace_path is not None
    trace = outrider.Trace.load(result.trace_path)

    assert trace.session_id == result.child_session_id
    assert not trace.truncated and trace.skipped_line is None
    assert trace.path == pathlib.Path(result.trace_path)
    assert [e["event"] for e in trace.events] == [
        "run_start",
        "user_input",
        "model_output",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "model_output",
        "tool_call",
        "tool_result",
        "model_output",
        "completion_gate_verdict",
        "terminal",
        "run_end",
        "session_summary",
    ]
    # Events are kept as written: ts is the line's ISO string; event_time parses it.
    assert all(isinstance(e["ts"], str) and e["ts"].endswith("Z") for e in trace.events)
    assert all(event_time(e).tzinfo is not None for e in trace.events)
    assert trace.started == event_time(trace.events[0]) <= trace.ended
    assert [s.number for s in trace.steps] == [0, 1, 2, 3]
    assert [len(s.tool_calls) for s in trace.steps] == [0, 2, 1, 0]
    assert trace.steps[3].text == final(
        status="completed", summary="main is in app.py", evidence=["app.py:1"]
    )
    assert trace.profile == "explore"
    assert trace.task == "Find the entry point\n\nStructured context:\n{}"
    assert trace.terminal_reason == result.terminal_reason == "completed"
    assert trace.error is None
    assert trace.tool_usage == result.tool_usage == {"Glob": 1, "Grep": 1, "Read": 1}
    assert trace.token_usage == result.token_usage
    assert trace.usage_estimated is result.usage_estimated is True
    assert trace.model_calls == result.model_calls == 3
    assert trace.final_text == trace.steps[3].text
    assert trace.elapsed_ms >= 0
    assert len(trace) == 15 and list(trace) == trace.events

    grep, glob, read = trace.tool_calls
    assert (grep.tool, grep.args, grep.status, grep.step) == (
        "Grep",
        {"pattern": "def main"},
        "success",
        1,
    )
    assert grep.result is not None and grep.result["data"]["matches"][0]["file"] == "app.py"
    assert glob.result is not None and glob.result["data"]["paths"] == ["app.py", "util.py"]
    assert (read.tool, read.status, read.error_code) == ("Read", "error", "NOT_FOUND")
    assert read.elapsed_ms is not None and read.elapsed_ms >= 0
    assert trace.children == [] and trace.child_refs == []


def test_records_and_pandas_have_parsed_timestamps_and_flat_columns(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    result = child_launch(repo, tmp_path / "traces")
    assert result.trace_path is not None
    trace = outrider.Trace.load(result.trace_path)
    records = trace.to_records()
    assert len(records) == len(trace.events)
    assert all(tuple(r) == RECORD_COLUMNS for r in records)
    first_output = next(r for r in records if r["event"] == "model_output")
    usage = trace.events[2]["payload"]["usage"]
    assert (
        first_output["prompt_tokens"],
        first_output["completion_tokens"],
        first_output["total_tokens"],
    ) == (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
    read_result = [r for r in records if r["event"] == "tool_result"][-1]
    assert (read_result["tool"], read_result["status"]) == ("Read", "error")
    assert records[0]["elapsed_ms"] == 0.0
    assert records[-1]["status"] is None and records[-3]["status"] == "completed"

    frame = trace.to_pandas()
    assert list(frame.columns) == list(RECORD_COLUMNS)
    assert str(frame["ts"].dtype).startswith("datetime64") and str(frame["ts"].dt.tz) == "UTC"
    assert frame["ts"].iloc[0].to_pydatetime() == event_time(trace.events[0])
    assert [r["ts"] for r in records] == [event_time(e) for e in trace.events]
    assert frame["total_tokens"].sum() == trace.token_usage
    assert frame.groupby("tool").size().to_dict() == {"Glob": 2, "Grep": 2, "Read": 2}


def test_a_main_agent_trace_lists_and_loads_its_children(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    main = ScriptedLLM(
        [
            [call("Task", description="find", prompt="Where is main?", subagent_type="explore")],
            "main is in app.py",
        ]
    )
    # The child Reads the line it cites (min_tool_calls, observed evidence).
    light = ScriptedLLM(
        [
            [call("Read", path="app.py")],
            final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
        ]
    )
    run = outrider.MainAgent(repo, main, light, trace_dir=tmp_path / "traces").run("How?")
    parent = outrider.Trace.load(run["trace_path"])
    assert parent.profile == "main" and parent.tool_usage == {"Task": 1}
    (ref,) = parent.child_refs
    assert isinstance(ref, TraceChild)
    assert (ref.profile, ref.outcome, ref.terminal_reason, ref.model) == (
        "explore",
        "completed",
        "completed",
        "light",
    )
    # The parent writes subagent_* events with step 0; they belong to the step that ran the Task.
    step1 = next(s for s in parent.steps if s.number == 1)
    assert [e["event"] for e in step1.events] == [
        "model_output",
        "tool_call",
        "subagent_requested",
        "subagent_started",
        "subagent_completed",
        "tool_result",
    ]
    (child,) = parent.children
    assert child.session_id == ref.session_id
    assert child.final_text == final(
        status="completed", summary="main is in app.py", evidence=["app.py:1"]
    )
    assert parent.children[0] is child  # loaded once


def test_children_are_found_beside_a_moved_parent(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    main = ScriptedLLM(
        [[call("Task", description="d", prompt="p", subagent_type="explore")], "done"]
    )
    light = ScriptedLLM(
        [[call("Glob", pattern="*.py")], final(status="partial", summary="not sure")]
    )
    run = outrider.MainAgent(repo, main, light, trace_dir=tmp_path / "traces").run("How?")
    moved = tmp_path / "moved"
    (tmp_path / "traces").rename(moved)
    parent = outrider.Trace.load(moved / pathlib.Path(run["trace_path"]).name)
    assert parent.child_refs[0].outcome == "partial"
    assert (
        parent.children[0].path == moved / pathlib.Path(parent.child_refs[0].trace_path or "").name
    )
    (moved / pathlib.Path(parent.child_refs[0].trace_path or "").name).unlink()
    again = outrider.Trace.load(moved / pathlib.Path(run["trace_path"]).name)
    with pytest.raises(outrider.TraceError, match="cannot read trace"):
        _ = again.children


def test_a_truncated_last_line_is_skipped_and_reported(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    result = child_launch(repo, tmp_path / "traces")
    assert result.trace_path is not None
    whole = pathlib.Path(result.trace_path).read_bytes()
    cut = tmp_path / "cut.jsonl"
    lines = whole.split(b"\n")
    cut.write_bytes(b"\n".join(lines[:10]) + b"\n" + lines[10][:37])
    trace = outrider.Trace.load(cut)
    assert trace.truncated and trace.skipped_line == 11
    assert trace.events == outrider.Trace.load(result.trace_path).events[:10]
    assert trace.terminal_reason is None
    assert "truncated at line 11" in repr(trace)
    # A cut inside a multi-byte character is a cut line too.
    cut.write_bytes(b"\n".join(lines[:3]) + b'\n{"ts": "\xe2\x82')
    assert outrider.Trace.load(cut).skipped_line == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "holds no trace events"),
        (b"\n\n", "holds no trace events"),
        (b"hello world\n", "line 1 is not a trace event: not JSON"),
        (b'{"a": 1}\n{"b": 2}\n', "line 1 is not a trace event: missing ts, session_id, step"),
        (b"[1, 2]\n", "line 1 is not a trace event: expected a JSON object, got list"),
        (
            b'{"ts": "2026-01-01T00:00:00Z", "session_id": "s", "step": "1", "event": "x", "payload": {}}\n',
            "step must be an integer, got '1'",
        ),
        (
            b'{"ts": "yesterday", "session_id": "s", "step": 1, "event": "x", "payload": {}}\n',
            "line 1 is not a trace event: Invalid isoformat string: 'yesterday'",
        ),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "line 1 is not a trace event: not UTF-8 text"),
    ],
)
def test_files_that_are_not_traces_are_refused_by_name(
    tmp_path: pathlib.Path, content: bytes, message: str
) -> None:
    path = tmp_path / "not-a-trace.jsonl"
    path.write_bytes(content)
    with pytest.raises(outrider.TraceError, match="not-a-trace.jsonl") as info:
        outrider.Trace.load(path)
    assert message in str(info.value)
    assert info.value.path == str(path)
    assert isinstance(info.value, ValueError) and isinstance(info.value, outrider.OutriderError)


def test_a_bad_line_in_the_middle_is_an_error_not_a_truncation(tmp_path: pathlib.Path) -> None:
    good = json.dumps(
        {
            "ts": "2026-12-03T10:00:00.000Z",
            "session_id": "s",
            "step": 0,
            "event": "x",
            "payload": {},
        }
    )
    path = tmp_path / "t.jsonl"
    path.write_text(f"{good}\n{{broken\n{good}\n")
    with pytest.raises(outrider.TraceError, match="line 2 is not a trace event") as info:
        outrider.Trace.load(path)
    assert info.value.line == 2


def test_missing_file_and_bad_path_type(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(
        outrider.TraceError, match=r"cannot read trace '.*nope.jsonl': No such file"
    ):
        outrider.Trace.load(missing)
    with pytest.raises(outrider.TraceError, match="Is a directory"):
        outrider.Trace.load(tmp_path)
    with pytest.raises(TypeError, match="path: expected a str or os.PathLike, got int"):
        outrider.Trace.load(3)  # type: ignore[arg-type]


def test_traces_and_trace_errors_pickle(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = child_launch(repo, tmp_path / "traces")
    assert result.trace_path is not None
    trace = outrider.Trace.load(result.trace_path)
    assert pickle.loads(pickle.dumps(trace)) == trace
    err = outrider.TraceError("m", path="p", line=3)
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.path, back.line) == ("m", "p", 3)


def test_timestamps_without_z_and_tool_call_without_result(tmp_path: pathlib.Path) -> None:
    lines = [
        {
            "ts": "2026-12-03T10:00:00.000+00:00",
            "session_id": "s",
            "step": 1,
            "event": "tool_call",
            "payload": {"tool": "Read", "args": {"path": "a"}, "tool_call_id": "c1"},
        }
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    trace = outrider.Trace.load(path)
    assert trace.events[0]["ts"] == "2026-12-03T10:00:00.000+00:00"
    assert event_time(trace.events[0]) == datetime(2026, 12, 3, 10, tzinfo=timezone.utc)
    assert trace.tool_calls == [
        TraceToolCall(
            step=1,
            tool="Read",
            tool_call_id="c1",
            args={"path": "a"},
            started=datetime(2026, 12, 3, 10, tzinfo=timezone.utc),
        )
    ]
    assert trace.tool_calls[0].elapsed_ms is None


def test_the_trace_vocabulary_is_the_cores() -> None:
    """Event and terminal-reason names are named once, in the core (#22.4): the typed names
    in outrider.types are the core's, in its order, and every event reads as a sentence."""
    import typing

    from outrider import _core, types
    from outrider.trace import describe

    assert typing.get_args(types.TraceEventName) == _core._TRACE_EVENTS
    assert typing.get_args(types.TerminalReason) == _core._TERMINAL_REASONS
    for name in typing.get_args(types.TraceEventName):
        event = outrider.trace.TraceEvent(
            ts="2026-01-01T00:00:00.000Z",
            session_id="child-x",
            step=0,
            event=name,
            payload={},
        )
        assert isinstance(describe(event), str)


# --- one event shape: live (on_event, stream) and loaded (Trace.load) -------------------------


def test_a_live_event_equals_the_loaded_event_of_its_line(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """What on_event received while the run went is what Trace.load reads from its file, event
    for event, and either is its line's JSON."""
    live: list[TraceEvent] = []
    llm = ScriptedLLM(
        [
            [call("Grep", pattern="def main"), call("Read", path="app.py")],
            final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
        ]
    )
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=tmp_path / "traces")
    result = launcher.launch(outrider.SubagentRequest(task="Where is main?"), on_event=live.append)
    assert result.trace_path is not None
    loaded = outrider.Trace.load(result.trace_path)

    assert loaded.events == live and len(live) > 10
    lines = pathlib.Path(result.trace_path).read_text().splitlines()
    for event, line in zip(loaded.events, lines, strict=True):
        assert json.loads(line) == event
        assert json.loads(json.dumps(event)) == event  # plain JSON, no datetime in it
    # describe() and event_time() take either.
    assert [outrider.trace.describe(e) for e in live] == [r["detail"] for r in loaded.to_records()]
    assert [event_time(e) for e in live] == [r["ts"] for r in loaded.to_records()]
    assert outrider.Trace(live) == loaded


def test_streamed_and_main_agent_events_equal_their_loaded_traces(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    import asyncio

    launcher = outrider.SubagentLauncher(
        repo,
        lambda request: final(status="partial", summary="not sure"),
        trace_dir=tmp_path / "traces",
    )

    async def collect() -> list[TraceEvent | outrider.SubagentLaunchResult]:
        return [item async for item in launcher.stream(outrider.SubagentRequest(task="Where?"))]

    *streamed, result = asyncio.run(collect())
    assert isinstance(result, outrider.SubagentLaunchResult) and result.trace_path is not None
    assert outrider.Trace.load(result.trace_path).events == streamed

    # A main agent's on_event gets its own events and its children's, each equal to its file's.
    main = ScriptedLLM(
        [[call("Task", description="d", prompt="Where is main?", subagent_type="explore")], "done"]
    )
    light = ScriptedLLM(
        [
            [call("Read", path="app.py")],
            final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
        ]
    )
    live: list[TraceEvent] = []
    agent = outrider.MainAgent(repo, main, light, trace_dir=tmp_path / "main-traces")
    run = agent.run("How?", on_event=live.append)
    parent = outrider.Trace.load(run["trace_path"])
    (child,) = parent.children
    assert parent.events == [e for e in live if e["session_id"] == parent.session_id]
    assert child.events == [e for e in live if e["session_id"] == child.session_id]
    assert len(parent) + len(child) == len(live)


def test_trace_event_is_one_type_exported_from_types_and_trace() -> None:
    assert outrider.trace.TraceEvent is outrider.types.TraceEvent is TraceEvent
    assert "TraceEvent" in outrider.trace.__all__ and "TraceEvent" in outrider.types.__all__
    import typing

    hints = typing.get_type_hints(TraceEvent)
    assert hints["ts"] is str and hints["event"] == outrider.types.TraceEventName


def test_event_time_parses_ts_and_refuses_what_is_not_a_timestamp() -> None:
    event = TraceEvent(
        ts="2026-12-03T10:00:00.250Z", session_id="s", step=0, event="run_start", payload={}
    )
    assert event_time(event) == datetime(2026, 12, 3, 10, 0, 0, 250000, tzinfo=timezone.utc)
    naive = TraceEvent(
        ts="2026-12-03T10:00:00", session_id="s", step=0, event="run_start", payload={}
    )
    assert event_time(naive).tzinfo is timezone.utc
    with pytest.raises(ValueError, match="Invalid isoformat string"):
        event_time(TraceEvent(ts="soon", session_id="s", step=0, event="run_start", payload={}))


USER_CODE = """
from __future__ import annotations

from datetime import datetime

import outrider
from outrider.trace import Trace, event_time
from outrider.types import OnEvent, TraceEvent


def on_event(event: TraceEvent) -> None:
    when: datetime = event_time(event)
    print(event["ts"].removesuffix("Z"), when.year, event["event"], event["payload"])


def replay(launcher: outrider.SubagentLauncher, trace: Trace) -> None:
    launcher.launch(outrider.SubagentRequest(task="t"), on_event=on_event)
    for event in trace.events:
        on_event(event)
    for step in trace.steps:
        for e in step.events:
            on_event(e)
    handler: OnEvent = on_event
    launcher.launch(outrider.SubagentRequest(task="t"), on_event=handler)
    loaded: outrider.trace.TraceEvent = trace.events[0]
    live: TraceEvent = loaded
    reveal_type(live["ts"])
    reveal_type(trace.events[0]["event"])
"""


def test_mypy_strict_accepts_loaded_events_where_on_event_events_go(
    tmp_path: pathlib.Path,
) -> None:
    """User code typed for on_event's events takes a loaded trace's events, under --strict."""
    import subprocess
    import sys

    pytest.importorskip("mypy")
    (tmp_path / "user_code.py").write_text(USER_CODE)
    # outrider is read (its errors are not this test's); the SDKs it can adapt to are not
    # followed, which keeps this to a second.
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nstrict = True\nfollow_imports = skip\n\n"
        "[mypy-outrider,outrider.*]\nfollow_imports = silent\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "user_code.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout + done.stderr
    notes = [line for line in out.splitlines() if "note: Revealed type" in line]
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors == [], out
    assert len(notes) == 2, out
    assert notes[0].endswith('"str"') or notes[0].endswith('"builtins.str"'), out
    assert "Literal['run_start'" in notes[1]

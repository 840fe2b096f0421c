"""Observability: logging records, on_event, stream(), progress bars, token split, trace pruning."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import sys
import time
from typing import Any

import pytest

import outrider
from outrider import SubagentLauncher, SubagentRequest
from outrider.testing import ScriptedLLM, call, final, with_usage

FINAL = final(
    status="completed",
    summary="Auth is in src/auth.py",
    findings=["login()"],
    evidence=["src/auth.py:1"],
)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return session_token(user)\n")
    return root


def request(task: str = "Where is login?") -> SubagentRequest:
    return SubagentRequest(profile_name="explore", task=task)


def script() -> ScriptedLLM:
    """A denied Edit and a Read in one turn, then the answer in a code fence (repaired)."""
    return ScriptedLLM(
        [
            [call("Edit", path="src/auth.py"), call("Read", path="src/auth.py")],
            f"```json\n{FINAL}\n```",
        ]
    )


# --- logging ------------------------------------------------------------------------------------


def test_launch_logs_under_outrider_at_debug_info_and_warning(
    repo: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    launcher = SubagentLauncher(repo, script(), trace_dir=False)
    with caplog.at_level(logging.DEBUG, logger="outrider"):
        result = launcher.launch(request())
    sid = result.child_session_id
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert {name for name, _, _ in records} == {"outrider"}
    assert [(level, msg.split(" session_id=")[0]) for _, level, msg in records] == [
        ("INFO", "child started"),
        ("DEBUG", "step"),
        ("DEBUG", "model answered"),
        ("DEBUG", "tool call"),
        ("WARNING", "tool call denied"),
        ("DEBUG", "tool call"),
        ("DEBUG", "step"),
        ("DEBUG", "model answered"),
        ("WARNING", "the final answer was repaired to fit the contract"),
        ("INFO", "child finished"),
    ]
    messages = [msg for _, _, msg in records]
    assert messages[4] == (
        f'tool call denied session_id={sid} step=1 tool=Edit error_code="PERMISSION_DENIED"'
    )
    assert messages[5] == (
        f'tool call session_id={sid} step=1 tool=Read status="success" error_code=""'
    )
    assert messages[-1] == (
        f'child finished session_id={sid} status="completed" terminal_reason="completed" '
        f"tokens={result.token_usage} input_tokens={result.input_tokens} "
        f"output_tokens={result.output_tokens} elapsed_ms={result.elapsed_ms}"
    )


def test_at_warning_only_warnings_are_logged(
    repo: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    launcher = SubagentLauncher(repo, script(), trace_dir=False)
    with caplog.at_level(logging.WARNING, logger="outrider"):
        launcher.launch(request())
    assert [(r.levelname, r.getMessage().split(" session_id=")[0]) for r in caplog.records] == [
        ("WARNING", "tool call denied"),
        ("WARNING", "the final answer was repaired to fit the contract"),
    ]
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="outrider"):
        launcher.launch(request())
    assert caplog.records == []


def test_a_disabled_logger_is_never_called_from_the_core(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the level above every record, the core must not even enter Python for one.
    logger = logging.getLogger("outrider")
    calls: list[Any] = []
    monkeypatch.setattr(logger, "log", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(logger, "level", logging.CRITICAL)
    SubagentLauncher(repo, script(), trace_dir=False).launch(request())
    assert calls == []
    monkeypatch.setattr(logger, "level", logging.DEBUG)
    SubagentLauncher(repo, script(), trace_dir=False).launch(request())
    assert len(calls) == 10


# --- on_event -----------------------------------------------------------------------------------


def test_on_event_receives_each_trace_line_as_a_dict(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    events: list[dict[str, Any]] = []
    launcher = SubagentLauncher(repo, script(), trace_dir=tmp_path / "traces")
    result = launcher.launch(request(), on_event=events.append)
    assert result.trace_path is not None
    lines = [json.loads(line) for line in pathlib.Path(result.trace_path).read_text().splitlines()]
    assert events == lines
    assert [e["event"] for e in events][:2] == ["run_start", "user_input"]
    assert events[-1]["event"] == "session_summary"


def test_a_raising_on_event_is_logged_once_and_the_run_goes_on(
    repo: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    def broken(event: dict[str, Any]) -> None:
        seen.append(event["event"])
        raise RuntimeError("boom")

    launcher = SubagentLauncher(repo, script(), trace_dir=False)
    with caplog.at_level(logging.WARNING, logger="outrider"):
        result = launcher.launch(request(), on_event=broken)
    assert result.status == "completed"
    assert seen[0] == "run_start" and seen[-1] == "session_summary"
    raised = [r for r in caplog.records if "on_event" in r.getMessage()]
    assert len(raised) == 1
    assert raised[0].levelname == "WARNING"
    assert (
        raised[0]
        .getMessage()
        .startswith(f"on_event callback {broken!r} raised on event 'run_start'")
    )
    # The traceback is in the message, redacted; no exc_info a handler would print unredacted.
    assert raised[0].getMessage().endswith("\nRuntimeError: boom")
    assert "Traceback (most recent call last)" in raised[0].getMessage()
    assert raised[0].exc_info is None


def test_on_event_must_be_callable(repo: pathlib.Path) -> None:
    launcher = SubagentLauncher(repo, script(), trace_dir=False)
    with pytest.raises(
        outrider.ArgumentTypeError,
        match=r"^on_event: must be a callable taking one event dict, or None, got int",
    ):
        launcher.launch(request(), on_event=5)  # type: ignore[arg-type]


def test_launch_many_and_main_agent_deliver_events(repo: pathlib.Path) -> None:
    events: list[dict[str, Any]] = []
    launcher = SubagentLauncher(repo, lambda req: FINAL, trace_dir=False)
    results = launcher.launch_many([request("a"), request("b")], on_event=events.append)
    ids = {r.child_session_id for r in results}
    assert {e["session_id"] for e in events} == ids
    main_events: list[dict[str, Any]] = []
    main = ScriptedLLM(
        [
            [call("Task", description="Find auth", prompt="Find login.", subagent_type="explore")],
            "Done.",
        ]
    )
    agent = outrider.MainAgent(repo, main, lambda req: FINAL, trace_dir=False)
    out = agent.run("Where is login?", on_event=main_events.append)
    kinds = {(e["session_id"].split("-")[0], e["event"]) for e in main_events}
    assert ("main", "subagent_completed") in kinds
    assert ("child", "session_summary") in kinds
    assert out["input_tokens"] + out["output_tokens"] == out["token_usage"]


def test_launch_async_and_stream_deliver_events(repo: pathlib.Path) -> None:
    launcher = SubagentLauncher(repo, lambda req: FINAL, trace_dir=False)

    async def both() -> tuple[list[dict[str, Any]], Any, list[Any]]:
        events: list[dict[str, Any]] = []
        result = await launcher.launch_async(request(), on_event=events.append)
        return events, result, [item async for item in launcher.stream(request())]

    events, result, items = asyncio.run(both())
    assert events[0]["event"] == "run_start"
    assert events[-1]["session_id"] == result.child_session_id
    *streamed, last = items
    assert isinstance(last, outrider.SubagentLaunchResult)
    assert [e["event"] for e in streamed] == [e["event"] for e in events]
    assert {e["session_id"] for e in streamed} == {last.child_session_id}


def test_stream_works_under_asyncio_run(repo: pathlib.Path) -> None:
    def honest(req: dict[str, Any]) -> Any:
        """Reads the line FINAL cites first (min_tool_calls, observed evidence)."""
        if any(m["role"] == "tool" for m in req["messages"]):
            return FINAL
        return {"tool_calls": [{"name": "Read", "arguments": {"path": "src/auth.py"}}]}

    launcher = SubagentLauncher(repo, honest, trace_dir=False)

    async def collect() -> list[Any]:
        return [item async for item in launcher.stream(request())]

    items = asyncio.run(collect())
    assert items[0]["event"] == "run_start"
    assert items[-1].status == "completed"


# --- progress -----------------------------------------------------------------------------------


def test_progress_shows_a_tqdm_bar_ticking_once_per_child(
    repo: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tqdm")
    launcher = SubagentLauncher(repo, lambda req: FINAL, trace_dir=False)
    results = launcher.launch_many([request("a"), request("b"), request("c")], progress=True)
    assert len(results) == 3
    err = capsys.readouterr().err
    assert "3/3" in err and "outrider" in err


def test_progress_without_tqdm_names_the_argument(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    launcher = SubagentLauncher(repo, lambda req: FINAL, trace_dir=False)
    with pytest.raises(outrider.ConfigError) as info:
        launcher.launch_many([request()], progress=True)
    assert str(info.value) == (
        "progress: True needs the tqdm package, which is not installed; "
        "pip install 'tqdm>=4.60' (outrider's 'progress' extra; from an outrider checkout: "
        "pip install '.[progress]'), or pass progress=False"
    )


# --- tokens -------------------------------------------------------------------------------------


def test_input_and_output_tokens_are_reported_beside_the_total(repo: pathlib.Path) -> None:
    llm = ScriptedLLM(
        [with_usage([call("Read", path="src/auth.py")], 100, 7), with_usage(FINAL, 150, 40)]
    )
    launcher = SubagentLauncher(repo, llm, trace_dir=False)
    result = launcher.launch(request())
    assert (result.token_usage, result.input_tokens, result.output_tokens) == (297, 250, 47)
    d = result.to_dict()
    assert (d["token_usage"], d["input_tokens"], d["output_tokens"]) == (297, 250, 47)
    llm = ScriptedLLM(
        [with_usage([call("Read", path="src/auth.py")], 100, 7), with_usage(FINAL, 150, 40)]
    )
    envelope = outrider.TaskTool(SubagentLauncher(repo, llm, trace_dir=False)).run(
        {"description": "Explore auth", "prompt": "Find login.", "subagent_type": "explore"}
    )
    assert {k: v for k, v in envelope["stats"].items() if "token" in k} == {
        "token_usage": 297,
        "input_tokens": 250,
        "output_tokens": 47,
    }


# --- trace retention ----------------------------------------------------------------------------


def old_traces(directory: pathlib.Path, count: int) -> list[str]:
    """``count`` trace files, the i-th last written i hours ago; their names, newest first."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(count):
        name = f"trace-child-{i:032x}.jsonl"
        (directory / name).write_text("{}\n")
        stamp = time.time() - 3600 * i
        os.utime(directory / name, (stamp, stamp))
        names.append(name)
    return names


@pytest.mark.parametrize(
    ("retention", "kept"),
    [(2, 2), ("3", 3), ("90min", 2), ("4,150min", 3), (False, 5)],
)
def test_trace_retention_prunes_old_traces_when_the_launcher_is_built(
    repo: pathlib.Path, tmp_path: pathlib.Path, retention: Any, kept: int
) -> None:
    traces = tmp_path / "traces"
    names = old_traces(traces, 5)
    (traces / "notes.txt").write_text("mine")
    SubagentLauncher(repo, lambda req: FINAL, trace_dir=traces, trace_retention=retention)
    assert sorted(p.name for p in traces.iterdir()) == sorted([*names[:kept], "notes.txt"])


def test_trace_retention_never_deletes_a_running_childs_trace(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # A second launcher with retention 0 on the same directory, built while a child runs (as
    # another process could): the finished traces go, the running child's trace stays whole.
    traces = tmp_path / "traces"
    old = old_traces(traces, 3)
    pruned: list[list[str]] = []

    def model(request: dict[str, Any]) -> Any:
        if any(m.get("role") == "tool" for m in request["messages"]):
            return FINAL
        # While this child runs (before its Read of what it cites): prune the directory.
        SubagentLauncher(repo, lambda req: FINAL, trace_dir=traces, trace_retention=0)
        pruned.append(sorted(p.name for p in traces.iterdir()))
        return {"tool_calls": [call("Read", path="src/auth.py")]}

    result = SubagentLauncher(repo, model, trace_dir=traces, trace_retention=False).launch(
        outrider.SubagentRequest(task="t")
    )
    assert result.trace_path is not None and result.trace_error is None
    running = pathlib.Path(result.trace_path)
    assert pruned == [[running.name]] and not set(old) & set(pruned[0])
    events = [json.loads(line)["event"] for line in running.read_text().splitlines()]
    assert events[0] == "run_start" and events[-1] == "session_summary"


def test_trace_retention_from_the_environment(
    repo: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = tmp_path / "traces"
    names = old_traces(traces, 4)
    monkeypatch.setenv("OUTRIDER_TRACE_KEEP", "1")
    SubagentLauncher(repo, lambda req: FINAL, trace_dir=traces)
    assert [p.name for p in traces.iterdir()] == names[:1]
    monkeypatch.setenv("OUTRIDER_TRACE_KEEP", "many")
    with pytest.raises(outrider.ConfigError, match=r'^OUTRIDER_TRACE_KEEP: trace retention "many"'):
        SubagentLauncher(repo, lambda req: FINAL, trace_dir=traces)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (
            -1,
            outrider.ConfigError,
            'trace_retention: trace retention "-1" has a negative part "-1"',
        ),
        ("soon", outrider.ConfigError, 'trace_retention: trace retention "soon" has a part "soon"'),
        (
            True,
            outrider.ArgumentTypeError,
            'trace_retention: must be an int, a str such as "1000,30d", False or None, got bool',
        ),
        (
            1.5,
            outrider.ArgumentTypeError,
            'trace_retention: must be an int, a str such as "1000,30d", False or None, got float',
        ),
    ],
)
def test_bad_trace_retention_says_what_is_expected(
    repo: pathlib.Path, value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        SubagentLauncher(repo, lambda req: FINAL, trace_dir=False, trace_retention=value)
    assert str(info.value).startswith(message), str(info.value)

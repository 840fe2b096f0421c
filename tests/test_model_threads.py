"""Sync model callables run on outrider's model threads: all at once when many children call
together, and the interpreter exits cleanly while those threads wait for work."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

import outrider
from outrider import _core

ANSWER = json.dumps(
    {
        "status": "completed",
        "summary": "s",
        "findings": [],
        "evidence": ["a.py:1"],
        "unresolved_questions": [],
    }
)
READ = {"tool_calls": [{"name": "Read", "arguments": {"path": "a.py"}}]}


def honest(request: dict[str, Any]) -> Any:
    """Read a.py first (min_tool_calls), then ANSWER, which cites the line the Read showed."""
    return ANSWER if any(m["role"] == "tool" for m in request["messages"]) else READ


def test_children_calling_at_once_run_on_as_many_threads(tmp_path: pathlib.Path) -> None:
    # Each call waits for all six to be in flight: calls queued behind a busy thread would
    # break the barrier (a burst of jobs once woke a single thread).
    (tmp_path / "a.py").write_text("x = 1\n")
    barrier = threading.Barrier(6, timeout=10)

    def model(request: dict[str, Any]) -> Any:
        barrier.wait()  # both of each child's calls: all six children are in flight each time
        return honest(request)

    launcher = outrider.SubagentLauncher(tmp_path, model, trace_dir=False)
    requests = [outrider.SubagentRequest(task=f"question {i}") for i in range(6)]
    results = launcher.launch_many(requests)
    assert [(r.status, r.failure_reason) for r in results] == [("completed", None)] * 6


def test_the_inbox_refuses_a_timeout_that_is_not_a_duration() -> None:
    inbox = _core._ModelInbox()
    for bad, shown in ((-1.0, "-1"), (float("nan"), "NaN"), (float("inf"), "inf")):
        message = f"timeout: must be a finite number of seconds >= 0, got {shown}$"
        with pytest.raises(ValueError, match=message):
            inbox.get(bad)
    inbox.put(print)
    assert inbox.get(0.0) is print
    assert inbox.get(0.01) is None


EXIT_WHILE_WAITING = textwrap.dedent(
    """
    import sys, outrider
    ANSWER = sys.argv[2]
    READ = {"tool_calls": [{"name": "Read", "arguments": {"path": "a.py"}}]}
    def honest(request):
        return ANSWER if any(m["role"] == "tool" for m in request["messages"]) else READ
    launcher = outrider.SubagentLauncher(sys.argv[1], honest, trace_dir=False)
    print(launcher.launch(outrider.SubagentRequest(task="where is x")).status)
    # The model thread is still spinning, or asleep, in the inbox as the interpreter exits.
    """
)


def test_exit_while_model_threads_wait_for_work_is_clean(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    script = tmp_path / "exit_waiting.py"
    script.write_text(EXIT_WHILE_WAITING)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), ANSWER],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outcomes = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    assert outcomes == [(0, "completed\n", "")] * 8

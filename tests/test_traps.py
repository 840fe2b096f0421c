"""Small traps a new user hit (issue 10, point 9): the Python side, and the core's messages."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

import outrider
from outrider.testing import ScriptedLLM


def test_a_closed_pipe_ends_the_cli_quietly(tmp_path: pathlib.Path) -> None:
    # `outrider trace FILE | head -1`: far more output than a pipe buffer holds, and the reader
    # leaves after one line.
    trace = tmp_path / "trace.jsonl"
    event = {"ts": "2026-12-03T10:00:00Z", "session_id": "s", "step": 1, "event": "tool_call"}
    lines = (
        json.dumps({**event, "payload": {"tool": "Grep", "args": {"pattern": f"p{i}"}}})
        for i in range(5_000)
    )
    trace.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "outrider", "trace", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"session s\n"
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert (proc.wait(timeout=30), stderr) == (0, "")


def test_an_unknown_profile_lists_the_registered_ones(tmp_path: pathlib.Path) -> None:
    launcher = outrider.SubagentLauncher(tmp_path, ScriptedLLM([]), trace_dir=False)
    with pytest.raises(
        outrider.LaunchError,
        match=r"^unsupported runtime profile: explor \(registered profiles: 'explore', "
        r"'verification'\)$",
    ):
        launcher.launch(outrider.SubagentRequest(profile_name="explor", task="t"))


def test_a_lowercase_tool_name_suggests_the_real_one(tmp_path: pathlib.Path) -> None:
    envelope = outrider.run_tool(tmp_path, "grep", {"pattern": "x"})
    assert (envelope["status"], envelope["text"]) == (
        "error",
        "Tool 'grep' denied by permission core. Did you mean 'Grep'? Tool names are "
        "case-sensitive.",
    )


def test_a_missing_status_says_missing() -> None:
    with pytest.raises(outrider.ContractError) as caught:
        outrider.ExploreResult.from_json('{"summary": "s", "evidence": []}')
    # Today: "'' is not a valid SubagentStatus", which reads as if the model sent "".
    assert "missing" in str(caught.value) and "status" in str(caught.value)

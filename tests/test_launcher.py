"""SubagentLauncher, TaskTool, parallel children, verification, MainAgent, the scout and the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

import pytest
from loopback import answering, completion

import outrider
from outrider import EXPLORE_PROFILE, ArgumentTypeError, SubagentLauncher, SubagentRequest, TaskTool
from outrider.testing import ScriptedLLM, call, delay, final

FINAL = final(
    status="completed",
    summary="Auth is in src/auth.py",
    findings=["login()"],
    evidence=["src/auth.py:1"],
)
# The honest child's first turn: it Reads the line FINAL cites (evidence must be observed, and an
# answer before any successful tool call is refused).
READ = [call("Read", path="src/auth.py")]
TASK_ARGS = {
    "description": "Explore auth",
    "prompt": "Find the login code.",
    "subagent_type": "explore",
}


def covers(evidence: Sequence[str], path: str, line: int) -> bool:
    """Whether one `path:start[-end]` item of `evidence` holds `line` of `path`."""
    for item in evidence:
        file, _, span = item.rpartition(":")
        start, _, end = span.partition("-")
        if file == path and int(start) <= line <= int(end or start):
            return True
    return False


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return session_token(user)\n")
    (root / "src" / "db.py").write_text("def connect():\n    pass\n")
    return root


@pytest.fixture
def traces(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "traces"


# --- TaskTool -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "Parameter 'description' is required and must be non-empty."),
        (
            {"description": 5, "prompt": "p", "subagent_type": "explore"},
            "Parameter 'description' is required and must be non-empty.",
        ),
        (
            {"description": "  ", "prompt": "p", "subagent_type": "explore"},
            "Parameter 'description' is required and must be non-empty.",
        ),
        (
            {"description": "d", "subagent_type": "explore"},
            "Parameter 'prompt' is required and must be non-empty.",
        ),
        (
            {"description": "d", "prompt": "\n", "subagent_type": "explore"},
            "Parameter 'prompt' is required and must be non-empty.",
        ),
        ({"description": "d", "prompt": "p"}, "Parameter 'subagent_type' must be 'explore'."),
        (
            {"description": "d", "prompt": "p", "subagent_type": "general", "model": "bad"},
            "Parameter 'subagent_type' must be 'explore'.",
        ),
        (
            {"description": "d", "prompt": "p", "subagent_type": "plan"},
            "Parameter 'subagent_type' must be 'explore'.",
        ),
        (
            {"description": "d", "prompt": "p", "subagent_type": "explore", "model": "heavy"},
            "Parameter 'model' must be 'main' or 'light'.",
        ),
        (
            {"description": "d", "prompt": "p", "subagent_type": "explore", "model": 5},
            "Parameter 'model' must be 'main' or 'light'.",
        ),
    ],
)
def test_task_validation_messages(
    repo: pathlib.Path, traces: pathlib.Path, args: dict[str, Any], message: str
) -> None:
    llm = ScriptedLLM([])
    tool = TaskTool(SubagentLauncher(repo, llm, trace_dir=traces), reference_format=True)
    assert tool.run(args) == {
        "status": "error",
        "data": {},
        "text": message,
        "stats": {"time_ms": 0},
        "context": {"cwd": ".", "params_input": args},
        "error": {"code": "INVALID_PARAM", "message": message},
    }
    assert llm.calls == 0, "no child is launched for invalid arguments"


def test_task_success_envelope_key_by_key(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM([[call("Read", path="src/auth.py")], FINAL])
    light = ScriptedLLM([])
    tool = TaskTool(SubagentLauncher(repo, llm, trace_dir=traces), reference_format=True)
    args = dict(TASK_ARGS, subagent_type=" EXPLORE ", model="MAIN")
    env = tool.run(args)
    assert list(env) == ["status", "data", "text", "stats", "context"]
    assert list(env["data"]) == ["status", "profile", "child_session_id", "child_run_id", "result"]
    assert env["status"] == "success"
    assert env["data"]["status"] == "completed" and env["data"]["profile"] == "explore"
    assert env["data"]["child_run_id"] == "run-1" and env["data"]["child_session_id"].startswith(
        "child-"
    )
    assert env["data"]["result"] == {
        "status": "completed",
        "summary": "Auth is in src/auth.py",
        "findings": ["login()"],
        "evidence": ["src/auth.py:1-2"],  # line 1, in the index's place 1-2
        "unresolved_questions": [],
        "tool_usage": {"Read": 1},
        "terminal_reason": "completed",
        "evidence_sources": ["both"],
    }
    assert env["text"] == "Auth is in src/auth.py"
    assert set(env["stats"]) == {
        "time_ms",
        "tool_calls",
        "token_usage",
        "input_tokens",
        "output_tokens",
        "model_calls",
        "model",
    }
    assert (
        env["stats"]["time_ms"] >= 1
        and env["stats"]["tool_calls"] == 1
        and env["stats"]["model"] == "main"
    )
    assert env["context"] == {"cwd": ".", "params_input": args}
    # The built-in explore profile gives the child the index's places as leads, without code.
    assert llm.requests[0]["messages"][1]["content"] == (
        "Explore auth\n\nFind the login code.\n\nStructured context:\n{}\n\n"
        "Leads (an offline search of the code index ranked these places, best first; you have not "
        "seen their lines, and they may not answer the task):\n"
        "1. src/auth.py:1-2 (function `login`)\n\n"
        "Read a lead before you rely on it: your first reply is a tool call, for example:\n"
        '{"name":"Read","arguments":{"path":"src/auth.py","start_line":1,"limit":40}}\n'
        "Read around what you find (the rest of a function, the definition of a name it uses) and "
        "Grep for other places when the task asks where something is used. Then reply with the "
        "final JSON object citing only lines you read."
    )
    assert light.calls == 0
    assert "history" not in env["data"] and "session_memory" not in env["data"]
    text = tool.run_json(dict(TASK_ARGS))
    assert json.loads(text)["status"] == "error"  # the script is used up: the child fails
    assert text.startswith('{\n  "status": "error",\n  "data": {}')


def test_task_failure_envelope(repo: pathlib.Path, traces: pathlib.Path) -> None:
    # With the repo-map hint (explore's default) the same child returns the index's leads as a
    # partial answer, each marked "index"; without it, nothing is left and the child fails.
    hinted = TaskTool(
        SubagentLauncher(repo, ScriptedLLM(["not json", "still not json"]), trace_dir=traces),
        reference_format=True,
    ).run(TASK_ARGS)
    assert (hinted["status"], hinted["data"]["status"]) == ("success", "partial")
    leads = hinted["data"]["result"]
    assert isinstance(leads, dict) and leads["evidence_sources"] == ["index"]
    no_hint = outrider.EXPLORE_PROFILE.replace(repo_map_hint=False)
    tool = TaskTool(
        SubagentLauncher(
            repo,
            ScriptedLLM(["not json", "still not json"]),
            trace_dir=traces,
            profiles=[no_hint],
        ),
        reference_format=True,
    )
    env = tool.run(TASK_ARGS)
    error = env["error"]
    assert env == {
        "status": "error",
        "data": {},
        "text": env["text"],
        "stats": {"time_ms": env["stats"]["time_ms"]},
        "context": {"cwd": ".", "params_input": TASK_ARGS},
        # What the child did before it failed stays visible to the parent.
        "error": {
            "code": "INTERNAL_ERROR",
            "message": env["text"],
            "child_session_id": error["child_session_id"],
            "terminal_reason": "runtime_error",
            "failure_reason": "completion_gate_blocked",
            "tool_usage": {},
            "token_usage": error["token_usage"],
            "input_tokens": error["input_tokens"],
            "output_tokens": error["output_tokens"],
            "model_calls": error["model_calls"],
            "trace_path": error["trace_path"],
        },
    }
    assert env["stats"]["time_ms"] >= 1 and error["token_usage"] > 0
    assert pathlib.Path(str(error["trace_path"])).parent == traces
    assert env["text"].startswith(
        "Explore subagent failed: child terminal reason: completion_gate_blocked"
    )


def test_task_partial_result_is_success(repo: pathlib.Path, traces: pathlib.Path) -> None:
    partial = final(status="partial", summary="Only found part", evidence=[])
    launcher = SubagentLauncher(repo, ScriptedLLM([READ, partial]), trace_dir=traces)
    env = TaskTool(launcher).run(TASK_ARGS)
    assert (env["status"], env["data"]["status"]) == ("success", "partial")


def test_task_schemas_and_description(repo: pathlib.Path, traces: pathlib.Path) -> None:
    tool = TaskTool(SubagentLauncher(repo, ScriptedLLM([]), trace_dir=traces))
    assert tool.name == "Task"
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "description": {
                "type": "string",
                "description": "Short summary of the delegated search task",
            },
            "prompt": {
                "type": "string",
                "description": "Self-contained read-only exploration instructions",
            },
            "subagent_type": {
                "type": "string",
                "enum": ["explore"],
                "description": "Formal profile; one of: explore",
            },
            "model": {
                "type": "string",
                "enum": ["main", "light"],
                "default": "light",
                "description": "Optional model route: main or light",
            },
        },
        "required": ["description", "prompt", "subagent_type"],
        "additionalProperties": False,
    }
    assert list(tool.parameters["properties"]) == [
        "description",
        "prompt",
        "subagent_type",
        "model",
    ]
    assert tool.openai_schema() == {
        "type": "function",
        "function": {
            "name": "Task",
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
    assert tool.anthropic_schema() == {
        "name": "Task",
        "description": tool.description,
        "input_schema": tool.parameters,
    }
    for phrase in (
        "When NOT to use it",
        "Glob, Grep and Read",
        "cannot edit files",
        "fresh context",
    ):
        assert phrase in tool.description


def test_task_with_custom_profiles_and_a_factory(repo: pathlib.Path, traces: pathlib.Path) -> None:
    deep = EXPLORE_PROFILE.replace(name="deep", max_steps=3)
    built: list[int] = []

    def factory() -> SubagentLauncher:
        built.append(1)
        return SubagentLauncher(
            repo, ScriptedLLM([READ, FINAL, READ, FINAL]), trace_dir=traces, profiles=[deep]
        )

    tool = TaskTool(factory, subagent_types=["explore", "Deep"])
    assert built == [] and tool.subagent_types == ["explore", "deep"]
    assert tool.parameters["properties"]["subagent_type"]["enum"] == ["explore", "deep"]
    bad = tool.run(dict(TASK_ARGS, subagent_type="plan"))
    assert bad["error"]["message"] == "Parameter 'subagent_type' must be one of 'explore', 'deep'."
    assert tool.run(dict(TASK_ARGS, subagent_type="deep"))["data"]["profile"] == "deep"
    assert tool.run(TASK_ARGS)["status"] == "success"
    assert built == [1]
    with pytest.raises(ValueError, match="not registered in the launcher"):
        TaskTool(SubagentLauncher(repo, ScriptedLLM([]), trace_dir=traces), subagent_types=["deep"])
    with pytest.raises(TypeError, match="TaskTool launcher: must be an outrider.SubagentLauncher"):
        TaskTool(42)  # type: ignore[arg-type]
    broken = TaskTool(lambda: 1 / 0)  # type: ignore[arg-type, return-value]
    env = broken.run(TASK_ARGS)
    assert env["error"] == {
        "code": "INTERNAL_ERROR",
        "message": "Task could not start: the launcher factory raised ZeroDivisionError: division by zero",
    }


def test_task_run_async(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM([READ, FINAL], is_async=True)
    tool = TaskTool(SubagentLauncher(repo, llm, trace_dir=traces))

    async def main() -> outrider.types.TaskEnvelope:
        return await tool.run_async(TASK_ARGS)

    assert asyncio.run(main())["status"] == "success"


# --- launcher -----------------------------------------------------------------------------------


def test_model_routing(
    repo: pathlib.Path, traces: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, light = ScriptedLLM([READ, FINAL, READ, FINAL]), ScriptedLLM([READ, FINAL])
    launcher = SubagentLauncher(repo, main, light, trace_dir=traces)
    assert (
        launcher.launch(SubagentRequest(task="t")).model_used == "light"
    )  # explore defaults to light
    assert launcher.launch(SubagentRequest(task="t", model_choice="main")).model_used == "main"
    assert (main.calls, light.calls) == (2, 2)
    no_light = SubagentLauncher(repo, main, trace_dir=traces)
    assert not no_light.has_light_model
    assert no_light.launch(SubagentRequest(task="t", model_choice="light")).model_used == "main"
    monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "small-model")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert SubagentLauncher(repo, main, trace_dir=traces).has_light_model
    with pytest.raises(ValueError, match="unsupported runtime profile: nope"):
        launcher.launch(SubagentRequest("t", "nope"))
    with pytest.raises(ValueError, match="unsupported subagent model choice: heavy"):
        launcher.launch(SubagentRequest(task="t", model_choice="heavy"))
    with pytest.raises(TypeError, match="main_llm: must be a callable"):
        SubagentLauncher(repo, 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_concurrency: must be at least 1, got 0"):
        SubagentLauncher(repo, main, max_concurrency=0)
    with pytest.raises(TypeError, match="SubagentRequest.task: missing"):
        SubagentRequest(profile_name="explore")  # type: ignore[call-arg]
    with pytest.raises(ArgumentTypeError, match="SubagentRequest.task: must be str, got int"):
        SubagentRequest(3)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="SubagentRequest: has no option 'tsk'"):
        SubagentRequest(tsk="t")  # type: ignore[call-arg]
    with pytest.raises(ArgumentTypeError, match="multiple values for argument 'task'"):
        SubagentRequest("t", task="u")  # type: ignore[misc]


def test_parent_events_and_failures_keep_their_metrics(
    repo: pathlib.Path, traces: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    parent = tmp_path / "parent.jsonl"
    llm = ScriptedLLM([[call("Glob"), call("Bash", command="ls")], "no json", "no json"])
    launcher = SubagentLauncher(repo, llm, trace_dir=traces, parent_trace=parent)
    r = launcher.launch(
        SubagentRequest(task="t", parent_session_id="s-parent", parent_run_id="run-7")
    )
    assert (r.status, r.terminal_reason, r.failure_reason, r.tool_usage) == (
        "failed",
        "runtime_error",
        "completion_gate_blocked",
        {"Bash": 1, "Glob": 1},
    )
    assert r.token_usage > 0 and r.error is not None
    events = [json.loads(line) for line in parent.read_text().splitlines()]
    assert [e["event"] for e in events] == [
        "subagent_requested",
        "subagent_started",
        "subagent_failed",
    ]
    assert all(e["step"] == 0 for e in events)
    common = {
        "parent_session_id": "s-parent",
        "parent_run_id": "run-7",
        "profile": "explore",
        "max_steps": 12,
        "context_token_budget": 16000,
        "total_token_budget": 32000,
        "child_session_id": r.child_session_id,
        "child_run_id": "run-1",
        "model": "main",
        "trace_path": r.trace_path,
    }
    assert events[0]["payload"] == common
    assert events[2]["payload"] == common | {
        "terminal_reason": "runtime_error",
        "failure_reason": "completion_gate_blocked",
        "tool_usage": {"Bash": 1, "Glob": 1},
        "token_usage": r.token_usage,
        "elapsed_ms": r.elapsed_ms,
        "error": r.error,
    }


def test_launch_many_keeps_order_and_isolates_failures(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    def model(request: dict[str, Any]) -> Any:
        task = request["messages"][1]["content"]
        if task.startswith("boom"):
            raise RuntimeError("child model down")
        time.sleep(0.05 if task.startswith("slow") else 0)
        if not any(m["role"] == "tool" for m in request["messages"]):
            return {"tool_calls": [{"name": "Read", "arguments": {"path": "src/auth.py"}}]}
        summary = task.split("\n")[0]
        return final(status="completed", summary=summary, evidence=["src/auth.py:1"])

    launcher = SubagentLauncher(repo, model, trace_dir=traces)
    tasks = ["slow one", "fast two", "boom three", "fast four"]
    results = launcher.launch_many([SubagentRequest(task=t) for t in tasks], max_concurrency=4)
    assert [r.status for r in results] == ["completed", "completed", "failed", "completed"]
    assert [r.result.summary for r in results if isinstance(r.result, outrider.ExploreResult)] == [
        "slow one",
        "fast two",
        "fast four",
    ]
    assert "child model down" in (results[2].error or "")
    with pytest.raises(ValueError, match=r"requests\[1\]: unsupported runtime profile: x"):
        launcher.launch_many([SubagentRequest(task="a"), SubagentRequest("b", "x")])


@pytest.mark.parametrize("is_async", [False, True])
def test_a_launch_many_calls_max_concurrency_governs(repo: pathlib.Path, is_async: bool) -> None:
    # Built without max_concurrency (default 8), the call's 16 must run 16 at once: counted as
    # model calls in flight together, not as time. Each call waits (up to 3 s) until `want`
    # calls are in flight, so on a loaded machine the children still meet; a limit below
    # `want` shows as that many at the peak.
    import threading

    cond = threading.Condition()
    now, peak, want = [0], [0], [16]

    def enter() -> None:
        with cond:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
            cond.notify_all()

    def leave() -> None:
        with cond:
            now[0] -= 1

    def reply(request: dict[str, Any]) -> Any:
        # An honest child: it Reads what it cites, then answers.
        seen = any(m.get("role") == "tool" for m in request["messages"])
        return FINAL if seen else {"tool_calls": READ}

    def model(request: dict[str, Any]) -> Any:
        enter()
        with cond:
            cond.wait_for(lambda: peak[0] >= want[0], timeout=3.0)
        leave()
        return reply(request)

    async def amodel(request: dict[str, Any]) -> Any:
        enter()
        deadline = time.monotonic() + 3.0
        while peak[0] < want[0] and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        leave()
        return reply(request)

    launcher = SubagentLauncher(repo, amodel if is_async else model, trace_dir=False)
    requests = [SubagentRequest(task=f"t{i}") for i in range(16)]
    results = launcher.launch_many(requests, max_concurrency=16)
    assert [r.status for r in results] == ["completed"] * 16
    assert peak[0] == 16
    peak[0], want[0] = 0, 8
    launcher.launch_many(requests[:12])
    assert peak[0] == 8


@pytest.mark.parametrize("is_async", [False, True])
def test_sixteen_children_wait_together(
    repo: pathlib.Path, traces: pathlib.Path, is_async: bool
) -> None:
    # One script per child (each Reads, then answers after 0.3 s), whatever order they call in.
    llm = ScriptedLLM({re.compile(r"^t\d+\n"): [READ, delay(0.3, FINAL)]}, is_async=is_async)
    launcher = SubagentLauncher(repo, llm, trace_dir=traces, max_concurrency=16)
    started = time.monotonic()
    results = launcher.launch_many([SubagentRequest(task=f"t{i}") for i in range(16)])
    assert [r.status for r in results] == ["completed"] * 16
    assert time.monotonic() - started < 1.0


def test_launch_async_and_sync_launch_inside_a_running_loop(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    async_llm = ScriptedLLM({re.compile(r"^t\d+\n"): [READ, delay(0.2, FINAL)]}, is_async=True)
    launcher = SubagentLauncher(repo, async_llm, trace_dir=traces, max_concurrency=8)

    async def gathered() -> list[outrider.SubagentLaunchResult]:
        return list(
            await asyncio.gather(
                *(launcher.launch_async(SubagentRequest(task=f"t{i}")) for i in range(8))
            )
        )

    started = time.monotonic()
    assert [r.status for r in asyncio.run(gathered())] == ["completed"] * 8
    assert time.monotonic() - started < 1.0

    for llm in (ScriptedLLM([READ, FINAL]), ScriptedLLM([READ, FINAL], is_async=True)):
        inner = SubagentLauncher(repo, llm, trace_dir=traces)

        async def in_loop(inner: SubagentLauncher = inner) -> str:
            return inner.launch(SubagentRequest(task="t")).status  # like a Jupyter cell

        assert asyncio.run(in_loop()) == "completed"


def test_verify(repo: pathlib.Path, traces: pathlib.Path) -> None:
    passing = SubagentLauncher(
        repo,
        ScriptedLLM(
            [
                READ,
                '{"verdict": "PASS", "reasons": ["login exists"], "evidence": ["src/auth.py:1"]}',
            ]
        ),
        trace_dir=traces,
    )
    v = passing.verify(
        "Added login()", requirements={"criteria": "login() exists"}, evidence=["src/auth.py:1"]
    )
    assert (v.verdict, v.reasons, v.feedback) == ("PASS", ["login exists"], None)
    assert v.launch is not None
    assert v.launch.profile_name == "verification" and v.launch.model_used == "main"
    failing = SubagentLauncher(
        repo,
        ScriptedLLM([READ, '{"verdict": "partial", "reasons": ["no tests"]}']),
        trace_dir=traces,
    )
    v = failing.verify("Added login()")
    assert v.to_dict() == {
        "verdict": "FAIL",
        "reasons": ["no tests"],
        "feedback": "Independent verification did not pass: no tests",
    }
    broken = SubagentLauncher(repo, ScriptedLLM(["?", "?"]), trace_dir=traces)
    v = broken.verify("Added login()")
    assert v.verdict == "UNVERIFIED" and v.reasons[0] == "verification_agent_error"
    llm = ScriptedLLM([READ, '{"verdict": "UNVERIFIED"}'])
    assert SubagentLauncher(repo, llm, trace_dir=traces).verify("x").reasons == [
        "verification_agent_unverified"
    ]
    ctx = json.loads(llm.requests[0]["messages"][1]["content"].split("Structured context:\n")[1])
    assert ctx == {"candidate": {"final_text": "x"}, "evidence": [], "requirements": {}}
    # The deterministic part of the gate decides alone, without launching a child.
    untouched = ScriptedLLM([])
    gate = SubagentLauncher(repo, untouched, trace_dir=traces)
    todo = gate.verify("done", requirements={"todos": [{"content": "tests", "status": "pending"}]})
    assert (todo.verdict, todo.reasons, todo.launch) == ("FAIL", ["incomplete_todo: tests"], None)
    skipped = gate.verify("done", requirements={"requires_verification": False})
    assert (skipped.verdict, skipped.launch) == ("PASS", None)
    assert untouched.calls == 0


def test_main_agent_runs_parent_and_child(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM(
        [
            [{"id": "t1", "name": "Task", "arguments": TASK_ARGS}],  # parent delegates
            [call("Grep", pattern="login")],  # child searches
            FINAL,  # child answers
            "Login is handled in src/auth.py:1.",  # parent answers
        ]
    )
    agent = outrider.MainAgent(repo, llm, trace_dir=traces)
    out = agent.run("How does login work?")
    llm.assert_complete()
    assert (out["terminal_reason"], out["final_text"], out["tool_usage"]) == (
        "completed",
        "Login is handled in src/auth.py:1.",
        {"Task": 1},
    )
    assert sorted(t["function"]["name"] for t in llm.requests[0]["tools"]) == [
        "Glob",
        "Grep",
        "Read",
        "Task",
    ]
    # The parent reads the compact envelope: the summary once (as text), no echo of its call.
    content = llm.requests[3]["messages"][-1]["content"]
    envelope = json.loads(content)
    assert envelope["status"] == "success" and envelope["text"] == "Auth is in src/auth.py"
    assert "summary" not in envelope["data"]["result"] and "context" not in envelope
    assert "\n" not in content
    events = [json.loads(line) for line in pathlib.Path(out["trace_path"]).read_text().splitlines()]
    done = [e for e in events if e["event"] == "subagent_completed"]
    assert len(done) == 1 and done[0]["payload"]["parent_session_id"] == out["session_id"]
    assert pathlib.Path(done[0]["payload"]["trace_path"]).exists()


def test_offline_scout_is_the_default_and_grounded(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    r = SubagentLauncher(repo, trace_dir=traces).launch(
        SubagentRequest(task="Where is `session_token` used by login?")
    )
    assert (r.status, r.model_used) == ("completed", "offline")
    assert isinstance(r.result, outrider.ExploreResult)
    assert r.result.summary.startswith("Offline scout (no LLM configured)")
    assert covers(r.result.evidence, "src/auth.py", 2), r.result.evidence
    assert all(c["grounded"] for c in outrider.check_evidence(repo, r.result.evidence))
    assert outrider.OfflineScout.terms("Find `load_config` in ConfigLoader") == [
        "load_config",
        "ConfigLoader",
    ]


# --- CLI and Ctrl-C -----------------------------------------------------------------------------


def run_cli(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
    return subprocess.run(
        [sys.executable, "-m", "outrider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_explore_and_trace(
    repo: pathlib.Path, traces: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = run_cli(
        "explore",
        "Where is session_token used?",
        "--root",
        str(repo),
        "--json",
        "--trace-dir",
        str(traces),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["status"], data["model_used"]) == ("completed", "offline")
    assert covers(data["result"]["evidence"], "src/auth.py", 2), data["result"]["evidence"]
    text = run_cli(
        "explore",
        "Where is session_token used?",
        "--root",
        str(repo),
        "--trace-dir",
        str(traces),
        cwd=tmp_path,
    )
    assert text.returncode == 0 and "Evidence:" in text.stdout and "offline scout" in text.stdout
    timeline = run_cli("trace", data["trace_path"], cwd=tmp_path)
    assert timeline.returncode == 0
    assert "tool_call" in timeline.stdout and "completion_gate_verdict  PASS" in timeline.stdout
    bad = run_cli("explore", "x", "--root", str(tmp_path / "missing"), cwd=tmp_path)
    assert bad.returncode == 2 and "is not a directory" in bad.stderr
    missing = run_cli("trace", str(tmp_path / "none.jsonl"), cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read trace" in missing.stderr


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["default", "ignored"])
def test_ctrl_c_interrupts_a_blocking_launch(
    repo: pathlib.Path, tmp_path: pathlib.Path, inherited: signal.Handlers
) -> None:
    # A shell running the suite in the background (or `nohup`) hands its children SIGINT ignored,
    # and Python then installs no KeyboardInterrupt handler: the child script puts it back.
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import signal, sys, time, outrider
            signal.signal(signal.SIGINT, signal.default_int_handler)
            def slow(request):
                time.sleep(30)
                return "x"
            launcher = outrider.SubagentLauncher({str(repo)!r}, slow, trace_dir=False)
            print("ready", flush=True)
            try:
                launcher.launch(outrider.SubagentRequest(task="t"))
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                sys.exit(42)
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, inherited),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=10)
    elapsed = time.monotonic() - sent
    assert (code, proc.stdout.read().strip()) == (42, "interrupted")
    assert elapsed < 1.0, f"KeyboardInterrupt took {elapsed:.2f}s"


# --- Answers whose evidence is not in the files ---------------------------------------------------

UNGROUNDED = final(
    status="completed",
    summary="Login is in src/login.py",
    findings=["login()"],
    evidence=["src/login.py:3", "src/auth.py:1"],
)


def test_ungrounded_evidence_is_unverified_through_launch_and_task(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    # The child Read src/auth.py, so only the missing file is ungrounded.
    launcher = SubagentLauncher(repo, ScriptedLLM([READ, UNGROUNDED, UNGROUNDED]), trace_dir=traces)
    r = launcher.launch(SubagentRequest(task="Where is login?"))
    assert (r.status, r.terminal_reason, r.failure_reason) == (
        "unverified",
        "completed_unverified",
        None,
    )
    assert [(c["evidence"], c["reason"]) for c in r.ungrounded_evidence] == [
        ("src/login.py:3", "not_found")
    ]
    assert r.to_dict()["ungrounded_evidence"] == r.ungrounded_evidence
    tool = TaskTool(
        SubagentLauncher(repo, ScriptedLLM([READ, *[UNGROUNDED] * 2]), trace_dir=traces)
    )
    envelope = tool.run(TASK_ARGS)
    assert envelope["status"] == "unverified"
    assert envelope["data"]["status"] == "unverified"
    assert [c["evidence"] for c in envelope["data"]["ungrounded_evidence"]] == ["src/login.py:3"]
    assert envelope["text"].startswith("UNVERIFIED: the child's evidence could not be found")


def test_cli_reports_unverified_and_survives_a_closed_pipe(
    repo: pathlib.Path, traces: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    with answering(200, completion(UNGROUNDED)) as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
        env |= {"LLM_MODEL_ID": "m", "LLM_BASE_URL": url, "LLM_API_KEY": "k"}
        command = [sys.executable, "-m", "outrider", "explore", "Where is login?"]
        command += ["--root", str(repo), "--trace-dir", str(traces), "--model", "main"]
        out = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 3, out.stderr
        assert out.stdout.startswith(
            "status: unverified  (run ended: completed_unverified; model: main"
        )
        assert "UNVERIFIED: this evidence could not be found" in out.stdout
        assert "src/login.py" in out.stdout
        # A reader that goes away before the answer is printed (`... | head -1` on a long answer).
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_cli_trace_refuses_foreign_files_without_a_traceback(tmp_path: pathlib.Path) -> None:
    ts = '"ts": "2026-12-03T08:00:00.000Z", "session_id": "s"'
    bad = {
        "binary.jsonl": b"\x7fELF\x02\x01\x01\x00\xff\xfe",
        "null-step.jsonl": f'{{{ts}, "step": null, "event": "x", "payload": {{}}}}'.encode(),
        "list-payload.jsonl": f'{{{ts}, "step": 1, "event": "model_output", "payload": [1]}}'.encode(),
    }
    for name, content in bad.items():
        path = tmp_path / name
        path.write_bytes(content)
        out = run_cli("trace", str(path), cwd=tmp_path)
        assert out.returncode == 2, (name, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and out.stderr.startswith("outrider: "), name
    # A file with some events: they are shown, and each other line is named (#36).
    naive = tmp_path / "naive.jsonl"
    naive.write_text(
        f'{{{ts}, "step": 0, "event": "a", "payload": {{}}}}\n'
        '{"ts": "2026-12-03T08:00:01", "step": 1, "event": "b", "payload": {}}'
    )
    out = run_cli("trace", str(naive), cwd=tmp_path)
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout.splitlines()[1].split()[:4] == ["0", "0.0", "ms", "a"], out.stdout
    assert out.stderr == (
        f"outrider: note: line 2 of {naive} is not a trace event and is not shown: "
        "missing session_id\n"
    ), out.stderr
    # An event whose payload holds a field of an unexpected type is still an event (as
    # Trace.load reads it): shown, not refused.
    odd = tmp_path / "odd-calls.jsonl"
    odd.write_text(
        f'{{{ts}, "step": 1, "event": "model_output", "payload": {{"tool_calls": [1]}}}}'
    )
    out = run_cli("trace", str(odd), cwd=tmp_path)
    assert (out.returncode, out.stderr) == (0, ""), out.stderr
    assert "model_output" in out.stdout and "calls 1" in out.stdout


def test_a_result_given_as_context_stands_for_its_dict() -> None:
    prior = outrider.ExploreResult("completed", "found it", evidence=["a.py:1"])
    req = outrider.SubagentRequest("go on", structured_context={"prior": prior})
    assert req.structured_context == {"prior": prior.to_dict()}
    assert "found it" in req.render()


def test_a_request_round_trips_through_its_dict_and_pickle() -> None:
    import pickle

    req = outrider.SubagentRequest("find x", "explore", {"k": [1, 2]}, "light", "s1", "r1")
    assert outrider.SubagentRequest.from_dict(req.to_dict()) == req
    assert pickle.loads(pickle.dumps(req)) == req
    with pytest.raises(ArgumentTypeError, match="has no option 'extra'"):
        outrider.SubagentRequest.from_dict(dict(req.to_dict(), extra=1))


def test_the_scout_class_given_for_the_scout_is_the_scout(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "login.py").write_text("def login():\n    return True\n")
    by_class = outrider.SubagentLauncher(root, outrider.OfflineScout, trace_dir=False)
    by_instance = outrider.SubagentLauncher(root, outrider.OfflineScout(), trace_dir=False)
    assert repr(by_class) == repr(by_instance)
    assert by_class.launch(outrider.SubagentRequest("where is login")).status != "failed"

"""The whole loop, driven from Python with ScriptedLLM and plain callables over the real tools."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading
import time
from typing import Any

import pytest

import outrider
from outrider import EXPLORE_PROFILE, SubagentLauncher, SubagentRequest
from outrider.testing import ScriptedLLM, call, delay, final, with_usage

FINAL = final(
    status="completed", summary="main is in src/app.py", findings=["f"], evidence=["src/app.py:1"]
)
# The honest child's first turn: it Reads the line FINAL cites (evidence must be observed, and an
# answer before any successful tool call is refused).
READ = [call("Read", path="src/app.py")]
READ_RESPONSE = {"tool_calls": [{"name": "Read", "arguments": {"path": "src/app.py"}}]}


def explored(request: dict[str, Any]) -> bool:
    """Whether a plain callable's child has a tool result in its history yet."""
    return any(m["role"] == "tool" for m in request["messages"])


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "big.txt").write_text("".join(f"line {i} {'z' * 60}\n" for i in range(3000)))
    return root


@pytest.fixture
def traces(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "traces"


def launch(
    repo: pathlib.Path,
    traces: pathlib.Path,
    llm: Any,
    task: str = "Find the entry point",
    **profile: Any,
) -> outrider.SubagentLaunchResult:
    profiles = [EXPLORE_PROFILE.replace(name="test", **profile)] if profile else None
    launcher = SubagentLauncher(repo, llm, trace_dir=traces, profiles=profiles)
    return launcher.launch(SubagentRequest(task, "test" if profile else "explore"))


def test_happy_path_with_scripted_llm(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM(
        [
            [
                call("Glob", pattern="**/*.py"),
                call("Grep", pattern="def main"),
                call("Read", path="src/app.py"),
            ],
            FINAL,
        ]
    )
    r = launch(repo, traces, llm)
    llm.assert_complete()
    d = r.to_dict()
    assert d["result"] == {
        "status": "completed",
        "summary": "main is in src/app.py",
        "findings": ["f"],
        "evidence": ["src/app.py:1"],
        "unresolved_questions": [],
        "tool_usage": {"Glob": 1, "Grep": 1, "Read": 1},
        "terminal_reason": "completed",
        "evidence_sources": ["model"],
    }
    assert (d["status"], d["terminal_reason"], d["model_used"], d["error"], d["model_calls"]) == (
        "completed",
        "completed",
        "main",
        None,
        2,
    )
    assert d["child_session_id"].startswith("child-") and len(d["child_session_id"]) == 38
    first = llm.requests[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == "Find the entry point\n\nStructured context:\n{}"
    # The first request asks for a tool call (the child owes min_tool_calls=1), the next one not.
    assert [r["tool_choice"] for r in llm.requests] == ["required", "auto"]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["Glob", "Grep", "Read"]
    second = llm.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert [m["tool_call_id"] for m in second[3:]] == [c["id"] for c in second[2]["tool_calls"]]
    assert json.loads(second[5]["content"])["data"]["content"].startswith("   1 | def main():")


def test_plain_callable_and_sdk_objects(repo: pathlib.Path, traces: pathlib.Path) -> None:
    class Completion:
        def __init__(self, payload: dict[str, Any]) -> None:
            self.payload = payload

        def model_dump(self) -> dict[str, Any]:
            return self.payload

    answers = iter(
        [
            Completion(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {
                                "role": "assistant",
                                "content": None,
                                "tool_calls": [
                                    {
                                        "id": "c1",
                                        "type": "function",
                                        "function": {
                                            "name": "Read",
                                            "arguments": '{"path": "src/app.py"}',
                                        },
                                    }
                                ],
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                }
            ),
            {
                "choices": [
                    {"message": {"role": "assistant", "content": FINAL}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
            },
        ]
    )

    def model(request: dict[str, Any]) -> Any:
        return next(answers)

    r = launch(repo, traces, model)
    assert (r.status, r.token_usage, r.usage_estimated, r.tool_usage) == (
        "completed",
        330,
        False,
        {"Read": 1},
    )


def test_gate_retry_then_block(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM([READ, "Sure! main is in app.py", FINAL])
    assert launch(repo, traces, llm).status == "completed"
    assert llm.requests[2]["messages"][-2:] == [
        {"role": "assistant", "content": "Sure! main is in app.py"},
        {
            "role": "user",
            "content": "Return only a valid ExploreResult JSON object: Expecting value: line 1 column 1 (char 0)",
        },
    ]
    llm = ScriptedLLM(["nope", '{"status": "done"}'])
    r = launch(repo, traces, llm)
    assert (r.status, r.terminal_reason, r.failure_reason, r.result) == (
        "failed",
        "runtime_error",
        "completion_gate_blocked",
        None,
    )
    assert r.error is not None and r.error.startswith(
        "child terminal reason: completion_gate_blocked"
    )
    llm = ScriptedLLM([READ, "a", "b", "c", FINAL])
    assert launch(repo, traces, llm, gate_retries=3).status == "completed"


def test_repaired_answers_are_recorded(repo: pathlib.Path, traces: pathlib.Path) -> None:
    r = launch(repo, traces, ScriptedLLM([READ, f"Here you go:\n```json\n{FINAL}\n```"]))
    assert (r.status, r.repair) == ("completed", "fence")


def test_ungrounded_evidence_is_sent_back(repo: pathlib.Path, traces: pathlib.Path) -> None:
    bad = FINAL.replace("src/app.py:1", "src/app.py:40")
    llm = ScriptedLLM([READ, bad, FINAL])
    assert launch(repo, traces, llm).terminal_reason == "completed"
    assert (
        "cites line 40, but 'src/app.py' has 2 lines" in llm.requests[2]["messages"][-1]["content"]
    )


def test_max_steps_fail_and_wrap_up(repo: pathlib.Path, traces: pathlib.Path) -> None:
    # Each turn Greps the line the wrap-up's FINAL cites, so its evidence was seen.
    turns = [[call("Grep", pattern="def main")] for _ in range(3)]
    r = launch(repo, traces, ScriptedLLM(turns), max_steps=3, on_budget_exhausted="fail")
    assert (r.status, r.failure_reason, r.tool_usage, r.model_calls) == (
        "failed",
        "max_steps",
        {"Grep": 3},
        3,
    )
    llm = ScriptedLLM([*turns, FINAL])
    r = launch(repo, traces, llm, max_steps=3)
    assert (r.status, r.terminal_reason) == ("partial", "max_steps")
    assert isinstance(r.result, outrider.ExploreResult) and r.result.status == "partial"
    assert (
        "tools" not in llm.requests[-1]
        and "Budget exhausted" in llm.requests[-1]["messages"][-1]["content"]
    )


def test_token_budget_with_and_without_reported_usage(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    llm = ScriptedLLM([with_usage(READ, 20_000), with_usage([call("Glob")], 5_000), FINAL, FINAL])
    r = launch(repo, traces, llm)
    # 25 000 reported tokens leave too little for another step plus the wrap-up's reserve: the
    # tool-less wrap-up call (estimated) salvages a partial answer within the budget.
    assert (r.status, r.terminal_reason, r.usage_estimated) == ("partial", "token_budget", True)
    assert 25_000 < r.token_usage <= 32_000 and llm.calls == 3
    # A provider reporting more than the budget is reported as it is; nothing more is spent.
    llm = ScriptedLLM(
        [with_usage([call("Glob")], 20_000), with_usage([call("Glob")], 12_001), FINAL]
    )
    r = launch(repo, traces, llm)
    assert (r.status, r.terminal_reason, r.failure_reason) == (
        "failed",
        "runtime_error",
        "token_budget",
    )
    assert (r.token_usage, llm.calls) == (32_001, 2)
    llm = ScriptedLLM([[call("Read", path="big.txt", limit=100)] for _ in range(12)])
    r = launch(repo, traces, llm, total_token_budget=6_000, on_budget_exhausted="fail")
    assert (r.terminal_reason, r.failure_reason, r.usage_estimated) == (
        "runtime_error",
        "token_budget",
        True,
    )
    assert llm.calls < 12


def test_context_budget_holds_for_every_request(repo: pathlib.Path, traces: pathlib.Path) -> None:
    budget = 5_000
    turns = [[call("Read", path="big.txt", start_line=1 + i * 300, limit=300)] for i in range(6)]
    # The first turn also Reads the line the wrap-up's FINAL cites.
    turns[0] = [*READ, *turns[0]]
    llm = ScriptedLLM([*turns, FINAL])
    r = launch(repo, traces, llm, context_token_budget=budget, max_steps=6)
    assert r.status == "partial"
    for request in llm.requests:
        chars = sum(len(m.get("content") or "") for m in request["messages"])
        chars += sum(
            len(c["function"]["arguments"])
            for m in request["messages"]
            for c in m.get("tool_calls", [])
        )
        chars += len(json.dumps(request.get("tools", [])))
        assert chars / 3 <= budget, f"a request of about {chars / 3:.0f} tokens"


def test_forbidden_tools_are_refused_and_counted(repo: pathlib.Path, traces: pathlib.Path) -> None:
    # A refused call is not a successful one: the child Reads before it answers.
    llm = ScriptedLLM(
        [
            [call("Bash", command="rm -rf /"), call("Edit", path="src/app.py"), call("Task")],
            READ,
            FINAL,
        ]
    )
    r = launch(repo, traces, llm)
    assert (r.status, r.tool_usage) == (
        "completed",
        {"Bash": 1, "Edit": 1, "Task": 1, "Read": 1},
    )
    fed = [
        json.loads(m["content"])["error"]["code"]
        for m in llm.requests[1]["messages"]
        if m["role"] == "tool"
    ]
    assert fed == ["PERMISSION_DENIED"] * 3
    assert (repo / "src" / "app.py").read_text() == "def main():\n    return 1\n"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (lambda req: 42, "model callable <lambda> returned int 42; a model callable must return"),
        (lambda req: {"choices": []}, "bad_response error: model response has no choices"),
        (
            lambda req: {"tool_calls": [{"arguments": "{}"}]},
            "tool_calls[0] needs a non-empty string name",
        ),
        (lambda req: 1 / 0, "model callable <lambda> raised ZeroDivisionError: division by zero"),
        (lambda req: {"content": object()}, "model callable <lambda> returned an unusable value"),
    ],
)
def test_raising_and_malformed_models_fail_with_a_named_error(
    repo: pathlib.Path, traces: pathlib.Path, model: Any, message: str
) -> None:
    r = launch(repo, traces, model)
    assert (r.status, r.terminal_reason, r.failure_reason) == (
        "failed",
        "runtime_error",
        "model_error",
    )
    assert r.error is not None and message in r.error, r.error


def test_async_models(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM([[call("Read", path="src/app.py")], delay(0.05, FINAL)], is_async=True)
    assert launch(repo, traces, llm).status == "completed"

    async def model(request: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"content": FINAL} if explored(request) else READ_RESPONSE

    assert launch(repo, traces, model).status == "completed"


def test_timeouts(repo: pathlib.Path, traces: pathlib.Path) -> None:
    started = time.monotonic()
    r = launch(repo, traces, ScriptedLLM([delay(3, FINAL)], is_async=True), timeout_seconds=0.3)
    assert (r.status, r.terminal_reason, r.failure_reason) == ("failed", "runtime_error", "timeout")
    assert time.monotonic() - started < 2


def test_a_hung_sync_callable_cannot_outlive_the_timeout(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    release = threading.Event()

    def model(request: dict[str, Any]) -> Any:
        if request["messages"][1]["content"].startswith("hang"):
            release.wait(10)
        return FINAL if explored(request) else READ_RESPONSE

    profile = [EXPLORE_PROFILE.replace(name="quick", timeout_seconds=0.3)]
    launcher = SubagentLauncher(repo, model, trace_dir=traces, profiles=profile)
    started = time.monotonic()
    r = launcher.launch(SubagentRequest("hang here", "quick"))
    assert (r.status, r.terminal_reason, r.failure_reason) == ("failed", "runtime_error", "timeout")
    assert time.monotonic() - started < 1.0
    # The same model still answers other children while the hung call is stuck.
    assert launcher.launch(SubagentRequest("fine", "quick")).status == "completed"
    release.set()


def test_cancellation_from_async_code(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM([delay(5, FINAL)], is_async=True)
    launcher = SubagentLauncher(repo, llm, trace_dir=traces)

    async def main() -> float:
        task = asyncio.ensure_future(launcher.launch_async(SubagentRequest(task="x")))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert asyncio.run(main()) < 1.0


def test_empty_answers_retry_once(repo: pathlib.Path, traces: pathlib.Path) -> None:
    llm = ScriptedLLM([READ, "", FINAL])
    assert launch(repo, traces, llm).status == "completed"
    assert llm.requests[2]["messages"][-1]["content"].startswith("Your last reply had no content")
    r = launch(repo, traces, ScriptedLLM(["", " "]))
    assert (r.status, r.terminal_reason, r.failure_reason) == (
        "failed",
        "runtime_error",
        "empty_response_failed",
    )


def test_trace_file_is_outside_the_root_and_redacted(
    repo: pathlib.Path, traces: pathlib.Path
) -> None:
    key = "sk-" + "A" * 30
    llm = ScriptedLLM(
        [
            [call("Grep", pattern=key)],
            final(status="partial", summary=f"Bearer abcdefghijklmnop {key}"),
        ]
    )
    r = launch(repo, traces, llm)
    assert r.trace_path is not None
    path = pathlib.Path(r.trace_path)
    assert path.parent == traces.resolve() and path.name == f"trace-{r.child_session_id}.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert key not in path.read_text() and "abcdefghijklmnop" not in path.read_text()
    assert {x["session_id"] for x in lines} == {r.child_session_id}
    assert set(lines[0]) == {"ts", "session_id", "step", "event", "payload"}
    assert lines[-1]["event"] == "session_summary"
    assert [x["event"] for x in lines if x["event"] in ("tool_call", "terminal")] == [
        "tool_call",
        "terminal",
    ]
    assert not any(p.name.endswith(".jsonl") for p in repo.rglob("*"))
    with pytest.raises(ValueError, match="is inside the explored root"):
        SubagentLauncher(repo, llm, trace_dir=repo / "traces")


def test_many_sync_callables_wait_at_once(repo: pathlib.Path, traces: pathlib.Path) -> None:
    inflight, peak = 0, 0
    lock = threading.Lock()

    def slow(request: dict[str, Any]) -> Any:
        nonlocal inflight, peak
        with lock:
            inflight += 1
            peak = max(peak, inflight)
        time.sleep(0.3)
        with lock:
            inflight -= 1
        return FINAL if explored(request) else READ_RESPONSE

    launcher = SubagentLauncher(repo, slow, trace_dir=traces, max_concurrency=16)
    started = time.monotonic()
    results = launcher.launch_many([SubagentRequest(task=f"t{i}") for i in range(16)])
    elapsed = time.monotonic() - started
    assert [r.status for r in results] == ["completed"] * 16
    assert peak == 16 and elapsed < 1.5

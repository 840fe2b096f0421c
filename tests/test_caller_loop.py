"""Async entry points run async model callables on the caller's own loop, with its contextvars."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import pathlib
import sys
import threading
from typing import Any

import pytest

import outrider
from outrider.testing import ScriptedLLM, call, final

ANSWER = final(status="completed", summary="login is defined in auth.py", evidence=["auth.py:1"])
# An honest child Reads the line ANSWER cites before it answers (an answer before any successful
# tool call is refused, and evidence counts only for lines the child saw).
READ = [call("Read", path="auth.py")]
READ_RESPONSE = {"tool_calls": [{"name": "Read", "arguments": {"path": "auth.py"}}]}


def answer_after_reading(request: dict[str, Any]) -> Any:
    """A plain model callable's honest child: Read first, then ANSWER."""
    explored = any(m["role"] == "tool" for m in request["messages"])
    return ANSWER if explored else READ_RESPONSE


request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "auth.py").write_text("def login(user):\n    return user\n")
    return root


def launcher(repo: pathlib.Path, llm: Any) -> outrider.SubagentLauncher:
    return outrider.SubagentLauncher(repo, llm, trace_dir=False)


def req(task: str = "where is login") -> outrider.SubagentRequest:
    return outrider.SubagentRequest(task=task)


def test_async_entry_points_are_coroutine_functions(repo: pathlib.Path) -> None:
    for fn in (
        outrider.SubagentLauncher.launch_async,
        outrider.SubagentLauncher.launch_many_async,
        outrider.MainAgent.run_async,
        outrider.TaskTool.run_async,
    ):
        assert inspect.iscoroutinefunction(fn), fn
    # asyncio.run takes the coroutine as it is (it used to say "no running event loop").
    r = asyncio.run(launcher(repo, ScriptedLLM([READ, ANSWER])).launch_async(req()))
    assert r.status == "completed"


def test_create_task_and_task_group_take_launch_async(repo: pathlib.Path) -> None:
    async def main() -> list[str]:
        # One script per child, whatever order the three children call in.
        ln = launcher(repo, ScriptedLLM({"where is login": [READ, ANSWER]}))
        task = asyncio.create_task(ln.launch_async(req()))
        if sys.version_info >= (3, 11):
            async with asyncio.TaskGroup() as group:
                t2 = group.create_task(ln.launch_async(req()))
                t3 = group.create_task(ln.launch_async(req()))
            return [(await task).status, t2.result().status, t3.result().status]
        return [(await task).status]

    assert set(asyncio.run(main())) == {"completed"}


def test_async_callable_runs_on_the_callers_loop_with_its_context(repo: pathlib.Path) -> None:
    seen: list[tuple[asyncio.AbstractEventLoop, str]] = []

    async def main() -> None:
        lock = asyncio.Lock()  # bound to this loop: it would hang or fail on any other
        caller_loop = asyncio.get_running_loop()

        async def llm(request: dict[str, Any]) -> Any:
            async with lock:
                seen.append((asyncio.get_running_loop(), request_id.get()))
            return answer_after_reading(request)

        request_id.set("r-42")
        ln = launcher(repo, llm)
        one = await ln.launch_async(req())
        many = await ln.launch_many_async([req(), req()])
        assert [one.status] + [r.status for r in many] == ["completed"] * 3
        assert seen == [(caller_loop, "r-42")] * 6  # three children, two calls each

    asyncio.run(main())


def test_sync_callable_gets_the_callers_context(repo: pathlib.Path) -> None:
    seen: list[str] = []

    def llm(request: dict[str, Any]) -> Any:
        seen.append(request_id.get())
        return answer_after_reading(request)

    token = request_id.set("sync-7")
    try:
        assert launcher(repo, llm).launch(req()).status == "completed"
    finally:
        request_id.reset(token)

    async def main() -> None:
        request_id.set("async-8")
        assert (await launcher(repo, llm).launch_async(req())).status == "completed"

    asyncio.run(main())
    assert seen == ["sync-7", "sync-7", "async-8", "async-8"]  # two calls per child


def test_sync_launch_inside_a_running_loop_runs_async_callables_elsewhere(
    repo: pathlib.Path,
) -> None:
    # Jupyter: the caller's loop is running but blocked by the sync call.
    async def llm(request: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return answer_after_reading(request)

    async def main() -> str:
        return launcher(repo, llm).launch(req()).status

    assert asyncio.run(main()) == "completed"


def test_cancelling_launch_async_cancels_the_models_coroutine(repo: pathlib.Path) -> None:
    cancelled = threading.Event()

    async def llm(request: dict[str, Any]) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ANSWER

    async def main() -> None:
        task = asyncio.create_task(launcher(repo, llm).launch_async(req()))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):
            if cancelled.is_set():
                return
            await asyncio.sleep(0.02)

    asyncio.run(main())
    assert cancelled.is_set()


def test_main_agent_run_async_with_its_children_on_one_loop(repo: pathlib.Path) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    def route(request: dict[str, Any]) -> Any:
        names = {t["function"]["name"] for t in request.get("tools") or []}
        if "Task" in names:
            if any(m["role"] == "tool" for m in request["messages"]):
                return "login lives in auth.py"
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {
                            "name": "Task",
                            "arguments": json.dumps(
                                {
                                    "description": "find login",
                                    "prompt": "where is login defined",
                                    "subagent_type": "explore",
                                }
                            ),
                        },
                    }
                ],
            }
        return ANSWER

    async def llm(request: dict[str, Any]) -> Any:
        loops.append(asyncio.get_running_loop())
        return route(request)

    async def main() -> outrider.MainRunResult:
        agent = outrider.MainAgent(repo, llm, trace_dir=False)
        out = await agent.run_async("where is login?")
        assert set(loops) == {asyncio.get_running_loop()} and len(loops) >= 3
        return out

    out = asyncio.run(main())
    assert out["final_text"] == "login lives in auth.py"
    assert out["tool_usage"].get("Task") == 1


def test_task_tool_run_async_returns_the_envelope(repo: pathlib.Path) -> None:
    tool = outrider.TaskTool(launcher(repo, ScriptedLLM([[call("Read", path="auth.py")], ANSWER])))
    args = {"description": "find login", "prompt": "where is login", "subagent_type": "explore"}
    envelope = asyncio.run(tool.run_async(args))
    assert envelope["status"] == "success", envelope


def test_one_async_openai_client_shared_by_a_main_agent_and_its_children(
    repo: pathlib.Path,
) -> None:
    openai = pytest.importorskip("openai")
    from loopback import scripted

    def completion(message: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    args = {
        "description": "find login",
        "prompt": "where is login defined",
        "subagent_type": "explore",
    }
    task_call = {
        "id": "t1",
        "type": "function",
        "function": {"name": "Task", "arguments": json.dumps(args)},
    }
    read_call = {
        "id": "r1",
        "type": "function",
        "function": {"name": "Read", "arguments": json.dumps({"path": "auth.py"})},
    }
    # In order: the main agent's Task call, the child's Read and its answer, the main agent's
    # answer, the user's own call.
    script = [
        completion({"role": "assistant", "content": None, "tool_calls": [task_call]}),
        completion({"role": "assistant", "content": None, "tool_calls": [read_call]}),
        completion({"role": "assistant", "content": ANSWER}),
        completion({"role": "assistant", "content": "login lives in auth.py:1"}),
        completion({"role": "assistant", "content": ANSWER}),
    ]
    with scripted(script) as server:
        base = f"{server.base}/v1"
        out = asyncio.run(run(openai, base, repo))
        seen = server.bodies
    assert out["final_text"] == "login lives in auth.py:1", out
    models = [b["model"] for b in seen]
    assert models == ["big-model", "small-model", "small-model", "big-model", "own"], models
    assert all(b.get("temperature") == 0 and b.get("user_tag") == "t" for b in seen[:4])
    assert [t["function"]["name"] for t in seen[1]["tools"]] == ["Glob", "Grep", "Read"]


async def run(openai: Any, base: str, repo: pathlib.Path) -> outrider.MainRunResult:
    """A main agent and its child on one AsyncOpenAI client, then the user's own call on it."""
    client = openai.AsyncOpenAI(base_url=base, api_key="test", max_retries=0)

    async def llm(request: dict[str, Any]) -> Any:
        return await client.chat.completions.create(**request)

    agent = outrider.MainAgent(
        repo,
        llm,
        trace_dir=False,
        model="big-model",
        light_model="small-model",
        model_settings={"temperature": 0, "extra_body": {"user_tag": "t"}},
    )
    out = await agent.run_async("where is login?")
    # The same client serves the user's own calls on this loop afterwards.
    own = await client.chat.completions.create(
        model="own", messages=[{"role": "user", "content": "hi"}]
    )
    assert own.choices[0].message.content == ANSWER
    await client.close()
    return out


def test_a_launcher_collected_mid_run_cancels_its_children(repo: pathlib.Path) -> None:
    import gc

    def looping(request: dict[str, Any]) -> Any:
        # Reads forever: only cancellation ends this child before its step budget.
        import time

        time.sleep(0.25)  # slow enough that no budget ends the child before the collection
        return ScriptedLLM._render([call("Read", path="auth.py")])

    async def main() -> outrider.SubagentLaunchResult:
        ln = launcher(repo, looping)
        future = ln._launch(req(), None, True)  # holds no launcher
        await asyncio.sleep(0.3)
        del ln
        gc.collect()
        result: outrider.SubagentLaunchResult = await asyncio.wait_for(future, 5)
        return result

    r = asyncio.run(main())
    assert (r.status, r.failure_reason, r.elapsed_ms < 3000) == ("failed", "cancelled", True), r

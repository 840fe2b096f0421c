"""One ``openai.AsyncOpenAI`` client through ``launch()`` and then ``launch_async()`` (a notebook's
plain cell, then an ``await`` cell), against a loopback server that keeps connections alive as
real providers do, so the client pools them on the loop they were opened on (#20.1)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading
import time
from typing import Any

import pytest
from loopback import Scripted, scripted

import outrider

openai = pytest.importorskip("openai")


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


READ = completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "r1",
                "type": "function",
                "function": {"name": "Read", "arguments": json.dumps({"path": "auth.py"})},
            }
        ],
    }
)
ANSWER = completion(
    {
        "role": "assistant",
        "content": json.dumps(
            {"status": "completed", "summary": "login is in auth.py", "evidence": ["auth.py:1"]}
        ),
    }
)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "auth.py").write_text("def login(user):\n    return user\n")
    return root


class Notebook:
    """A notebook kernel's loop: runs forever in one thread; ``cell`` runs a cell's code in that
    thread (a plain cell blocks the loop while it runs; an ``await`` cell is a coroutine)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def cell(self, code: Any) -> Any:
        async def run() -> Any:
            out = code()
            return await out if asyncio.iscoroutine(out) else out

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def client_launcher(
    server: Scripted, repo: pathlib.Path
) -> tuple[Any, outrider.SubagentLauncher, list[asyncio.AbstractEventLoop]]:
    client = openai.AsyncOpenAI(base_url=f"{server.base}/v1", api_key="k", max_retries=0)
    loops: list[asyncio.AbstractEventLoop] = []

    async def llm(request: dict[str, Any]) -> Any:
        loops.append(asyncio.get_running_loop())
        return await client.chat.completions.create(**request)

    launcher = outrider.SubagentLauncher(repo, llm, main_model="m", trace_dir=False)
    return client, launcher, loops


def request() -> outrider.SubagentRequest:
    return outrider.SubagentRequest("Where is login defined?")


def test_launch_then_launch_async_on_one_client_in_a_notebook(repo: pathlib.Path) -> None:
    nb = Notebook()
    try:
        with scripted([READ, ANSWER, READ, ANSWER], keep_alive=True) as server:
            _, launcher, loops = client_launcher(server, repo)
            first = nb.cell(lambda: launcher.launch(request()))
            second = nb.cell(lambda: launcher.launch_async(request()))
            connections = len(server.connections)
    finally:
        nb.close()
    assert [first.status, second.status] == ["completed", "completed"], (first, second)
    assert (first.error, second.error) == (None, None)
    # The client kept its connection: the four calls shared one, so a loop mix-up would show.
    assert connections == 1
    # Every call ran on one loop (outrider's own: the first launch was a blocking one).
    assert len(set(loops)) == 1 and loops[0] is not nb.loop


def test_launch_async_then_blocking_launch_in_the_same_thread_is_refused_at_once(
    repo: pathlib.Path,
) -> None:
    nb = Notebook()
    try:
        with scripted([READ, ANSWER, READ, ANSWER], keep_alive=True) as server:
            _, launcher, loops = client_launcher(server, repo)
            first = nb.cell(lambda: launcher.launch_async(request()))
            start = time.monotonic()
            with pytest.raises(outrider.LaunchError) as refused:
                nb.cell(lambda: launcher.launch(request()))
            elapsed = time.monotonic() - start
            # The refused launch sent nothing, and the client still works on the notebook's loop.
            sent = len(server.requests)
            again = nb.cell(lambda: launcher.launch_async(request()))
    finally:
        nb.close()
    assert first.status == "completed" and again.status == "completed", (first, again)
    assert sent == 2
    assert elapsed < 5
    message = str(refused.value)
    assert "await launcher.launch_async(request)" in message
    assert "asyncio.to_thread(launcher.launch, request)" in message
    assert set(loops) == {nb.loop}


def test_blocking_launch_from_a_worker_thread_runs_on_the_callers_loop(
    repo: pathlib.Path,
) -> None:
    async def main(launcher: outrider.SubagentLauncher) -> list[str]:
        first = await launcher.launch_async(request())
        second = await asyncio.to_thread(launcher.launch, request())
        return [first.status, second.status]

    with scripted([READ, ANSWER, READ, ANSWER], keep_alive=True) as server:
        _, launcher, loops = client_launcher(server, repo)
        statuses = asyncio.run(main(launcher))
        connections = len(server.connections)
    assert statuses == ["completed", "completed"]
    assert connections == 1
    assert len(set(loops)) == 1


def test_main_agent_run_then_run_async_on_one_client(repo: pathlib.Path) -> None:
    args = {"description": "find login", "prompt": "Where is login?", "subagent_type": "explore"}
    task_call = completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "Task", "arguments": json.dumps(args)},
                }
            ],
        }
    )
    final = completion({"role": "assistant", "content": "login is in auth.py:1"})
    nb = Notebook()
    try:
        with scripted([task_call, READ, ANSWER, final] * 2, keep_alive=True) as server:
            client = openai.AsyncOpenAI(base_url=f"{server.base}/v1", api_key="k", max_retries=0)

            async def llm(request: dict[str, Any]) -> Any:
                return await client.chat.completions.create(**request)

            agent = outrider.MainAgent(repo, llm, model="m", trace_dir=False)
            first = nb.cell(lambda: agent.run("Where is login?"))
            second = nb.cell(lambda: agent.run_async("Where is login?"))
    finally:
        nb.close()
    assert first["final_text"] == second["final_text"] == "login is in auth.py:1"

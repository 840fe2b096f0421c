"""ScriptedLLM: routing by task, steps computed from the request, launch_many, OpenAI impersonation."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import sys
from typing import Any

import pytest

import outrider
from outrider import SubagentLauncher, SubagentRequest, TaskTool
from outrider.testing import ScriptedLLM, call, delay, final
from outrider.types import TaskEnvelope


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return session_token(user)\n")
    (root / "src" / "db.py").write_text("def connect():\n    pass\n")
    return root


def answer(summary: str, evidence: str) -> str:
    return final(status="completed", summary=summary, evidence=[evidence])


# An honest child's turn: it Reads src/auth.py, the line the answers below cite (an answer before
# any successful tool call is refused, and evidence counts only for lines the child saw).
READ_AUTH = [call("Read", path="src/auth.py")]


def summaries(results: list[outrider.SubagentLaunchResult]) -> list[tuple[str, str | None]]:
    return [(r.status, r.explore.summary if r.result is not None else r.error) for r in results]


def test_routes_keep_each_launch_many_child_on_its_own_script(repo: pathlib.Path) -> None:
    # The delays make the children call in an order unrelated to their input order.
    llm = ScriptedLLM.by_task(
        {
            "Find login": [
                delay(0.2, READ_AUTH),
                answer("login is in auth.py", "src/auth.py:1"),
            ],
            re.compile(r"^Find (the )?database"): [
                [call("Read", path="src/db.py")],
                delay(0.1, [call("Glob", pattern="**/*.py")]),
                answer("connect is in db.py", "src/db.py:1"),
            ],
        }
    )
    launcher = SubagentLauncher(repo, llm, trace_dir=False)
    tasks = ["Find login", "Find the database", "Find database code", "Find login"]
    results = launcher.launch_many([SubagentRequest(task=t) for t in tasks], max_concurrency=4)
    assert summaries(results) == [
        ("completed", "login is in auth.py"),
        ("completed", "connect is in db.py"),
        ("completed", "connect is in db.py"),
        ("completed", "login is in auth.py"),
    ]
    assert [r.tool_usage for r in results] == [
        {"Read": 1},
        {"Read": 1, "Glob": 1},
        {"Read": 1, "Glob": 1},
        {"Read": 1},
    ]
    assert llm.calls == 10 and llm.remaining == 0
    llm.assert_complete()


def test_a_step_can_be_computed_from_the_request(repo: pathlib.Path) -> None:
    def echo_task(request: dict[str, Any]) -> str:
        task = request["messages"][1]["content"].split("\n\n")[0]
        return answer(f"asked: {task}", "src/auth.py:1")

    llm = ScriptedLLM(
        [
            lambda request: [call("Read", path=f"src/{len(request['messages'])}.py")],
            READ_AUTH,
            echo_task,
        ]
    )
    r = SubagentLauncher(repo, llm, trace_dir=False).launch(SubagentRequest(task="Who calls?"))
    assert (r.status, r.explore.summary) == ("completed", "asked: Who calls?")
    # The first step saw the system prompt and the task, so it read src/2.py (which is missing).
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "src/2.py" in tool_messages[0]["content"]


def test_an_unrouted_or_ambiguous_task_fails_the_child_by_name(repo: pathlib.Path) -> None:
    llm = ScriptedLLM({"login": [answer("x", "src/auth.py:1")], "Find": []})
    launcher = SubagentLauncher(repo, llm, trace_dir=False)
    lost, both = launcher.launch_many(
        [SubagentRequest(task="Where?"), SubagentRequest(task="Find login")]
    )
    assert lost.status == "failed"
    assert re.search(
        r"the task 'Where\?[^']*' matches no route \('login', 'Find'\)", str(lost.error)
    )
    assert both.status == "failed" and "matches several routes ('login', 'Find')" in str(both.error)
    with pytest.raises(TypeError, match="route keys must be a str .* got int: 3"):
        ScriptedLLM({3: []})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="route 'a': expected a list of steps, got str"):
        ScriptedLLM({"a": "final text"})


def test_a_route_past_its_script_and_unused_steps_are_reported() -> None:
    llm = ScriptedLLM({"t": ["done", "never"]})
    request = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}]}
    assert llm(request) == {"content": "done"}
    with pytest.raises(
        AssertionError, match=r"unused step\(s\) by route: \{\"'t'\": \['never'\]\}"
    ):
        llm.assert_complete()
    late = {"messages": [*request["messages"], *[{"role": "assistant", "content": "x"}] * 2]}
    with pytest.raises(AssertionError, match="route 't' has 2 step.* asks for step 3"):
        llm(late)


def test_a_compacted_history_still_finds_its_step() -> None:
    first, second = [call("Grep", pattern="a")], [call("Grep", pattern="b")]
    llm = ScriptedLLM({"t": [first, second, "third"]})
    head = [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}]
    llm({"messages": head})
    turn = {"role": "assistant", "content": "", "tool_calls": [{"id": second[0]["id"]}]}
    llm({"messages": [*head, {"role": "assistant", "tool_calls": [{"id": first[0]["id"]}]}]})
    # The first turn was folded into a summary: the latest turn alone says where the child is.
    summary = {"role": "user", "content": "[Compacted child history]\n[assistant] calls: Grep"}
    assert llm({"messages": [*head, summary, turn]}) == {"content": "third"}
    llm.assert_complete()


def test_async_routes(repo: pathlib.Path) -> None:
    llm = ScriptedLLM({"login": [READ_AUTH, answer("async login", "src/auth.py:1")]}, is_async=True)
    r = asyncio.run(_launch(SubagentLauncher(repo, llm, trace_dir=False), "Find login"))
    assert (r.status, r.explore.summary) == ("completed", "async login")


async def _launch(launcher: SubagentLauncher, task: str) -> outrider.SubagentLaunchResult:
    return await launcher.launch_async(SubagentRequest(task=task))


# --- impersonating the main model ----------------------------------------------------------------


def main_loop(
    client: Any, task: outrider.TaskTool, question: str
) -> tuple[str, list[TaskEnvelope]]:
    """A user's own main loop, written against the OpenAI SDK."""
    messages: list[Any] = [
        {"role": "system", "content": "You answer questions about a repository."},
        {"role": "user", "content": question},
    ]
    envelopes: list[TaskEnvelope] = []
    for _ in range(5):
        response = client.chat.completions.create(
            model="gpt-main", messages=messages, tools=[task.openai_schema()]
        )
        message = response.choices[0].message
        if not message.tool_calls:
            return str(message.content), envelopes
        messages.append(message.model_dump(exclude_none=True))
        for tool_call in message.tool_calls:
            envelope = task.run(tool_call.function.arguments)
            envelopes.append(envelope)
            messages.append(
                {"role": "tool", "tool_call_id": tool_call.id, "content": json.dumps(envelope)}
            )
    raise AssertionError("the main loop did not finish")


def test_one_script_drives_a_whole_openai_main_loop_and_its_child(repo: pathlib.Path) -> None:
    chat_types = pytest.importorskip("openai.types.chat")

    llm = ScriptedLLM.by_task(
        {
            "How does login work": [
                [
                    call(
                        "Task",
                        description="Find login",
                        prompt="Find where login is defined",
                        subagent_type="explore",
                    )
                ],
                "Login is defined in src/auth.py:1.",
            ],
            "Find where login is defined": [
                [call("Grep", pattern="def login")],
                answer("login() is in src/auth.py", "src/auth.py:1"),
            ],
        }
    )
    client = llm.as_openai_client()
    task = TaskTool(SubagentLauncher(repo, llm, trace_dir=False))
    text, envelopes = main_loop(client, task, "How does login work?")
    assert text == "Login is defined in src/auth.py:1."
    assert [(e["status"], e["text"]) for e in envelopes] == [
        ("success", "login() is in src/auth.py")
    ]
    llm.assert_complete()
    response = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Find where login is defined"}]
    )
    assert isinstance(response, chat_types.ChatCompletion)
    assert response.model_dump(exclude_none=True) == {
        "id": response.id,
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": response.choices[0].message.tool_calls[0].id,
                            "type": "function",
                            "function": {"name": "Grep", "arguments": '{"pattern": "def login"}'},
                        }
                    ],
                },
            }
        ],
    }
    with pytest.raises(NotImplementedError, match="does not stream"):
        client.chat.completions.create(model="m", messages=[], stream=True)


def test_the_async_client_and_the_client_without_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = ScriptedLLM({"q": ["async answer"], "r": [[call("Read", path="a.py")]]})
    request = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    response = asyncio.run(llm.as_async_openai_client().chat.completions.create(**request))
    assert (response.model, response.choices[0].message.content) == ("m", "async answer")
    monkeypatch.setitem(sys.modules, "openai.types.chat", None)
    plain = llm.as_openai_client().chat.completions.create(
        model=None, messages=[{"role": "user", "content": "r"}]
    )
    assert type(plain).__name__ == "_Record"
    assert (plain.model, plain.choices[0].finish_reason) == ("scripted", "tool_calls")
    assert plain.choices[0].message.tool_calls[0].function.arguments == '{"path": "a.py"}'
    assert plain.model_dump()["choices"][0]["message"]["content"] is None


# --- typed accessors -----------------------------------------------------------------------------


def test_explore_and_verification_accessors_narrow_or_say_why(repo: pathlib.Path) -> None:
    # Without the hint, a child whose answers never parse has nothing to return (with it, the
    # index's leads would stand as a partial answer).
    launcher = SubagentLauncher(
        repo,
        ScriptedLLM([READ_AUTH, answer("ok", "src/auth.py:1"), "not json", "still not"]),
        profiles=[outrider.EXPLORE_PROFILE.replace(repo_map_hint=False)],
    )
    done = launcher.launch(SubagentRequest(task="Find login"))
    assert done.explore == done.result and isinstance(done.explore, outrider.ExploreResult)
    with pytest.raises(
        outrider.ResultError,
        match=r"verification: the 'explore' child returned a ExploreResult, not a "
        r"VerificationResult; use \.explore",
    ):
        done.verification  # noqa: B018
    failed = launcher.launch(SubagentRequest(task="Find login"))
    assert (failed.status, failed.result) == ("failed", None)
    with pytest.raises(
        outrider.ResultError,
        match=r"explore: the 'explore' child has no result \(status 'failed', "
        r"completion_gate_blocked: .*",
    ):
        failed.explore  # noqa: B018
    assert isinstance(outrider.ResultError("x"), ValueError)
    # Not an AttributeError: getattr(result, "explore", None) does not hide a failed child.
    with pytest.raises(outrider.ResultError):
        getattr(failed, "explore", None)

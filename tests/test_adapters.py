"""outrider.adapters with the real SDK packages against loopback servers (no network)."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from loopback import Scripted, scripted

import outrider
from outrider import adapters
from outrider.adapters import to_anthropic_request
from outrider.testing import final

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches it on import

FINAL = final(
    status="completed",
    summary="main is defined in app.py",
    findings=["main() returns 1"],
    evidence=["app.py:1"],
)
# No word of it is in the tree, so the offline scout hints at no place (the hint is tested elsewhere).
TASK = "Where is the entry point?"


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "util.py").write_text("def helper():\n    return main()\n")
    return root


# --- scripted provider answers -------------------------------------------------------------------


def openai_answer(
    calls: list[tuple[str, str, dict[str, Any]]], text: str | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for cid, n, a in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def anthropic_answer(
    calls: list[tuple[str, str, dict[str, Any]]], text: str | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": cid, "name": n, "input": a} for cid, n, a in calls]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 90, "output_tokens": 10, "cache_read_input_tokens": 10},
    }


# One child: two parallel calls, one Read, then the answer.
TURNS: list[tuple[list[tuple[str, str, dict[str, Any]]], str | None]] = [
    (
        [
            ("call_glob", "Glob", {"pattern": "**/*.py"}),
            ("call_grep", "Grep", {"pattern": "def main"}),
        ],
        "Searching.",
    ),
    ([("call_read", "Read", {"path": "app.py"})], None),
    ([], FINAL),
]


def check_result(result: Any) -> None:
    assert (result.status, result.terminal_reason, result.tool_usage) == (
        "completed",
        "completed",
        {"Glob": 1, "Grep": 1, "Read": 1},
    ), result.error
    assert result.result.to_dict() == {
        "status": "completed",
        "summary": "main is defined in app.py",
        "findings": ["main() returns 1"],
        "evidence": ["app.py:1"],
        "unresolved_questions": [],
        "tool_usage": {"Glob": 1, "Grep": 1, "Read": 1},
        "terminal_reason": "completed",
        "evidence_sources": ["model"],
    }
    # Three calls of 110 tokens each, as the provider reported them.
    assert result.token_usage == 330


def tool_result_text(content: str) -> dict[str, Any]:
    envelope = json.loads(content)
    assert isinstance(envelope, dict)
    return envelope


def check_openai_requests(server: Scripted, model: str) -> None:
    bodies = server.bodies
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 3
    assert server.requests[0]["headers"]["authorization"] == "Bearer test"
    assert [b["model"] for b in bodies] == [model] * 3
    assert all(b["temperature"] == 0 for b in bodies)
    first = bodies[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert TASK in first["messages"][1]["content"]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["Glob", "Grep", "Read"]
    # A tool call is required until the child has made one (min_tool_calls=1), then it is free.
    assert [b["tool_choice"] for b in bodies] == ["required", "auto", "auto"]
    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in second[2]["tool_calls"]] == ["call_glob", "call_grep"]
    assert [m["tool_call_id"] for m in second[3:]] == ["call_glob", "call_grep"]
    grep = tool_result_text(second[4]["content"])
    assert grep["status"] == "success" and "app.py" in json.dumps(grep["data"])
    third = bodies[2]["messages"]
    assert [m["role"] for m in third[-2:]] == ["assistant", "tool"]
    assert "def main" in third[-1]["content"]


def check_anthropic_requests(server: Scripted, model: str) -> None:
    bodies = server.bodies
    assert [r["path"] for r in server.requests] == ["/v1/messages"] * 3
    headers = server.requests[0]["headers"]
    assert "anthropic-version" in headers
    # Older SDKs send the key as x-api-key, newer ones as a bearer token.
    assert "test" in (headers.get("x-api-key"), headers.get("authorization", "")[len("Bearer ") :])
    assert [(b["model"], b["max_tokens"]) for b in bodies] == [(model, 1024)] * 3
    first = bodies[0]
    # The system prompt leaves the messages for the top-level field, as one text block that
    # ends a prompt-cache prefix (the tools come before it).
    [system] = first["system"]
    assert system["cache_control"] == {"type": "ephemeral"}
    assert "explore" in system["text"].lower()
    # And each request's last block marks the history so far for the next call to re-read.
    for body in bodies:
        last = body["messages"][-1]["content"][-1]
        assert last["cache_control"] == {"type": "ephemeral"}
        others = [b for m in body["messages"] for b in m["content"][:-1]] + [
            m["content"][-1] for m in body["messages"][:-1]
        ]
        assert all("cache_control" not in b for b in others)
    assert [m["role"] for m in first["messages"]] == ["user"]
    assert TASK in first["messages"][0]["content"][0]["text"]
    assert sorted(t["name"] for t in first["tools"]) == ["Glob", "Grep", "Read"]
    assert all(t["input_schema"]["type"] == "object" for t in first["tools"])
    # A tool call is required ("any") until the child has made one (min_tool_calls=1).
    assert [b["tool_choice"] for b in bodies] == [{"type": "any"}] + [{"type": "auto"}] * 2
    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == [
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "toolu_glob", "name": "Glob", "input": {"pattern": "**/*.py"}},
        {"type": "tool_use", "id": "toolu_grep", "name": "Grep", "input": {"pattern": "def main"}},
    ]
    # Both parallel results in one user turn, in call order.
    results = second[2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in results] == [
        ("tool_result", "toolu_glob"),
        ("tool_result", "toolu_grep"),
    ]
    assert "app.py" in json.dumps(tool_result_text(results[1]["content"])["data"])
    third = bodies[2]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in third[4]["content"]] == ["tool_result"]
    assert "def main" in third[4]["content"][0]["content"]


def anthropic_turns() -> list[dict[str, Any]]:
    return [
        anthropic_answer([(c.replace("call_", "toolu_"), n, a) for c, n, a in calls], text)
        for calls, text in TURNS
    ]


def launch(repo: pathlib.Path, model: Callable[..., Any], *, is_async: bool) -> Any:
    launcher = outrider.SubagentLauncher(repo, model, trace_dir=repo.parent / "traces")
    request = outrider.SubagentRequest(task=TASK)
    if not is_async:
        return launcher.launch(request)

    async def main() -> Any:
        # launch_async returns a Future today and a coroutine after issue 10: both await.
        return await launcher.launch_async(request)

    return asyncio.run(main())


# --- end to end ----------------------------------------------------------------------------------


@pytest.mark.parametrize("is_async", [False, True], ids=["OpenAI", "AsyncOpenAI"])
def test_openai_client_runs_a_child(repo: pathlib.Path, is_async: bool) -> None:
    openai = pytest.importorskip("openai")
    with scripted([openai_answer(calls, text) for calls, text in TURNS]) as server:
        cls = openai.AsyncOpenAI if is_async else openai.OpenAI
        client = cls(base_url=server.base + "/v1", api_key="test", max_retries=0)
        model = adapters.openai(client, "gpt-test", temperature=0)
        assert asyncio.iscoroutinefunction(model) is is_async
        check_result(launch(repo, model, is_async=is_async))
    check_openai_requests(server, "gpt-test")


@pytest.mark.parametrize("is_async", [False, True], ids=["Anthropic", "AsyncAnthropic"])
def test_anthropic_client_runs_a_child(repo: pathlib.Path, is_async: bool) -> None:
    anthropic = pytest.importorskip("anthropic")
    with scripted(anthropic_turns()) as server:
        cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        client = cls(base_url=server.base, api_key="test", max_retries=0)
        model = adapters.anthropic(client, "claude-test", max_tokens=1024)
        assert asyncio.iscoroutinefunction(model) is is_async
        check_result(launch(repo, model, is_async=is_async))
    check_anthropic_requests(server, "claude-test")


@pytest.mark.parametrize("is_async", [False, True], ids=["completion", "acompletion"])
def test_litellm_runs_a_child(repo: pathlib.Path, is_async: bool) -> None:
    pytest.importorskip("litellm")
    with scripted([openai_answer(calls, text) for calls, text in TURNS]) as server:
        model = adapters.litellm(
            "openai/gpt-test",
            is_async=is_async,
            api_base=server.base + "/v1",
            api_key="test",
            temperature=0,
        )
        check_result(launch(repo, model, is_async=is_async))
    check_openai_requests(server, "gpt-test")


def test_request_settings_win_over_the_adapters(repo: pathlib.Path) -> None:
    """A model/temperature the request carries (launcher or profile settings) win; unknown
    settings reach the provider through extra_body."""
    openai = pytest.importorskip("openai")
    with scripted([openai_answer([], "hi")] * 2) as server:
        client = openai.OpenAI(base_url=server.base + "/v1", api_key="test", max_retries=0)
        model = adapters.openai(
            client, "gpt-a", temperature=0.5, vendor_knob=3, extra_body={"x": 1}
        )
        messages = [{"role": "user", "content": "hi"}]
        assert model({"model": None, "messages": messages}) == {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "hi"},
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }
        model({"model": "gpt-b", "temperature": 0.0, "messages": messages})
    assert [{k: v for k, v in b.items() if k != "messages"} for b in server.bodies] == [
        {"model": "gpt-a", "temperature": 0.5, "vendor_knob": 3, "x": 1},
        {"model": "gpt-b", "temperature": 0.0, "vendor_knob": 3, "x": 1},
    ]


def test_anthropic_request_settings_win_and_unknown_ones_reach_the_body() -> None:
    anthropic = pytest.importorskip("anthropic")
    with scripted([anthropic_answer([], "hi")]) as server:
        client = anthropic.Anthropic(base_url=server.base, api_key="test", max_retries=0)
        model = adapters.anthropic(client, "claude-a", max_tokens=50, temperature=0.5)
        out = model(
            {"model": None, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        )
    assert out == {
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}
        ],
        # Anthropic's cache reads are part of the prompt and also reported apart (#18.8).
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "total_tokens": 110,
            "prompt_tokens_details": {"cached_tokens": 10},
        },
    }
    assert server.bodies == [
        {
            "model": "claude-a",
            "max_tokens": 10,
            "temperature": 0.5,
            # The last block is a prompt-cache breakpoint (cache=True by default).
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
                    ],
                }
            ],
        }
    ]


# --- the Anthropic translation -------------------------------------------------------------------


def test_anthropic_translation_of_a_whole_history() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "Read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    history = [
        {"role": "system", "content": "You explore."},
        {"role": "user", "content": "Find main."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "functions.Read:0",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"path": "a.py"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "Read", "arguments": "{not json"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "functions.Read:0", "name": "Read", "content": "1: x"},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "name": "Read",
            "content": '{"status": "error", "error": {"code": "INVALID_PARAM"}}',
        },
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Answer with JSON."},
        {"role": "assistant", "content": "not json"},
        {"role": "user", "content": "Your answer was not valid."},
    ]
    request = {
        "model": "claude-x",
        "max_tokens": 100,
        "temperature": 0,
        "stop": "END",
        "messages": history,
        "tools": tools,
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }
    assert to_anthropic_request(request) == {
        "model": "claude-x",
        "max_tokens": 100,
        "temperature": 0,
        "stop_sequences": ["END"],
        "system": "You explore.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Find main."}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "functions_Read_0",
                        "name": "Read",
                        "input": {"path": "a.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": "c2",
                        "name": "Read",
                        "input": {"_unparsed_arguments": "{not json"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "functions_Read_0", "content": "1: x"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "c2",
                        "content": '{"status": "error", "error": {"code": "INVALID_PARAM"}}',
                        "is_error": True,
                    },
                    # The empty assistant turn is dropped; the feedback joins the results' turn.
                    {"type": "text", "text": "Answer with JSON."},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "not json"}]},
            {"role": "user", "content": [{"type": "text", "text": "Your answer was not valid."}]},
        ],
        "tools": [
            {
                "name": "Read",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    }


def test_anthropic_wrap_up_without_tools_declares_the_used_ones_forbidden() -> None:
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "function": {"name": "Grep", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "Grep", "content": "{}"},
        {"role": "user", "content": "Budget exhausted: answer now."},
    ]
    out = to_anthropic_request({"model": "m", "max_tokens": 5, "messages": history})
    assert (out["tools"], out["tool_choice"]) == (
        [{"name": "Grep", "input_schema": {"type": "object", "properties": {}}}],
        {"type": "none"},
    )


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ({"type": "function", "function": {"name": "Read"}}, {"type": "tool", "name": "Read"}),
    ],
)
def test_anthropic_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    tools = [{"type": "function", "function": {"name": "Read"}}]
    out = to_anthropic_request({"messages": [], "tools": tools, "tool_choice": choice})
    assert (out["tools"], out["tool_choice"]) == (
        [{"name": "Read", "input_schema": {"type": "object", "properties": {}}}],
        expected,
    )


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            {"messages": [], "tool_choice": "sometimes"},
            "request['tool_choice'] must be auto, none, required or a function choice, got 'sometimes'",
        ),
        (
            {"messages": [{"role": "robot", "content": "x"}]},
            "request['messages'][0]['role'] must be system, developer, user, assistant or tool, got 'robot'",
        ),
    ],
)
def test_anthropic_translation_names_bad_values(request_: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        to_anthropic_request(request_)
    assert str(info.value) == message


# --- errors --------------------------------------------------------------------------------------


def test_a_wrong_client_is_named() -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    with pytest.raises(TypeError) as info:
        adapters.openai(object(), "m")
    assert str(info.value) == (
        "outrider.adapters.openai() needs an openai.OpenAI or openai.AsyncOpenAI client (or its "
        "chat.completions.create), got builtins.object"
    )
    with pytest.raises(TypeError, match="needs an anthropic.Anthropic .* got builtins.object"):
        adapters.anthropic(object(), "m")


@pytest.mark.parametrize("module", ["openai", "anthropic", "litellm"])
def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    make: Callable[[], Any] = {
        "openai": lambda: adapters.openai(object(), "m"),
        "anthropic": lambda: adapters.anthropic(object(), "m"),
        "litellm": lambda: adapters.litellm("m"),
    }[module]
    # The packages themselves: outrider[...] works only once outrider is on a package index.
    requirement = {
        "openai": "'openai>=1.40'",
        "anthropic": "'anthropic>=0.40'",
        "litellm": "'litellm>=1.50'",
    }
    with pytest.raises(ImportError) as info:
        make()
    assert str(info.value) == (
        f"outrider.adapters.{module}() needs the {module} package, which is not installed: "
        f"pip install {requirement[module]} (outrider's '{module}' extra; from an outrider "
        f"checkout: pip install '.[{module}]')"
    )


def test_bad_settings_are_named() -> None:
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="test")
    with pytest.raises(ValueError, match=r"adapters.openai\(\): stream=True is not supported"):
        adapters.openai(client, "m", stream=True)
    with pytest.raises(ValueError) as info:
        adapters.openai(client, "")
    assert str(info.value) == (
        "outrider.adapters.openai(): model must be a non-empty str (the provider's model id), got ''"
    )
    claude = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="test")
    with pytest.raises(ValueError) as info:
        adapters.anthropic(claude, "m", max_tokens=0)
    assert str(info.value) == (
        "outrider.adapters.anthropic(): max_tokens must be a positive int, got 0"
    )


def test_importing_the_adapters_imports_no_sdk() -> None:
    code = (
        "import sys, outrider, outrider.adapters, outrider._returns; "
        "print(sorted({'openai', 'anthropic', 'litellm'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "[]", out.stderr

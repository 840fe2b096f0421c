"""TaskTool as an openai-agents, pydantic-ai and LangChain tool, driven by each framework's own
offline model: the framework's agent calls Task, a scripted child explores a tmp repository, and
the envelope and the usage accounting come back through the framework."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
import threading
import time
from typing import Any

import pytest

import outrider
from outrider import frameworks
from outrider.frameworks import ChildUsage, child_usage
from outrider.testing import ScriptedLLM, call, final, with_usage

ARGS = {"description": "Find load_config", "prompt": "Where is load_config defined?"}
ARGS["subagent_type"] = "explore"
BAD_ARGS = {"description": "Find load_config", "subagent_type": "explore"}
ANSWER = {
    "status": "completed",
    "summary": "load_config is defined in config.py",
    "findings": ["config.py:1 defines load_config(path)"],
    "evidence": ["config.py:1"],
    "unresolved_questions": [],
}
CHILD_TOKENS = 100 + 20 + 150 + 30


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "config.py").write_text("def load_config(path):\n    return open(path).read()\n")
    (root / "app.py").write_text("from config import load_config\n")
    return root


CHILD_IN, CHILD_OUT = 100 + 150, 20 + 30  # the child's prompt and answer tokens


def child_script(first: Any = None) -> ScriptedLLM:
    """A child that reads, then answers: 300 tokens as its provider reports them."""
    return ScriptedLLM(
        [
            with_usage(first or [call("Read", path="config.py")], 100, 20),
            with_usage(final(**ANSWER), 150, 30),
        ]
    )


def task_tool(repo: pathlib.Path, llm: ScriptedLLM) -> outrider.TaskTool:
    # These tests pin the reference's envelope (the compact default is tested in test_schema.py).
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=False)
    return outrider.TaskTool(launcher, reference_format=True)


def expected_envelope(args: dict[str, Any] = ARGS) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "status": "completed",
            "profile": "explore",
            "child_session_id": "<id>",
            "child_run_id": "run-1",
            # The model's line 1, in the index's first place (1-2), and the index's second lead.
            "result": {
                **ANSWER,
                "evidence": ["config.py:1-2", "app.py:1"],
                "tool_usage": {"Read": 1},
                "terminal_reason": "completed",
                "evidence_sources": ["both", "index"],
            },
        },
        "text": ANSWER["summary"],
        "stats": {
            "time_ms": "<ms>",
            "tool_calls": 1,
            "token_usage": CHILD_TOKENS,
            "input_tokens": CHILD_IN,
            "output_tokens": CHILD_OUT,
            "model_calls": 2,
            "model": "main",
        },
        "context": {"cwd": ".", "params_input": args},
    }


def stable(envelope: Any) -> Any:
    """The envelope with its session id and wall time replaced (both differ on every run)."""
    out = json.loads(json.dumps(envelope))
    assert isinstance(out["stats"]["time_ms"], int)
    out["stats"]["time_ms"] = "<ms>"
    if "child_session_id" in out["data"]:
        assert out["data"]["child_session_id"].startswith("child-")
        out["data"]["child_session_id"] = "<id>"
    return out


def invalid_envelope() -> dict[str, Any]:
    message = "Parameter 'prompt' is required and must be non-empty."
    return {
        "status": "error",
        "data": {},
        "text": message,
        "stats": {"time_ms": "<ms>"},
        "context": {"cwd": ".", "params_input": BAD_ARGS},
        "error": {"code": "INVALID_PARAM", "message": message},
    }


# --- child_usage ----------------------------------------------------------------------------------


def test_child_usage_reads_the_envelope_of_an_answer_a_failure_and_bad_arguments(
    repo: pathlib.Path,
) -> None:
    answered = task_tool(repo, child_script()).run(ARGS)
    assert child_usage(answered) == ChildUsage(CHILD_TOKENS, CHILD_IN, CHILD_OUT, 2, split=True)
    failing = ScriptedLLM([with_usage([call("Grep", pattern="x")], 40, 2), RuntimeError("down")])
    failed = task_tool(repo, failing).run(ARGS)
    assert failed["error"]["code"] == "INTERNAL_ERROR"
    assert child_usage(failed) == ChildUsage(42, 40, 2, 2, split=True)
    invalid = task_tool(repo, child_script()).run(BAD_ARGS)
    assert child_usage(invalid) == ChildUsage(0, 0, 0, 0, split=False)
    # An envelope that reports the split (and the model calls) is taken as it is.
    split = {"stats": {"token_usage": 300, "input_tokens": 250, "output_tokens": 50}}
    split["stats"]["model_calls"] = 2
    assert child_usage(split) == ChildUsage(300, 250, 50, 2, split=True)
    assert child_usage("not an envelope") == ChildUsage(0, 0, 0, 0, split=False)


# --- openai-agents --------------------------------------------------------------------------------


def test_openai_agents_runner_calls_task_and_counts_the_child_tokens(repo: pathlib.Path) -> None:
    from agents import Agent, FunctionTool, RunConfig, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
    from agents.usage import Usage

    llm = child_script()
    task = task_tool(repo, llm)
    tool = task.as_openai_agents_tool()
    assert isinstance(tool, FunctionTool)
    assert (tool.name, tool.description, tool.params_json_schema) == (
        "Task",
        task.description,
        task.parameters,
    )
    parent = ScriptedModel(
        [
            ModelStep(
                output=[
                    function_call("Task", BAD_ARGS, call_id="bad"),
                    function_call("Task", ARGS, call_id="good"),
                ],
                usage=Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15),
            ),
            ModelStep(
                output=[assistant_message("load_config is in config.py")],
                usage=Usage(requests=1, input_tokens=20, output_tokens=3, total_tokens=23),
            ),
        ]
    )
    agent = Agent(name="main", model=parent, tools=[tool])
    result = Runner.run_sync(
        agent, "Where is load_config?", run_config=RunConfig(tracing_disabled=True)
    )

    assert result.final_output == "load_config is in config.py"
    parent.assert_complete()
    llm.assert_complete()
    outputs = {
        item["call_id"]: item["output"]
        for item in parent.calls[1].input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }
    assert stable(json.loads(outputs["bad"])) == invalid_envelope()
    assert stable(json.loads(outputs["good"])) == expected_envelope()
    usage = result.context_wrapper.usage
    # The parent's own two requests plus the child's two and its tokens (the bad call launched
    # nothing).
    assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        2 + 2,
        10 + 20 + CHILD_IN,
        5 + 3 + CHILD_OUT,
        15 + 23 + CHILD_TOKENS,
    )


# --- pydantic-ai ----------------------------------------------------------------------------------


def _pydantic_parent(calls: list[dict[str, Any]], seen: list[Any]) -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        if len(messages) == 1:
            seen.append(info.function_tools)
            parts: list[Any] = [
                ToolCallPart("Task", args, tool_call_id=f"c{i}") for i, args in enumerate(calls)
            ]
            return ModelResponse(parts=parts, usage=usage)
        seen.extend(p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart("load_config is in config.py")], usage=usage)

    return FunctionModel(respond)


def test_pydantic_ai_agent_calls_task_and_counts_the_child_in_run_usage(
    repo: pathlib.Path,
) -> None:
    from pydantic_ai import Agent, Tool

    llm = child_script()
    task = task_tool(repo, llm)
    tool = task.as_pydantic_ai_tool()
    assert isinstance(tool, Tool)
    seen: list[Any] = []
    agent = Agent(_pydantic_parent([BAD_ARGS, ARGS], seen), tools=[tool])
    result = agent.run_sync("Where is load_config?")

    assert result.output == "load_config is in config.py"
    llm.assert_complete()
    [definition] = seen[0]
    assert (definition.name, definition.description, definition.parameters_json_schema) == (
        "Task",
        task.description,
        task.parameters,
    )
    assert [stable(e) for e in seen[1:]] == [invalid_envelope(), expected_envelope()]
    usage = result.usage
    assert (usage.requests, usage.tool_calls, usage.input_tokens, usage.output_tokens) == (
        2 + 2,
        2,
        10 + 10 + CHILD_IN,
        5 + 5 + CHILD_OUT,
    )
    assert usage.details == {"outrider_subagent_tokens": CHILD_TOKENS}


def test_pydantic_ai_usage_limits_see_the_child_tokens(repo: pathlib.Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.usage import UsageLimits

    agent = Agent(
        _pydantic_parent([ARGS], []), tools=[task_tool(repo, child_script()).as_pydantic_ai_tool()]
    )
    # The parent alone spends 30 tokens; with the child's 300 the second request is refused.
    with pytest.raises(UsageLimitExceeded, match="total_tokens_limit of 200"):
        agent.run_sync("Where is load_config?", usage_limits=UsageLimits(total_tokens_limit=200))


def test_pydantic_ai_awaits_the_child_without_blocking_the_loop(repo: pathlib.Path) -> None:
    from pydantic_ai import Agent

    scripted, started, released = child_script(), threading.Event(), threading.Event()

    def child(request: dict[str, Any]) -> Any:
        # The child's first call waits for the parent's event loop: only a free loop lets it go.
        started.set()
        if not released.wait(10):
            raise RuntimeError("the parent's event loop was blocked while the child ran")
        return scripted(request)

    agent = Agent(
        _pydantic_parent([ARGS], []),
        tools=[
            outrider.TaskTool(
                outrider.SubagentLauncher(repo, child, trace_dir=False)
            ).as_pydantic_ai_tool()
        ],
    )

    async def main() -> Any:
        run = asyncio.create_task(agent.run("Where is load_config?"))
        while not started.is_set():
            await asyncio.sleep(0.005)
        released.set()
        return await run

    result = asyncio.run(main())
    assert result.output == "load_config is in config.py"
    scripted.assert_complete()


def test_cancelling_the_pydantic_ai_run_cancels_the_child(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from pydantic_ai import Agent

    scripted, started, released = child_script(), threading.Event(), threading.Event()

    def child(request: dict[str, Any]) -> Any:
        started.set()
        released.wait(10)
        return scripted(request)

    traces = tmp_path / "traces"
    launcher = outrider.SubagentLauncher(repo, child, trace_dir=traces)
    agent = Agent(
        _pydantic_parent([ARGS], []), tools=[outrider.TaskTool(launcher).as_pydantic_ai_tool()]
    )

    async def main() -> None:
        run = asyncio.create_task(agent.run("Where is load_config?"))
        while not started.is_set():
            await asyncio.sleep(0.005)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        released.set()

    asyncio.run(main())
    deadline = time.monotonic() + 10
    ends: list[Any] = []
    while not ends and time.monotonic() < deadline:
        time.sleep(0.02)
        for trace in traces.glob("trace-child-*.jsonl"):
            # The last line may be half written while the child is still ending.
            lines = trace.read_text().splitlines()
            ends += [
                json.loads(line)["payload"]["reason"]
                for line in lines
                if line.endswith("}") and '"event":"terminal"' in line.replace(" ", "")
            ]
    assert ends == ["cancelled"]
    assert len(scripted.requests) == 1, "the child made no call after the cancel"


# --- LangChain ------------------------------------------------------------------------------------


def test_langchain_tool_call_gives_the_envelope_and_reports_the_child_usage(
    repo: pathlib.Path,
) -> None:
    from langchain_core.callbacks import get_usage_metadata_callback
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    llm = child_script()
    task = task_tool(repo, llm)
    tool = task.as_langchain_tool()
    assert isinstance(tool, BaseTool)
    assert convert_to_openai_tool(tool) == task.openai_schema()
    parent_usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    parent = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"name": "Task", "args": ARGS, "id": "c1"}],
                usage_metadata=parent_usage,
                response_metadata={"model_name": "fake-parent"},
            )
        ]
    )
    with get_usage_metadata_callback() as usage:
        asked = parent.invoke([HumanMessage("Where is load_config?")])
        assert isinstance(asked, AIMessage)
        message = tool.invoke(asked.tool_calls[0])

    llm.assert_complete()
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "c1"
    assert stable(message.artifact) == expected_envelope()
    assert json.loads(str(message.content)) == message.artifact
    assert usage.usage_metadata == {
        "fake-parent": parent_usage,
        "outrider:main": {
            "input_tokens": CHILD_IN,
            "output_tokens": CHILD_OUT,
            "total_tokens": 300,
        },
    }


def test_langchain_ainvoke_awaits_the_child_and_bad_arguments_report_no_usage(
    repo: pathlib.Path,
) -> None:
    from langchain_core.callbacks import get_usage_metadata_callback

    tool = task_tool(repo, child_script()).as_langchain_tool(name="explore_repo")
    assert tool.name == "explore_repo"

    async def both() -> list[Any]:
        good = {"type": "tool_call", "name": "explore_repo", "args": ARGS, "id": "a"}
        bad = {"type": "tool_call", "name": "explore_repo", "args": BAD_ARGS, "id": "b"}
        return [await tool.ainvoke(good), await tool.ainvoke(bad)]

    with get_usage_metadata_callback() as usage:
        good, bad = asyncio.run(both())
    assert stable(good.artifact) == expected_envelope()
    assert stable(bad.artifact) == invalid_envelope()
    assert usage.usage_metadata == {
        "outrider:main": {"input_tokens": CHILD_IN, "output_tokens": CHILD_OUT, "total_tokens": 300}
    }
    # Called with plain arguments (no tool call), the tool gives the content only.
    assert json.loads(tool.invoke(BAD_ARGS))["error"]["code"] == "INVALID_PARAM"


# --- missing packages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "module", "package", "extra"),
    [
        ("as_openai_agents_tool", "agents", "openai-agents", "openai-agents"),
        ("as_pydantic_ai_tool", "pydantic_ai", "pydantic-ai-slim", "pydantic-ai"),
        ("as_langchain_tool", "langchain_core.tools", "langchain-core", "langchain"),
    ],
)
def test_a_missing_framework_names_the_extra(
    repo: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    module: str,
    package: str,
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    monkeypatch.setattr(frameworks, "_langchain_class", None)
    task = task_tool(repo, child_script())
    with pytest.raises(outrider.MissingExtraError) as caught:
        getattr(task, method)()
    assert caught.value.extra == extra
    message = str(caught.value)
    assert message.startswith(f"TaskTool.{method}() needs the {package} package, which could not")
    assert message.endswith(f"from an outrider checkout: pip install '.[{extra}]')")
    assert "install it with: pip install '" in message and "outrider[" not in message
    assert isinstance(caught.value, ImportError)
    assert isinstance(caught.value, outrider.OutriderError)


def test_importing_outrider_imports_no_framework() -> None:
    import subprocess

    code = (
        "import sys, outrider, outrider.frameworks, outrider.mcp_server, outrider.cli\n"
        "print(sorted(m for m in ('agents', 'pydantic_ai', 'langchain_core', 'mcp') "
        "if m in sys.modules))"
    )
    parent = str(pathlib.Path(outrider.__file__).resolve().parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": parent, "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout == "[]\n", out.stderr


# --- the child's model calls in the parent's request count, over real provider clients (#37.8) ---


class LoopbackModels:
    """One loopback OpenAI-compatible server for the parent (its requests offer the Task tool)
    and the child (Read/Grep/Glob): the parent calls Task, then answers; the child greps, then
    answers. Every answer reports its usage; ``requests`` counts who asked."""

    def __init__(self) -> None:
        self.calls = {"parent": 0, "child": 0}
        self.lock = threading.Lock()

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        body = json.loads(raw)
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        who = "parent" if "Task" in tools else "child"
        with self.lock:
            self.calls[who] += 1
        seen = any(m.get("role") == "tool" for m in body["messages"])
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if who == "parent" and not seen:
            arguments = json.dumps(ARGS)
            call_ = {"id": "call_task", "type": "function"}
            message["tool_calls"] = [
                {**call_, "function": {"name": "Task", "arguments": arguments}}
            ]
        elif who == "parent":
            message["content"] = "load_config is in config.py"
        elif not seen:
            arguments = json.dumps({"pattern": "def load_config"})
            call_ = {"id": "call_grep", "type": "function"}
            message["tool_calls"] = [
                {**call_, "function": {"name": "Grep", "arguments": arguments}}
            ]
        else:
            message["content"] = final(**ANSWER)
        usage = (10, 5) if who == "parent" else (100, 20)
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": body.get("model") or "m",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }
        return 200, json.dumps(reply).encode()


@pytest.fixture
def loopback_models() -> Any:
    from loopback import _serve

    models = LoopbackModels()
    with _serve(models.answer, keep_alive=True) as root:
        yield f"{root}/v1", models


def loopback_task(repo: pathlib.Path, base_url: str) -> outrider.TaskTool:
    child = outrider.OpenAICompatible("child-model", base_url, "sk-child", max_retries=0)
    return outrider.TaskTool(outrider.SubagentLauncher(repo, child, trace_dir=False))


def test_openai_agents_usage_counts_the_childs_requests(
    repo: pathlib.Path, loopback_models: tuple[str, LoopbackModels]
) -> None:
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

    base_url, models = loopback_models
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-parent", max_retries=0)
    parent = OpenAIChatCompletionsModel(model="parent-model", openai_client=client)
    tool = loopback_task(repo, base_url).as_openai_agents_tool()
    agent = Agent(name="main", model=parent, tools=[tool])
    result = Runner.run_sync(
        agent, "Where is load_config?", run_config=RunConfig(tracing_disabled=True)
    )

    assert result.final_output == "load_config is in config.py"
    assert models.calls == {"parent": 2, "child": 2}
    usage = result.context_wrapper.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (2 + 2, 20 + 200, 10 + 40)


def test_pydantic_ai_request_limit_counts_the_childs_requests(
    repo: pathlib.Path, loopback_models: tuple[str, LoopbackModels]
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    base_url, models = loopback_models
    provider = OpenAIProvider(base_url=base_url, api_key="sk-parent")
    tool = loopback_task(repo, base_url).as_pydantic_ai_tool()
    agent = Agent(OpenAIChatModel("parent-model", provider=provider), tools=[tool])

    result = agent.run_sync("Where is load_config?", usage_limits=UsageLimits(request_limit=4))
    assert result.output == "load_config is in config.py"
    assert models.calls == {"parent": 2, "child": 2}
    assert (result.usage.requests, result.usage.input_tokens) == (2 + 2, 20 + 200)
    # One parent request and the child's two use up a limit of 3: the parent's second is refused.
    with pytest.raises(UsageLimitExceeded, match="request_limit of 3"):
        agent.run_sync("Where is load_config?", usage_limits=UsageLimits(request_limit=3))
    assert models.calls == {"parent": 3, "child": 4}

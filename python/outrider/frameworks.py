"""The Task tool as a native tool of agent frameworks: openai-agents, pydantic-ai and LangChain.

    task = outrider.TaskTool(launcher)
    agent = agents.Agent(name="main", tools=[task.as_openai_agents_tool()])
    agent = pydantic_ai.Agent(model, tools=[task.as_pydantic_ai_tool()])
    tools = [task.as_langchain_tool()]

Each tool has the Task tool's name, description and JSON schema, runs the child (awaiting
:meth:`TaskTool.run_async` where the framework is async, so the framework's loop stays free and
cancelling the tool call cancels the child), returns the envelope, and adds the child's tokens
(and, where the framework counts them, its model requests) to the framework's usage accounting. The frameworks are optional: each is imported on first use,
and a missing one raises :class:`~outrider.MissingExtraError` naming the pip extra to install.

These functions are the bodies of the ``TaskTool`` methods of the same names (declared on the
native class in ``src/py/task.rs``, which calls them).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from outrider._aio import envelope_json
from outrider.exceptions import MissingExtraError

if TYPE_CHECKING:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
    from langchain_core.callbacks import AsyncCallbackManager, CallbackManager
    from langchain_core.tools import BaseTool
    from pydantic_ai import RunContext, Tool

    from outrider._entry import TaskTool

__all__ = [
    "ChildUsage",
    "as_langchain_tool",
    "as_openai_agents_tool",
    "as_pydantic_ai_tool",
    "child_usage",
]

USAGE_DETAIL = "outrider_subagent_tokens"
"""The key under which the child's total tokens are also recorded where a framework keeps
free-form usage details (pydantic-ai's ``RunUsage.details``)."""


def _require(module: str, extra: str, package: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError.needs(feature, package, extra, err) from err


_OPENAI_AGENTS = ("openai-agents", "openai-agents", "TaskTool.as_openai_agents_tool()")
_PYDANTIC_AI = ("pydantic-ai", "pydantic-ai-slim", "TaskTool.as_pydantic_ai_tool()")
_LANGCHAIN = ("langchain", "langchain-core", "TaskTool.as_langchain_tool()")


@dataclass(frozen=True)
class ChildUsage:
    """What one Task call's child spent, read from its envelope."""

    total_tokens: int
    """Every token of every model call the child made (reported, or estimated when the model
    reports none)."""
    input_tokens: int
    """Prompt tokens. When the envelope gives only a total (``split`` is false), the whole
    total: a child's tokens are overwhelmingly prompt tokens, since its history is re-sent on
    every call, and counting them all keeps the framework's token limits whole."""
    output_tokens: int
    """Completion tokens (0 when the envelope gives only a total)."""
    requests: int
    """The child's model calls (the envelope's ``stats.model_calls``, or ``model_calls`` in a
    failed child's error details; 0 when it reports none)."""
    split: bool
    """Whether the envelope reported input and output tokens separately."""


def _count(source: Any, *keys: str) -> int | None:
    for key in keys:
        value = source.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def child_usage(envelope: Any) -> ChildUsage:
    """The child's usage from a Task envelope: its ``stats``, or for a failed child its
    ``error`` (which keeps the child's tokens). Bad arguments launch no child: all zeros."""
    source: Any = {}
    if isinstance(envelope, dict):
        stats = envelope.get("stats")
        error = envelope.get("error")
        if isinstance(stats, dict) and "token_usage" in stats:
            source = stats
        elif isinstance(error, dict):
            source = error
    total = _count(source, "token_usage", "total_tokens") or 0
    requests = _count(source, "model_calls") or 0
    inp = _count(source, "input_tokens", "prompt_tokens")
    out = _count(source, "output_tokens", "completion_tokens")
    if inp is not None and out is not None:
        return ChildUsage(max(total, inp + out), inp, out, requests, True)
    return ChildUsage(total, total, 0, requests, False)


def _text(task: TaskTool, envelope: Any) -> str:
    # The same text as TaskTool.run_json: what the model reads as the tool result.
    return envelope_json(task, envelope)


# ---------------------------------------------------------------------------------- openai-agents


def as_openai_agents_tool(
    self: TaskTool, *, name: str | None = None, description: str | None = None
) -> FunctionTool:
    """The Task tool as an openai-agents ``FunctionTool`` (``pip install '.[openai-agents]'``).

    Its output is the envelope as JSON text; the child's tokens and model requests are added to
    the run's usage (``ToolContext.usage``, shared with ``RunResult.context_wrapper.usage``). The schema is used
    as is (``strict_json_schema=False``: ``model`` is optional, which strict mode forbids).
    """
    agents = _require("agents", *_OPENAI_AGENTS)
    usage_mod = _require("agents.usage", *_OPENAI_AGENTS)
    task = self

    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        envelope = await task.run_async(arguments)
        used = child_usage(envelope)
        if used.total_tokens or used.requests:
            ctx.usage.add(
                usage_mod.Usage(
                    requests=used.requests,
                    input_tokens=used.input_tokens,
                    output_tokens=used.output_tokens,
                    total_tokens=used.total_tokens,
                )
            )
        return _text(self, envelope)

    tool: FunctionTool = agents.FunctionTool(
        name=name or task.name,
        description=description or task.description,
        params_json_schema=task.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
    return tool


# ------------------------------------------------------------------------------------ pydantic-ai


def as_pydantic_ai_tool(
    self: TaskTool, *, name: str | None = None, description: str | None = None
) -> Tool[Any]:
    """The Task tool as a pydantic-ai ``Tool`` (``pip install '.[pydantic-ai]'``).

    It returns the envelope dict and adds the child's tokens and model requests to the run's
    usage (``ctx.usage.incr``), so ``result.usage`` and ``UsageLimits`` (``request_limit``
    included) count them; the child's total is also recorded in
    ``usage.details["outrider_subagent_tokens"]``.
    """
    pydantic_ai = _require("pydantic_ai", *_PYDANTIC_AI)
    usage_mod = _require("pydantic_ai.usage", *_PYDANTIC_AI)
    task = self

    async def call(ctx: RunContext[Any], **arguments: Any) -> dict[str, Any]:
        envelope = await task.run_async(arguments)
        used = child_usage(envelope)
        if used.total_tokens or used.requests:
            ctx.usage.incr(
                usage_mod.RunUsage(
                    requests=used.requests,
                    input_tokens=used.input_tokens,
                    output_tokens=used.output_tokens,
                    details={USAGE_DETAIL: used.total_tokens},
                )
            )
        return dict(envelope)

    tool: Tool[Any] = pydantic_ai.Tool.from_schema(
        call,
        name=name or task.name,
        description=description or task.description,
        json_schema=task.parameters,
        takes_ctx=True,
    )
    return tool


# -------------------------------------------------------------------------------------- langchain

_langchain_class: type[BaseTool] | None = None


def _langchain_tool_class() -> type[BaseTool]:
    """The BaseTool subclass, defined on first use so langchain-core is imported only then."""
    global _langchain_class
    if _langchain_class is not None:
        return _langchain_class
    tools = _require("langchain_core.tools", *_LANGCHAIN)
    messages = _require("langchain_core.messages", *_LANGCHAIN)
    outputs = _require("langchain_core.outputs", *_LANGCHAIN)

    def child_run(arguments: dict[str, Any], envelope: dict[str, Any]) -> tuple[Any, ...] | None:
        """``(serialized, messages, result)`` of the child as one chat-model run, or None when
        it spent nothing. LangChain counts usage only from chat-model runs (usage callbacks
        such as ``get_usage_metadata_callback`` and tracers read ``AIMessage.usage_metadata`` in
        ``on_llm_end``), so the child is reported as one, nested under the tool run."""
        used = child_usage(envelope)
        if not used.total_tokens:
            return None
        model_name = f"outrider:{(envelope.get('stats') or {}).get('model') or 'child'}"
        prompt = arguments.get("prompt")
        answer = messages.AIMessage(
            content=str(envelope.get("text") or ""),
            usage_metadata={
                "input_tokens": used.input_tokens,
                "output_tokens": used.output_tokens,
                "total_tokens": used.total_tokens,
            },
            response_metadata={"model_name": model_name},
        )
        return (
            {"name": model_name, "id": ["outrider", "subagent"]},
            [[messages.HumanMessage(content=prompt if isinstance(prompt, str) else "")]],
            outputs.LLMResult(generations=[[outputs.ChatGeneration(message=answer)]]),
        )

    class OutriderTaskTool(tools.BaseTool):  # type: ignore[misc,name-defined]
        """The outrider Task tool (content: the envelope as JSON; artifact: the envelope)."""

        task: Any
        response_format: str = "content_and_artifact"

        # `run_manager` is typed Any: LangChain resolves these annotations at call time, and the
        # callback manager types are imported for type checking only.
        def _run(self, run_manager: Any = None, **arguments: Any) -> tuple[str, dict[str, Any]]:
            envelope: dict[str, Any] = self.task.run(arguments)
            run = child_run(arguments, envelope)
            if run is not None and run_manager is not None:
                serialized, request, result = run
                child: CallbackManager = run_manager.get_child()
                for llm_run in child.on_chat_model_start(serialized, request):
                    llm_run.on_llm_end(result)
            return _text(self.task, envelope), envelope

        async def _arun(
            self, run_manager: Any = None, **arguments: Any
        ) -> tuple[str, dict[str, Any]]:
            envelope: dict[str, Any] = await self.task.run_async(arguments)
            run = child_run(arguments, envelope)
            if run is not None and run_manager is not None:
                serialized, request, result = run
                child: AsyncCallbackManager = run_manager.get_child()
                for llm_run in await child.on_chat_model_start(serialized, request):
                    await llm_run.on_llm_end(result)
            return _text(self.task, envelope), envelope

    _langchain_class = OutriderTaskTool
    return OutriderTaskTool


def as_langchain_tool(
    self: TaskTool, *, name: str | None = None, description: str | None = None
) -> BaseTool:
    """The Task tool as a LangChain ``BaseTool`` (``pip install '.[langchain]'``).

    Invoked with a model's tool call it gives a ``ToolMessage`` whose content is the envelope as
    JSON and whose ``artifact`` is the envelope dict (``response_format="content_and_artifact"``).
    ``invoke`` runs the child synchronously, ``ainvoke`` awaits it. LangChain has no run-wide
    usage object; the child's tokens are reported as one chat-model run nested under the tool run
    (model name ``outrider:light`` or ``outrider:main``), so ``get_usage_metadata_callback()``
    and tracers count them.
    """
    cls = _langchain_tool_class()
    tool: BaseTool = cls(
        name=name or self.name,
        description=description or self.description,
        args_schema=self.parameters,
        task=self,
    )
    return tool

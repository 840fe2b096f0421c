"""``SubagentLauncher``, ``MainAgent`` and ``TaskTool``: the classes users get, each defined
whole here over its native base in :mod:`outrider._core`.

The native base (``src/py/launcher.rs``, ``agent.rs``, ``task.rs``) holds the constructor, the
getters, ``verify`` and the native halves ``_launch``, ``_launch_many`` and ``_run``, which
either block (GIL released, Ctrl-C heard) or return an asyncio future of the running loop. The
entry points are here, in Python, because ``launch_async``, ``launch_many_async``,
``run_async`` must be ``async def`` coroutine functions (``asyncio.run``, ``create_task`` and
``TaskGroup`` take what they return as it is, and ``inspect.iscoroutinefunction`` says so),
which a native method cannot be. Nothing the core builds is one of these classes, none is
pickled, and ``isinstance`` against the public class holds for every instance, since users
construct them. How a model callable is then called: :mod:`outrider._aio`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sized
from typing import TYPE_CHECKING, Any

from outrider import _core
from outrider._aio import envelope_json
from outrider._core import SubagentLaunchResult, SubagentRequest

if TYPE_CHECKING:
    from agents import FunctionTool
    from langchain_core.tools import BaseTool
    from pydantic_ai import Tool

    from outrider._mainrun import MainRunResult
    from outrider.types import OnEvent, OutputSchema, TaskEnvelope, TraceEvent

__all__ = ["MainAgent", "SubagentLauncher", "TaskTool"]


class SubagentLauncher(_core.SubagentLauncher):
    """Launches sandboxed read-only children over ``project_root``.

    ``main_llm`` and ``light_llm`` are callables (sync or async), :class:`OpenAICompatible`,
    :class:`OfflineScout`, an ``openai.OpenAI``/``AsyncOpenAI`` or
    ``anthropic.Anthropic``/``AsyncAnthropic`` client or its bound ``chat.completions.create``
    / ``messages.create`` (the model's name from ``main_model``/``light_model``), or a
    ``"provider:model"`` string such as ``"openai:gpt-4.1"`` or
    ``"anthropic:claude-haiku-4-5"`` (key from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``; see
    :mod:`outrider.adapters`). Without ``main_llm``, ``LLM_*`` from the environment is used when
    ``LLM_MODEL_ID`` is set, else the offline scout (model-free; ``model_used`` is then
    ``"offline"``); a key or base URL set without ``LLM_MODEL_ID`` is a
    :class:`~outrider.ConfigError` naming it. Without ``light_llm`` the light route comes from
    ``LIGHT_LLM_*`` when set, else falls back to main. ``trace_dir`` defaults to
    ``~/.local/state/outrider/traces`` (``False`` keeps traces in memory) and must be outside
    the root.
    """

    __slots__ = ()

    def launch(
        self,
        request: SubagentRequest,
        *,
        on_event: OnEvent | None = None,
        output_schema: OutputSchema | None = None,
    ) -> SubagentLaunchResult:
        """Run one child to the end (GIL released; Ctrl-C cancels it and raises). ``on_event``
        receives each event of the child's trace as it happens (see :data:`outrider.types.OnEvent`).
        ``output_schema`` replaces the request's and the profile's result shape; with the
        offline scout (no model) it raises :class:`outrider.LaunchError`."""
        result: SubagentLaunchResult = self._launch(request, on_event, False, output_schema)
        return result

    async def launch_async(
        self,
        request: SubagentRequest,
        *,
        on_event: OnEvent | None = None,
        output_schema: OutputSchema | None = None,
    ) -> SubagentLaunchResult:
        """The same from async code; cancelling it cancels the child. Async model callables run
        on the caller's running loop, sync ones with the caller's ``contextvars``."""
        result: SubagentLaunchResult = await self._launch(request, on_event, True, output_schema)
        return result

    def launch_many(
        self,
        requests: Iterable[SubagentRequest],
        max_concurrency: int | None = None,
        *,
        on_event: OnEvent | None = None,
        progress: bool = False,
    ) -> list[SubagentLaunchResult]:
        """Run children concurrently; results in input order, one failure does not touch others.
        ``on_event`` receives every child's events; ``progress=True`` shows a tqdm bar that ticks
        once per finished child (it needs ``tqdm``: ``pip install '.[progress]'``)."""
        if not progress:
            result: list[SubagentLaunchResult] = self._launch_many(
                requests, max_concurrency, on_event, None, False
            )
            return result
        from outrider._observe import progress_bar

        if isinstance(requests, Iterable) and not isinstance(requests, (str, bytes)):
            requests = list(requests)  # counted for the bar; a bad value is refused natively
        bar = progress_bar(len(requests) if isinstance(requests, Sized) else 0)
        try:
            result = self._launch_many(
                requests, max_concurrency, on_event, lambda: bar.update(1), False
            )
        finally:
            bar.close()
        return result

    async def launch_many_async(
        self,
        requests: Iterable[SubagentRequest],
        max_concurrency: int | None = None,
        *,
        on_event: OnEvent | None = None,
    ) -> list[SubagentLaunchResult]:
        """``launch_many`` from async code; cancelling it cancels every child."""
        result: list[SubagentLaunchResult] = await self._launch_many(
            requests, max_concurrency, on_event, None, True
        )
        return result

    def stream(self, request: SubagentRequest) -> AsyncIterator[TraceEvent | SubagentLaunchResult]:
        """Launch from async code and yield each trace event dict as it happens, then, last, the
        :class:`SubagentLaunchResult`. Leaving the loop early cancels the child."""
        from outrider._observe import stream

        return stream(self, request)  # type: ignore[return-value]


class MainAgent(_core.MainAgent):
    """A main agent (``main_agent`` mode) with Read, Grep, Glob and the Task tool, running the
    same loop as a child, so a whole parent-to-child exploration runs in one call. Its trace
    links to each child's trace."""

    __slots__ = ()

    def run(self, task: str, *, on_event: OnEvent | None = None) -> MainRunResult:
        """A :class:`~outrider.MainRunResult`: the answer, usage, the children's launch results
        and the run's total tokens; still the dict ``{session_id, final_text, terminal_reason,
        error, steps, model_calls, tool_usage, token_usage, input_tokens, output_tokens,
        trace_path, trace_error, ...}`` (a subclass). ``on_event`` receives each event of the
        main agent's trace and of its children's, as it happens."""
        from outrider._mainrun import MainRunResult

        return MainRunResult.from_dict(self._run(task, on_event, False))

    async def run_async(self, task: str, *, on_event: OnEvent | None = None) -> MainRunResult:
        """``run`` from async code: async model callables (the main model and the children's)
        run on the caller's running loop; cancelling it cancels the run and its children."""
        from outrider._mainrun import MainRunResult

        return MainRunResult.from_dict(await self._run(task, on_event, True))


class TaskTool(_core.TaskTool):
    """The Task tool for a main agent: validates arguments (reference messages and order),
    launches a child, and returns the standard envelope. ``launcher`` may be a zero-argument
    factory, built on first use. ``subagent_types`` are the profiles reachable (default
    ``["explore"]``).

    The envelope is compact by default: JSON without indentation, no ``context`` (so the
    prompt is not echoed back), and ``data.result`` without the ``summary`` that ``text``
    carries. ``reference_format=True`` gives the reference's envelope instead
    (``{status, data, text, stats, context{cwd, params_input}}``, indented by 2, the result
    whole). ``output_schema`` makes every child answer in that shape (``data.result`` is the
    validated object; ``text`` its ``summary`` field, else the object as JSON)."""

    __slots__ = ()

    def run(
        self, args: Mapping[str, Any] | str, *, output_schema: OutputSchema | None = None
    ) -> TaskEnvelope:
        """The envelope dict: ``success`` (a completed or partial answer), ``unverified`` (the
        child's evidence is not in the files: ``data.ungrounded_evidence`` lists it), or an error
        (bad arguments give INVALID_PARAM, a failed child INTERNAL_ERROR); never an exception
        for the model's arguments. ``output_schema`` makes this child answer in that shape, as
        the constructor's option does for every child (a bad schema raises ConfigError)."""
        envelope: TaskEnvelope = self._run(args, False, output_schema)
        return envelope

    def run_json(
        self, args: Mapping[str, Any] | str, *, output_schema: OutputSchema | None = None
    ) -> str:
        """The envelope as the tool message carries it: compact JSON (indent 2 with
        ``reference_format=True``), non-ASCII kept."""
        return envelope_json(self, self._run(args, False, output_schema))

    async def run_async(
        self, args: Mapping[str, Any] | str, *, output_schema: OutputSchema | None = None
    ) -> TaskEnvelope:
        """``run`` from async code: the envelope dict; cancelling it cancels the child."""
        envelope: TaskEnvelope = await self._run(args, True, output_schema)
        return envelope

    # The frameworks are imported on first use (MissingExtraError names the extra when one is
    # missing); the adapters themselves are in outrider.frameworks.
    def as_openai_agents_tool(
        self, *, name: str | None = None, description: str | None = None
    ) -> FunctionTool:
        """An openai-agents ``FunctionTool``: JSON envelope out, the child's tokens and model
        requests added to the run's usage."""
        from outrider.frameworks import as_openai_agents_tool

        return as_openai_agents_tool(self, name=name, description=description)

    def as_pydantic_ai_tool(
        self, *, name: str | None = None, description: str | None = None
    ) -> Tool[Any]:
        """A pydantic-ai ``Tool``: the envelope dict out, the child's tokens and model requests
        added to ``ctx.usage`` (so ``UsageLimits``, ``request_limit`` included, count them)."""
        from outrider.frameworks import as_pydantic_ai_tool

        return as_pydantic_ai_tool(self, name=name, description=description)

    def as_langchain_tool(
        self, *, name: str | None = None, description: str | None = None
    ) -> BaseTool:
        """A LangChain ``BaseTool`` (content: JSON envelope, artifact: the envelope); the child's
        tokens are reported as a chat-model run nested under the tool run."""
        from outrider.frameworks import as_langchain_tool

        return as_langchain_tool(self, name=name, description=description)

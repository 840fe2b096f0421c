"""Typed shapes of the plain dicts outrider returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeAlias, TypedDict


class EvidenceCheck(TypedDict):
    """The verdict on one evidence item, from :func:`outrider.check_evidence`."""

    evidence: str
    """The item as given."""
    path: str | None
    """The path part, when the item could be parsed."""
    start_line: int | None
    """First line cited."""
    end_line: int | None
    """Last line cited (equal to ``start_line`` for one line)."""
    total_lines: int | None
    """The file's line count, when the check read the whole file (it stops once the cited lines
    are seen)."""
    grounded: bool
    """True when the file exists under the root and the lines are in range."""
    reason: str | None
    """Why not: ``format``, ``invalid_range``, ``absolute``, ``outside``, ``invalid_path``,
    ``not_found``, ``directory``, ``not_regular``, ``io`` or ``line_out_of_range``; for an item
    the check could not finish, ``timeout`` (the deadline passed) or ``too_large`` (the check's
    64 MiB read budget ran out)."""
    message: str
    """A sentence for the model or the user."""


class ToolError(TypedDict, total=False):
    """The ``error`` member of an error envelope."""

    code: str
    """NOT_FOUND, ACCESS_DENIED, PERMISSION_DENIED, INVALID_PARAM, TIMEOUT, INTERNAL_ERROR, ..."""
    message: str


class ToolEnvelope(TypedDict, total=False):
    """What a tool returns to the model: ``status`` is success, partial or error."""

    status: str
    data: dict[str, Any]
    text: str
    stats: dict[str, Any]
    context: dict[str, Any]
    error: ToolError


class TaskStats(TypedDict, total=False):
    """The ``stats`` member of a Task envelope."""

    time_ms: int
    tool_calls: int
    token_usage: int
    input_tokens: int
    output_tokens: int
    model_calls: int
    """The child's model calls (the framework tools add them to the parent's request count)."""
    model: str
    """The route the child used: ``light``, ``main`` or ``offline``."""


class TaskData(TypedDict, total=False):
    """The ``data`` member of a Task envelope: the child's launch, as far as it got."""

    status: Literal["completed", "partial", "failed", "unverified"]
    profile: str
    child_session_id: str
    child_run_id: str
    result: dict[str, Any] | None
    """The child's :class:`~outrider.ExploreResult` (or verdict, or ``output_schema`` object) as
    a dict; in the compact envelope (the default) without the ``summary`` that ``text``
    carries."""
    ungrounded_evidence: list[EvidenceCheck]
    """Evidence not found in the files (status ``unverified``)."""
    output_schema: str
    """The name of the ``output_schema`` the result follows, when one was used."""
    note: str
    """Why an ``output_schema`` result is not completed, when it is not."""
    evidence: list[str]
    """With an ``output_schema``: the ``path:line`` items the answer cites, kept beside the
    object (which need not hold them)."""
    schema_errors: list[str]
    """With an ``output_schema``: how the answer did not fit it (``result`` is then the object
    as written)."""


class TaskError(ToolError, total=False):
    """The ``error`` member of a Task envelope: for a failed child, what it did before it
    failed stays visible to the parent."""

    child_session_id: str
    terminal_reason: str
    failure_reason: str | None
    tool_usage: dict[str, int]
    token_usage: int
    input_tokens: int
    output_tokens: int
    model_calls: int
    trace_path: str | None
    permission: dict[str, Any]


class _TaskEnvelopeBase(TypedDict):
    status: Literal["success", "partial", "unverified", "error"]
    """``success`` (a completed or partial answer), ``unverified`` (its evidence is not in the
    files) or ``error`` (bad arguments, or the child failed)."""
    text: str
    """What the main model reads: the summary, or the error."""
    stats: TaskStats


class TaskEnvelope(_TaskEnvelopeBase, total=False):
    """What :meth:`outrider.TaskTool.run` returns: the Task tool's standard envelope."""

    data: TaskData
    error: TaskError
    context: dict[str, Any]
    """``{cwd, params_input}``: only with ``TaskTool(..., reference_format=True)``."""


TraceEventName = Literal[
    "run_start",
    "user_input",
    "context_compaction",
    "model_output",
    "model_error",
    "empty_response_retry",
    "tool_call",
    "tool_result",
    "completion_gate_verdict",
    "wrap_up",
    "terminal",
    "run_end",
    "session_summary",
    "subagent_requested",
    "subagent_started",
    "subagent_completed",
    "subagent_failed",
]
"""The names of trace events: the core's ``EventKind`` (``outrider._core._TRACE_EVENTS``, which
``tests/test_trace.py`` checks this list against). A trace file written by another version of
outrider may hold a name not listed here: :meth:`outrider.Trace.load` keeps it as written."""


class TraceEvent(TypedDict):
    """One trace event: one line of a JSONL trace, as it is written.

    The one shape of an event, wherever it comes from: what ``on_event`` receives and
    ``stream()`` yields as the run goes, and what :meth:`outrider.Trace.load` reads back from the
    trace file (``Trace.events``, ``TraceStep.events``). The live event and the loaded event of one
    line are equal dicts, and ``json.dumps(event)`` is that line's JSON. Every value is plain
    JSON: ``outrider.trace.event_time(event)`` parses ``ts`` into a ``datetime``.
    """

    ts: str
    """When the event was written: UTC, ISO 8601 with milliseconds and a ``Z``
    (``2026-12-03T10:00:00.123Z``), exactly as in the file."""
    session_id: str
    """The session that wrote it (``child-...`` or ``main-...``)."""
    step: int
    """The loop step (model call) it belongs to; 0 before the first call and for a parent's
    ``subagent_*`` events."""
    event: TraceEventName
    """``run_start``, ``model_output``, ``tool_call``, ``tool_result``, ``terminal``, ..."""
    payload: dict[str, Any]
    """The event's redacted fields (which ones depends on ``event``)."""


TerminalReason: TypeAlias = Literal[
    "completed",
    "completed_unverified",
    "empty_response_failed",
    "completion_gate_blocked",
    "max_steps",
    "token_budget",
    "model_error",
    "timeout",
    "cancelled",
    "context_budget",
    "rate_limited",
    "runtime_error",
]
"""Why a child stopped: the core's ``TerminalReason`` (``outrider._core._TERMINAL_REASONS``,
checked against this list by ``tests/test_trace.py``). ``runtime_error`` is what every failed child reports (as the reference
does); ``SubagentLaunchResult.failure_reason`` then holds one of the others."""


OnEvent = Callable[[TraceEvent], object] | Callable[[dict[str, Any]], object]
"""An ``on_event`` callable: called once per trace event, as it happens, on an outrider worker
thread (keep it quick; hand events to asyncio with ``loop.call_soon_threadsafe``). An exception it
raises is logged as a warning on the ``outrider`` logger and the run goes on."""

ModelCallable = Callable[[dict[str, Any]], Any]
"""A model: takes the chat-completions request dict; returns a ChatCompletion-shaped dict, an
object with ``model_dump()``, a short ``{content, tool_calls, usage, finish_reason}`` dict, a str,
or an awaitable of one of these."""


class ChatCompletionsClient(Protocol):
    """An OpenAI SDK client (``openai.OpenAI``, ``AsyncOpenAI``, Azure's): a launcher takes it
    as a model, through :func:`outrider.adapters.openai`, with ``main_model``/``light_model``
    naming the model."""

    @property
    def chat(self) -> Any: ...


class MessagesClient(Protocol):
    """An Anthropic SDK client (``anthropic.Anthropic``, ``AsyncAnthropic``): a launcher takes
    it as a model, through :func:`outrider.adapters.anthropic`, with ``main_model`` /
    ``light_model`` naming the model."""

    @property
    def messages(self) -> Any: ...


ModelClient: TypeAlias = ChatCompletionsClient | MessagesClient
"""An SDK client a launcher takes as a model (its bound ``create`` is taken too, as a
callable)."""

OutputSchema = type[Any] | Mapping[str, Any]
"""An ``output_schema``: a pydantic model class (answers checked by pydantic, returned as its
instances) or a JSON-schema dict (checked by outrider's core, returned as dicts), describing an
object. The child answers your object with outrider's ``evidence`` (``"path:line"`` strings) and
``status`` beside its fields; your schema need not declare them (one it declares is shared)."""


class ModelSettings(TypedDict, total=False):
    """What every request of a launcher or main agent carries (``model_settings=``)."""

    model: str
    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    extra_body: dict[str, Any]


__all__ = [
    "ChatCompletionsClient",
    "EvidenceCheck",
    "MessagesClient",
    "ModelCallable",
    "ModelClient",
    "ModelSettings",
    "OnEvent",
    "OutputSchema",
    "TaskData",
    "TaskEnvelope",
    "TaskError",
    "TaskStats",
    "TerminalReason",
    "ToolEnvelope",
    "ToolError",
    "TraceEvent",
    "TraceEventName",
]

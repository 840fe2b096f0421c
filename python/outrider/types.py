"""Typed shapes of the plain dicts outrider returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypedDict


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


TerminalReason = Literal[
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
"""Why a child stopped. ``runtime_error`` is what every failed child reports (as the reference
does); ``SubagentLaunchResult.failure_reason`` then holds one of the others."""


class TraceEvent(TypedDict):
    """One trace event, as a line of the JSONL trace holds it and as ``on_event`` receives it."""

    ts: str
    """UTC ISO 8601 with milliseconds, e.g. ``2026-12-03T10:30:55.176Z``."""
    session_id: str
    """``child-<32 hex>`` for a child, ``main-<32 hex>`` for a main agent."""
    step: int
    """The step (0 outside the loop)."""
    event: str
    """``run_start``, ``user_input``, ``model_output``, ``tool_call``, ``tool_result``,
    ``completion_gate_verdict``, ``terminal``, ``run_end``, ``session_summary``,
    ``subagent_completed``, ... (secrets are redacted from the payload)."""
    payload: dict[str, Any]


OnEvent = Callable[[TraceEvent], object] | Callable[[dict[str, Any]], object]
"""An ``on_event`` callable: called once per trace event, as it happens, on an outrider worker
thread (keep it quick; hand events to asyncio with ``loop.call_soon_threadsafe``). An exception it
raises is logged as a warning on the ``outrider`` logger and the run goes on."""

ModelCallable = Callable[[dict[str, Any]], Any]
"""A model: takes the chat-completions request dict; returns a ChatCompletion-shaped dict, an
object with ``model_dump()``, a short ``{content, tool_calls, usage, finish_reason}`` dict, a str,
or an awaitable of one of these."""

__all__ = [
    "EvidenceCheck",
    "ModelCallable",
    "OnEvent",
    "TerminalReason",
    "ToolEnvelope",
    "ToolError",
    "TraceEvent",
]

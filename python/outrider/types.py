"""Typed shapes of the plain dicts outrider returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias, TypedDict


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
"""Why a child stopped. ``runtime_error`` is what every failed child reports (as the reference
does); ``SubagentLaunchResult.failure_reason`` then holds one of the others."""

ModelCallable = Callable[[dict[str, Any]], Any]
"""A model: takes the chat-completions request dict; returns a ChatCompletion-shaped dict, an
object with ``model_dump()``, a short ``{content, tool_calls, usage, finish_reason}`` dict, a str,
or an awaitable of one of these."""

__all__ = ["EvidenceCheck", "ModelCallable", "TerminalReason", "ToolEnvelope", "ToolError"]

"""Read a child's (or a main agent's) JSONL trace back into Python.

    trace = outrider.Trace.load(result.trace_path)
    trace.terminal_reason, trace.token_usage, trace.tool_usage
    for step in trace.steps: ...            # grouped by step, each with its tool calls
    trace.tool_calls[0].args, trace.tool_calls[0].status
    trace.children                          # a main agent's children, loaded on first use
    trace.to_pandas()                       # one row per event, timestamps parsed (needs pandas)

Every line of a trace is one event, ``{"ts", "session_id", "step", "event", "payload"}``. A last
line cut short (the writer was stopped mid-write) is skipped and reported in :attr:`Trace.truncated`;
any other line that is not an event is an error naming the file and line.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypedDict

from outrider.exceptions import TraceError

if TYPE_CHECKING:
    import pandas as _pandas  # private, so stubtest does not look for it at runtime

__all__ = [
    "RECORD_COLUMNS",
    "Trace",
    "TraceChild",
    "TraceEvent",
    "TraceRecord",
    "TraceStep",
    "TraceToolCall",
    "describe",
]


class TraceEvent(TypedDict):
    """One line of a trace, its timestamp parsed."""

    ts: datetime
    """When the event was written (timezone-aware, UTC)."""
    session_id: str
    """The session that wrote it (``child-...`` or ``main-...``)."""
    step: int
    """The step (model call) it belongs to; 0 before the first call and for a parent's
    ``subagent_*`` events."""
    event: str
    """``run_start``, ``model_output``, ``tool_call``, ``tool_result``, ``terminal``, ..."""
    payload: dict[str, Any]
    """The event's fields (see the trace format in the README)."""


class TraceRecord(TypedDict):
    """One event as a flat row: :meth:`Trace.to_records` / :meth:`Trace.to_pandas`."""

    ts: datetime
    elapsed_ms: float
    """Milliseconds since the trace's first event."""
    session_id: str
    step: int
    event: str
    tool: str | None
    """The tool, for ``tool_call`` and ``tool_result``."""
    tool_call_id: str | None
    status: str | None
    """A tool result's status, the gate's verdict, the terminal reason, or a child's outcome."""
    prompt_tokens: int | None
    """For ``model_output``."""
    completion_tokens: int | None
    total_tokens: int | None
    child_session_id: str | None
    """For a parent's ``subagent_*`` events."""
    detail: str
    """A one-line description (what ``outrider trace`` prints)."""
    payload: dict[str, Any]


RECORD_COLUMNS: tuple[str, ...] = tuple(TraceRecord.__annotations__)
"""The columns of :meth:`Trace.to_pandas`, in order."""

_SUBAGENT_EVENTS = (
    "subagent_requested",
    "subagent_started",
    "subagent_completed",
    "subagent_failed",
)


@dataclass(frozen=True)
class TraceToolCall:
    """A tool call and its result, joined by call id."""

    step: int
    tool: str
    tool_call_id: str
    args: Any
    """The arguments (a dict when they were JSON, else the raw text)."""
    started: datetime
    status: str | None = None
    """``success``, ``partial`` or ``error``; None when the trace holds no result."""
    error_code: str | None = None
    result: dict[str, Any] | None = None
    """The whole envelope the model saw."""
    finished: datetime | None = None

    @property
    def elapsed_ms(self) -> float | None:
        """From the call to its result (the trace's millisecond resolution)."""
        if self.finished is None:
            return None
        return (self.finished - self.started).total_seconds() * 1000


class _Span:
    """Timing of something made of trace events, from its first event to its last."""

    events: Sequence[TraceEvent]

    @property
    def started(self) -> datetime:
        return self.events[0]["ts"]

    @property
    def ended(self) -> datetime:
        return self.events[-1]["ts"]

    @property
    def elapsed_ms(self) -> float:
        """From the first event to the last."""
        return (self.ended - self.started).total_seconds() * 1000


@dataclass(frozen=True)
class TraceStep(_Span):
    """The events of one step: a model answer and the tool calls it asked for."""

    number: int
    events: tuple[TraceEvent, ...]
    tool_calls: tuple[TraceToolCall, ...] = ()

    @property
    def model_output(self) -> dict[str, Any] | None:
        """The payload of the step's (last) ``model_output`` event."""
        found = [e["payload"] for e in self.events if e["event"] == "model_output"]
        return found[-1] if found else None

    @property
    def text(self) -> str:
        """The model's answer text in this step ("" for a tool-call turn)."""
        out = self.model_output
        raw = out.get("raw") if out else None
        return raw if isinstance(raw, str) else ""

    @property
    def total_tokens(self) -> int:
        """Tokens of this step's model calls, as reported or estimated."""
        return sum(
            _int(e["payload"].get("usage", {}).get("total_tokens"))
            for e in self.events
            if e["event"] == "model_output" and isinstance(e["payload"].get("usage"), dict)
        )


@dataclass(frozen=True)
class TraceChild:
    """A child a parent trace refers to (from its ``subagent_*`` events)."""

    session_id: str
    profile: str | None
    model: str | None
    trace_path: str | None
    """As the parent recorded it; None when the child's trace was kept in memory."""
    outcome: str | None
    """``completed``, ``partial``, ``unverified`` or ``failed``; None when the parent's trace
    ends before the child did."""
    terminal_reason: str | None
    elapsed_ms: int | None
    token_usage: int | None
    tool_usage: dict[str, int] = field(default_factory=dict)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _parse_ts(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"ts must be an ISO 8601 string, got {value!r}")
    # Python 3.10's fromisoformat does not take the "Z" the writer uses.
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    ts = datetime.fromisoformat(text)
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def _event(obj: Any) -> TraceEvent:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in ("ts", "session_id", "step", "event", "payload") if k not in obj]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    step, event, payload, session = obj["step"], obj["event"], obj["payload"], obj["session_id"]
    if not isinstance(step, int) or isinstance(step, bool):
        raise ValueError(f"step must be an integer, got {step!r}")
    if not isinstance(event, str) or not isinstance(session, str):
        raise ValueError("event and session_id must be strings")
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ValueError(f"payload must be an object, got {type(payload).__name__}")
    return TraceEvent(
        ts=_parse_ts(obj["ts"]), session_id=session, step=step, event=event, payload=payload
    )


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def describe(event: TraceEvent) -> str:
    """A one-line description of an event (plain text, not escaped)."""
    name, p = event["event"], event["payload"]
    if name == "run_start":
        return f"{p.get('profile')} on {p.get('model')}, {p.get('max_steps')} steps, tools {', '.join(map(str, p.get('tools') or []))}"
    if name == "user_input":
        return _short(p.get("content", ""), 120)
    if name == "model_output":
        calls = p.get("tool_calls") or []
        usage = p.get("usage") or {}
        tokens = f"  [{usage.get('total_tokens', '?')} tokens]"
        if calls:
            return (
                "calls "
                + ", ".join(
                    f"{c.get('name')}({_short(c.get('arguments', ''), 60)})"
                    for c in calls
                    if isinstance(c, dict)
                )
                + tokens
            )
        return f"answer {_short(p.get('raw', ''), 100)}{tokens}"
    if name == "tool_call":
        return f"{p.get('tool')} {_short(p.get('args', {}), 100)}"
    if name == "tool_result":
        code = p.get("error_code")
        result = p.get("result")
        text = result.get("text") if isinstance(result, dict) else None
        return (
            f"{p.get('tool')} → {p.get('status')}"
            + (f" {code}" if code else "")
            + (f": {_short(text, 90)}" if isinstance(text, str) and text else "")
        )
    if name == "completion_gate_verdict":
        extra = p.get("feedback") or (f"repair {p['repair']}" if p.get("repair") else "")
        return f"{p.get('verdict')}" + (f": {_short(extra, 100)}" if extra else "")
    if name in ("terminal", "wrap_up"):
        details = p.get("details") or {}
        err = details.get("error") if isinstance(details, dict) else None
        return f"{p.get('reason')}" + (f": {_short(err, 100)}" if err else "")
    if name == "model_error":
        return f"{p.get('kind')}: {_short(p.get('message', ''), 100)}"
    if name in _SUBAGENT_EVENTS:
        outcome = p.get("verdict") or p.get("failure_reason") or ""
        return f"{p.get('child_session_id')} ({p.get('profile')}) {outcome}".rstrip()
    if name == "session_summary":
        usage = p.get("total_usage") or {}
        return f"{p.get('steps')} steps, {p.get('tools_used')} tool calls, {usage.get('total_tokens', '?')} tokens"
    if name == "run_end":
        return f"{p.get('model_calls')} model calls"
    return _short(p, 120)


def _status(event: TraceEvent) -> str | None:
    name, p = event["event"], event["payload"]
    value: Any = None
    if name == "tool_result":
        value = p.get("status")
    elif name == "completion_gate_verdict":
        value = p.get("verdict")
    elif name in ("terminal", "wrap_up"):
        value = p.get("reason")
    elif name in ("subagent_completed", "subagent_failed"):
        value = p.get("verdict") or p.get("failure_reason") or p.get("terminal_reason")
    elif name == "model_error":
        value = p.get("kind")
    return value if isinstance(value, str) else None


class Trace(_Span):
    """A trace file, read: its events, grouped into steps, its tool calls and its children.

    Build one with :meth:`load`. Attributes are computed from :attr:`events` on first use.
    """

    def __init__(
        self,
        events: Sequence[TraceEvent],
        *,
        path: str | os.PathLike[str] | None = None,
        truncated: bool = False,
        skipped_line: int | None = None,
    ) -> None:
        self.events: list[TraceEvent] = list(events)
        """Every event, in file order."""
        self.path: pathlib.Path | None = pathlib.Path(path) if path is not None else None
        """The file it was read from."""
        self.truncated = truncated
        """True when the last line was cut short (the writer stopped mid-line) and skipped."""
        self.skipped_line = skipped_line
        """The 1-based number of the skipped line, when :attr:`truncated`."""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a ``trace-*.jsonl`` file.

        Raises :class:`outrider.TraceError` when the file cannot be read, holds no event, or a
        line other than a cut-short last one is not a trace event.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path: expected a str or os.PathLike, got {type(path).__name__}")
        p = pathlib.Path(path)
        try:
            data = p.read_bytes()
        except OSError as err:
            raise TraceError(
                f"cannot read trace '{p}': {err.strerror or err}", path=str(p)
            ) from err
        lines = data.split(b"\n")
        last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        events: list[TraceEvent] = []
        truncated, skipped = False, None
        for i, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                if i == last and events:
                    truncated, skipped = True, i + 1
                    break
                what = "UTF-8 text" if isinstance(err, UnicodeDecodeError) else "JSON"
                raise TraceError(
                    f"'{p}' line {i + 1} is not a trace event: not {what} ({err}); "
                    "expected one JSON object per line with ts, session_id, step, event and payload",
                    path=str(p),
                    line=i + 1,
                ) from err
            try:
                events.append(_event(obj))
            except ValueError as err:
                raise TraceError(
                    f"'{p}' line {i + 1} is not a trace event: {err}; "
                    "expected one JSON object per line with ts, session_id, step, event and payload",
                    path=str(p),
                    line=i + 1,
                ) from err
        if not events:
            raise TraceError(f"'{p}' holds no trace events (the file is empty)", path=str(p))
        return cls(events, path=p, truncated=truncated, skipped_line=skipped)

    # --- what the run was -------------------------------------------------------------------

    def _payload(self, name: str, *, last: bool = False) -> dict[str, Any] | None:
        seq = reversed(self.events) if last else iter(self.events)
        return next((e["payload"] for e in seq if e["event"] == name), None)

    @property
    def session_id(self) -> str:
        return self.events[0]["session_id"]

    @property
    def profile(self) -> str | None:
        """The profile name from ``run_start`` (``explore``, ``main``, ...)."""
        start = self._payload("run_start")
        value = start.get("profile") if start else None
        return value if isinstance(value, str) else None

    @property
    def model(self) -> str | None:
        start = self._payload("run_start")
        value = start.get("model") if start else None
        return value if isinstance(value, str) else None

    @property
    def task(self) -> str | None:
        """The rendered task from ``user_input``."""
        found = self._payload("user_input")
        value = found.get("content") if found else None
        return value if isinstance(value, str) else None

    @property
    def terminal_reason(self) -> str | None:
        """Why the run stopped; None when the trace ends before it did."""
        found = self._payload("terminal", last=True)
        value = found.get("reason") if found else None
        return value if isinstance(value, str) else None

    @property
    def error(self) -> str | None:
        found = self._payload("terminal", last=True)
        details = found.get("details") if found else None
        value = details.get("error") if isinstance(details, dict) else None
        return value if isinstance(value, str) else None

    @property
    def final_text(self) -> str | None:
        """The last answer that asked for no tool."""
        for e in reversed(self.events):
            p = e["payload"]
            if e["event"] == "model_output" and not p.get("tool_calls"):
                raw = p.get("raw")
                return raw if isinstance(raw, str) else None
        return None

    @property
    def model_calls(self) -> int:
        return sum(1 for e in self.events if e["event"] == "model_output")

    @property
    def usage(self) -> dict[str, int]:
        """Summed ``prompt_tokens``, ``completion_tokens`` and ``total_tokens`` of every model
        answer (reported or estimated)."""
        total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for e in self.events:
            usage = e["payload"].get("usage") if e["event"] == "model_output" else None
            if isinstance(usage, dict):
                for key in total:
                    total[key] += _int(usage.get(key))
        return total

    @property
    def token_usage(self) -> int:
        return self.usage["total_tokens"]

    @property
    def usage_estimated(self) -> bool:
        return any(
            e["event"] == "model_output" and e["payload"].get("usage_estimated") is True
            for e in self.events
        )

    @property
    def tool_usage(self) -> dict[str, int]:
        """Tool calls by tool name, sorted by name."""
        counts: dict[str, int] = {}
        for call in self.tool_calls:
            counts[call.tool] = counts.get(call.tool, 0) + 1
        return dict(sorted(counts.items()))

    # --- structure ----------------------------------------------------------------------------

    @functools.cached_property
    def tool_calls(self) -> list[TraceToolCall]:
        """Every tool call in order, each joined with its result (same step and call id)."""
        calls: list[TraceToolCall] = []
        open_calls: dict[tuple[int, str], int] = {}
        for e in self.events:
            p = e["payload"]
            if e["event"] == "tool_call":
                call_id = str(p.get("tool_call_id", ""))
                open_calls[(e["step"], call_id)] = len(calls)
                calls.append(
                    TraceToolCall(
                        step=e["step"],
                        tool=str(p.get("tool", "")),
                        tool_call_id=call_id,
                        args=p.get("args"),
                        started=e["ts"],
                    )
                )
            elif e["event"] == "tool_result":
                key = (e["step"], str(p.get("tool_call_id", "")))
                index = open_calls.pop(key, None)
                if index is None:
                    continue
                result = p.get("result")
                code = p.get("error_code")
                status = p.get("status")
                calls[index] = TraceToolCall(
                    step=calls[index].step,
                    tool=calls[index].tool,
                    tool_call_id=calls[index].tool_call_id,
                    args=calls[index].args,
                    started=calls[index].started,
                    status=status if isinstance(status, str) else None,
                    error_code=code if isinstance(code, str) else None,
                    result=result if isinstance(result, dict) else None,
                    finished=e["ts"],
                )
        return calls

    @functools.cached_property
    def steps(self) -> list[TraceStep]:
        """The events grouped by step, in order. Step 0 is the setup (``run_start``,
        ``user_input``). A parent writes its ``subagent_*`` events with step 0; they are placed
        in the step that was running when they were written."""
        groups: dict[int, list[TraceEvent]] = {}
        current = 0
        for e in self.events:
            number = e["step"]
            if number > 0:
                current = number
            elif e["event"] in _SUBAGENT_EVENTS:
                number = current
            groups.setdefault(number, []).append(e)
        by_step: dict[int, list[TraceToolCall]] = {}
        for call in self.tool_calls:
            by_step.setdefault(call.step, []).append(call)
        return [
            TraceStep(number=n, events=tuple(evs), tool_calls=tuple(by_step.get(n, ())))
            for n, evs in sorted(groups.items())
        ]

    @functools.cached_property
    def child_refs(self) -> list[TraceChild]:
        """The children this (parent) trace launched, in the order they were asked for."""
        found: dict[str, dict[str, Any]] = {}
        outcomes: dict[str, str] = {}
        for e in self.events:
            if e["event"] not in _SUBAGENT_EVENTS:
                continue
            child = e["payload"].get("child_session_id")
            if not isinstance(child, str):
                continue
            found.setdefault(child, {}).update(
                {k: v for k, v in e["payload"].items() if v is not None}
            )
            if e["event"] == "subagent_completed":
                verdict = e["payload"].get("verdict")
                outcomes[child] = verdict if isinstance(verdict, str) else "completed"
            elif e["event"] == "subagent_failed":
                outcomes[child] = "failed"
        refs = []
        for child, p in found.items():
            reason = p.get("failure_reason") or p.get("terminal_reason")
            usage = p.get("tool_usage")
            refs.append(
                TraceChild(
                    session_id=child,
                    profile=p.get("profile") if isinstance(p.get("profile"), str) else None,
                    model=p.get("model") if isinstance(p.get("model"), str) else None,
                    trace_path=p.get("trace_path")
                    if isinstance(p.get("trace_path"), str)
                    else None,
                    outcome=outcomes.get(child),
                    terminal_reason=reason if isinstance(reason, str) else None,
                    elapsed_ms=p.get("elapsed_ms")
                    if isinstance(p.get("elapsed_ms"), int)
                    else None,
                    token_usage=p.get("token_usage")
                    if isinstance(p.get("token_usage"), int)
                    else None,
                    tool_usage=dict(usage) if isinstance(usage, dict) else {},
                )
            )
        return refs

    def _child_file(self, ref: TraceChild) -> pathlib.Path:
        if ref.trace_path is None:
            raise TraceError(
                f"child {ref.session_id} has no trace file (its trace was kept in memory)"
            )
        recorded = pathlib.Path(ref.trace_path)
        if not recorded.is_absolute() and self.path is not None:
            recorded = self.path.parent / recorded
        # Traces copied or moved together keep working: fall back to a file of the same name
        # beside the parent.
        beside = self.path.parent / recorded.name if self.path is not None else None
        if not recorded.exists() and beside is not None and beside.exists():
            return beside
        return recorded

    @functools.cached_property
    def children(self) -> list[Trace]:
        """The children's traces, loaded on first use (from the recorded path, or a file of the
        same name beside this trace). Raises :class:`outrider.TraceError` for a child whose
        trace cannot be read."""
        return [Trace.load(self._child_file(ref)) for ref in self.child_refs]

    # --- export ------------------------------------------------------------------------------

    def to_records(self) -> list[TraceRecord]:
        """One flat dict per event (columns :data:`RECORD_COLUMNS`), for tables and dataframes."""
        start = self.started
        rows: list[TraceRecord] = []
        for e in self.events:
            p = e["payload"]
            usage = p.get("usage") if e["event"] == "model_output" else None
            usage = usage if isinstance(usage, dict) else None
            tool = p.get("tool") if e["event"] in ("tool_call", "tool_result") else None
            call_id = p.get("tool_call_id")
            child = p.get("child_session_id") if e["event"] in _SUBAGENT_EVENTS else None
            rows.append(
                TraceRecord(
                    ts=e["ts"],
                    elapsed_ms=(e["ts"] - start).total_seconds() * 1000,
                    session_id=e["session_id"],
                    step=e["step"],
                    event=e["event"],
                    tool=tool if isinstance(tool, str) else None,
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                    status=_status(e),
                    prompt_tokens=_opt_int(usage, "prompt_tokens"),
                    completion_tokens=_opt_int(usage, "completion_tokens"),
                    total_tokens=_opt_int(usage, "total_tokens"),
                    child_session_id=child if isinstance(child, str) else None,
                    detail=describe(e),
                    payload=p,
                )
            )
        return rows

    def to_pandas(self) -> _pandas.DataFrame:
        """:meth:`to_records` as a ``pandas.DataFrame`` (``ts`` as ``datetime64[..., UTC]``).

        pandas is imported here, so outrider does not need it otherwise.
        """
        try:
            import pandas as pd
        except ImportError as err:
            raise ImportError(
                "Trace.to_pandas() needs pandas, which is not installed: "
                "pip install 'outrider[jupyter]' (or pandas)"
            ) from err
        frame = pd.DataFrame.from_records(self.to_records(), columns=list(RECORD_COLUMNS))
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
        return frame

    def _repr_html_(self) -> str:
        from outrider._display import trace_html

        return trace_html(self)

    def _repr_markdown_(self) -> str:
        from outrider._display import trace_md

        return trace_md(self)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        return (self.events, self.truncated, self.skipped_line) == (
            other.events,
            other.truncated,
            other.skipped_line,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        cut = f", truncated at line {self.skipped_line}" if self.truncated else ""
        return (
            f"Trace({self.session_id!r}, events={len(self.events)}, steps={max((s.number for s in self.steps), default=0)}, "
            f"terminal_reason={self.terminal_reason!r}, tool_usage={self.tool_usage}{cut})"
        )


def _opt_int(usage: dict[str, Any] | None, key: str) -> int | None:
    value = usage.get(key) if usage else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None

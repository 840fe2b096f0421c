"""Read a child's (or a main agent's) JSONL trace back into Python.

    trace = outrider.Trace.load(result.trace_path)
    trace.terminal_reason, trace.token_usage, trace.tool_usage
    for step in trace.steps: ...            # grouped by step, each with its tool calls
    trace.tool_calls[0].args, trace.tool_calls[0].status
    trace.children                          # a main agent's children, loaded on first use
    trace.to_pandas()                       # one row per event, timestamps parsed (needs pandas)

Every line of a trace is one event, ``{"ts", "session_id", "step", "event", "payload"}``, read as
the :class:`outrider.types.TraceEvent` that ``on_event`` and ``stream()`` give while the run goes:
the same dict, ``ts`` the ISO 8601 string of the line (:func:`event_time` parses it; the records,
the tool calls and the elapsed times hold parsed datetimes). A last line cut short (the writer was
stopped mid-write) is skipped and reported in :attr:`Trace.truncated`; any other line that is not
an event is an error naming the file and line, or, with ``Trace.load(path, skip_bad_lines=True)``
(what ``outrider trace`` does), skipped and listed in :attr:`Trace.bad_lines`.

A trace is read as untrusted input: only a regular file is opened (a FIFO, a device or a directory
is refused without being read or waited on), at most :data:`MAX_TRACE_BYTES` of it, and a line may
nest at most :data:`MAX_DEPTH` levels. Every failure is a :class:`outrider.TraceError` naming the
file (and the line). A path read from data (a parent trace's record of a child, a result rebuilt
with ``from_dict``) is only followed to a file named as outrider names traces
(``trace-child-<32 hex digits>.jsonl``) that holds the session it should.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import pathlib
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypedDict, cast

from outrider import _core
from outrider._views import Viewed
from outrider.exceptions import ArgumentTypeError, ConfigError, MissingExtraError, TraceError
from outrider.types import TraceEvent, TraceEventName

if TYPE_CHECKING:
    import pandas as _pandas  # private, so stubtest does not look for it at runtime

__all__ = [
    "MAX_BAD_LINES",
    "MAX_DEPTH",
    "MAX_TRACE_BYTES",
    "RECORD_COLUMNS",
    "Trace",
    "TraceChild",
    "TraceEvent",
    "TraceRecord",
    "TraceStep",
    "TraceToolCall",
    "describe",
    "event_time",
]


class TraceRecord(TypedDict):
    """One event as a flat row: :meth:`Trace.to_records` / :meth:`Trace.to_pandas`."""

    ts: datetime
    """The event's ``ts``, parsed (:func:`event_time`; timezone-aware)."""
    elapsed_ms: float
    """Milliseconds since the trace's first event."""
    session_id: str
    step: int
    event: TraceEventName
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

MAX_TRACE_BYTES = 256 * 1024 * 1024
"""The largest trace file :meth:`Trace.load` reads unless given ``max_bytes`` (256 MiB)."""
MAX_DEPTH = 256
"""How many levels a trace line may nest (objects and arrays). outrider writes events a few
levels deep around the model's tool arguments, which are themselves bounded; a deeper line is
refused before anything recurses into it."""
_MAX_INT = 2**63
"""Counts and steps beyond this are not counts (they are shown as unknown, or refused)."""
_TRACE_NAME = re.compile(r"trace-(?:child|main)-[0-9a-f]{32}\.jsonl")
_FILE_KINDS = (
    (stat.S_ISDIR, os.strerror(errno.EISDIR)),
    (stat.S_ISFIFO, "Is a FIFO (named pipe)"),
    (stat.S_ISCHR, "Is a character device"),
    (stat.S_ISBLK, "Is a block device"),
    (stat.S_ISSOCK, "Is a socket"),
)
_NON_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")
MAX_BAD_LINES = 20
"""Lines that are not events a trace read with ``skip_bad_lines=True`` lists one by one (the
others are counted in :attr:`Trace.bad_line_count`)."""
_EXPECTED = "expected one JSON object per line with ts, session_id, step, event and payload"

# The event names are the core's (``_core._TRACE_EVENTS``); a parent's record of a child is
# every ``subagent_*`` one.
_SUBAGENT_EVENTS = tuple(e for e in _core._TRACE_EVENTS if e.startswith("subagent_"))


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
        """When the first event was written (timezone-aware)."""
        return event_time(self.events[0])

    @property
    def ended(self) -> datetime:
        """When the last event was written (timezone-aware)."""
        return event_time(self.events[-1])

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


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_MAX_INT < value < _MAX_INT


def _int(value: Any) -> int:
    return value if _is_count(value) else 0


def _brief(value: Any, width: int = 80) -> str:
    """``repr(value)``, cut to ``width`` characters: what an error message may echo of a file."""
    if isinstance(value, (dict, list)) and len(value) > width:
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, str) and len(value) > width * 4:
        value = value[: width * 4]
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _quote(path: Any) -> str:
    """A path for a message: quoted with its control characters escaped, and bounded."""
    return _brief(str(path), 300)


def event_time(event: TraceEvent) -> datetime:
    """When ``event`` was written: its ``ts`` parsed into a timezone-aware ``datetime`` (UTC when
    the text names no offset). Takes an event from ``on_event``, ``stream()`` or a loaded
    :class:`Trace` alike::

        def on_event(event: outrider.types.TraceEvent) -> None:
            print(event_time(event).strftime("%H:%M:%S.%f")[:-3], event["event"])

    Raises ``ValueError`` when ``ts`` is not an ISO 8601 timestamp.
    """
    return _parse_ts(event["ts"])


def _parse_ts(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"ts must be an ISO 8601 string, got {_brief(value)}")
    if len(value) > 64:
        raise ValueError(
            f"ts must be an ISO 8601 timestamp, got a string of {len(value)} characters"
        )
    # Python 3.10's fromisoformat does not take the "Z" the writer uses.
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    ts = datetime.fromisoformat(text)
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def _event(obj: Any) -> tuple[TraceEvent, datetime]:
    """A line's object as the event it holds (kept as written: ``ts`` the string, checked to be
    a timestamp, and an event name this version does not know kept as it is), and its time."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in ("ts", "session_id", "step", "event", "payload") if k not in obj]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    step, event, payload, session = obj["step"], obj["event"], obj["payload"], obj["session_id"]
    if not isinstance(step, int) or isinstance(step, bool):
        raise ValueError(f"step must be an integer, got {_brief(step)}")
    if not 0 <= step < _MAX_INT:
        raise ValueError(f"step must be a whole number from 0 to 2**63 - 1, got {_brief(step)}")
    if not isinstance(event, str) or not isinstance(session, str):
        raise ValueError("event and session_id must be strings")
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise ValueError(f"payload must be an object, got {type(payload).__name__}")
    ts = obj["ts"]
    when = _parse_ts(ts)
    # A name from another outrider version is kept: the event is still shown and counted.
    name = cast("TraceEventName", event)
    return TraceEvent(ts=ts, session_id=session, step=step, event=name, payload=payload), when


def _short(value: Any, width: int) -> str:
    """One line of at most ``width`` characters (whitespace runs collapsed) of any JSON value."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    # Collapse only what can be shown: a 60 MB answer is not split into millions of words.
    cut = len(text) > width * 8
    text = " ".join(text[: width * 8].split())
    return text if len(text) <= width and not cut else text[: width - 1] + "…"


def _get(payload: dict[str, Any], key: str, width: int = 60, missing: str = "None") -> str:
    """A payload field as short text, whatever its JSON type (``missing`` when absent or null)."""
    value = payload.get(key)
    return missing if value is None else _short(value, width)


def _mapping(payload: dict[str, Any], key: str) -> dict[str, Any]:
    value = payload.get(key)
    return value if isinstance(value, dict) else {}


def _items(payload: dict[str, Any], key: str) -> list[Any]:
    value = payload.get(key)
    return value if isinstance(value, list) else []


class _CutLine(ValueError):
    """A line that is not UTF-8 JSON: a cut-short last line, or a line that is not an event."""


def _read_regular(p: pathlib.Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, without blocking on what is not
    one (checked before opening, and again on the open descriptor)."""
    name = str(p)

    def refuse(why: str) -> TraceError:
        return TraceError(f"cannot read trace {_quote(name)}: {why}", path=name)

    def check(st: os.stat_result) -> None:
        for test, kind in _FILE_KINDS:
            if test(st.st_mode):
                raise refuse(f"{kind}; a trace is a regular file (trace-*.jsonl)")
        if not stat.S_ISREG(st.st_mode):
            raise refuse("not a regular file; a trace is a regular file (trace-*.jsonl)")
        if st.st_size > max_bytes:
            raise refuse(_too_big(st.st_size, max_bytes))

    flags = os.O_RDONLY
    for flag in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY"):
        flags |= getattr(os, flag, 0)
    try:
        before = os.stat(p)
    except (OSError, ValueError) as err:  # ValueError: an embedded NUL
        raise refuse(getattr(err, "strerror", None) or str(err)) from err
    check(before)
    try:
        fd = os.open(p, flags)
    except OSError as err:
        raise refuse(err.strerror or str(err)) from err
    try:
        check(os.fstat(fd))
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:  # it grew while being read
            raise refuse(_too_big(size, max_bytes))
        return b"".join(chunks)
    except OSError as err:
        raise refuse(err.strerror or str(err)) from err
    finally:
        os.close(fd)


def _too_big(size: int, max_bytes: int) -> str:
    return (
        f"it is {size:,} bytes, more than the {max_bytes:,} a trace may be here "
        "(Trace.load(path, max_bytes=...) reads a larger one)"
    )


def _parse_line(raw: bytes) -> Any:
    """One line as JSON, refused when it nests deeper than :data:`MAX_DEPTH`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _CutLine(f"not UTF-8 text ({err})") from err
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise _CutLine(f"not JSON ({err})") from err
    except RecursionError as err:
        raise ValueError(f"it nests deeper than the {MAX_DEPTH} levels a trace line may") from err
    except ValueError as err:  # a number of more digits than Python converts
        raise ValueError(f"not JSON that Python reads ({err})") from err
    # Only a line with that many brackets can be that deep: most lines are not walked.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _deeper_than(obj, MAX_DEPTH):
        raise ValueError(f"it nests deeper than the {MAX_DEPTH} levels a trace line may")
    return obj


def _deeper_than(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests more than ``limit`` objects and arrays deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > limit:
            return True
        inner = value.values() if isinstance(value, dict) else value
        stack.extend((v, depth + 1) for v in inner if isinstance(v, (dict, list)))
    return False


def _line_error(p: pathlib.Path, number: int, why: str) -> TraceError:
    return TraceError(
        f"{_quote(p)} line {number} is not a trace event: {why}; {_EXPECTED}",
        path=str(p),
        line=number,
    )


def describe(event: TraceEvent) -> str:
    """A one-line description of an event (plain text, not escaped), at most a few hundred
    characters whatever the payload holds; a field of an unexpected type is shown, not an
    error."""
    name, p = event["event"], event["payload"]
    if name == "run_start":
        tools = _items(p, "tools")
        shown = ", ".join(_short(t, 30) for t in tools[:20]) + (", …" if len(tools) > 20 else "")
        return f"{_get(p, 'profile')} on {_get(p, 'model')}, {_get(p, 'max_steps')} steps, tools {shown}"
    if name == "user_input":
        return _short(p.get("content", ""), 120)
    if name == "model_output":
        calls = _items(p, "tool_calls")
        tokens = f"  [{_get(_mapping(p, 'usage'), 'total_tokens', 20, '?')} tokens]"
        if calls:
            more = f", … {len(calls) - 8} more" if len(calls) > 8 else ""
            return (
                "calls "
                + ", ".join(
                    f"{_get(c, 'name', 40)}({_short(c.get('arguments', ''), 60)})"
                    if isinstance(c, dict)
                    else _short(c, 40)
                    for c in calls[:8]
                )
                + more
                + tokens
            )
        return f"answer {_short(p.get('raw', ''), 100)}{tokens}"
    if name == "tool_call":
        return f"{_get(p, 'tool')} {_short(p.get('args', {}), 100)}"
    if name == "tool_result":
        code = p.get("error_code")
        text = _mapping(p, "result").get("text")
        return (
            f"{_get(p, 'tool')} → {_get(p, 'status')}"
            + (f" {_short(code, 40)}" if code else "")
            + (f": {_short(text, 90)}" if isinstance(text, str) and text else "")
        )
    if name == "completion_gate_verdict":
        feedback, repair = p.get("feedback"), p.get("repair")
        extra = (
            _short(feedback, 100)
            if feedback
            else (f"repair {_short(repair, 90)}" if repair else "")
        )
        return _get(p, "verdict") + (f": {_short(extra, 100)}" if extra else "")
    if name in ("terminal", "wrap_up"):
        err = _mapping(p, "details").get("error")
        return _get(p, "reason") + (f": {_short(err, 100)}" if err else "")
    if name == "model_error":
        return f"{_get(p, 'kind')}: {_short(p.get('message', ''), 100)}"
    if name in _SUBAGENT_EVENTS:
        outcome = p.get("verdict") or p.get("failure_reason") or ""
        return (
            f"{_get(p, 'child_session_id')} ({_get(p, 'profile')}) {_short(outcome, 60)}".rstrip()
        )
    if name == "session_summary":
        usage = _mapping(p, "total_usage")
        return f"{_get(p, 'steps')} steps, {_get(p, 'tools_used')} tool calls, {_get(usage, 'total_tokens', 20, '?')} tokens"
    if name == "run_end":
        return f"{_get(p, 'model_calls')} model calls"
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


class Trace(_Span, Viewed):
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
        bad_lines: Sequence[tuple[int, str]] = (),
        bad_line_count: int | None = None,
    ) -> None:
        self.events: list[TraceEvent] = list(events)
        """Every event, in file order, as written (the dicts ``on_event`` receives)."""
        self.path: pathlib.Path | None = pathlib.Path(path) if path is not None else None
        """The file it was read from."""
        self.truncated = truncated
        """True when the last line was cut short (the writer stopped mid-line) and skipped."""
        self.skipped_line = skipped_line
        """The 1-based number of the skipped line, when :attr:`truncated`."""
        self.bad_lines: list[tuple[int, str]] = list(bad_lines)
        """Lines that are not trace events, skipped by ``load(..., skip_bad_lines=True)``: the
        first :data:`MAX_BAD_LINES` of them, each as its 1-based number and why."""
        self.bad_line_count = len(self.bad_lines) if bad_line_count is None else bad_line_count
        """How many lines were skipped as not trace events (all of them)."""

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = MAX_TRACE_BYTES,
        skip_bad_lines: bool = False,
    ) -> Trace:
        """Read a ``trace-*.jsonl`` file.

        Only a regular file is read (a FIFO, device, socket or directory is refused without
        being opened for reading or waited on), and only when it is at most ``max_bytes`` long
        (default :data:`MAX_TRACE_BYTES`). Raises :class:`outrider.TraceError`, naming the file
        and the line, when the file cannot be read, holds no event, or a line other than a
        cut-short last one is not a trace event (not UTF-8 JSON, nested deeper than
        :data:`MAX_DEPTH`, a number beyond what Python reads, a field of the wrong type, a
        ``ts`` that is not an ISO 8601 timestamp). With ``skip_bad_lines=True`` such lines are
        skipped instead and listed in :attr:`bad_lines` (what ``outrider trace`` shows: what
        parses, and what did not); a file none of whose lines is an event is still an error.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentTypeError(
                f"path: expected a str or os.PathLike, got {type(path).__name__}"
            )
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
            raise ArgumentTypeError(f"max_bytes: expected an int, got {type(max_bytes).__name__}")
        if max_bytes < 0:
            raise ConfigError(f"max_bytes: must be at least 0, got {max_bytes}")
        if not isinstance(skip_bad_lines, bool):
            raise ArgumentTypeError(
                f"skip_bad_lines: expected a bool, got {type(skip_bad_lines).__name__}"
            )
        p = pathlib.Path(path)
        data = _read_regular(p, max_bytes)
        events: list[TraceEvent] = []
        times: list[datetime] = []
        truncated, skipped = False, None
        bad: list[tuple[int, str]] = []
        bad_count = 0
        number, pos = 0, 0

        def refused(number: int, err: ValueError) -> TraceError | None:
            """The error a line that is not an event is, or None when it is skipped."""
            nonlocal bad_count
            if not skip_bad_lines:
                return _line_error(p, number, str(err))
            bad_count += 1
            if len(bad) < MAX_BAD_LINES:
                bad.append((number, str(err)[:200]))
            return None

        while pos < len(data):
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            raw, pos, number = data[pos:end], end + 1, number + 1
            if not raw or raw.isspace():
                continue
            try:
                obj = _parse_line(raw)
            except _CutLine as err:
                # Only the last line can be one the writer was stopped in the middle of.
                if events and _NON_SPACE.search(data, pos) is None:
                    truncated, skipped = True, number
                    break
                if (error := refused(number, err)) is not None:
                    raise error from err.__cause__
                continue
            except ValueError as err:
                if (error := refused(number, err)) is not None:
                    raise error from err
                continue
            try:
                event, when = _event(obj)
            except ValueError as err:
                if (error := refused(number, err)) is not None:
                    raise error from err
                continue
            events.append(event)
            times.append(when)
        if not events and bad:
            first, why = bad[0]
            others = f" (nor is any of its other {bad_count - 1})" if bad_count > 1 else ""
            raise _line_error(p, first, f"{why}{others}")
        if not events:
            raise TraceError(f"{_quote(p)} holds no trace events (the file is empty)", path=str(p))
        trace = cls(
            events,
            path=p,
            truncated=truncated,
            skipped_line=skipped,
            bad_lines=bad,
            bad_line_count=bad_count,
        )
        trace.__dict__["_times"] = times  # parsed once, while checking each line
        return trace

    @functools.cached_property
    def _times(self) -> list[datetime]:
        """Each event's :func:`event_time`, in order."""
        return [event_time(e) for e in self.events]

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
        for e, when in zip(self.events, self._times, strict=True):
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
                        started=when,
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
                    finished=when,
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
                    elapsed_ms=_opt_int(p, "elapsed_ms"),
                    token_usage=_opt_int(p, "token_usage"),
                    tool_usage={k: v for k, v in usage.items() if _is_count(v)}
                    if isinstance(usage, dict)
                    else {},
                )
            )
        return refs

    def _child(self, ref: TraceChild) -> Trace:
        if ref.trace_path is None:
            raise TraceError(
                f"child {_brief(ref.session_id)} has no trace file (its trace was kept in memory)"
            )
        return _load_recorded(
            ref.trace_path,
            ref.session_id,
            beside=self.path.parent if self.path is not None else None,
            what=f"child {_brief(ref.session_id)}",
        )

    @functools.cached_property
    def children(self) -> list[Trace]:
        """The children's traces, loaded on first use (from the recorded path, or a file of the
        same name beside this trace). A recorded path is only followed to a file named
        ``trace-<child session id>.jsonl`` that holds that child's events. Raises
        :class:`outrider.TraceError` for a child whose trace cannot be read."""
        return [self._child(ref) for ref in self.child_refs]

    # --- export ------------------------------------------------------------------------------

    def to_records(self) -> list[TraceRecord]:
        """One flat dict per event (columns :data:`RECORD_COLUMNS`), for tables and dataframes."""
        start = self.started
        rows: list[TraceRecord] = []
        for e, when in zip(self.events, self._times, strict=True):
            p = e["payload"]
            usage = p.get("usage") if e["event"] == "model_output" else None
            usage = usage if isinstance(usage, dict) else None
            tool = p.get("tool") if e["event"] in ("tool_call", "tool_result") else None
            call_id = p.get("tool_call_id")
            child = p.get("child_session_id") if e["event"] in _SUBAGENT_EVENTS else None
            rows.append(
                TraceRecord(
                    ts=when,
                    elapsed_ms=(when - start).total_seconds() * 1000,
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
            raise MissingExtraError.needs("Trace.to_pandas()", "pandas", "jupyter", err) from err
        frame = pd.DataFrame.from_records(self.to_records(), columns=list(RECORD_COLUMNS))
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
        return frame

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
            f"Trace({_brief(self.session_id)}, events={len(self.events)}, steps={max((s.number for s in self.steps), default=0)}, "
            f"terminal_reason={_brief(self.terminal_reason)}, tool_usage={_brief(self.tool_usage, 200)}{cut})"
        )


def _timed(trace: Trace, limit: int) -> list[tuple[TraceEvent, float]]:
    """The first ``limit`` events, each with its milliseconds since the first (a timeline's
    rows, without describing every event of a long trace as :meth:`Trace.to_records` does)."""
    start = trace.started
    return [
        (e, (when - start).total_seconds() * 1000)
        for e, when in zip(trace.events[:limit], trace._times[:limit], strict=True)
    ]


def _load_recorded(
    recorded: str, session_id: str | None, *, beside: pathlib.Path | None, what: str
) -> Trace:
    """The trace at a path read from data (a parent trace, a result's ``to_dict()``), which is
    not trusted as a path to open: only a file named as outrider names the trace of
    ``session_id`` (``trace-child-<32 hex digits>.jsonl``) is read, and it must hold that
    session. A relative path is taken from ``beside``; when the file is not where it was
    recorded, a file of the same name in ``beside`` is used (traces moved together)."""
    name = pathlib.PurePath(recorded).name
    expected = f"trace-{session_id}.jsonl" if session_id is not None else None
    if not _TRACE_NAME.fullmatch(name) or (expected is not None and name != expected):
        like = _brief(expected) if expected else "trace-child-<32 hex digits>.jsonl"
        raise TraceError(
            f"{what}: the recorded trace path {_quote(recorded)} was not opened: a trace path "
            f"read from data must name a file {like} (Trace.load(path) reads any file you name)",
            path=recorded,
        )
    file = pathlib.Path(recorded)
    if beside is not None:
        file = file if file.is_absolute() else beside / file
        # Traces copied or moved together keep working.
        if not os.path.exists(file) and os.path.exists(beside / name):
            file = beside / name
    trace = Trace.load(file)
    if session_id is not None and trace.session_id != session_id:
        raise TraceError(
            f"{_quote(file)} holds session {_brief(trace.session_id)}, not {what}'s "
            f"{_brief(session_id)}",
            path=str(file),
        )
    return trace


def _opt_int(usage: dict[str, Any] | None, key: str) -> int | None:
    value = usage.get(key) if usage else None
    return value if _is_count(value) else None

"""OpenTelemetry spans for launches: ``outrider.otel.instrument()``.

Once instrumented, every launch (``launch``, ``launch_async``, ``launch_many``,
``launch_many_async``, ``MainAgent.run`` and ``run_async``) records one ``outrider.run`` span per
child or main agent, whose parent is the caller's current span (a main agent's child nests under
the ``Task`` tool span of the call that launched it), with a child span per tool call (its
arguments, redacted, in ``outrider.tool.arguments``) and an event per model answer, built from
the trace events as they happen. A run span names its model (``gen_ai.request.model``, the id
sent in requests, beside ``outrider.model``, the backend's description) and its tokens; a main
agent's also the totals with its children's (``outrider.total_tokens``,
``outrider.total_input_tokens``, ``outrider.total_output_tokens``). Needs ``opentelemetry-api`` (``pip install
'.[otel]'`` from a checkout); spans go wherever the application's tracer provider sends them.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

from outrider import _core, _entry
from outrider._core import _redact
from outrider.exceptions import MissingExtraError

__all__ = ["instrument", "uninstrument"]

_PATCHED: dict[tuple[type, str], Any] = {}
# An attribute is for reading, not for holding a whole file a model pasted into a call.
_MAX_ARGUMENTS = 4096
_METHODS = (
    (_entry.SubagentLauncher, "launch"),
    (_entry.SubagentLauncher, "launch_async"),
    (_entry.SubagentLauncher, "launch_many"),
    (_entry.SubagentLauncher, "launch_many_async"),
    (_entry.MainAgent, "run"),
    (_entry.MainAgent, "run_async"),
)


class _Spans:
    """An ``on_event`` handler that turns one call's trace events into spans."""

    def __init__(self, tracer: Any, parent: Any, chained: Callable[[Any], object] | None) -> None:
        self.tracer, self.parent, self.chained = tracer, parent, chained
        self.lock = threading.Lock()
        self.runs: dict[str, Any] = {}
        self.tools: dict[tuple[str, str], Any] = {}
        self.task_spans: list[Any] = []
        # A child's Task call span (from the parent's subagent_requested event), its parent run,
        # and per run the tokens of its finished children: [total, input, output].
        self.call_of: dict[str, Any] = {}
        self.parent_of: dict[str, str] = {}
        self.children_tokens: dict[str, list[int]] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        with self.lock:
            self._record(event)
        if self.chained is not None:
            self.chained(event)

    def _record(self, event: dict[str, Any]) -> None:
        from opentelemetry import trace

        name, sid, payload = event["event"], event["session_id"], event.get("payload") or {}
        step = event.get("step", 0)
        run = self.runs.get(sid)
        if name == "subagent_requested":
            # In the parent's trace, before the child starts: which Task call asked for it.
            child = str(payload.get("child_session_id", ""))
            self.parent_of[child] = sid
            span = self.tools.get((sid, str(payload.get("parent_tool_call_id"))))
            if span is not None:
                self.call_of[child] = span
            return
        if name == "run_start":
            # A main agent's child nests under the Task call that launched it.
            parent = self.parent
            call = self.call_of.pop(sid, None)
            if call is not None:
                parent = trace.set_span_in_context(call)
            elif self.task_spans:
                parent = trace.set_span_in_context(self.task_spans[-1])
            attributes = {
                "outrider.session_id": sid,
                "outrider.profile": str(payload.get("profile", "")),
                "outrider.model": str(payload.get("model", "")),
                "outrider.max_steps": int(payload.get("max_steps") or 0),
                "outrider.total_token_budget": int(payload.get("total_token_budget") or 0),
            }
            if payload.get("model_id"):
                attributes["gen_ai.request.model"] = str(payload["model_id"])
            self.runs[sid] = self.tracer.start_span(
                "outrider.run", context=parent, attributes=attributes
            )
        elif run is None:
            return
        elif name == "model_output":
            usage = payload.get("usage") or {}
            run.add_event(
                "model_output",
                {
                    "outrider.step": step,
                    "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
                    "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0),
                },
            )
        elif name == "tool_call":
            tool = str(payload.get("tool", ""))
            span = self.tracer.start_span(
                f"outrider.tool {tool}",
                context=trace.set_span_in_context(run),
                attributes={
                    "outrider.tool": tool,
                    "outrider.step": step,
                    "outrider.tool.call_id": str(payload.get("tool_call_id", "")),
                    "outrider.tool.arguments": _arguments(payload.get("args")),
                },
            )
            self.tools[(sid, str(payload.get("tool_call_id")))] = span
            if tool == "Task":
                self.task_spans.append(span)
        elif name == "tool_result":
            span = self.tools.pop((sid, str(payload.get("tool_call_id"))), None)
            if span is not None:
                status = str(payload.get("status", ""))
                span.set_attribute("outrider.status", status)
                if payload.get("error_code"):
                    span.set_attribute("outrider.error_code", str(payload["error_code"]))
                if status == "error":
                    span.set_status(trace.Status(trace.StatusCode.ERROR))
                if span in self.task_spans:
                    self.task_spans.remove(span)
                span.end()
        elif name == "terminal":
            details = payload.get("details") or {}
            reason = str(payload.get("reason", ""))
            run.set_attribute("outrider.terminal_reason", reason)
            run.set_attribute("outrider.tokens", int(details.get("total_tokens") or 0))
            if details.get("error"):
                run.set_status(trace.Status(trace.StatusCode.ERROR, str(details["error"])))
        elif name == "session_summary":
            usage = payload.get("total_usage") or {}
            own = [
                int(usage.get(k) or 0)
                for k in ("total_tokens", "prompt_tokens", "completion_tokens")
            ]
            children = self.children_tokens.pop(sid, [0, 0, 0])
            total = [a + b for a, b in zip(own, children, strict=True)]
            run.set_attribute("outrider.steps", int(payload.get("steps") or 0))
            run.set_attribute("gen_ai.usage.input_tokens", own[1])
            run.set_attribute("gen_ai.usage.output_tokens", own[2])
            run.set_attribute("outrider.total_tokens", total[0])
            run.set_attribute("outrider.total_input_tokens", total[1])
            run.set_attribute("outrider.total_output_tokens", total[2])
            parent_sid = self.parent_of.pop(sid, None)
            if parent_sid is not None:
                sums = self.children_tokens.setdefault(parent_sid, [0, 0, 0])
                for i, n in enumerate(total):
                    sums[i] += n
            for key in [k for k in self.tools if k[0] == sid]:
                self.tools.pop(key).end()
            self.runs.pop(sid).end()


def _arguments(args: Any) -> str:
    """A tool call's arguments as JSON, credentials redacted, cut to ``_MAX_ARGUMENTS``."""
    try:
        text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(args)
    text = _redact(text)
    return text if len(text) <= _MAX_ARGUMENTS else text[: _MAX_ARGUMENTS - 1] + "…"


def _wrap(method: Any, tracer: Any, is_async: bool) -> Any:
    from opentelemetry import context

    if is_async:

        @functools.wraps(method)
        async def call_async(self: Any, *args: Any, on_event: Any = None, **kwargs: Any) -> Any:
            spans = _Spans(tracer, context.get_current(), on_event)
            return await method(self, *args, on_event=spans, **kwargs)

        return call_async

    @functools.wraps(method)
    def call(self: Any, *args: Any, on_event: Any = None, **kwargs: Any) -> Any:
        spans = _Spans(tracer, context.get_current(), on_event)
        return method(self, *args, on_event=spans, **kwargs)

    return call


def instrument(tracer_provider: Any = None) -> None:
    """Record spans for every launch from now on (see the module documentation)."""
    try:
        from opentelemetry import trace
    except ImportError as error:
        raise MissingExtraError.needs(
            "outrider.otel.instrument()", "opentelemetry-api", "otel", error
        ) from error
    tracer = trace.get_tracer("outrider", _core.__version__, tracer_provider=tracer_provider)
    uninstrument()
    for cls, name in _METHODS:
        original = cls.__dict__[name]
        _PATCHED[(cls, name)] = original
        is_async = name.endswith("_async")
        setattr(cls, name, _wrap(original, tracer, is_async))


def uninstrument() -> None:
    """Stop recording spans."""
    for (cls, name), original in _PATCHED.items():
        setattr(cls, name, original)
    _PATCHED.clear()

"""OpenTelemetry spans for launches: ``outrider.otel.instrument()``.

Once instrumented, every launch (``launch``, ``launch_async``, ``launch_many``,
``launch_many_async``, ``MainAgent.run`` and ``run_async``) records one ``outrider.run`` span per
child or main agent, whose parent is the caller's current span (a main agent's children nest
under its ``Task`` tool span), with a child span per tool call and an event per model answer,
built from the trace events as they happen. Needs ``opentelemetry-api`` (``pip install
'outrider[otel]'``); spans go wherever the application's tracer provider sends them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from outrider import _core
from outrider.exceptions import MissingExtraError

__all__ = ["instrument", "uninstrument"]

_PATCHED: dict[tuple[type, str], Any] = {}
_METHODS = (
    (_core.SubagentLauncher, "launch"),
    (_core.SubagentLauncher, "launch_async"),
    (_core.SubagentLauncher, "launch_many"),
    (_core.SubagentLauncher, "launch_many_async"),
    (_core.MainAgent, "run"),
    (_core.MainAgent, "run_async"),
)


class _Spans:
    """An ``on_event`` handler that turns one call's trace events into spans."""

    def __init__(self, tracer: Any, parent: Any, chained: Callable[[Any], object] | None) -> None:
        self.tracer, self.parent, self.chained = tracer, parent, chained
        self.lock = threading.Lock()
        self.runs: dict[str, Any] = {}
        self.tools: dict[tuple[str, str], Any] = {}
        self.task_spans: list[Any] = []

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
        if name == "run_start":
            # A main agent's children start while its Task tool call is open: nest them there.
            parent = self.parent
            if self.task_spans:
                parent = trace.set_span_in_context(self.task_spans[-1])
            attributes = {
                "outrider.session_id": sid,
                "outrider.profile": str(payload.get("profile", "")),
                "outrider.model": str(payload.get("model", "")),
                "outrider.max_steps": int(payload.get("max_steps") or 0),
                "outrider.total_token_budget": int(payload.get("total_token_budget") or 0),
            }
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
                attributes={"outrider.tool": tool, "outrider.step": step},
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
            run.set_attribute("outrider.steps", int(payload.get("steps") or 0))
            run.set_attribute("gen_ai.usage.input_tokens", int(usage.get("prompt_tokens") or 0))
            run.set_attribute(
                "gen_ai.usage.output_tokens", int(usage.get("completion_tokens") or 0)
            )
            for key in [k for k in self.tools if k[0] == sid]:
                self.tools.pop(key).end()
            self.runs.pop(sid).end()


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
        raise MissingExtraError(
            "outrider.otel.instrument() needs the opentelemetry-api package, which could not be "
            f"imported ({error}); install it with: pip install 'outrider[otel]'",
            "otel",
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

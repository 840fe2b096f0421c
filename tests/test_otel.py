"""outrider.otel: launches recorded as OpenTelemetry spans under the caller's current span."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

import outrider
from outrider.testing import ScriptedLLM, call, final

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from outrider import otel  # noqa: E402

ANSWER = final(status="completed", summary="login is in auth.py", evidence=["auth.py:1"])


@pytest.fixture
def spans() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    try:
        yield provider.get_tracer("test"), exporter
    finally:
        otel.uninstrument()


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "auth.py").write_text("def login(user):\n    return user\n")
    return tmp_path


def test_a_launch_is_a_run_span_under_the_callers_span(
    spans: tuple[Any, InMemorySpanExporter], repo: pathlib.Path
) -> None:
    tracer, exporter = spans
    seen: list[str] = []
    llm = ScriptedLLM([[call("Grep", pattern="def login")], ANSWER])
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=False)
    with tracer.start_as_current_span("caller") as caller:
        r = launcher.launch(
            outrider.SubagentRequest("where is login"), on_event=lambda e: seen.append(e["event"])
        )
    assert r.status == "completed" and seen[0] == "run_start"  # the user's on_event still runs
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    assert set(by_name) == {"caller", "outrider.run", "outrider.tool Grep"}
    run, tool = by_name["outrider.run"], by_name["outrider.tool Grep"]
    assert run.parent is not None and run.parent.span_id == caller.get_span_context().span_id
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert run.attributes is not None and tool.attributes is not None
    assert run.attributes["outrider.session_id"] == r.child_session_id
    assert run.attributes["outrider.terminal_reason"] == "completed"
    assert run.attributes["outrider.tokens"] == r.token_usage
    assert tool.attributes["outrider.status"] == "success"
    assert [e.name for e in run.events] == ["model_output", "model_output"]


def test_async_and_many_launches_and_main_agent_children_nest(
    spans: tuple[Any, InMemorySpanExporter], repo: pathlib.Path
) -> None:
    tracer, exporter = spans
    launcher = outrider.SubagentLauncher(repo, ScriptedLLM([ANSWER] * 3), trace_dir=False)

    async def main() -> None:
        with tracer.start_as_current_span("caller"):
            await launcher.launch_async(outrider.SubagentRequest("where is login"))
            await launcher.launch_many_async([outrider.SubagentRequest("a")] * 2)

    asyncio.run(main())
    runs = [s for s in exporter.get_finished_spans() if s.name == "outrider.run"]
    assert len(runs) == 3
    caller = next(s for s in exporter.get_finished_spans() if s.name == "caller")
    assert {s.parent.span_id for s in runs if s.parent} == {caller.context.span_id}
    exporter.clear()

    def route(request: dict[str, Any]) -> Any:
        if "Task" not in {t["function"]["name"] for t in request.get("tools") or []}:
            return ANSWER
        if any(m["role"] == "tool" for m in request["messages"]):
            return "login is in auth.py"
        args = {"description": "find", "prompt": "where is login", "subagent_type": "explore"}
        return {"content": "", "tool_calls": [call("Task", **args)]}

    outrider.MainAgent(repo, route, trace_dir=False).run("where is login?")
    finished = {s.name: s for s in exporter.get_finished_spans()}
    runs = [s for s in exporter.get_finished_spans() if s.name == "outrider.run"]
    task = finished["outrider.tool Task"]
    child = next(s for s in runs if s.attributes and s.attributes["outrider.profile"] == "explore")
    assert child.parent is not None and child.parent.span_id == task.context.span_id
    assert json.dumps(sorted(s.name for s in exporter.get_finished_spans())) == json.dumps(
        ["outrider.run", "outrider.run", "outrider.tool Task"]
    )


def test_uninstrument_stops_recording(repo: pathlib.Path) -> None:
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    otel.uninstrument()
    llm = ScriptedLLM([[call("Read", path="auth.py")], ANSWER])  # Reads what it cites
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=False)
    assert launcher.launch(outrider.SubagentRequest("x")).status == "completed"
    assert exporter.get_finished_spans() == ()

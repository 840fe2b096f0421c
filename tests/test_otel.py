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
    llm = ScriptedLLM([[call("Read", path="auth.py")], ANSWER])
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=False)
    with tracer.start_as_current_span("caller") as caller:
        r = launcher.launch(
            outrider.SubagentRequest("where is login"), on_event=lambda e: seen.append(e["event"])
        )
    assert r.status == "completed" and seen[0] == "run_start"  # the user's on_event still runs
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    assert set(by_name) == {"caller", "outrider.run", "outrider.tool Read"}
    run, tool = by_name["outrider.run"], by_name["outrider.tool Read"]
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


def test_two_task_calls_in_one_turn_each_child_under_its_own_call(
    spans: tuple[Any, InMemorySpanExporter], repo: pathlib.Path
) -> None:
    _, exporter = spans
    (repo / "db.py").write_text("def connect():\n    pass\n")
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    login = {
        "description": "login",
        "prompt": f"Where is login? key {key}",
        "subagent_type": "explore",
    }
    db = {"description": "db", "prompt": "Where is connect?", "subagent_type": "explore"}
    main = ScriptedLLM(
        [[call("Task", **login), call("Task", **db)], "login at auth.py:1, connect at db.py:1"]
    )
    light = ScriptedLLM(
        {
            "login": [[call("Read", path="auth.py")], ANSWER],
            "db": [
                [call("Read", path="db.py")],
                final(status="completed", summary="db.py", evidence=["db.py:1"]),
            ],
        }
    )
    agent = outrider.MainAgent(repo, main, light, trace_dir=False, model="big", light_model="small")
    run = agent.run("Where are login and connect?")
    finished = exporter.get_finished_spans()
    tasks = {
        json.loads(str(s.attributes["outrider.tool.arguments"]))["description"]: s
        for s in finished
        if s.name == "outrider.tool Task" and s.attributes
    }
    runs = {
        str(s.attributes["outrider.session_id"]): s
        for s in finished
        if s.name == "outrider.run" and s.attributes
    }
    assert set(tasks) == {"login", "db"}
    by_task = {c.task.split("\n\n")[0]: c for c in run.children}
    for name, task_span in tasks.items():
        child = runs[by_task[name].child_session_id]
        assert child.parent is not None and child.parent.span_id == task_span.context.span_id, name
        assert child.attributes is not None
        assert child.attributes["gen_ai.request.model"] == "small"
        assert child.attributes["outrider.total_tokens"] == by_task[name].token_usage
    # Arguments are on the span, with the credential redacted.
    shown = str(tasks["login"].attributes["outrider.tool.arguments"])  # type: ignore[index]
    assert "Where is login? key sk-" in shown and key not in shown
    reads = [s for s in finished if s.name == "outrider.tool Read" and s.attributes]
    assert {str(s.attributes["outrider.tool.arguments"]) for s in reads} == {  # type: ignore[index]
        '{"path": "auth.py"}',
        '{"path": "db.py"}',
    }
    main_span = runs[run.session_id]
    assert main_span.attributes is not None
    assert main_span.attributes["gen_ai.request.model"] == "big"
    assert main_span.attributes["outrider.total_tokens"] == run.total_token_usage
    assert run.total_token_usage == run.token_usage + sum(c.token_usage for c in run.children)
    assert main_span.attributes["outrider.total_input_tokens"] == run.total_input_tokens
    assert main_span.attributes["outrider.total_output_tokens"] == run.total_output_tokens

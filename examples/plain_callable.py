"""A plain Python function as the model: no SDK, no network.

Any callable that takes the chat-completions request dict and returns a short response dict (or a
ChatCompletion-shaped dict, an SDK object, or a string) is a model. This one searches once, then
answers from what the tool returned, which is what a real model would read in the messages.

    python examples/plain_callable.py
"""

from __future__ import annotations

import json
import pathlib
import tempfile
from typing import Any

import outrider

ROOT = pathlib.Path(__file__).resolve().parent.parent


def tiny_model(request: dict[str, Any]) -> dict[str, Any]:
    """Turn 1: Grep for the definition. Turn 2: Read the code around the first match (an
    answer resting on a match line alone is partial: a match shows where a name is, not what
    the code does). Turn 3: answer with that line as evidence."""
    tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
    if not tool_messages:
        return {
            "content": "",
            "tool_calls": [{"name": "Grep", "arguments": {"pattern": "def launch"}}],
        }
    first_result = json.loads(tool_messages[0]["content"])
    first = first_result["data"]["matches"][0]
    if len(tool_messages) == 1:
        window = {"path": first["file"], "start_line": max(1, first["line"] - 2), "limit": 20}
        return {"content": "", "tool_calls": [{"name": "Read", "arguments": window}]}
    answer = {
        "status": "completed",
        "summary": f"`launch` is defined in {first['file']}, line {first['line']}.",
        "findings": [f"{first['file']}:{first['line']}: {first['text'].strip()}"],
        "evidence": [f"{first['file']}:{first['line']}"],
    }
    return {"content": json.dumps(answer)}


def main() -> None:
    with tempfile.TemporaryDirectory() as traces:
        launcher = outrider.SubagentLauncher(ROOT, tiny_model, tiny_model, trace_dir=traces)
        result = launcher.launch(outrider.SubagentRequest(task="Where is launch defined?"))
        print(f"status: {result.status} ({result.terminal_reason}), tools: {result.tool_usage}")
        assert isinstance(result.result, outrider.ExploreResult)
        print(result.result.summary)
        for item in result.result.evidence:
            print(f"  evidence: {item}")
        assert result.trace_path is not None
        trace = outrider.Trace.load(result.trace_path)
        for step in trace.steps:
            tools = ", ".join(f"{c.tool} -> {c.status}" for c in step.tool_calls) or "-"
            print(f"  step {step.number}: {len(step.events)} events, tools: {tools}")


if __name__ == "__main__":
    main()

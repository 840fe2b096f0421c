"""What a small local model behind an OpenAI-compatible server does, end to end through the
built-in HTTP client (issue #18): tool calls written as text, cached prompt tokens reported in
``prompt_tokens_details``, answers from its head and evidence it never saw. The server is a
loopback script started here."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from loopback import _serve, completion, scripted

import outrider

ANSWER = {
    "status": "completed",
    "summary": "main is defined in app.py",
    "findings": ["app.py defines main"],
    "evidence": ["app.py:1"],
    "unresolved_questions": [],
}


def _with_usage(body: dict[str, Any], prompt: int, cached: int) -> dict[str, Any]:
    body["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": 20,
        "total_tokens": prompt + 20,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    return body


def _launch(
    root: pathlib.Path, tmp_path: pathlib.Path, script: list[dict[str, Any]], task: str
) -> tuple[outrider.SubagentLaunchResult, list[dict[str, Any]]]:
    """One explore child over ``root``, its model a loopback server answering ``script`` in
    turn; no repo-map hint, so only what the script Reads counts as seen. The result and the
    request bodies the server got."""
    no_hint = outrider.EXPLORE_PROFILE.replace(repo_map_hint=False)
    with scripted(script) as server:
        llm = outrider.OpenAICompatible("small", f"{server.base}/v1")
        launcher = outrider.SubagentLauncher(
            root, llm, trace_dir=tmp_path / "traces", profiles=[no_hint]
        )
        result = launcher.launch(outrider.SubagentRequest(task=task))
    return result, server.bodies


@pytest.mark.parametrize(
    "text_call",
    [
        '```json\n{"name": "Read", "arguments": {"path": "app.py"}}\n```\n\n\n',
        '{"name": "Read", "arguments": {"path": "app.py"}}',
        '<tool_call>\n{"name": "Read", "arguments": {"path": "app.py"}}\n</tool_call>',
        '[{"name": "Read", "arguments": {"path": "app.py"}}]',
    ],
)
def test_a_text_tool_call_is_taken_and_its_cached_tokens_counted(
    repo: pathlib.Path, tmp_path: pathlib.Path, text_call: str
) -> None:
    script = [
        _with_usage(completion(text_call), 2000, 0),
        _with_usage(completion(json.dumps(ANSWER)), 2300, 1900),
    ]
    # No repo-map hint: the places it opens count as the one look explore asks for, and then
    # no tool call is required.
    result, bodies = _launch(repo, tmp_path, script, "Where is `main` defined?")
    assert (result.status, result.tool_usage, result.model_calls) == (
        "completed",
        {"Read": 1},
        2,
    )
    assert (result.input_tokens, result.cached_input_tokens) == (4300, 1900)
    assert result.to_dict()["cached_input_tokens"] == 1900
    assert result.trace_path is not None
    trace = outrider.Trace.load(result.trace_path)
    outputs = [e for e in trace.events if e["event"] == "model_output"]
    assert outputs[0]["payload"]["meta"]["tool_call_format"] == "text"
    assert "tool_call_format" not in outputs[1]["payload"]["meta"]
    # The first request asked for a tool call; the second carried the Read's result.
    first, second = bodies
    assert (first["tool_choice"], second["tool_choice"]) == ("required", "auto")
    assert second["messages"][-1]["role"] == "tool"


def test_an_answer_from_its_head_citing_unseen_lines_is_never_completed(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """The two dishonest answers the issue reports: lines cited with no tool call, twice."""
    # Refusals for too little exploration get one more retry than others: three answers. (No
    # repo-map hint: its lines were shown to the child, so citing one would not be unseen.)
    script = [completion(json.dumps(ANSWER))] * 3
    result, bodies = _launch(repo, tmp_path, script, "Where is `main` defined?")
    assert result.status == "unverified"
    assert [(c["evidence"], c["reason"]) for c in result.to_dict()["ungrounded_evidence"]] == [
        ("app.py:1", "unobserved")
    ]
    feedback = bodies[1]["messages"][-1]["content"]
    assert feedback.startswith("You answered after no successful tool call")


def test_a_provider_that_refuses_tool_choice_required_is_asked_again_with_auto(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    refused = {"error": {"message": "tool_choice 'required' is not supported"}}
    calls = completion("")
    calls["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "Read", "arguments": '{"path": "app.py"}'},
            }
        ],
    }
    bodies: list[dict[str, Any]] = []
    replies = [(400, refused), (200, calls), (200, completion(json.dumps(ANSWER)))]

    def answer(path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        bodies.append(json.loads(raw))
        status, body = replies.pop(0)
        return status, json.dumps(body).encode()

    no_hint = outrider.EXPLORE_PROFILE.replace(repo_map_hint=False)
    with _serve(answer) as root:
        llm = outrider.OpenAICompatible("small", f"{root}/v1", max_retries=0)
        launcher = outrider.SubagentLauncher(
            repo, llm, trace_dir=tmp_path / "traces", profiles=[no_hint]
        )
        result = launcher.launch(outrider.SubagentRequest(task="Where is `main` defined?"))
    assert result.status == "completed", result.error
    assert [b["tool_choice"] for b in bodies] == ["required", "auto", "auto"]


def _read_call(path: str, start: int, limit: int) -> dict[str, Any]:
    body = completion("")
    args = json.dumps({"path": path, "start_line": start, "limit": limit})
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": args}}
        ],
    }
    return body


def test_a_finding_citing_lines_the_child_read_joins_the_evidence(tmp_path: pathlib.Path) -> None:
    """A small model lists a place it read under findings and cites another: both come back as
    evidence, the model's own first. A finding citing lines it never read stays a finding."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "bind.go").write_text("".join(f"line{n}\n" for n in range(1, 21)))
    (root / "context.go").write_text("".join(f"line{n}\n" for n in range(1, 21)))
    answer = dict(
        ANSWER,
        summary="Bind decodes it",
        findings=["bind.go:2-4", "bind.go:15", "Bind decodes the body"],
        evidence=["context.go:3"],
    )
    script = [
        _read_call("bind.go", 1, 10),
        _read_call("context.go", 1, 10),
        completion(json.dumps(answer)),
    ]
    result, _ = _launch(root, tmp_path, script, "Where is the body decoded?")
    assert result.status == "completed", result.to_dict()
    assert result.result is not None
    assert result.result.evidence == ("context.go:3", "bind.go:2-4")
    assert result.result.findings == ("bind.go:2-4", "bind.go:15", "Bind decodes the body")
    assert result.to_dict()["ungrounded_evidence"] == []


def test_a_list_left_open_before_the_next_key_is_closed_and_the_answer_stands(
    tmp_path: pathlib.Path,
) -> None:
    """A 1.5B model's right answer with its findings list not closed (chi, a sub-router's
    path): the gate closes the list, names the repair, and the answer stands."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "mux.go").write_text("".join(f"line{n}\n" for n in range(1, 41)))
    left_open = (
        '```json\n{\n  "status": "completed",\n  "summary": "Mount shifts the path",\n'
        '  "findings": ["Mount computes the rest of the path: see below.",\n'
        '  "evidence": ["mux.go:18-27"],\n  "unresolved_questions": []\n}\n```'
    )
    script = [_read_call("mux.go", 1, 40), completion(left_open)]
    result, bodies = _launch(root, tmp_path, script, "Where is the rest of the path computed?")
    assert (result.status, result.repair, len(bodies)) == ("completed", "brackets", 2)
    assert result.result is not None
    assert result.result.evidence == ("mux.go:18-27",)
    assert result.result.findings == ("Mount computes the rest of the path: see below.",)

"""What the history re-sends (#33 item 6): a Read result the model has used shrinks in later
requests to its cited lines, and the prefix of every request is the same bytes."""

from __future__ import annotations

import json
import pathlib

import outrider
from outrider.testing import ScriptedLLM, call, final


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("a.py", "b.py"):
        (root / name).write_text("".join(f"x{i} = {i}\n" for i in range(1, 41)))
    return root


def _run(root: pathlib.Path, shrink: int) -> ScriptedLLM:
    llm = ScriptedLLM(
        [
            {"tool_calls": [call("Read", path="a.py")]},
            {
                "content": "a.py:3-4 sets x3; reading b.py",
                "tool_calls": [call("Read", path="b.py")],
            },
            final(status="completed", summary="x3 is set in a.py", evidence=["a.py:3"]),
        ]
    )
    profile = outrider.EXPLORE_PROFILE.replace(
        repo_map_hint=False, scout_fallback=False, tuning={"shrink_used_results": shrink}
    )
    r = outrider.SubagentLauncher(root, llm, profiles=[profile]).launch(
        outrider.SubagentRequest(task="Where is x3 set?")
    )
    assert r.status == "completed", r.error
    return llm


def _tool_text(request: dict[str, object], n: int) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    tools = [m for m in messages if m["role"] == "tool"]
    content = tools[n]["content"]
    assert isinstance(content, str)
    return content


def test_a_cited_read_is_resent_as_its_cited_lines_with_a_note(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    llm = _run(root, 1)
    last = _tool_text(llm.requests[2], 0)
    assert "x3 = 3" in last and "x4 = 4" in last
    assert "x10 = 10" not in last
    assert "38 of the 40 lines read (1-40) cut here" in last
    # The read nothing cites yet is sent whole.
    assert "x40 = 40" in _tool_text(llm.requests[2], 1)
    # Off, the result is re-sent whole.
    whole = _run(root, 0)
    assert "x10 = 10" in _tool_text(whole.requests[2], 0)


def test_every_request_starts_with_the_same_bytes(tmp_path: pathlib.Path) -> None:
    llm = _run(_tree(tmp_path), 1)
    heads = {json.dumps([q["messages"][:2], q.get("tools")], sort_keys=True) for q in llm.requests}
    assert len(llm.requests) == 3 and len(heads) == 1

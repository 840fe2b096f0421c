"""``outrider mcp``: the MCP server over stdio, driven by the ``mcp`` package's own client."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import anyio
import pytest

import outrider
from outrider import cli, mcp_server

PACKAGE_PARENT = str(pathlib.Path(outrider.__file__).resolve().parent.parent)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "config.py").write_text(
        "import json\n\n\ndef load_config(path):\n    with open(path) as f:\n"
        "        return json.load(f)\n"
    )
    (root / "app.py").write_text("from config import load_config\n")
    (tmp_path / "secret.txt").write_text("TOP-SECRET\n")
    return root


def envelope_of(result: Any) -> dict[str, Any]:
    """The envelope, which the server sends both as JSON text and as structured content."""
    [content] = result.content
    envelope: dict[str, Any] = result.structured_content
    assert json.loads(content.text) == envelope
    assert result.is_error == (envelope["status"] == "error")
    return envelope


def test_an_mcp_client_lists_the_tools_and_calls_grep_read_and_task(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    traces = tmp_path / "traces"
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "outrider", "mcp", "--root", str(repo)),
            *("--model", "offline", "--trace-dir", str(traces)),
        ],
        # This tree's outrider, not whichever one the interpreter has installed.
        env={"PYTHONPATH": PACKAGE_PARENT},
    )
    task_args = {
        "description": "Find load_config",
        "prompt": "Where is load_config defined?",
        "subagent_type": "explore",
    }

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with anyio.fail_after(60):
            async with stdio_client(server) as (rd, wr), ClientSession(rd, wr) as client:
                out["init"] = await client.initialize()
                out["tools"] = (await client.list_tools()).tools
                out["grep"] = await client.call_tool("Grep", {"pattern": "def load_config"})
                out["outside"] = await client.call_tool("Read", {"path": "../secret.txt"})
                out["absolute"] = await client.call_tool(
                    "Read", {"path": str(repo.parent / "secret.txt")}
                )
                out["task"] = await client.call_tool("Task", task_args)
                out["bad_task"] = await client.call_tool("Task", {"description": "x"})
                with pytest.raises(
                    MCPError, match="unknown tool 'Bash': this server has Glob, Grep, Read, Task"
                ):
                    await client.call_tool("Bash", {"command": "cat ../secret.txt"})
        return out

    out = anyio.run(session)

    assert out["init"].server_info.name == "outrider"
    assert out["init"].server_info.version == outrider.__version__
    tools = {t.name: t for t in out["tools"]}
    assert sorted(tools) == ["Glob", "Grep", "Read", "Task"]
    task = outrider.TaskTool(
        outrider.SubagentLauncher(repo, outrider.OfflineScout(), trace_dir=False)
    )
    assert (tools["Task"].description, tools["Task"].input_schema) == (
        task.description,
        task.parameters,
    )
    assert tools["Task"].annotations.read_only_hint is True
    for name, tool in tools.items():
        # The client checked each successful result above against its tool's schema.
        assert tool.output_schema == mcp_server.envelope_schema(name)
    for schema in outrider.tool_schemas():
        fn = schema["function"]
        assert (tools[fn["name"]].description, tools[fn["name"]].input_schema) == (
            fn["description"],
            fn["parameters"],
        )
        assert tools[fn["name"]].annotations.read_only_hint is True

    grep = envelope_of(out["grep"])
    assert grep["status"] == "success"
    assert grep["data"]["matches"] == [
        {"file": "config.py", "line": 4, "text": "def load_config(path):"}
    ]

    for key, path in (("outside", "../secret.txt"), ("absolute", str(repo.parent / "secret.txt"))):
        refused = envelope_of(out[key])
        assert refused["error"]["code"] == "ACCESS_DENIED", refused
        assert "TOP-SECRET" not in json.dumps(refused)
        assert f"Path '{path}' is outside project root" in refused["text"]

    answered = envelope_of(out["task"])
    assert answered["status"] == "success"
    assert answered["data"]["status"] == "completed"
    assert answered["stats"]["model"] == "offline"
    assert "config.py:4-6" in answered["data"]["result"]["evidence"]
    assert "context" not in answered  # the compact default: the prompt is not echoed back
    assert list(traces.glob("trace-child-*.jsonl")), "the child's trace goes to --trace-dir"

    invalid = envelope_of(out["bad_task"])
    assert invalid["error"] == {
        "code": "INVALID_PARAM",
        "message": "Parameter 'prompt' is required and must be non-empty.",
    }


def test_outrider_mcp_refuses_a_root_that_is_not_a_directory(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    assert cli.main(["mcp", "--root", str(missing)]) == 2
    assert capsys.readouterr().err == f"outrider: --root {str(missing)!r} is not a directory\n"


def test_without_the_mcp_package_the_error_names_the_extra(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    task = outrider.TaskTool(
        outrider.SubagentLauncher(repo, outrider.OfflineScout(), trace_dir=False)
    )
    with pytest.raises(
        outrider.MissingExtraError,
        match=r"pip install 'mcp>=2,<3' \(outrider's 'mcp' extra; from an outrider checkout: pip install '\.\[mcp\]'\)",
    ) as caught:
        mcp_server.build_server(repo, task)
    assert caught.value.extra == "mcp"
    assert cli.main(["mcp", "--root", str(repo), "--model", "offline"]) == 2
    assert capsys.readouterr().err == f"outrider: {caught.value}\n"

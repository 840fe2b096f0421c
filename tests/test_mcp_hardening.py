"""``outrider mcp`` under a hostile or careless client (#17 item 3): tool calls end by a deadline,
closing stdin ends the work in flight, every malformed line gets a JSON-RPC error, results
conform to declared output schemas, and a misspelled argument is named as unknown.

The servers run as subprocesses on raw pipes (the SDK's own client would hide what the server
writes); every wait is bounded, and every process is killed at the end of its test.
"""

from __future__ import annotations

import json
import pathlib
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

import anyio
import jsonschema  # type: ignore[import-untyped]  # (mcp's dependency; no stubs installed)
import pytest

import outrider
from outrider import mcp_server

PACKAGE_PARENT = str(pathlib.Path(outrider.__file__).resolve().parent.parent)

SLOW_PATTERN = r"(a*)*\1b"
"""A backreference Grep that backtracks just under the core's per-line limit on each line of
``SLOW_LINE``: tens of thousands of such lines take minutes without a deadline."""
SLOW_LINE = "a" * 12 + "\n"

# A server built in a script, with a model and a tool deadline the CLI has no flags for.
SERVER_SCRIPT = """
import asyncio, sys, time
import outrider
from outrider import mcp_server

root, model, tool_timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])

def sleepy(request):
    time.sleep(300)
    raise RuntimeError("not reached")

llm = sleepy if model == "sleepy" else outrider.OfflineScout()
launcher = outrider.SubagentLauncher(root, llm, trace_dir=False)
asyncio.run(mcp_server.serve(root, outrider.TaskTool(launcher), tool_timeout=tool_timeout))
"""


class RawServer:
    """An MCP server subprocess spoken to line by line."""

    def __init__(self, args: list[str], stderr: IO[bytes]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={"PYTHONPATH": PACKAGE_PARENT},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 15, what: str = "the request") -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer to {what} within {timeout} s") from None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def nothing_within(self, seconds: float) -> bool:
        try:
            self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def initialize(self) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            }
        )
        assert self.receive()["result"]["serverInfo"]["name"] == "outrider"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, request_id: int, name: str, arguments: Any) -> None:
        params = {"name": name, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    def close_stdin_and_wait(self, timeout: float) -> float:
        """Close stdin; seconds until the process exits (it is killed past ``timeout``)."""
        assert self.proc.stdin is not None
        started = time.monotonic()
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {timeout} s after stdin closed") from None
        return time.monotonic() - started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except BrokenPipeError:
                    pass


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "config.py").write_text(
        "import json\n\n\ndef load_config(path):\n    with open(path) as f:\n"
        "        return json.load(f)\n"
    )
    (root / "slow.txt").write_text(SLOW_LINE * 60_000)
    return root


@pytest.fixture
def start(tmp_path: pathlib.Path) -> Iterator[Any]:
    """Start RawServers; all are killed when the test ends."""
    started: list[RawServer] = []
    stderr = (tmp_path / "server-stderr.txt").open("wb")

    def start_server(args: list[str]) -> RawServer:
        server = RawServer(args, stderr)
        started.append(server)
        server.initialize()
        return server

    yield start_server
    for server in started:
        server.stop()
    stderr.close()


def cli_args(root: pathlib.Path) -> list[str]:
    return ["-m", "outrider", "mcp", "--root", str(root), "--model", "offline"]


def script_args(root: pathlib.Path, model: str = "offline", tool_timeout: float = 300) -> list[str]:
    return ["-c", SERVER_SCRIPT, str(root), model, str(tool_timeout)]


def envelope(answer: dict[str, Any]) -> dict[str, Any]:
    result = answer["result"]
    structured: dict[str, Any] = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == structured
    assert result.get("isError", False) == (structured["status"] == "error")
    return structured


# --- deadline ----------------------------------------------------------------------------------


def test_a_grep_call_ends_by_the_servers_tool_deadline(repo: pathlib.Path, start: Any) -> None:
    server = start(script_args(repo, tool_timeout=1))
    started = time.monotonic()
    server.call(1, "Grep", {"pattern": SLOW_PATTERN})
    answer = server.receive(timeout=20)
    took = time.monotonic() - started
    assert answer["id"] == 1
    timed_out = envelope(answer)
    assert timed_out["error"]["code"] == "TIMEOUT", timed_out
    assert took < 10, f"a 1 s deadline answered after {took:.1f} s"
    # The server goes on serving.
    server.call(2, "Grep", {"pattern": "def load_config"})
    assert envelope(server.receive())["data"]["matches"][0]["file"] == "config.py"


def test_the_default_tool_deadline_is_one_steps_not_a_whole_runs(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    seen: list[Any] = []
    real_run_tool = outrider.run_tool

    def recording_run_tool(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("timeout"))
        return real_run_tool(*args, **kwargs)

    task = outrider.TaskTool(
        outrider.SubagentLauncher(repo, outrider.OfflineScout(), trace_dir=False)
    )
    monkeypatch.setattr(outrider, "run_tool", recording_run_tool)
    server = mcp_server.build_server(repo, task)

    async def call() -> None:
        with anyio.fail_after(30):
            async with Client(server) as client:
                await client.call_tool("Read", {"path": "config.py"})

    anyio.run(call)
    assert seen, "run_tool was not called"
    # A slow backreference Grep over a 4 MB file answered after 20 s under the explore
    # profile's 300 s (the time a child gets for its whole run, #36).
    assert set(seen) == {mcp_server.DEFAULT_TOOL_TIMEOUT} == {10.0}
    assert mcp_server.DEFAULT_TOOL_TIMEOUT < outrider.EXPLORE_PROFILE.timeout_seconds / 12


@pytest.mark.timeout(60)
def test_a_slow_backreference_grep_over_4_mb_ends_by_the_default_deadline(
    repo: pathlib.Path, start: Any
) -> None:
    (repo / "slow.txt").write_text(SLOW_LINE * 320_000)  # 4 MB
    server = start(["-m", "outrider", "mcp", "--root", str(repo), "--model", "offline"])
    started = time.monotonic()
    server.call(1, "Grep", {"pattern": SLOW_PATTERN})
    answer = server.receive(timeout=40)
    took = time.monotonic() - started
    assert envelope(answer)["error"]["code"] == "TIMEOUT", answer
    assert took < mcp_server.DEFAULT_TOOL_TIMEOUT + 5, f"answered after {took:.1f} s"


def test_a_bad_tool_deadline_is_refused_when_the_server_is_built(repo: pathlib.Path) -> None:
    task = outrider.TaskTool(
        outrider.SubagentLauncher(repo, outrider.OfflineScout(), trace_dir=False)
    )
    with pytest.raises(outrider.ConfigError, match=r"timeout: must be a positive .* got -1"):
        mcp_server.build_server(repo, task, tool_timeout=-1)


# --- stdin closing -----------------------------------------------------------------------------


def test_closing_stdin_ends_a_running_grep_and_the_server(repo: pathlib.Path, start: Any) -> None:
    # The CLI's server, with its default deadline (300 s): the Grep would run for minutes.
    server = start(cli_args(repo))
    server.call(1, "Grep", {"pattern": SLOW_PATTERN})
    assert server.nothing_within(1.0), "the slow Grep answered: it is not slow here"
    took = server.close_stdin_and_wait(timeout=20)
    assert server.proc.returncode == 0
    assert took < 10, f"the server took {took:.1f} s to exit after stdin closed"


def test_closing_stdin_cancels_a_running_task(repo: pathlib.Path, start: Any) -> None:
    server = start(script_args(repo, model="sleepy"))
    task = {"description": "Find it", "prompt": "Where is load_config?", "subagent_type": "explore"}
    server.call(1, "Task", task)
    assert server.nothing_within(1.0), "the Task answered although its model sleeps"
    took = server.close_stdin_and_wait(timeout=20)
    assert server.proc.returncode == 0
    assert took < 10, f"the server took {took:.1f} s to exit after stdin closed"


# --- malformed lines ---------------------------------------------------------------------------

DEEP = 50_000


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def read_nested(levels: int, request_id: int) -> bytes:
    """A Read call whose whole message nests ``levels`` deep (the path is the innermost list)."""
    path = deep(levels - 3)  # the message, params and arguments are the first three levels
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"Read","arguments":{{"path":{path}}}}}}}'
    ).encode()


MALFORMED: list[tuple[str, bytes, int, int | str | None, str]] = [
    (
        "not JSON",
        b"not json",
        -32700,
        None,
        "Parse error: the line 'not json' is not JSON (Expecting value: line 1 column 1 "
        "(char 0)); expected one JSON-RPC 2.0 message per line",
    ),
    (
        "nested 50k deep, id first",
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{{"x":{deep(DEEP)}}}}}'.encode(),
        -32600,
        5,
        "Invalid Request: the message nests objects or arrays more than 128 levels deep; "
        "at most 128 are accepted",
    ),
    (
        "nested 50k deep, id last",
        f'{{"method":"tools/list","params":{{"x":{deep(DEEP)}}},"jsonrpc":"2.0","id":"l"}}'.encode(),
        -32600,
        "l",
        "more than 128 levels deep",
    ),
    (
        "nested one level past the cap",
        read_nested(129, 6),
        -32600,
        6,
        "Invalid Request: the message nests objects or arrays 129 levels deep; "
        "at most 128 are accepted",
    ),
    (
        "NaN",
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Read","arguments":'
        b'{"path":NaN}}}',
        -32700,
        7,
        "(NaN is not a JSON value)",
    ),
    (
        "a 5000-digit integer",
        b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"x":' + b"9" * 5000 + b"}}",
        -32700,
        8,
        "Exceeds the limit (4300 digits) for integer string conversion",
    ),
    (
        "cut short",
        b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{',
        -32700,
        9,
        "is not JSON",
    ),
    (
        "not UTF-8",
        b'{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"x":"\xff\xfe"}}',
        -32700,
        10,
        "is not JSON ('utf-8' codec can't decode byte 0xff",
    ),
    (
        "a batch",
        b'[{"jsonrpc":"2.0","id":11,"method":"tools/list"}]',
        -32600,
        None,
        "Invalid Request: a batch (a JSON array) is not accepted: send one message object per line",
    ),
    (
        "a string",
        b'"tools/list"',
        -32600,
        None,
        "Invalid Request: expected a JSON-RPC message object, got the str 'tools/list'",
    ),
    (
        "JSON-RPC 1.0",
        b'{"jsonrpc":"1.0","id":12,"method":"tools/list"}',
        -32600,
        12,
        "Invalid Request: 'jsonrpc' must be '2.0', got '1.0'",
    ),
    (
        "a boolean id",
        b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
        -32600,
        None,
        "Invalid Request: 'id' must be an integer or a string, got True",
    ),
    (
        "a null id",
        b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
        -32600,
        None,
        "Invalid Request: 'id' must be an integer or a string, got None",
    ),
    (
        "params as an array",
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":["Read"]}',
        -32600,
        13,
        "Invalid Request: 'params' must be an object, got ['Read']",
    ),
    (
        "arguments as a string",
        b'{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"Grep",'
        b'"arguments":"def"}}',
        -32602,
        14,
        "Invalid params: 'arguments' of 'Grep' must be an object, got 'def'",
    ),
    (
        "a tool name that is a number",
        b'{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":7}}',
        -32602,
        15,
        "Invalid params: 'name' must be the name of a tool, got 7",
    ),
    (
        "neither request nor response",
        b'{"jsonrpc":"2.0","id":16}',
        -32600,
        None,
        "Invalid Request: expected a request or notification (with 'method') or a response "
        "(with 'result' or 'error')",
    ),
]


def test_every_malformed_line_gets_a_json_rpc_error(repo: pathlib.Path, start: Any) -> None:
    server = start(cli_args(repo))
    for label, line, code, request_id, message in MALFORMED:
        server.send(line)
        answer = server.receive(timeout=15, what=label)
        assert answer.get("id", "missing") == request_id, (label, answer)
        assert answer["error"]["code"] == code, (label, answer)
        assert message in answer["error"]["message"], (label, answer)
        assert "result" not in answer
    # A blank line is no message and gets no answer; the server still serves.
    server.send(b"")
    server.send({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
    answer = server.receive()
    assert answer["id"] == 99
    assert sorted(t["name"] for t in answer["result"]["tools"]) == ["Glob", "Grep", "Read", "Task"]


def test_a_message_at_the_depth_cap_is_served(repo: pathlib.Path, start: Any) -> None:
    server = start(cli_args(repo))
    server.send(read_nested(mcp_server.MAX_DEPTH, 1))
    refused = envelope(server.receive())
    assert refused["error"]["code"] == "INVALID_PARAM", refused


@pytest.mark.parametrize("id_last", [False, True], ids=["id first", "id last"])
def test_a_line_over_the_length_cap_is_answered_and_skipped(
    repo: pathlib.Path, start: Any, id_last: bool
) -> None:
    server = start(cli_args(repo))
    pattern = "x" * (mcp_server.MAX_LINE_BYTES + 10)
    arguments = {"name": "Grep", "arguments": {"pattern": pattern}}
    if id_last:
        message = {"method": "tools/call", "params": arguments, "jsonrpc": "2.0", "id": "big"}
    else:
        message = {"jsonrpc": "2.0", "id": "big", "method": "tools/call", "params": arguments}
    server.send(message)
    answer = server.receive(timeout=60)
    assert answer["id"] == "big", answer
    assert answer["error"]["code"] == -32600
    assert answer["error"]["message"].startswith(
        f"Invalid Request: the message is longer than {mcp_server.MAX_LINE_BYTES} bytes, the "
        "most accepted on one line (it starts '{"
    )
    server.call(2, "Glob", {"pattern": "*.py"})
    assert envelope(server.receive())["data"]["paths"] == ["config.py"]


def test_an_answer_that_cannot_be_encoded_becomes_an_internal_error() -> None:
    from mcp import types

    nested: list[Any] = []
    for _ in range(400):
        nested = [nested]
    answer = types.JSONRPCResponse(jsonrpc="2.0", id=3, result={"x": nested})
    line = mcp_server._encoded(answer, types)
    assert line is not None and line.endswith(b"\n")
    error = json.loads(line)
    assert error["id"] == 3
    assert error["error"]["code"] == -32603
    assert error["error"]["message"].startswith(
        "the answer to request 3 could not be encoded as JSON: "
    )


# --- output schemas and unknown arguments ------------------------------------------------------


def in_process(repo: pathlib.Path, trace_dir: pathlib.Path | None = None) -> Any:
    task = outrider.TaskTool(
        outrider.SubagentLauncher(
            repo, outrider.OfflineScout(), trace_dir=trace_dir if trace_dir else False
        )
    )
    return mcp_server.build_server(repo, task, tool_timeout=30)


def test_every_tool_declares_its_output_schema_and_its_envelopes_conform(
    repo: pathlib.Path,
) -> None:
    from mcp import Client

    calls: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"path": "config.py"}),
        ("Read", {"path": "missing.py"}),
        ("Read", {"path": "../outside.txt"}),
        ("Grep", {"pattern": "def load_config"}),
        ("Grep", {"pattern": "json", "output_mode": "count"}),
        ("Grep", {"pattern": "json", "output_mode": "files_with_matches"}),
        ("Grep", {"pattern": "("}),
        ("Glob", {"pattern": "*.py"}),
        ("Glob", {}),
        ("Glob", {"patern": "*.py"}),
        (
            "Task",
            {"description": "Find", "prompt": "Where is load_config?", "subagent_type": "explore"},
        ),
        ("Task", {"description": "Find"}),
    ]

    async def session() -> tuple[list[Any], list[Any]]:
        with anyio.fail_after(60):
            async with Client(in_process(repo)) as client:
                tools = (await client.list_tools()).tools
                # The SDK's client checks each result that is not an error against the schema.
                results = [await client.call_tool(name, args) for name, args in calls]
        return tools, results

    tools, results = anyio.run(session)
    schemas = {t.name: t.output_schema for t in tools}
    assert schemas == {name: mcp_server.envelope_schema(name) for name in schemas}
    assert sorted(schemas) == ["Glob", "Grep", "Read", "Task"]
    statuses = set()
    for (name, args), result in zip(calls, results, strict=True):
        structured = result.structured_content
        jsonschema.validate(structured, schemas[name])
        assert result.is_error == (structured["status"] == "error"), (name, args)
        statuses.add(structured["status"])
    assert statuses == {"success", "error"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"status": "done", "text": "", "stats": {}, "context": {}}, schemas["Read"]
        )
    with pytest.raises(
        ValueError, match="no envelope schema for tool 'Bash': expected Glob, Grep, Read or Task"
    ):
        mcp_server.envelope_schema("Bash")


def test_a_misspelled_argument_is_named_as_unknown(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from mcp import Client

    traces = tmp_path / "traces"
    task = {"description": "Find", "prompt": "Where is load_config?", "subagent_type": "explore"}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Grep", {"patern": "def load_config"}),
        ("Read", {"path": "config.py", "start_lne": 2}),
        ("Glob", {"patern": "*.py", "limt": 3}),
        ("Task", {**task, "modle": "main"}),
        ("Grep", {"pattern": "def", "zzz": 1}),
    ]

    async def session() -> list[Any]:
        with anyio.fail_after(60):
            async with Client(in_process(repo, traces)) as client:
                return [await client.call_tool(name, args) for name, args in calls]

    grep, read, glob, task_result, no_hint = [r.structured_content for r in anyio.run(session)]
    assert grep["error"] == {
        "code": "INVALID_PARAM",
        "message": "Unknown argument 'patern' for Grep; accepted arguments: pattern, path, "
        "glob, type, case_sensitive, output_mode, context, before, after, limit, "
        "include_hidden, include_ignored. Did you mean 'pattern' (not 'patern')?",
    }
    assert grep["text"] == grep["error"]["message"]
    assert grep["context"]["params_input"] == {"patern": "def load_config"}
    assert read["error"]["message"] == (
        "Unknown argument 'start_lne' for Read; accepted arguments: path, start_line, limit. "
        "Did you mean 'start_line' (not 'start_lne')?"
    )
    assert glob["error"]["message"].startswith("Unknown arguments 'patern', 'limt' for Glob; ")
    assert glob["error"]["message"].endswith(
        "Did you mean 'pattern' (not 'patern'), 'limit' (not 'limt')?"
    )
    assert task_result["error"]["message"] == (
        "Unknown argument 'modle' for Task; accepted arguments: description, prompt, "
        "subagent_type, model. Did you mean 'model' (not 'modle')?"
    )
    assert not list(traces.glob("trace-*.jsonl")), "a Task with an unknown argument launched"
    assert no_hint["error"]["message"].startswith("Unknown argument 'zzz' for Grep; ")
    assert "Did you mean" not in no_hint["error"]["message"]


@pytest.mark.skipif(sys.platform == "win32", reason="closes fd 0 through a POSIX shell")
def test_a_closed_stdin_is_a_usage_error_not_a_traceback(repo: pathlib.Path) -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" "$@" <&-', sys.executable, *cli_args(repo)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": PACKAGE_PARENT},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "outrider: stdin: outrider mcp reads requests on stdin and answers on stdout, but " in (
        done.stderr
    )

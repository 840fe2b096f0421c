"""``outrider mcp``: an MCP server over stdio exposing the explore Task and Read/Grep/Glob.

    outrider mcp --root path/to/repo [--model light|main|offline] [--trace-dir DIR]

Any MCP client can then delegate an exploration of the root to a read-only child (the ``Task``
tool, with the same arguments and envelope as :class:`outrider.TaskTool`) or run one confined
``Read``/``Grep``/``Glob`` itself. Each tool result is the envelope, as JSON text and as
``structuredContent`` (each tool declares its ``outputSchema``); an envelope whose status is
``error`` is an error result (``isError``), so a path outside the root comes back refused, never
read, and an argument the tool does not take is named as unknown. Needs the ``mcp`` package
(``pip install '.[mcp]'``).

A Read/Grep/Glob call ends by its deadline (``tool_timeout``: by default
:data:`DEFAULT_TOOL_TIMEOUT`, what one step of a child may take, not the time a child gets for its
whole run) with a ``TIMEOUT`` envelope; a Task call ends by its profile's. When stdin closes, calls still running are cancelled and the server
returns at once (a tool still busy on its thread never holds the process up). Every line that is
not a JSON-RPC message (not JSON, nested more than :data:`MAX_DEPTH` deep, longer than
:data:`MAX_LINE_BYTES`, not a request, notification or response object) is answered with a
JSON-RPC error (``-32700`` or ``-32600``) carrying the request's id when it can be read, so a
client never waits for an answer that will not come.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import IO, TYPE_CHECKING, Any, Final, TypeVar

import outrider
from outrider._aio import envelope_json
from outrider.exceptions import MissingExtraError

if TYPE_CHECKING:
    from anyio import CapacityLimiter
    from mcp.server import Server

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "build_server",
    "envelope_schema",
    "run_stdio",
    "serve",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

INSTRUCTIONS = (
    "Read-only access to one repository. For a question that needs many searches, call Task: "
    "a sandboxed sub-agent explores with Glob/Grep/Read and returns a small validated JSON "
    "answer with file:line evidence. For one quick lookup, call Glob, Grep or Read directly. "
    "Paths are relative to the repository root; nothing outside it can be read."
)

DEFAULT_TOOL_TIMEOUT: Final = 10.0
"""Seconds a direct Read/Grep/Glob call may take unless ``tool_timeout`` says otherwise: one
call is one step of what a child does (the explore profile's 300 s for a whole run split over
its 12 steps is 25 s, and a call is rarely the whole of a step), so a hostile pattern (a slow
backreference over a large file) answers ``TIMEOUT`` in seconds, not after minutes, while an
ordinary search of a large tree finishes well inside it."""

MAX_LINE_BYTES: Final = 32 << 20
"""The longest line (one JSON-RPC message) read from stdin; a longer one is skipped unread past
this and answered with ``-32600``."""

MAX_DEPTH: Final = 128
"""The deepest nesting of objects and arrays accepted in one message (the message itself is
level 1). Deeper ones are answered with ``-32600``: the SDK's parser and serialiser stop near
200-250 levels, and an answer echoing the arguments must stay writable."""

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603


def _mcp() -> tuple[Any, Any, Any]:
    try:
        from mcp import types
        from mcp.server import Server
        from mcp.shared.exceptions import MCPError
    except ImportError as err:
        raise MissingExtraError.needs("outrider mcp", "mcp", "mcp", err) from err
    return types, Server, MCPError


# --- output schemas --------------------------------------------------------------------------

_TOOL_DATA: Final[Mapping[str, dict[str, Any]]] = {
    "Read": {
        "description": "On success: the numbered lines read ('   N | text') and whether the "
        "window was cut.",
        "properties": {"content": {"type": "string"}, "truncated": {"type": "boolean"}},
    },
    "Grep": {
        "description": "On success, by output_mode: matches [{file, line, text}] (content), "
        "files [path] (files_with_matches) or counts [{file, count}] (count); truncated when "
        "more matched than the limit.",
        "properties": {
            "matches": {"type": "array", "items": {"type": "object"}},
            "files": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "array", "items": {"type": "object"}},
            "truncated": {"type": "boolean"},
        },
    },
    "Glob": {
        "description": "On success: the matching paths, relative to the root, sorted; truncated "
        "when more matched than the limit.",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}},
            "truncated": {"type": "boolean"},
        },
    },
}

_TASK_DATA: Final[dict[str, Any]] = {
    "description": "The child's launch, as far as it got: its status, profile, ids and its "
    "validated result (summary, findings, evidence as path:line, unresolved questions).",
    "properties": {
        "status": {"type": "string", "enum": ["completed", "partial", "failed", "unverified"]},
        "profile": {"type": "string"},
        "child_session_id": {"type": "string"},
        "child_run_id": {"type": "string"},
        "result": {"type": ["object", "null"]},
    },
}


def envelope_schema(tool: str) -> dict[str, Any]:
    """The JSON schema of the envelope ``tool`` returns (its MCP ``outputSchema``): ``Task``,
    ``Read``, ``Grep`` or ``Glob``. Every envelope, success or error, conforms to it."""
    if tool == "Task":
        statuses = ["success", "partial", "unverified", "error"]
        data = _TASK_DATA
    elif tool in _TOOL_DATA:
        statuses = ["success", "partial", "error"]
        data = _TOOL_DATA[tool]
    else:
        raise ValueError(f"no envelope schema for tool {tool!r}: expected Glob, Grep, Read or Task")
    return {
        "type": "object",
        "properties": {
            "status": {
                "type": "string",
                "enum": statuses,
                "description": "error when the call failed or was refused (then `error` says "
                "why); partial when a limit cut the answer short.",
            },
            "data": {"type": "object", **data},
            "text": {"type": "string", "description": "What a model reads: a short summary."},
            "stats": {
                "type": "object",
                "description": "Counters: time_ms always, then per tool (lines read, files "
                "searched, tokens used, ...).",
                "properties": {"time_ms": {"type": "integer", "minimum": 0}},
                "required": ["time_ms"],
            },
            "context": {
                "type": "object",
                "description": "cwd, params_input (the arguments as given, maybe shortened) and "
                "path_resolved; the Task tool sends it only with reference_format=True.",
                "properties": {"cwd": {"type": "string"}, "path_resolved": {"type": "string"}},
            },
            "error": {
                "type": "object",
                "description": "Present when status is error.",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "NOT_FOUND, ACCESS_DENIED, PERMISSION_DENIED, "
                        "INVALID_PARAM, TIMEOUT, INTERNAL_ERROR, EXECUTION_ERROR, "
                        "IS_DIRECTORY, BINARY_FILE or CONFLICT.",
                    },
                    "message": {"type": "string"},
                },
                "required": ["code", "message"],
            },
        },
        # The Task tool's compact envelope (its default) has no context: no echo of the prompt.
        "required": ["status", "text", "stats"] + ([] if tool == "Task" else ["context"]),
    }


# --- tools -----------------------------------------------------------------------------------


def _unknown_arguments(
    tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> str | None:
    """The message naming the arguments ``tool`` does not take, or None when it takes them all.

    The core names an unknown argument only once the required ones are there (Grep with just
    ``patern`` says ``pattern`` is missing), and the Task tool ignores one.
    """
    if schema.get("additionalProperties", True) is not False:
        return None
    accepted = list(schema.get("properties", {}))
    unknown = [name for name in arguments if name not in accepted]
    if not unknown:
        return None
    named = ", ".join(repr(name) for name in unknown)
    plural = "s" if len(unknown) > 1 else ""
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
        if close:
            hints.append(f"{close[0]!r} (not {name!r})")
    hint = f" Did you mean {', '.join(hints)}?" if hints else ""
    return (
        f"Unknown argument{plural} {named} for {tool}; accepted arguments: "
        f"{', '.join(accepted)}.{hint}"
    )


def _refused(arguments: Mapping[str, Any], message: str) -> dict[str, Any]:
    """An INVALID_PARAM envelope, shaped as the core's."""
    return {
        "status": "error",
        "data": {},
        "text": message,
        "stats": {"time_ms": 0},
        "context": {"cwd": ".", "params_input": dict(arguments)},
        "error": {"code": "INVALID_PARAM", "message": message},
    }


async def _in_daemon_thread(fn: Callable[[], T], limiter: CapacityLimiter | None = None) -> T:
    """``fn()`` on a daemon thread of its own, awaited. Cancelling the wait abandons the thread:
    unlike AnyIO's worker threads, which the interpreter joins at exit, it never keeps the
    process alive once the server is done (a tool call ends itself by its deadline).
    ``limiter`` bounds how many run at once (default: AnyIO's thread limiter)."""
    import anyio
    import anyio.to_thread

    done = threading.Event()
    outcome: list[tuple[bool, Any]] = []

    def work() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as err:
            outcome.append((False, err))
        finally:
            done.set()

    async with limiter or anyio.to_thread.current_default_thread_limiter():
        threading.Thread(target=work, name="outrider-mcp", daemon=True).start()
        try:
            # A worker thread of its own waits (a shared limiter could run out while the
            # callers hold its tokens); when the wait is cancelled, it is woken below.
            waiter = anyio.CapacityLimiter(1)
            await anyio.to_thread.run_sync(done.wait, abandon_on_cancel=True, limiter=waiter)
        finally:
            done.set()
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result


def build_server(
    root: str | os.PathLike[str],
    task: outrider.TaskTool,
    *,
    tool_timeout: float | None = None,
) -> Server[Any]:
    """An MCP ``Server`` whose tools are ``task`` and Read/Grep/Glob confined to ``root``.

    ``tool_timeout`` is each Read/Grep/Glob call's deadline in seconds (default:
    :data:`DEFAULT_TOOL_TIMEOUT`); a bad one raises :class:`outrider.ConfigError` here."""
    types, server_class, mcp_error = _mcp()

    root = os.fspath(root)
    timeout = DEFAULT_TOOL_TIMEOUT if tool_timeout is None else tool_timeout
    # The core checks a root and a timeout before it runs anything: a Read without a path is
    # refused at once, while a bad root or timeout raises here rather than on every call.
    outrider.run_tool(root, "Read", {}, timeout=timeout)
    # The child only reads too; whether it reaches the outside world depends on its model.
    tools = [
        types.Tool(
            name=task.name,
            description=task.description,
            input_schema=task.parameters,
            output_schema=envelope_schema("Task"),
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
    ]
    for schema in outrider.tool_schemas():
        fn = schema["function"]
        tools.append(
            types.Tool(
                name=fn["name"],
                description=fn["description"],
                input_schema=fn["parameters"],
                output_schema=envelope_schema(fn["name"]),
                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            )
        )
    inputs = {t.name: t.input_schema for t in tools}
    names = sorted(inputs)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name: str = params.name
        arguments: dict[str, Any] = params.arguments or {}
        if name not in inputs:
            raise mcp_error(
                types.INVALID_PARAMS,
                f"unknown tool {name!r}: this server has {', '.join(names)}",
            )
        unknown = _unknown_arguments(name, inputs[name], arguments)
        if unknown is not None:
            envelope: dict[str, Any] = _refused(arguments, unknown)
        elif name == task.name:
            # Cancelling this (stdin closed, or the client's notifications/cancelled) cancels
            # the child.
            envelope = dict(await task.run_async(arguments))
        else:
            run = partial(outrider.run_tool, root, name, arguments, timeout=timeout)
            envelope = dict(await _in_daemon_thread(run))
        text = (
            envelope_json(task, envelope)
            if name == task.name
            else json.dumps(envelope, ensure_ascii=False, indent=2)
        )
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content=envelope,
            is_error=envelope.get("status") == "error",
        )

    server: Server[Any] = server_class(
        "outrider",
        version=outrider.__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


# --- the stdio transport ---------------------------------------------------------------------
#
# The SDK's stdio transport drops a line it cannot parse (no answer: the client waits forever),
# reads a line of any length, and its parser gives up near 200 levels of nesting, dropping that
# request too. This one answers each with a JSON-RPC error.


class _Malformed(Exception):
    """A line that is not a JSON-RPC message: the error to answer it with."""

    def __init__(self, code: int, message: str, request_id: int | str | None) -> None:
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id


_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_NESTED = re.compile(_STRING + rb"|[\[\]{}]", re.S)
_MEMBER = re.compile(rb"\s*(" + _STRING + rb")\s*:\s*", re.S)
_SCALAR = re.compile(rb"(" + _STRING + rb"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)")
_AFTER = re.compile(rb"\s*([,}])")
_TRAILING_ID = re.compile(rb'"id"\s*:\s*(-?\d+|' + _STRING + rb")\s*}\s*$", re.S)


def _top_level_members(text: bytes) -> dict[str, Any]:
    """The scalar members of the top-level object in ``text`` (``id``, ``method``, ...), read
    without parsing the nested values, which may be too deep or broken; stops at the first
    thing that is not JSON."""
    members: dict[str, Any] = {}
    start = re.match(rb"\s*{", text)
    if start is None:
        return members
    pos = start.end()
    while True:
        member = _MEMBER.match(text, pos)
        if member is None:
            return members
        pos = member.end()
        scalar = _SCALAR.match(text, pos)
        if scalar is not None:
            try:
                members[json.loads(member.group(1))] = json.loads(scalar.group(1))
            except ValueError:
                return members
            pos = scalar.end()
        elif text[pos : pos + 1] in (b"{", b"["):
            depth = 0
            for token in _NESTED.finditer(text, pos):
                kind = token.group()
                depth += kind in (b"{", b"[")
                depth -= kind in (b"}", b"]")
                if depth == 0:
                    pos = token.end()
                    break
            else:
                return members
        else:
            return members
        after = _AFTER.match(text, pos)
        if after is None or after.group(1) == b"}":
            return members
        pos = after.end()


def _answer_id(members: Mapping[str, Any]) -> int | str | None:
    """The id to answer with: a request's (it has a string method and an int or string id);
    else None, as JSON-RPC says when the id cannot be known."""
    request_id = members.get("id")
    if isinstance(members.get("method"), str) and _is_id(request_id):
        return request_id
    return None


def _is_id(value: Any) -> bool:
    """Whether ``value`` is an id MCP allows: an integer or a string."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _shown(line: bytes, width: int = 60) -> str:
    """The start of a bad line, for a message."""
    text = line.decode("utf-8", "replace")
    return repr(text if len(text) <= width else text[:width] + "…")


def _depth(value: Any) -> int:
    """How deep objects and arrays nest in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in item if isinstance(child, dict | list))
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _why_invalid(value: Any) -> str:
    """What makes a parsed value other than a JSON-RPC 2.0 message, and what was expected."""
    if isinstance(value, list):
        return "a batch (a JSON array) is not accepted: send one message object per line"
    if not isinstance(value, dict):
        return f"expected a JSON-RPC message object, got the {type(value).__name__} {value!r:.60}"
    if value.get("jsonrpc") != "2.0":
        return f"'jsonrpc' must be '2.0', got {value.get('jsonrpc', '(missing)')!r:.60}"
    method, request_id = value.get("method", None), value.get("id", None)
    if "method" in value and not isinstance(method, str):
        return f"'method' must be a string, got {method!r:.60}"
    if "id" in value and not _is_id(request_id):
        return f"'id' must be an integer or a string, got {request_id!r:.60}"
    if "params" in value and not isinstance(value["params"], dict | None):
        return f"'params' must be an object, got {value['params']!r:.60}"
    if "method" not in value and not ({"result", "error"} & value.keys()):
        return "expected a request or notification (with 'method') or a response (with 'result' or 'error')"
    return "expected a JSON-RPC 2.0 request, notification or response object"


def _parse_line(line: bytes, types: Any) -> Any:
    """The JSON-RPC message on ``line``, or None for a blank line; raises :class:`_Malformed`."""
    if not line.strip():
        return None
    try:
        value = json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        raise _Malformed(
            INVALID_REQUEST,
            f"Invalid Request: the message nests objects or arrays more than {MAX_DEPTH} "
            f"levels deep; at most {MAX_DEPTH} are accepted",
            _answer_id(_request_members(line)),
        ) from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, a 5000-digit integer
        raise _Malformed(
            PARSE_ERROR,
            f"Parse error: the line {_shown(line.strip())} is not JSON ({err}); "
            "expected one JSON-RPC 2.0 message per line",
            _answer_id(_request_members(line)),
        ) from None
    members = value if isinstance(value, dict) else {}
    # Counting brackets is cheap; walking the value is needed only when there are many.
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise _Malformed(
            INVALID_REQUEST,
            f"Invalid Request: the message nests objects or arrays {_depth(value)} levels "
            f"deep; at most {MAX_DEPTH} are accepted",
            _answer_id(members),
        )
    try:
        if "id" in members and not _is_id(members["id"]):
            # The SDK would take it for a notification, which is never answered.
            raise ValueError("the id of a request is an integer or a string")
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError:  # pydantic's ValidationError too
        raise _Malformed(
            INVALID_REQUEST, f"Invalid Request: {_why_invalid(value)}", _answer_id(members)
        ) from None
    if members.get("method") == "tools/call" and "id" in members:
        # The SDK answers bad tools/call params with a bare "Invalid request parameters".
        problem = _bad_call(members.get("params"))
        if problem is not None:
            raise _Malformed(INVALID_PARAMS, f"Invalid params: {problem}", _answer_id(members))
    return message


def _bad_call(params: Any) -> str | None:
    """What is wrong with a ``tools/call`` request's params, or None."""
    if not isinstance(params, dict):
        return f"tools/call needs params {{name, arguments}}, got {params!r:.60}"
    name = params.get("name")
    if not isinstance(name, str):
        return f"'name' must be the name of a tool, got {name!r:.60}"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return f"'arguments' of {name!r:.60} must be an object, got {arguments!r:.60}"
    return None


def _request_members(text: bytes) -> dict[str, Any]:
    """The top-level ``id`` and ``method`` of a line that could not be taken as a message, read
    from its first 64 KiB and (the id, which some clients write last) its last 4 KiB."""
    members = _top_level_members(text[: 64 << 10])
    if "id" not in members:
        found = _TRAILING_ID.search(text[-4096:])
        if found is not None:
            members["id"] = json.loads(found.group(1))
    return members


def _read_line(wire: IO[bytes]) -> bytes | None:
    """The next line of ``wire``, None at its end. A line longer than :data:`MAX_LINE_BYTES`
    raises :class:`_Malformed`; the rest of it is skipped, never held."""
    line = wire.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line
    tail = b""
    while True:
        rest = wire.readline(1 << 20)
        tail = (tail + rest)[-4096:]
        if not rest or rest.endswith(b"\n"):
            break
    raise _Malformed(
        INVALID_REQUEST,
        f"Invalid Request: the message is longer than {MAX_LINE_BYTES} bytes, the most "
        f"accepted on one line (it starts {_shown(line)})",
        _answer_id(_request_members(line[: 64 << 10] + tail)),
    )


def _write(wire: IO[bytes], data: bytes) -> None:
    wire.write(data)
    wire.flush()


def _wire(fd: int, name: str, mode: str) -> IO[bytes]:
    """A private copy of ``fd`` (0 or 1), opened for the protocol; a closed one is a
    :class:`outrider.ConfigError`."""
    try:
        copy = os.dup(fd)
    except OSError as err:
        raise outrider.ConfigError(
            f"{name}: outrider mcp reads requests on stdin and answers on stdout, but {name} "
            f"(fd {fd}) is not open ({err})"
        ) from err
    try:
        # Not closed on exit (closefd=False, and never closed): closing waits for a read still
        # blocked on another thread.
        wire: IO[bytes] = open(copy, mode, closefd=False)
    except OSError as err:
        # A closed fd 0 or 1 taken since by another open (the root directory, say).
        os.close(copy)
        raise outrider.ConfigError(
            f"{name}: outrider mcp reads requests on stdin and answers on stdout, but {name} "
            f"(fd {fd}) is not a stream ({err})"
        ) from err
    return wire


@asynccontextmanager
async def _claimed_stdio() -> AsyncIterator[tuple[IO[bytes], IO[bytes]]]:
    """Private copies of stdin and stdout for the protocol, with fd 0 pointed at the null
    device and fd 1 at stderr meanwhile, so that nothing else reads a request or writes into
    the stream. Both are restored on exit."""
    if sys.stdout is not None:
        sys.stdout.flush()
    reader = _wire(0, "stdin", "rb")
    writer = _wire(1, "stdout", "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield reader, writer
    finally:
        if sys.stdout is not None:
            sys.stdout.flush()
        os.dup2(reader.fileno(), 0)
        os.dup2(writer.fileno(), 1)


async def _serve_lines(server: Server[Any], reader: IO[bytes], writer: IO[bytes]) -> None:
    """Run ``server`` on newline-delimited JSON-RPC read from ``reader``, answers written to
    ``writer``, until ``reader`` ends."""
    import anyio
    from mcp.shared.message import SessionMessage

    types, _, _ = _mcp()
    to_server, from_client = anyio.create_memory_object_stream[Any](0)
    to_client, from_server = anyio.create_memory_object_stream[Any](0)
    errors = to_client.clone()
    reading = anyio.CancelScope()
    # Reading and writing never wait behind tool calls for a thread: stdin's end is always seen.
    pipes = anyio.CapacityLimiter(2)

    async def read() -> None:
        with reading:
            async with to_server, errors:
                while True:
                    try:
                        line = await _in_daemon_thread(partial(_read_line, reader), pipes)
                        if line is None:
                            return
                        message = _parse_line(line, types)
                    except OSError as err:
                        logger.warning("stdin cannot be read (%s): serving ends", err)
                        return
                    except _Malformed as bad:
                        logger.info("answering a malformed line: %s", bad.message)
                        error = types.ErrorData(code=bad.code, message=bad.message)
                        reply = types.JSONRPCError(jsonrpc="2.0", id=bad.request_id, error=error)
                        await errors.send(SessionMessage(reply))
                        continue
                    if message is not None:
                        try:
                            await to_server.send(SessionMessage(message))
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                            return

    async def write() -> None:
        broken = False
        async with from_server:
            async for item in from_server:
                data = _encoded(item.message, types)
                if data is None or broken:
                    continue
                try:
                    await _in_daemon_thread(partial(_write, writer, data), pipes)
                except OSError as err:
                    # The client went away; its stdin's end is near too.
                    logger.info("stdout is closed (%s): answers are dropped", err)
                    broken = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        try:
            await server.run(from_client, to_client, server.create_initialization_options())
        finally:
            # Stdin still open (the server stopped on its own): stop reading, let the writer end.
            reading.cancel()


def _encoded(message: Any, types: Any) -> bytes | None:
    """One message as a line; an answer that cannot be encoded becomes an INTERNAL_ERROR with
    its id, so that its client is still answered."""
    try:
        text: str = message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception as err:
        request_id = getattr(message, "id", None)
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            logger.warning("dropping a message that cannot be encoded as JSON: %s", err)
            return None
        error = types.ErrorData(
            code=INTERNAL_ERROR,
            message=f"the answer to request {request_id!r} could not be encoded as JSON: {err}",
        )
        text = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error).model_dump_json(
            by_alias=True, exclude_unset=True
        )
    return text.encode("utf-8") + b"\n"


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes; calls still
    running then are cancelled."""
    _mcp()
    async with _claimed_stdio() as (reader, writer):
        await _serve_lines(server, reader, writer)


async def serve(
    root: str | os.PathLike[str], task: outrider.TaskTool, *, tool_timeout: float | None = None
) -> None:
    """Serve :func:`build_server` over this process's stdin and stdout until stdin closes."""
    await run_stdio(build_server(root, task, tool_timeout=tool_timeout))

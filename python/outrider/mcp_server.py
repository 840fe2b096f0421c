"""``outrider mcp``: an MCP server over stdio exposing the explore Task and Read/Grep/Glob.

    outrider mcp --root path/to/repo [--model light|main|offline] [--trace-dir DIR]

Any MCP client can then delegate an exploration of the root to a read-only child (the ``Task``
tool, with the same arguments and envelope as :class:`outrider.TaskTool`) or run one confined
``Read``/``Grep``/``Glob`` itself. Each tool result is the envelope, as JSON text and as
``structuredContent``; an envelope whose status is ``error`` is an error result (``isError``),
so a path outside the root comes back refused, never read. Needs the ``mcp`` package
(``pip install 'outrider[mcp]'``).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import outrider
from outrider.exceptions import MissingExtraError

if TYPE_CHECKING:
    from mcp.server import Server

__all__ = ["build_server", "run_stdio", "serve"]

INSTRUCTIONS = (
    "Read-only access to one repository. For a question that needs many searches, call Task: "
    "a sandboxed sub-agent explores with Glob/Grep/Read and returns a small validated JSON "
    "answer with file:line evidence. For one quick lookup, call Glob, Grep or Read directly. "
    "Paths are relative to the repository root; nothing outside it can be read."
)


def _mcp() -> tuple[Any, Any, Any, Any]:
    try:
        from mcp import types
        from mcp.server import Server
        from mcp.server.stdio import stdio_server
        from mcp.shared.exceptions import MCPError
    except ImportError as err:
        raise MissingExtraError(
            f"outrider mcp needs the mcp package, which could not be imported ({err}); "
            "install it with: pip install 'outrider[mcp]'",
            extra="mcp",
        ) from err
    return types, Server, stdio_server, MCPError


def build_server(root: str | os.PathLike[str], task: outrider.TaskTool) -> Server[Any]:
    """An MCP ``Server`` whose tools are ``task`` and Read/Grep/Glob confined to ``root``."""
    types, server_class, _, mcp_error = _mcp()
    import anyio.to_thread

    root = os.fspath(root)
    # The child only reads too; whether it reaches the outside world depends on its model.
    tools = [
        types.Tool(
            name=task.name,
            description=task.description,
            input_schema=task.parameters,
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
                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            )
        )
    names = sorted(t.name for t in tools)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        arguments: dict[str, Any] = params.arguments or {}
        if params.name == task.name:
            envelope: dict[str, Any] = dict(await task.run_async(arguments))
        elif params.name in outrider.READONLY_TOOLS:
            # run_tool blocks (a search of a big tree can take a while): keep the loop free.
            envelope = dict(
                await anyio.to_thread.run_sync(outrider.run_tool, root, params.name, arguments)
            )
        else:
            raise mcp_error(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}: this server has {', '.join(names)}",
            )
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(envelope, ensure_ascii=False, indent=2))],
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


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    _, _, stdio_server, _ = _mcp()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve(root: str | os.PathLike[str], task: outrider.TaskTool) -> None:
    """Serve :func:`build_server` over this process's stdin and stdout until stdin closes."""
    await run_stdio(build_server(root, task))

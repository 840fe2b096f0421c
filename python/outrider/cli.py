"""The ``outrider`` command: run an explore child from the shell, or read a trace.

outrider explore "Where is the config loaded?" --root path/to/repo
outrider explore TASK --model offline --json
outrider trace ~/.local/state/outrider/traces/trace-child-....jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import textwrap
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import outrider


def _model(choice: str, root: pathlib.Path, env_file: str | None) -> tuple[Any, Any, str]:
    """(main_llm, light_llm, note) for a --model choice; the note says where the settings came
    from. ``env_file``: None reads ./.env unless it lies inside ``root``, "none" reads none."""
    if choice == "offline":
        scout = outrider.OfflineScout()
        return scout, scout, "offline scout (no LLM)"
    where: Any = False if env_file == "none" else env_file
    main = outrider.OpenAICompatible.from_env("LLM", env_file=where, root=root)
    light = outrider.OpenAICompatible.from_env("LIGHT_LLM", env_file=where, root=root)
    files = sorted({m.env_file for m in (main, light) if m is not None and m.env_file})
    source = (
        f"settings from the environment and {', '.join(files)}"
        if files
        else ("settings from the environment; no .env file used")
    )
    if main is None:
        scout = outrider.OfflineScout()
        return (
            scout,
            light or scout,
            f"offline scout: LLM_MODEL_ID is not set, so no LLM is configured; {source}",
        )
    return main, light, f"{choice} route; {source}"


def _print_result(result: outrider.SubagentLaunchResult, note: str) -> None:
    data = result.to_dict()
    body = data.get("result") or {}
    reason = data["terminal_reason"]
    if data.get("failure_reason"):
        reason = f"{reason}: {data['failure_reason']}"
    print(f"status: {data['status']}  (run ended: {reason}; model: {data['model_used']} - {note})")
    if data["error"]:
        print(f"error: {data['error']}")
    if data["status"] == "unverified":
        print(
            "\nUNVERIFIED: this evidence could not be found in the files; treat the answer as a lead:"
        )
        for item in data.get("ungrounded_evidence") or []:
            print(f"  - {item['message']}")
    if isinstance(body, dict):
        if body.get("summary"):
            print()
            print(textwrap.fill(body["summary"], width=100))
        for title, key in (
            ("Findings", "findings"),
            ("Evidence", "evidence"),
            ("Open questions", "unresolved_questions"),
        ):
            items = body.get(key) or []
            if items:
                print(f"\n{title}:")
                for item in items:
                    print(f"  - {item}")
    tools = ", ".join(f"{k} x{v}" for k, v in sorted(data["tool_usage"].items())) or "none"
    est = " (estimated)" if data["usage_estimated"] else ""
    print(
        f"\n{data['model_calls']} model call(s), tools: {tools}, {data['token_usage']} tokens{est}, {data['elapsed_ms']} ms"
    )
    if data["trace_path"]:
        print(f"trace: {data['trace_path']}   (outrider trace FILE shows it step by step)")


def _prepared(
    args: argparse.Namespace,
) -> tuple[pathlib.Path, outrider.SubagentLauncher, str] | None:
    """The root, the launcher and the model note both commands use (``--trace-dir`` empty means
    the default), or None after saying on stderr why not."""
    root = pathlib.Path(args.root)
    if not root.is_dir():
        print(f"outrider: --root {args.root!r} is not a directory", file=sys.stderr)
        return None
    try:
        main, light, note = _model(args.model, root, args.env_file)
        launcher = outrider.SubagentLauncher(root, main, light, trace_dir=args.trace_dir or None)
    except outrider.OutriderError as err:
        print(f"outrider: {err}", file=sys.stderr)
        return None
    return root, launcher, note


def _explore(args: argparse.Namespace) -> int:
    prepared = _prepared(args)
    if prepared is None:
        return 2
    _, launcher, note = prepared
    route = None if args.model == "offline" else args.model
    try:
        result = launcher.launch(outrider.SubagentRequest(task=args.task, model_choice=route))
    except outrider.OutriderError as err:
        print(f"outrider: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        _print_result(result, note)
    return EXIT_CODES.get(result.status, 1)


def _mcp(args: argparse.Namespace) -> int:
    import asyncio

    from outrider import mcp_server

    prepared = _prepared(args)
    if prepared is None:
        return 2
    root, launcher, note = prepared
    try:
        server = mcp_server.build_server(root, outrider.TaskTool(launcher))
        # stdout carries the protocol: say which model answers on stderr.
        print(f"outrider mcp: serving {root.resolve()} on stdio ({note})", file=sys.stderr)
        asyncio.run(mcp_server.run_stdio(server))
    except outrider.OutriderError as err:
        print(f"outrider: {err}", file=sys.stderr)
        return 2
    return 0


EXIT_CODES = {"completed": 0, "partial": 0, "failed": 1, "unverified": 3}
"""`outrider explore` exits 0 with an answer, 1 when the child failed, 2 on a usage error and 3
when the answer's evidence could not be found in the files."""


def _short(value: Any, width: int = 110) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _describe(event: str, p: dict[str, Any]) -> str:
    if event == "model_output":
        calls = p.get("tool_calls") or []
        if calls:
            return "calls " + ", ".join(
                f"{c.get('name')}({_short(c.get('arguments', ''), 60)})" for c in calls
            )
        usage = p.get("usage") or {}
        return f"answer {_short(p.get('raw', ''), 80)}  [{usage.get('total_tokens', '?')} tokens]"
    if event == "tool_call":
        return f"{p.get('tool')} {_short(p.get('args', {}), 90)}"
    if event == "tool_result":
        code = p.get("error_code")
        return f"{p.get('tool')} -> {p.get('status')}" + (f" {code}" if code else "")
    if event == "completion_gate_verdict":
        return f"{p.get('verdict')}" + (
            f": {_short(p.get('feedback', ''), 90)}" if p.get("feedback") else ""
        )
    if event == "terminal":
        details = p.get("details") or {}
        return f"{p.get('reason')}" + (
            f": {_short(details.get('error'), 90)}" if details.get("error") else ""
        )
    if event in ("subagent_requested", "subagent_started", "subagent_completed", "subagent_failed"):
        return f"{p.get('child_session_id')} {p.get('profile')} ({p.get('terminal_reason', '')}) trace={p.get('trace_path')}"
    if event == "session_summary":
        return f"steps={p.get('steps')} tools={p.get('tools_used')} usage={p.get('total_usage')}"
    return _short(p, 100)


def _trace(args: argparse.Namespace) -> int:
    path = pathlib.Path(args.file)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        print(f"outrider: cannot read trace {args.file!r}: {err.strerror or err}", file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print(f"outrider: {args.file!r} is not a trace: it is not UTF-8 text", file=sys.stderr)
        return 2
    start: datetime | None = None
    shown = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
            ts = datetime.fromisoformat(ev["ts"].replace("Z", "+00:00"))
            event, step, payload = ev["event"], ev["step"], ev.get("payload") or {}
            if not (isinstance(event, str) and isinstance(step, int) and isinstance(payload, dict)):
                raise TypeError("event must be a str, step an int and payload an object")
            start = start or ts
            ms = (ts - start).total_seconds() * 1000
            text = f"{step:>4}  {ms:>8.1f} ms  {event:<24} {_describe(event, payload)}"
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            print(f"outrider: {args.file}:{n} is not a trace event ({err})", file=sys.stderr)
            return 2
        if shown == 0:
            print(f"session {ev.get('session_id')}")
        shown += 1
        print(text)
    if shown == 0:
        print(f"outrider: {args.file!r} holds no events", file=sys.stderr)
        return 2
    return 0


ENV_FILE_HELP = (
    "the .env file that fills in LLM_* settings the environment leaves unset; 'none' reads "
    "none (default: ./.env, except one inside --root)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="outrider", description="Sandboxed, read-only explore sub-agents."
    )
    parser.add_argument("--version", action="version", version=f"outrider {outrider.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser(
        "explore",
        help="run an explore child on a repository and print its result",
        description="Run an explore child and print its result. Exit status: 0 answered "
        "(completed or partial), 1 the child failed, 2 usage error, 3 unverified (the answer's "
        "evidence is not in the files).",
    )
    ex.add_argument("task", help="what to find out (self-contained)")
    ex.add_argument("--root", default=os.curdir, help="the repository to explore (default: .)")
    ex.add_argument(
        "--model",
        choices=("light", "main", "offline"),
        default="light",
        help="model route; without LLM_MODEL_ID set, the offline scout is used (default: light)",
    )
    ex.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ex.add_argument("--trace-dir", help="where the child's JSONL trace goes (outside the root)")
    ex.add_argument("--env-file", help=ENV_FILE_HELP)
    ex.set_defaults(func=_explore)
    mc = sub.add_parser(
        "mcp",
        help="serve the explore Task and Read/Grep/Glob for a root as an MCP server over stdio",
        description="An MCP server over stdio (needs: pip install 'outrider[mcp]') whose tools "
        "are Task (delegate an exploration to a read-only child) and Read, Grep and Glob, all "
        "confined to --root.",
    )
    mc.add_argument("--root", default=os.curdir, help="the repository to serve (default: .)")
    mc.add_argument(
        "--model",
        choices=("light", "main", "offline"),
        default="light",
        help="the children's model; without LLM_MODEL_ID set, the offline scout is used "
        "(default: light; a Task call's own `model` argument picks the route)",
    )
    mc.add_argument("--trace-dir", help="where the children's JSONL traces go (outside the root)")
    mc.add_argument("--env-file", help=ENV_FILE_HELP)
    mc.set_defaults(func=_mcp)
    tr = sub.add_parser("trace", help="print a JSONL trace as a step-by-step timeline")
    tr.add_argument("file", help="a trace-*.jsonl file")
    tr.set_defaults(func=_trace)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        print("outrider: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`outrider explore ... | head -1`): stop quietly, as `cat` does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``outrider`` command: run an explore child from the shell, or read a trace.

outrider explore "Where is the config loaded?" --root path/to/repo
outrider explore TASK --model offline --json
outrider trace ~/.local/state/outrider/traces/trace-child-....jsonl

What a file name, a model or a trace put in the output reaches a terminal: control characters
(ESC, BEL, CR, ...), C1 controls (``\\x9b``, a one-byte CSI) and bidirectional overrides are
printed escaped (``\\x1b``), in ``--json`` too (as JSON ``\\u`` escapes). Every error is one
line on stderr, ``outrider: ...``, and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import pathlib
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import outrider
from outrider._terminal import fail, json_text, say, term
from outrider.trace import _SUBAGENT_EVENTS


class _TerminalLog(logging.Handler):
    """The library's warnings on stderr while a command runs (what logging's last-resort
    handler would print), each record escaped: they quote file names and model output."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(term(self.format(record), lines=True), file=sys.stderr)
        except Exception:
            self.handleError(record)


def _model(choice: str | None, root: pathlib.Path, env_file: str | None) -> tuple[Any, Any, str]:
    """(main_llm, light_llm, note) for a --model choice; the note says where the settings came
    from. ``env_file``: None reads ./.env unless it lies inside ``root``, "none" reads none.
    A route asked for by name (light, main) needs LLM_MODEL_ID: without it, ConfigError naming
    what to set. Without --model, no LLM configured means the offline scout, said in the note."""
    if choice == "offline":
        scout = outrider.OfflineScout()
        return scout, scout, "offline scout (no LLM)"
    where: Any = False if env_file == "none" else env_file
    main = outrider.OpenAICompatible.from_env(
        "LLM", env_file=where, root=root, required=choice is not None
    )
    light = outrider.OpenAICompatible.from_env(
        "LIGHT_LLM", env_file=where, root=root, required=False
    )
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
    return main, light, f"{choice or 'light'} route; {source}"


def _print_result(result: outrider.SubagentLaunchResult, note: str) -> None:
    data = result.to_dict()
    body = data.get("result") or {}
    reason = data["terminal_reason"]
    if data.get("failure_reason"):
        reason = f"{reason}: {data['failure_reason']}"
    from outrider._display import model_label, partial_why

    say(f"status: {data['status']}  (run ended: {reason}; model: {model_label(result)} - {note})")
    why = partial_why(result)
    if why:
        say(f"why {data['status']}: {why}")
    if data["error"]:
        say(f"error: {data['error']}")
    if data["status"] == "unverified":
        print(
            "\nUNVERIFIED: this evidence could not be found in the files; treat the answer as a lead:"
        )
        for item in data.get("ungrounded_evidence") or []:
            say(f"  - {item['message']}")
    if isinstance(body, dict):
        if body.get("summary"):
            print()
            # fill() turns newlines and other whitespace into spaces and adds its own newlines.
            print(term(textwrap.fill(body["summary"], width=100), lines=True))
        for title, key in (
            ("Findings", "findings"),
            ("Evidence", "evidence"),
            ("Open questions", "unresolved_questions"),
        ):
            items = body.get(key) or []
            if items:
                print(f"\n{title}:")
                for item in items:
                    say(f"  - {item}")
    tools = ", ".join(f"{k} x{v}" for k, v in sorted(data["tool_usage"].items())) or "none"
    est = " (estimated)" if data["usage_estimated"] else ""
    print()
    say(
        f"{data['model_calls']} model call(s), tools: {tools}, {data['token_usage']} tokens{est}, {data['elapsed_ms']} ms"
    )
    if data["trace_path"]:
        say(f"trace: {data['trace_path']}   (outrider trace FILE shows it step by step)")


def _prepared(
    args: argparse.Namespace,
) -> tuple[pathlib.Path, outrider.SubagentLauncher, str] | None:
    """The root, the launcher and the model note both commands use (``--trace-dir`` empty means
    the default), or None after saying on stderr why not."""
    root = pathlib.Path(args.root)
    if not root.is_dir():
        fail(f"--root {args.root!r} is not a directory")
        return None
    try:
        main, light, note = _model(args.model, root, args.env_file)
        launcher = outrider.SubagentLauncher(root, main, light, trace_dir=args.trace_dir or None)
    except outrider.OutriderError as err:
        # A bad LLM_TIMEOUT / LLM_BASE_URL / LLM_MAX_RETRIES (environment or .env) is a usage
        # error: its message names the variable, the value and what is expected.
        fail(err)
        return None
    return root, launcher, note


def _explore(args: argparse.Namespace) -> int:
    prepared = _prepared(args)
    if prepared is None:
        return 2
    _, launcher, note = prepared
    route = None if args.model in (None, "offline") else args.model
    try:
        result = launcher.launch(outrider.SubagentRequest(task=args.task, model_choice=route))
    except outrider.OutriderError as err:
        fail(err)
        return 2
    if args.json:
        print(json_text(result.to_dict()))
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
        server = mcp_server.build_server(
            root, outrider.TaskTool(launcher), tool_timeout=args.tool_timeout
        )
        # stdout carries the protocol: say which model answers on stderr.
        print(
            f"outrider mcp: serving {term(root.resolve())} on stdio ({term(note)})",
            file=sys.stderr,
        )
        asyncio.run(mcp_server.run_stdio(server))
    except outrider.OutriderError as err:
        fail(err)
        return 2
    return 0


EXIT_CODES = {"completed": 0, "partial": 0, "failed": 1, "unverified": 3}
"""`outrider explore` exits 0 with an answer, 1 when the child failed, 2 on a usage error and 3
when the answer's evidence could not be found in the files."""


def _trace(args: argparse.Namespace) -> int:
    """Print what parses; say on stderr which lines did not (exit 2 when none did)."""
    try:
        trace = outrider.Trace.load(args.file, skip_bad_lines=True)
    except outrider.TraceError as err:
        fail(err)
        return 2
    say(f"session {_clip(trace.session_id, 200)}")
    for r in trace.to_records():
        detail = r["detail"]
        if r["event"] in _SUBAGENT_EVENTS and r["payload"].get("trace_path") is not None:
            detail += f" trace={_clip(r['payload']['trace_path'], 300)}"
        say(f"{r['step']:>4}  {r['elapsed_ms']:>8.1f} ms  {_clip(r['event'], 60):<24} {detail}")
    if trace.truncated:
        fail(
            f"note: line {trace.skipped_line} of {args.file} was cut short (the writer stopped "
            "mid-line) and is not shown"
        )
    for number, why in trace.bad_lines:
        fail(f"note: line {number} of {args.file} is not a trace event and is not shown: {why}")
    more = trace.bad_line_count - len(trace.bad_lines)
    if more > 0:
        fail(f"note: {more} more lines of {args.file} are not trace events and are not shown")
    return 0


def _clip(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


ENV_FILE_HELP = (
    "the .env file that fills in LLM_* settings the environment leaves unset; 'none' reads "
    "none (default: ./.env, except one inside --root)"
)


def _close(word: str, choices: Iterable[str]) -> str | None:
    """The one of ``choices`` ``word`` most likely misspells, or None (argparse suggests only
    from Python 3.14 on)."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


_INVALID_CHOICE = re.compile(
    r"invalid choice: (?P<value>'.*'|\S+) \(choose from (?P<choices>.*)\)$"
)


def _choice_hint(message: str) -> str:
    """`` (did you mean 'explore'?)`` for argparse's invalid-choice message, else ``""``."""
    match = _INVALID_CHOICE.search(message)
    if match is None:
        return ""
    value = match["value"].strip("'")
    choices = [c.strip().strip("'") for c in match["choices"].split(",")]
    near = _close(value, choices)
    return f"; did you mean {near!r}?" if near else ""


class _Parser(argparse.ArgumentParser):
    """argparse, its error messages (which quote what was typed) escaped for the terminal, an
    unknown option reported by the subcommand it was given to, and a near miss (``--jsno``,
    ``explor``, ``--model ofline``) answered with what was probably meant."""

    commands: dict[str, argparse.ArgumentParser]

    def error(self, message: str) -> NoReturn:
        super().error(term(message + _choice_hint(message)))

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            commands = getattr(self, "commands", {})
            parser = commands.get(getattr(parsed, "command", None) or "", self)
            known = [o for o in parser._option_string_actions if o.startswith("--")]
            hints = {}
            for word in extra:
                near = _close(word.split("=", 1)[0], known) if word.startswith("-") else None
                if near:
                    hints[word] = near
            message = f"unrecognized arguments: {' '.join(extra)}"
            if len(hints) == 1:
                message += f" (did you mean {next(iter(hints.values()))}?)"
            elif hints:
                message += f" (did you mean {'; '.join(f'{near} for {word}' for word, near in hints.items())}?)"
            parser.error(message)
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="outrider", description="Sandboxed, read-only explore sub-agents.")
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
        "--backend",
        dest="model",
        choices=("light", "main", "offline"),
        default=None,
        help="model route: light or main (each needs LLM_MODEL_ID), or offline for the "
        "model-free scout (default: light when LLM_MODEL_ID is set, else the offline scout)",
    )
    ex.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ex.add_argument("--trace-dir", help="where the child's JSONL trace goes (outside the root)")
    ex.add_argument("--env-file", help=ENV_FILE_HELP)
    ex.set_defaults(func=_explore)
    mc = sub.add_parser(
        "mcp",
        help="serve the explore Task and Read/Grep/Glob for a root as an MCP server over stdio",
        description="An MCP server over stdio (needs the mcp package: pip install 'mcp>=2,<3', or '.[mcp]' in a checkout) whose tools "
        "are Task (delegate an exploration to a read-only child) and Read, Grep and Glob, all "
        "confined to --root.",
    )
    mc.add_argument("--root", default=os.curdir, help="the repository to serve (default: .)")
    mc.add_argument(
        "--model",
        "--backend",
        dest="model",
        choices=("light", "main", "offline"),
        default=None,
        help="the children's model: light or main (each needs LLM_MODEL_ID), or offline for "
        "the model-free scout (default: light when LLM_MODEL_ID is set, else the offline "
        "scout; a Task call's own `model` argument picks the route)",
    )
    mc.add_argument("--trace-dir", help="where the children's JSONL traces go (outside the root)")
    mc.add_argument("--env-file", help=ENV_FILE_HELP)
    mc.add_argument(
        "--tool-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the deadline of each direct Read/Grep/Glob call (default: 10; a Task call ends by "
        "its profile's)",
    )
    mc.set_defaults(func=_mcp)
    from outrider.batch import _cli as batch_cli

    bt = batch_cli.add_parser(sub)
    tr = sub.add_parser("trace", help="print a JSONL trace as a step-by-step timeline")
    tr.add_argument("file", help="a trace-*.jsonl file")
    tr.set_defaults(func=_trace)
    parser.commands = {"explore": ex, "mcp": mc, "batch": bt, "trace": tr}
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # A character the terminal's encoding lacks is printed escaped, not a traceback.
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    log = logging.getLogger("outrider")
    handler = _TerminalLog(logging.WARNING)
    log.addHandler(handler)
    try:
        code: int = args.func(args)
        if sys.stdout is not None:  # None when started with stdout closed
            sys.stdout.flush()
    except outrider.OutriderError as err:
        fail(err)
        return 2
    except KeyboardInterrupt:
        print("outrider: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`outrider explore ... | head -1`): stop quietly, as `cat` does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        log.removeHandler(handler)
    return code


if __name__ == "__main__":
    raise SystemExit(main())

"""``outrider batch tasks.jsonl --out DIR``: the batch from the shell (wired into
``outrider.cli``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from outrider._terminal import fail, json_text, say, term
from outrider.batch._sink import SinkError
from outrider.exceptions import ConfigError

EXIT_SINK = 74
"""The exit status when the output directory could not be written (a full disk): sysexits'
EX_IOERR, a code no other outrider command gives another meaning."""

EXIT_HELP = (
    "Exit status: 0 every task answered (completed, partial or unverified), 1 some task failed "
    "(see the summary and manifest.jsonl), 2 usage error, 74 the output directory could not be "
    "written (a full disk: the rows written before are kept; run the same command again), 130 "
    "interrupted (run the same command again to continue)."
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``batch`` subcommand's parser, added to ``sub`` (the CLI's subparsers)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "batch",
        help="run many explorations from a JSONL file of tasks, locally or on Ray",
        description="Run every task of TASKS (one JSON object a line: root, question, and "
        "optionally commit, profile, context, meta) and write DIR/manifest.jsonl (a row per "
        "finished task) and DIR/traces/. " + EXIT_HELP,
    )
    p.add_argument("tasks", help="the tasks, a .jsonl file")
    p.add_argument("--out", required=True, help="output directory (manifest.jsonl, traces/)")
    p.add_argument("--executor", choices=("local", "ray"), default="local", help="default: local")
    p.add_argument(
        "--max-in-flight", type=int, help="tasks running at once (local default 8; ray: 2x CPUs)"
    )
    p.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip the tasks DIR's manifest already holds, as explore_many does (default); "
        "--no-resume refuses a DIR that holds rows",
    )
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="also rerun the tasks whose row says failed or error (implies --resume)",
    )
    p.add_argument(
        "--model",
        "--backend",
        dest="backend",
        metavar="MODEL",
        help="'offline' (the scout), 'main' or 'env' (LLM_MODEL_ID/LLM_BASE_URL, key in "
        "LLM_API_KEY), 'light' (the same, with the light route from LIGHT_LLM_* when set), or a "
        'BackendSpec as JSON, e.g. \'{"factory": "outrider.adapters:openai", "model": '
        '"gpt-4.1-mini", "api_key_env": "OPENAI_API_KEY"}\' (default: env when LLM_MODEL_ID '
        "is set, else offline; --backend is the same option)",
    )
    p.add_argument(
        "--light-model",
        "--light-backend",
        dest="light_backend",
        metavar="MODEL",
        help="the light route's model: 'offline', 'env' or a BackendSpec as JSON (default: the "
        "same as --model; --light-backend is the same option)",
    )
    p.add_argument("--rpm", type=float, help="requests per minute, per provider, for all tasks")
    p.add_argument("--tpm", type=float, help="tokens per minute, per provider, for all tasks")
    p.add_argument("--ray-address", help="Ray cluster address (default: running Ray, else local)")
    p.add_argument("--ray-num-cpus", type=float, default=0.25, help="CPUs per Ray task (0.25)")
    p.add_argument("--cache-dir", help="git checkout cache (default: ~/.cache/outrider/repos)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)
    return p


def _spec(value: str | None, what: str) -> Any:
    from outrider.batch import BackendSpec

    if value is None:
        return None
    if value == "offline":
        return BackendSpec.offline()
    if value in ("env", "main", "light"):
        spec = BackendSpec.from_env()
        if spec is None:
            raise ConfigError(f"{what} {value}: LLM_MODEL_ID is not set")
        return spec
    try:
        data = json.loads(value)
    except ValueError:
        import difflib

        near = difflib.get_close_matches(value, ["offline", "main", "light", "env"], n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ConfigError(
            f"{what}: must be 'offline', 'main', 'light', 'env' or a BackendSpec as JSON, got "
            f"{value!r}{hint}"
        ) from None
    return BackendSpec.from_dict(data)


def _light_spec(args: argparse.Namespace) -> Any:
    """--light-backend, else for ``--model light`` the LIGHT_LLM_* model when one is set (as
    ``outrider explore --model light`` uses it), else None (the main backend)."""
    from outrider.batch import BackendSpec

    if args.light_backend is not None:
        return _spec(args.light_backend, "--light-model")
    if args.backend == "light":
        return BackendSpec.from_env("LIGHT_LLM")
    return None


def _failed_line(row: dict[str, Any]) -> None:
    """One line on stderr for a task that failed, as it finishes (the summary groups them)."""
    if row.get("status") not in ("failed", "error"):
        return
    error = " ".join(str(row.get("error") or "").split())
    if len(error) > 200:
        error = error[:199] + "…"
    print(
        term(
            f"outrider batch: task {row.get('id')} {row.get('status')} "
            f"({row.get('reason') or 'unknown'}): {error}"
        ),
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    from outrider.batch import LocalExecutor, RateLimit, RayExecutor, explore_many

    try:
        if args.max_in_flight is not None and args.max_in_flight < 1:
            raise ConfigError(f"--max-in-flight: must be at least 1, got {args.max_in_flight}")
        if not os.path.isfile(args.tasks):
            raise ConfigError(f"{args.tasks!r} is not a file of tasks")
        if args.retry_failed and not args.resume:
            raise ConfigError(
                f"--retry-failed reruns the failed tasks {args.out!r} holds, so it resumes; it "
                "cannot go with --no-resume"
            )
        executor: Any
        if args.executor == "ray":
            executor = RayExecutor(
                args.ray_address, max_in_flight=args.max_in_flight, num_cpus=args.ray_num_cpus
            )
        else:
            executor = LocalExecutor(args.max_in_flight or 8)
        limits = None
        if args.rpm is not None or args.tpm is not None:
            limits = RateLimit(requests_per_minute=args.rpm, tokens_per_minute=args.tpm)
        backend = _spec(args.backend, "--model")
        light = _light_spec(args)
        if limits is not None and (backend is None or backend.is_offline) and light is None:
            from outrider.batch import BackendSpec

            if (backend or BackendSpec.from_env() or BackendSpec.offline()).is_offline:
                raise ConfigError("--rpm/--tpm: the offline scout calls no provider to limit")
        batch = explore_many(
            args.tasks,
            backend=backend,
            light_backend=light,
            executor=executor,
            sink=args.out,
            resume=args.resume,
            retry_failed=args.retry_failed,
            rate_limits=limits,
            cache_dir=args.cache_dir,
            progress=False if args.no_progress else None,
            on_result=_failed_line,
        )
    except ConfigError as err:
        fail(err)
        return 2
    except SinkError as err:
        fail(err)
        return EXIT_SINK
    if args.json:
        print(json_text(batch.summary.to_dict()))
    else:
        print(term(str(batch.summary), lines=True))
        say(f"manifest: {os.path.join(args.out, 'manifest.jsonl')}")
    return 1 if batch.summary.failed else 0

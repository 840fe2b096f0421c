"""``explore_many`` / ``aexplore_many``: validate a batch, skip what the sink already holds,
run the rest on an executor, write each row as it finishes, and summarise."""

from __future__ import annotations

import asyncio
import logging
import os
import pathlib
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import outrider
from outrider._core import _redact
from outrider.batch._backend import BackendSpec, as_spec
from outrider.batch._executors import Executor, LocalExecutor, RayExecutor
from outrider.batch._ratelimit import RateLimit
from outrider.batch._sink import TRACES, ManifestSink, MemorySink, Sink, row_problem
from outrider.batch._summary import BatchRun, BatchSummary, Progress
from outrider.batch._tasks import BatchTask, is_url, load_tasks, task_id
from outrider.batch._worker import Job, WorkerConfig
from outrider.exceptions import ConfigError

__all__ = ["aexplore_many", "explore_many"]

logger = logging.getLogger("outrider")

TaskLike = BatchTask | Mapping[str, Any]
OnResult = Callable[[dict[str, Any]], object]


def _tasks(tasks: Any) -> list[BatchTask]:
    if isinstance(tasks, (str, os.PathLike)):
        return load_tasks(tasks)
    if isinstance(tasks, (bytes, Mapping)) or not isinstance(tasks, Iterable):
        raise ConfigError(
            "tasks: must be an iterable of BatchTask or dicts, or a JSONL file's path, got "
            f"{type(tasks).__qualname__}"
        )
    out = []
    for i, task in enumerate(tasks):
        if isinstance(task, BatchTask):
            out.append(task)
        elif isinstance(task, Mapping):
            out.append(BatchTask.from_dict(task, where=f"tasks[{i}]"))
        else:
            raise ConfigError(f"tasks[{i}]: must be a BatchTask or a dict, got {task!r}")
    if not out:
        raise ConfigError("tasks: the batch holds no task")
    return out


def _profiles(profiles: Any) -> dict[str, outrider.RuntimeProfile]:
    known = {p.name: p for p in (outrider.EXPLORE_PROFILE, outrider.VERIFICATION_PROFILE)}
    if profiles is None:
        return known
    items = profiles.values() if isinstance(profiles, Mapping) else profiles
    for p in items:
        if not isinstance(p, outrider.RuntimeProfile):
            raise ConfigError(f"profiles: must hold RuntimeProfile objects, got {p!r}")
        known[p.name] = p
    return known


# Settings that change how a call is made, not what it answers: a task run with another
# timeout or retry count is the same task (a resume does not run it again).
_TRANSPORT_SETTINGS = frozenset({"timeout", "connect_timeout", "max_retries"})


def _identity(spec: BackendSpec) -> dict[str, Any]:
    """``spec`` as it takes part in a task's id: without its transport settings."""
    data = spec.to_dict()
    data["settings"] = {k: v for k, v in data["settings"].items() if k not in _TRANSPORT_SETTINGS}
    return data


def _fingerprint(profile: outrider.RuntimeProfile) -> dict[str, Any]:
    data = profile.to_dict()
    return {k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in data.items()}


def _executor(executor: Any, max_in_flight: int | None) -> Executor:
    if executor is None or executor == "local":
        return LocalExecutor(max_in_flight or 8)
    if executor == "ray":
        return RayExecutor(max_in_flight=max_in_flight)
    if isinstance(executor, Executor):
        if max_in_flight is not None:
            executor.max_in_flight = max_in_flight
        return executor
    raise ConfigError(
        f"executor: must be 'local', 'ray', a LocalExecutor or a RayExecutor, got {executor!r}"
    )


def _rate_limits(rate_limits: Any, specs: list[BackendSpec]) -> dict[str, RateLimit]:
    providers = sorted({s.provider_name for s in specs if not s.is_offline})
    if rate_limits is None:
        return {}
    if isinstance(rate_limits, RateLimit):
        return dict.fromkeys(providers, rate_limits)
    if not isinstance(rate_limits, Mapping):
        raise ConfigError(
            f"rate_limits: must be a RateLimit or a dict of provider -> RateLimit, got {rate_limits!r}"
        )
    out = {}
    for provider, limit in rate_limits.items():
        if not isinstance(limit, RateLimit):
            raise ConfigError(f"rate_limits[{provider!r}]: must be a RateLimit, got {limit!r}")
        if provider not in providers:
            raise ConfigError(
                f"rate_limits: no backend of this batch calls provider {provider!r}; its "
                f"providers: {', '.join(map(repr, providers)) or 'none (offline scout)'}"
            )
        out[provider] = limit
    return out


def _outside_every_root(out: str, tasks: list[BatchTask]) -> None:
    """Refuse a sink inside a local task root, or whose ``traces`` directory is a root or leads
    into one (a link): its traces and rows would be files a later exploration of that root
    reads (the launcher refuses a trace directory there too). Paths are resolved first, so no
    ``..`` spelling or link hides where they are."""
    sink_dir = pathlib.Path(os.path.realpath(os.path.expanduser(out)))
    traces = pathlib.Path(os.path.realpath(sink_dir / TRACES))
    for i, task in enumerate(tasks):
        if is_url(task.root):
            continue
        root = pathlib.Path(os.path.realpath(os.path.expanduser(task.root)))
        for where, what in ((sink_dir, "is inside"), (traces, "has its traces inside")):
            if where == root or root in where.parents:
                raise ConfigError(
                    f"sink {out!r} {what} the explored root {task.root!r} of tasks[{i}]"
                    + (f" ({os.fspath(where)!r})" if where is traces else "")
                    + ": its traces would be files a later exploration of that root reads; "
                    "choose a directory outside every task's root"
                )


def _usable(before: dict[str, dict[str, Any]], store: Sink) -> dict[str, dict[str, Any]]:
    """The rows a sink kept that the batch can use; another is skipped with a warning (its
    task runs again), so that a damaged row never stops the batch after its work is done."""
    usable = {}
    for tid, row in before.items():
        problem = row_problem(row)
        if problem is None and row["id"] != tid:
            problem = f"it is kept under id {tid!r} but says {row['id']!r}"
        if problem is not None:
            logger.warning(
                "%r: task %r: not a manifest row (%s); it runs again", store, tid, problem
            )
            continue
        usable[tid] = row
    return usable


def _sink(sink: Any) -> tuple[Sink, str | None]:
    if sink is None:
        return MemorySink(), None
    if isinstance(sink, (str, os.PathLike)):
        return ManifestSink(sink), os.fspath(sink)
    if isinstance(sink, Sink):
        return sink, os.fspath(sink.out) if isinstance(sink, ManifestSink) else None
    raise ConfigError(f"sink: must be an output directory, a ManifestSink or a Sink, got {sink!r}")


def _row(task: BatchTask, tid: str, outcome: dict[str, Any], executor: str) -> dict[str, Any]:
    outcome = dict(outcome)
    outcome.pop("trace", None)
    outcome.pop("id", None)
    head = {"id": tid, "status": outcome.pop("status"), "reason": outcome.pop("reason", None)}
    return {**head, **task.to_dict(), **outcome, "executor": executor}


async def aexplore_many(
    tasks: Iterable[TaskLike] | str | os.PathLike[str],
    *,
    backend: BackendSpec | Mapping[str, Any] | str | None = None,
    light_backend: BackendSpec | Mapping[str, Any] | str | None = None,
    executor: Executor | str | None = None,
    sink: Sink | str | os.PathLike[str] | None = None,
    resume: bool = True,
    retry_failed: bool = False,
    rate_limits: RateLimit | Mapping[str, RateLimit] | None = None,
    on_result: OnResult | None = None,
    profiles: Iterable[outrider.RuntimeProfile]
    | Mapping[str, outrider.RuntimeProfile]
    | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    max_in_flight: int | None = None,
    progress: bool | None = None,
) -> BatchRun:
    """:func:`explore_many` from async code (the local executor's children run on this loop)."""
    started = time.monotonic()
    task_list = _tasks(tasks)
    main = as_spec(backend, "backend") or BackendSpec.from_env() or BackendSpec.offline()
    light = as_spec(light_backend, "light_backend")
    known = _profiles(profiles)
    for i, task in enumerate(task_list):
        if task.profile not in known:
            raise ConfigError(
                f"tasks[{i}] profile: {task.profile!r} is not a profile of this batch; known: "
                f"{', '.join(sorted(known))} (pass your own RuntimeProfile through profiles=)"
            )
    runner = _executor(executor, max_in_flight)
    limits = _rate_limits(rate_limits, [main] + ([light] if light else []))
    if not isinstance(resume, bool) or not isinstance(retry_failed, bool):
        raise ConfigError(
            f"resume, retry_failed: must be True or False, got {resume!r}, {retry_failed!r}"
        )
    if on_result is not None and not callable(on_result):
        raise ConfigError(f"on_result: must be a callable taking a row dict, got {on_result!r}")

    backend_fp = {"main": _identity(main), "light": _identity(light) if light else None}
    fingerprints = {name: _fingerprint(p) for name, p in known.items()}
    order: dict[str, BatchTask] = {}
    for task in task_list:
        order.setdefault(task_id(task, fingerprints[task.profile], backend_fp), task)
    duplicates = len(task_list) - len(order)
    if duplicates:
        logger.warning("explore_many: %d task(s) given more than once are run once", duplicates)

    store, out = _sink(sink)
    if out is not None:
        _outside_every_root(out, task_list)
    before = _usable(store.open(), store)
    try:
        if before and not resume:
            raise ConfigError(
                f"sink {out or store!r}: already holds {len(before)} finished task(s); pass "
                "resume=True (--resume) to skip them, or use another directory"
            )
        rows: dict[str, dict[str, Any]] = {}
        jobs = []
        for tid, task in order.items():
            kept = before.get(tid)
            if kept is not None and not (
                retry_failed and kept.get("status") in ("failed", "error")
            ):
                rows[tid] = kept
            else:
                jobs.append(Job(tid, task.to_dict()))
        config = WorkerConfig(
            backend=main.to_dict(),
            light_backend=light.to_dict() if light else None,
            profiles=[p for name, p in known.items() if name not in ("explore", "verification")],
            limiters={p: runner.limiter(p, limit) for p, limit in limits.items()},
            cache_dir=os.fspath(cache_dir) if cache_dir is not None else None,
            max_concurrency=max(
                8, runner.max_in_flight if isinstance(runner, LocalExecutor) else 8
            ),
        )
        show = sys.stderr.isatty() if progress is None else bool(progress)
        bar = Progress(len(order), len(rows), show)
        ran: set[str] = set()
        callback_failed = False

        def done(outcome: dict[str, Any]) -> None:
            nonlocal callback_failed
            tid = outcome["id"]
            row = store.write(_row(order[tid], tid, outcome, runner.name), outcome.get("trace"))
            rows[tid] = row
            ran.add(tid)
            bar.update(row)
            if on_result is not None:
                try:
                    on_result(row)
                except Exception as e:
                    log = logger.debug if callback_failed else logger.warning
                    callback_failed = True
                    log(
                        "on_result callback raised on task %s; the batch goes on\n%s",
                        tid,
                        _redact("".join(traceback.format_exception(e)).rstrip()),
                    )

        try:
            if jobs:
                await runner.run(jobs, config, done)
        finally:
            bar.close()
    finally:
        store.close()
    ordered = [rows[tid] for tid in order if tid in rows]
    summary = BatchSummary.of(
        ordered, ran=ran, duplicates=duplicates, wall_s=time.monotonic() - started
    )
    return BatchRun(ordered, summary, out)


def explore_many(
    tasks: Iterable[TaskLike] | str | os.PathLike[str],
    *,
    backend: BackendSpec | Mapping[str, Any] | str | None = None,
    light_backend: BackendSpec | Mapping[str, Any] | str | None = None,
    executor: Executor | str | None = None,
    sink: Sink | str | os.PathLike[str] | None = None,
    resume: bool = True,
    retry_failed: bool = False,
    rate_limits: RateLimit | Mapping[str, RateLimit] | None = None,
    on_result: OnResult | None = None,
    profiles: Iterable[outrider.RuntimeProfile]
    | Mapping[str, outrider.RuntimeProfile]
    | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    max_in_flight: int | None = None,
    progress: bool | None = None,
) -> BatchRun:
    """Run many explorations: each task (a root, a question, a profile, optional context) on
    ``executor`` (``"local"``, ``"ray"``, or a :class:`LocalExecutor` / :class:`RayExecutor`)
    with the model ``backend`` describes (a :class:`BackendSpec`; default: ``LLM_*`` from the
    environment, else the offline scout), each finished task's row and trace written to
    ``sink`` (a directory: ``manifest.jsonl`` and ``traces/``) as it finishes.

    With ``resume`` (default), tasks whose id the sink already holds are not run again
    (``retry_failed=True`` reruns those that failed); without it, a sink holding rows is an
    error. A task's failure is its row, never an exception. ``rate_limits`` (a
    :class:`RateLimit` for every provider, or ``{provider: RateLimit}``) paces every task's model
    calls. ``on_result(row)`` is called in the driver as each task finishes. Returns a
    :class:`BatchRun` (``rows`` in the order given, ``summary``).
    """
    coro = aexplore_many(
        tasks,
        backend=backend,
        light_backend=light_backend,
        executor=executor,
        sink=sink,
        resume=resume,
        retry_failed=retry_failed,
        rate_limits=rate_limits,
        on_result=on_result,
        profiles=profiles,
        cache_dir=cache_dir,
        max_in_flight=max_in_flight,
        progress=progress,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from a running loop (Jupyter): run on a loop of its own thread.
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:
            box["error"] = e

    thread = threading.Thread(target=target, name="outrider-batch")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result: BatchRun = box["value"]
    return result

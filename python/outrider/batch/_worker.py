"""What runs one task, wherever it runs: make its root ready, build (once per process) the
backend from its spec, launch the child, and return the manifest row's fields and the trace.

A task's failure is its row (status ``error`` and a reason), never an exception: the batch goes
on. Only the loss of the process itself is the executor's to handle.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import pathlib
import shutil
import socket
import tempfile
import threading
import time
import uuid
from typing import Any

import outrider
from outrider._core import _redact
from outrider.batch._backend import BackendSpec
from outrider.batch._ratelimit import Limiter, limited, task_deadline
from outrider.batch._tasks import CheckoutError, RepoCache, is_url

# Reasons of a task that ended before or around its child (status "error").
ROOT_NOT_FOUND = "root_not_found"
CHECKOUT_FAILED = "checkout_failed"
BACKEND_ERROR = "backend_error"
LAUNCH_ERROR = "launch_error"
WORKER_LOST = "worker_lost"
EXCEPTION = "exception"

_LAUNCHERS_KEPT = 64


@dataclasses.dataclass
class WorkerConfig:
    """What every task of a batch shares (sent to each Ray worker once)."""

    backend: dict[str, Any]
    light_backend: dict[str, Any] | None
    profiles: list[outrider.RuntimeProfile]
    limiters: dict[str, Limiter]
    cache_dir: str | None
    max_concurrency: int
    key: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    """One per batch run: a Ray worker process keeps one :class:`Worker` per key."""


@dataclasses.dataclass
class Job:
    """One task to run: its id, the task's dict, and the attempt (2 after a lost worker)."""

    id: str
    task: dict[str, Any]
    attempt: int = 1


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class _Prepared:
    __slots__ = ("launcher", "prepare_ms", "request", "resolved_commit", "started_at", "t0")

    def __init__(
        self,
        launcher: Any,
        request: Any,
        resolved: str | None,
        t0: float,
        started: str,
        prepare_ms: int,
    ) -> None:
        self.launcher = launcher
        self.request = request
        self.resolved_commit = resolved
        self.t0 = t0
        self.started_at = started
        self.prepare_ms = prepare_ms


class Worker:
    """Runs jobs of one batch configuration; keeps built backends, launchers and the repository
    cache between jobs."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.repos = RepoCache(config.cache_dir)
        self.trace_dir = tempfile.mkdtemp(prefix="outrider-batch-traces-")
        self._lock = threading.Lock()
        self._models: tuple[Any, Any] | None = None
        self._launchers: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self.where = f"{socket.gethostname()}:{os.getpid()}"

    def close(self) -> None:
        shutil.rmtree(self.trace_dir, ignore_errors=True)

    def time_limit(self, request: Any) -> float:
        """The wall-clock limit of ``request``'s launch (its profile's ``timeout_seconds``)."""
        builtin = (outrider.EXPLORE_PROFILE, outrider.VERIFICATION_PROFILE)
        profiles = {p.name: p for p in (*builtin, *self.config.profiles)}
        profile = profiles.get(request.profile_name, outrider.EXPLORE_PROFILE)
        return float(profile.timeout_seconds)

    def _build(self, data: dict[str, Any]) -> Any:
        spec = BackendSpec.from_dict(data)
        limiter = None if spec.is_offline else self.config.limiters.get(spec.provider_name)
        model = spec.build(rate_limited=limiter is not None)
        return limited(model, limiter) if limiter is not None else model

    def models(self) -> tuple[Any, Any]:
        with self._lock:
            if self._models is None:
                main = self._build(self.config.backend)
                light = (
                    self._build(self.config.light_backend)
                    if self.config.light_backend is not None
                    else main  # never LIGHT_LLM_* of whatever machine runs the task
                )
                self._models = (main, light)
            return self._models

    def launcher(self, root: str) -> Any:
        with self._lock:
            launcher = self._launchers.get(root)
            if launcher is not None:
                self._launchers.move_to_end(root)
                return launcher
        main, light = self.models()
        launcher = outrider.SubagentLauncher(
            root,
            main,
            light,
            trace_dir=self.trace_dir,
            profiles=self.config.profiles,
            max_concurrency=self.config.max_concurrency,
            trace_retention=False,
        )
        with self._lock:
            self._launchers[root] = launcher
            while len(self._launchers) > _LAUNCHERS_KEPT:
                self._launchers.popitem(last=False)
        return launcher

    def _error(
        self, job: Job, reason: str, message: str, t0: float, started: str, **extra: Any
    ) -> dict[str, Any]:
        return {
            "id": job.id,
            "status": "error",
            "reason": reason,
            # A backend's or a launch's error may quote the key (registered when it was read).
            "error": _redact(message),
            "result": None,
            "terminal_reason": None,
            "model_used": None,
            "usage": None,
            "tool_usage": {},
            "timings": {
                "started_at": started,
                "finished_at": _now(),
                "total_ms": int((time.perf_counter() - t0) * 1000),
            },
            "attempts": job.attempt,
            "worker": self.where,
            "trace": None,
            **extra,
        }

    def prepare(self, job: Job) -> _Prepared | dict[str, Any]:
        """The launcher and request of ``job``, or its error row."""
        t0 = time.perf_counter()
        started = _now()
        task = job.task
        root, commit = task["root"], task.get("commit")
        resolved = None
        try:
            if commit is not None:
                url = root if is_url(root) else pathlib.Path(root).expanduser().resolve().as_uri()
                root, resolved = self.repos.checkout(url, commit)
            elif not os.path.isdir(os.path.expanduser(root)):
                return self._error(
                    job,
                    ROOT_NOT_FOUND,
                    f"root {root!r} is not a directory on {self.where}",
                    t0,
                    started,
                )
        except CheckoutError as e:
            return self._error(job, CHECKOUT_FAILED, str(e), t0, started)
        except OSError as e:
            return self._error(job, CHECKOUT_FAILED, f"repository cache: {e}", t0, started)
        try:
            self.models()
        except Exception as e:
            return self._error(
                job,
                BACKEND_ERROR,
                f"{type(e).__name__}: {e}",
                t0,
                started,
                resolved_commit=resolved,
            )
        try:
            launcher = self.launcher(os.path.expanduser(root))
            request = outrider.SubagentRequest(
                task=task["question"],
                profile_name=task.get("profile") or "explore",
                structured_context=task.get("context") or {},
            )
        except outrider.OutriderError as e:
            return self._error(
                job, LAUNCH_ERROR, f"{type(e).__name__}: {e}", t0, started, resolved_commit=resolved
            )
        return _Prepared(
            launcher, request, resolved, t0, started, int((time.perf_counter() - t0) * 1000)
        )

    def finish(self, job: Job, prepared: _Prepared, result: Any) -> dict[str, Any]:
        data = result.to_dict()
        trace = None
        path = data.get("trace_path")
        if path:
            try:
                trace = pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                trace = None
            try:
                os.unlink(path)
            except OSError:
                pass
        status = data["status"]
        reason = None
        if status == "failed":
            reason = data.get("failure_reason") or data.get("terminal_reason")
        return {
            "id": job.id,
            "status": status,
            "reason": reason,
            "error": data.get("error"),
            "result": data.get("result"),
            "terminal_reason": data.get("terminal_reason"),
            "failure_reason": data.get("failure_reason"),
            "model_used": data.get("model_used"),
            "ungrounded_evidence": data.get("ungrounded_evidence") or [],
            "usage": {
                "tokens": data.get("token_usage", 0),
                "input_tokens": data.get("input_tokens", 0),
                "output_tokens": data.get("output_tokens", 0),
                "cached_input_tokens": data.get("cached_input_tokens", 0),
                "model_calls": data.get("model_calls", 0),
                "estimated": data.get("usage_estimated", False),
            },
            "tool_usage": data.get("tool_usage") or {},
            "timings": {
                "started_at": prepared.started_at,
                "finished_at": _now(),
                "prepare_ms": prepared.prepare_ms,
                "launch_ms": data.get("elapsed_ms", 0),
                "total_ms": int((time.perf_counter() - prepared.t0) * 1000),
            },
            "resolved_commit": prepared.resolved_commit,
            "attempts": job.attempt,
            "worker": self.where,
            "trace": trace,
            "trace_error": data.get("trace_error"),
        }

    def run(self, job: Job) -> dict[str, Any]:
        """Run ``job`` here (blocking); its row, never an exception."""
        t0, started = time.perf_counter(), _now()
        try:
            prepared = self.prepare(job)
            if isinstance(prepared, dict):
                return prepared
            with task_deadline(self.time_limit(prepared.request)):
                result = prepared.launcher.launch(prepared.request)
            return self.finish(job, prepared, result)
        except Exception as e:
            return self._error(job, EXCEPTION, f"{type(e).__name__}: {e}", t0, started)

    async def arun(self, job: Job) -> dict[str, Any]:
        """Run ``job`` on the caller's event loop (a git checkout on a thread)."""
        import asyncio

        t0, started = time.perf_counter(), _now()
        try:
            # A git checkout blocks for a while: on a thread. The rest is quick (a thread hop
            # would cost more on a busy machine than the work itself).
            if job.task.get("commit") is not None:
                prepared = await asyncio.to_thread(self.prepare, job)
            else:
                prepared = self.prepare(job)
            if isinstance(prepared, dict):
                return prepared
            # The model is called with the launch's context: its rate limit sees the deadline.
            with task_deadline(self.time_limit(prepared.request)):
                result = await prepared.launcher.launch_async(prepared.request)
            return self.finish(job, prepared, result)
        except Exception as e:
            return self._error(job, EXCEPTION, f"{type(e).__name__}: {e}", t0, started)


# A Ray worker process keeps the Workers of its latest batch runs.
_workers: collections.OrderedDict[str, Worker] = collections.OrderedDict()
_workers_lock = threading.Lock()
_WORKERS_KEPT = 4


def worker_for(config: WorkerConfig) -> Worker:
    with _workers_lock:
        worker = _workers.get(config.key)
        if worker is None:
            worker = _workers[config.key] = Worker(config)
            while len(_workers) > _WORKERS_KEPT:
                _workers.popitem(last=False)[1].close()
        return worker


def lost(job: Job, message: str, where: str = "") -> dict[str, Any]:
    """The row of a task whose worker was lost twice."""
    now = _now()
    return {
        "id": job.id,
        "status": "error",
        "reason": WORKER_LOST,
        "error": message,
        "result": None,
        "terminal_reason": None,
        "model_used": None,
        "usage": None,
        "tool_usage": {},
        "timings": {"started_at": None, "finished_at": now, "total_ms": None},
        "attempts": job.attempt,
        "worker": where or None,
        "trace": None,
    }

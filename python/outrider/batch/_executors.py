"""Where a batch's tasks run: in this process (:class:`LocalExecutor`) or on a Ray cluster
(:class:`RayExecutor`). Both run the same :class:`~outrider.batch._worker.Worker` code and
give the same rows; the driver writes them."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from outrider._core import _redact
from outrider.batch._ratelimit import LocalLimiter, RateLimit, RayLimiter, RayLimiterActor
from outrider.batch._worker import Job, Worker, WorkerConfig, lost, worker_for
from outrider.exceptions import ConfigError, MissingExtraError

__all__ = ["Executor", "LocalExecutor", "RayExecutor"]

logger = logging.getLogger("outrider")

Done = Callable[[dict[str, Any]], None]


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what}: must be an int of at least 1, got {value!r}")
    return value


class Executor:
    """The executor interface: ``limiter`` makes a provider's shared limiter, ``run`` runs the
    jobs and calls ``done(row)`` in the driver's loop as each finishes."""

    name = "executor"
    max_in_flight: int

    def limiter(self, provider: str, limit: RateLimit) -> Any:
        raise NotImplementedError

    async def run(self, jobs: list[Job], config: WorkerConfig, done: Done) -> None:
        raise NotImplementedError


class LocalExecutor(Executor):
    """Tasks in this process on the caller's event loop, at most ``max_in_flight`` children at
    once (the core runs each child; sync model callables on its own threads)."""

    name = "local"

    def __init__(self, max_in_flight: int = 8) -> None:
        self.max_in_flight = _positive_int(max_in_flight, "LocalExecutor max_in_flight")

    def __repr__(self) -> str:
        return f"LocalExecutor(max_in_flight={self.max_in_flight})"

    def limiter(self, provider: str, limit: RateLimit) -> LocalLimiter:
        return LocalLimiter(limit)

    async def run(self, jobs: list[Job], config: WorkerConfig, done: Done) -> None:
        worker = Worker(config)
        try:
            # Every task here would fail the same way: say so once, before any runs.
            worker.models()
        except Exception as e:
            worker.close()
            # The message may quote the key the factory was given (registered when it was read).
            raise ConfigError(
                _redact(f"backend: cannot be built ({type(e).__name__}: {e})")
            ) from None
        queue = iter(jobs)

        async def lane() -> None:
            for job in queue:  # lanes share the iterator: each job is taken once
                done(await worker.arun(job))

        try:
            lanes = [
                asyncio.ensure_future(lane()) for _ in range(min(self.max_in_flight, len(jobs)))
            ]
            try:
                await asyncio.gather(*lanes)
            finally:
                for lane_task in lanes:
                    lane_task.cancel()
                await asyncio.gather(*lanes, return_exceptions=True)
        finally:
            worker.close()


def _ray_run(config: WorkerConfig, job: Job) -> dict[str, Any]:
    """The Ray task: one job on whatever worker process Ray chose."""
    return worker_for(config).run(job)


RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
"""The Ray logger that says, on every ``ray.init`` of a local cluster, that token authentication
is on (Ray's secure default, nothing for a batch's user to do)."""


class _RayNotes(logging.Filter):
    """Ray's note that token authentication is enabled, moved to outrider's debug log."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Token authentication is enabled for this Ray cluster"):
            logger.debug("Ray: %s", message)
            return False
        return True


def _quiet_ray_notes() -> None:
    """Install :class:`_RayNotes` on Ray's authentication logger, once."""
    target = logging.getLogger(RAY_AUTH_LOGGER)
    if not any(isinstance(f, _RayNotes) for f in target.filters):
        target.addFilter(_RayNotes())


class RayExecutor(Executor):
    """Tasks as Ray remote functions on a cluster (``address``, e.g. ``"auto"`` or
    ``"ray://head:10001"``; None: the running Ray, else a local one), each reserving
    ``num_cpus`` (default 0.25: an exploration mostly waits on its model). At most
    ``max_in_flight`` tasks are submitted at once (default: twice what the cluster's CPUs hold).
    A task whose worker process or node is lost is run once more; lost again, its row says
    ``worker_lost``. ``init_kwargs`` go to ``ray.init`` when this executor starts Ray.
    Needs Ray (``pip install '.[ray]'`` from a checkout), and outrider installed on every node."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        max_in_flight: int | None = None,
        num_cpus: float = 0.25,
        runtime_env: Mapping[str, Any] | None = None,
        init_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(num_cpus, bool) or not isinstance(num_cpus, (int, float)) or not num_cpus > 0:
            raise ConfigError(f"RayExecutor num_cpus: must be a positive number, got {num_cpus!r}")
        if max_in_flight is not None:
            _positive_int(max_in_flight, "RayExecutor max_in_flight")
        self.address = address
        self.num_cpus = float(num_cpus)
        self.runtime_env = dict(runtime_env) if runtime_env else None
        self.init_kwargs = dict(init_kwargs or {})
        self._max_in_flight = max_in_flight

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus})"

    @staticmethod
    def _ray() -> Any:
        try:
            import ray
        except ImportError as e:
            raise MissingExtraError.needs("RayExecutor", "ray", "ray", e) from e
        return ray

    def start(self) -> Any:
        """Connect to (or start) Ray; the ``ray`` module."""
        ray = self._ray()
        _quiet_ray_notes()
        if not ray.is_initialized():
            kwargs = dict(self.init_kwargs)
            kwargs.setdefault("log_to_driver", False)
            try:
                ray.init(address=self.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as e:
                where = f"at {self.address!r}" if self.address else "(a local one)"
                raise ConfigError(f"RayExecutor: cannot start or reach Ray {where}: {e}") from e
        return ray

    @property
    def max_in_flight(self) -> int:
        if self._max_in_flight is not None:
            return self._max_in_flight
        ray = self.start()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus / self.num_cpus) * 2)

    @max_in_flight.setter
    def max_in_flight(self, value: int) -> None:
        self._max_in_flight = _positive_int(value, "RayExecutor max_in_flight")

    def limiter(self, provider: str, limit: RateLimit) -> RayLimiter:
        ray = self.start()
        digest = hashlib.sha256(repr(sorted(limit.to_dict().items())).encode()).hexdigest()[:12]
        actor = (
            ray.remote(RayLimiterActor)
            .options(
                name=f"outrider-rate-limit:{provider}:{digest}",
                get_if_exists=True,
                num_cpus=0,
                max_concurrency=1,
            )
            .remote(limit.to_dict())
        )
        return RayLimiter(actor, limit)

    async def run(self, jobs: list[Job], config: WorkerConfig, done: Done) -> None:
        ray = self.start()
        from ray import exceptions as rex

        options: dict[str, Any] = {"num_cpus": self.num_cpus, "max_retries": 0}
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        remote = ray.remote(_ray_run).options(**options)
        config_ref = ray.put(config)
        limit = self.max_in_flight
        queue = list(reversed(jobs))
        pending: dict[asyncio.Future[Any], tuple[Any, Job]] = {}

        def submit(job: Job) -> None:
            ref = remote.remote(config_ref, job)
            pending[asyncio.wrap_future(ref.future())] = (ref, job)

        try:
            while queue or pending:
                while queue and len(pending) < limit:
                    submit(queue.pop())
                finished, _ = await asyncio.wait(list(pending), return_when=asyncio.FIRST_COMPLETED)
                for future in finished:
                    _, job = pending.pop(future)
                    try:
                        row = future.result()
                    except rex.RayTaskError as e:
                        # The task's own code raised past Worker.run: a bug, not a lost worker.
                        row = lost(job, f"the task raised: {e}")
                        row["reason"] = "exception"
                    except (rex.TaskCancelledError, asyncio.CancelledError):
                        raise
                    except rex.RayError as e:
                        if job.attempt == 1:
                            logger.warning(
                                "task %s: its Ray worker was lost (%s); running it again",
                                job.id,
                                type(e).__name__,
                            )
                            submit(Job(job.id, job.task, attempt=2))
                            continue
                        row = lost(
                            job, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                        )
                    done(row)
        finally:
            for ref, _ in pending.values():
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass

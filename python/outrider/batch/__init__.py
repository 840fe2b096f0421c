"""Batch exploration: many questions over many repositories, in this process or on Ray.

::

    import outrider
    from outrider.batch import BackendSpec, BatchRun, BatchTask, RateLimit

    run = outrider.explore_many(
        [BatchTask("https://github.com/example/project", "Where is the help text formatted?",
                   commit="8.1.7")],
        backend=BackendSpec.openai("gpt-4.1-mini", api_key_env="OPENAI_API_KEY"),
        sink="out/",                      # out/manifest.jsonl, out/traces/<task id>.jsonl
        rate_limits=RateLimit(requests_per_minute=500, tokens_per_minute=200_000),
    )
    print(run.summary)
    run.to_pandas()                       # one row per task, its last attempt, with its answer
    BatchRun.load("out/")                 # the same, read back from the directory

A task's id hashes its root, commit, question, context, profile and the backend spec, so a
rerun with ``resume=True`` (the default) skips what finished. ``executor="ray"`` (or a
:class:`RayExecutor` with an address) runs the tasks as Ray tasks; the backend travels as its
spec and is rebuilt on each worker, and each provider's :class:`RateLimit` is one Ray actor
every worker asks.
"""

from __future__ import annotations

from outrider.batch._answers import ANSWER_COLUMNS
from outrider.batch._backend import BackendSpec
from outrider.batch._executors import Executor, LocalExecutor, RayExecutor
from outrider.batch._ratelimit import RateLimit
from outrider.batch._run import aexplore_many, explore_many
from outrider.batch._sink import ManifestSink, MemorySink, Sink, SinkError, read_manifest
from outrider.batch._summary import BatchRun, BatchSummary
from outrider.batch._tasks import BatchTask, RepoCache, default_cache_dir, load_tasks

__all__ = [
    "ANSWER_COLUMNS",
    "BackendSpec",
    "BatchRun",
    "BatchSummary",
    "BatchTask",
    "Executor",
    "LocalExecutor",
    "ManifestSink",
    "MemorySink",
    "RateLimit",
    "RayExecutor",
    "RepoCache",
    "Sink",
    "SinkError",
    "aexplore_many",
    "default_cache_dir",
    "explore_many",
    "load_tasks",
    "read_manifest",
]

"""outrider.batch on Ray (a local cluster of 2 CPUs): the same 200 tasks give the same results
as the local executor, the rate limit is shared by every Ray worker, and a task whose worker
process dies is run once more. Skipped only when Ray cannot be imported."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray",
    reason="Ray cannot be imported here (pip install 'outrider[ray]'); the RayExecutor tests need it",
)

from test_batch import (  # noqa: E402
    KEY_ENV,
    comparable,
    make_repos,
    make_tasks,
    mock_provider,
    pacing_violations,
)

from outrider.batch import BackendSpec, BatchTask, RateLimit, RayExecutor, explore_many  # noqa: E402

TESTS = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A local Ray of 2 CPUs whose workers import this directory's modules (the test model
    factories), hold the test key and share a directory for crash markers."""
    markers = tmp_path_factory.mktemp("markers")
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    env = {
        "PYTHONPATH": path,
        KEY_ENV: "sk-test-not-a-real-key-123456",
        "BATCH_TEST_MARKERS": str(markers),
    }
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 1024 * 1024,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": env},
    )
    try:
        yield markers
    finally:
        ray.shutdown()


def test_same_results_on_local_and_ray(cluster: pathlib.Path, tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 10)
    tasks = make_tasks(repos, 200)
    local = explore_many(
        tasks, backend="offline", sink=tmp_path / "local", cache_dir=tmp_path / "c1"
    )
    started = time.monotonic()
    remote = explore_many(
        tasks,
        backend="offline",
        sink=tmp_path / "ray",
        cache_dir=tmp_path / "c2",  # cloned again, by the Ray workers
        executor=RayExecutor(num_cpus=0.5),
    )
    took = time.monotonic() - started
    assert len(local.rows) == len(remote.rows) == 200
    assert comparable(remote.rows) == comparable(local.rows)
    assert remote.summary.counts == local.summary.counts == {"completed": 200}
    assert {r["executor"] for r in remote.rows} == {"ray"}
    assert len({r["worker"] for r in remote.rows}) >= 2  # spread over worker processes
    assert os.getpid() not in {int(r["worker"].rsplit(":", 1)[1]) for r in remote.rows}
    for row in remote.rows:
        assert (tmp_path / "ray" / row["trace_path"]).stat().st_size > 0
    cloned = {(t.root, t.commit) for t in tasks if t.commit}
    assert len(list((tmp_path / "c2" / "checkouts").glob("*/*"))) == len(cloned) == 5
    assert took < 60, took


def test_rate_limit_is_shared_by_every_ray_worker(
    cluster: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    pytest.importorskip("openai")
    repos = make_repos(tmp_path / "src", 2)
    tasks = make_tasks(repos, 10)
    with mock_provider() as provider:
        spec = BackendSpec.openai("mock-model", provider.base_url, api_key_env=KEY_ENV)
        run = explore_many(
            tasks,
            backend=spec,
            executor=RayExecutor(num_cpus=0.5),
            cache_dir=tmp_path / "cache",
            rate_limits=RateLimit(requests_per_minute=600, burst_requests=1),
        )
    assert run.summary.counts == {"partial": 10}
    assert len({r["worker"] for r in run.rows}) >= 2
    assert len(provider.arrivals) == 20
    assert pacing_violations(provider.arrivals, per_second=10, burst=1) == []


def test_a_lost_worker_task_is_retried_once(cluster: pathlib.Path, tmp_path: pathlib.Path) -> None:
    root = make_repos(tmp_path / "src", 1)[0][0]
    tasks = [
        BatchTask(str(root), "Where is class Store0x1 defined?"),
        BatchTask(str(root), "CRASH-ONCE the first worker to run me: marker-a"),
        BatchTask(str(root), "CRASH-ALWAYS every worker that runs me"),
        BatchTask(str(root), "RAISE: an ordinary failure is not retried"),
        BatchTask(str(root), "Where is class Store0x2 defined?"),
    ]
    run = explore_many(
        tasks,
        backend=BackendSpec("test_batch:scripted_factory"),
        executor=RayExecutor(num_cpus=0.5),
        sink=tmp_path / "out",
    )
    got: list[tuple[Any, ...]] = [(r["status"], r["reason"], r["attempts"]) for r in run.rows]
    assert got == [
        ("partial", None, 1),
        ("partial", None, 2),
        ("error", "worker_lost", 2),
        ("failed", "model_error", 1),
        ("partial", None, 1),
    ]
    assert (cluster / "marker-a").exists()
    assert "WorkerCrashedError" in run.rows[2]["error"] or "died" in run.rows[2]["error"]


def test_a_ray_batch_prints_no_note_a_user_cannot_act_on(tmp_path: pathlib.Path) -> None:
    """Ray's "token authentication is enabled" warning on every start goes to outrider's debug
    log (#37.7); the command prints its summary and nothing else on stderr."""
    repos = make_repos(tmp_path / "src", 1)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in make_tasks(repos, 2)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "LLM_"))}
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks_file), "--out", str(tmp_path / "o"),
         "--executor", "ray", "--model", "offline", "--no-progress", "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"] == {"completed": 2}
    assert "Token authentication" not in done.stderr, done.stderr
    assert "WARNING" not in done.stderr, done.stderr

"""outrider.batch on the local executor: rows, traces, ids, resume after a killed driver,
failure isolation, the shared rate limit (timestamps from a loopback mock provider) and
Retry-After, the summary and the CLI. Everything offline: repositories are made here, git URLs
are ``file://``, the only server is on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import outrider
from outrider.batch import (
    BackendSpec,
    BatchTask,
    LocalExecutor,
    ManifestSink,
    RateLimit,
    explore_many,
    read_manifest,
)
from outrider.batch._ratelimit import _Pacer
from outrider.batch._summary import BatchSummary
from outrider.batch._tasks import task_id

TESTS = pathlib.Path(__file__).resolve().parent
KEY_ENV = "BATCH_TEST_API_KEY"


# --- generated repositories -------------------------------------------------------------------


def _git(*args: str, cwd: pathlib.Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repos(base: pathlib.Path, count: int, files: int = 6) -> list[tuple[pathlib.Path, str]]:
    """``count`` git repositories of ``files`` Python modules each; (path, commit) pairs."""
    repos = []
    for r in range(count):
        root = base / f"repo{r}"
        (root / "pkg").mkdir(parents=True)
        for i in range(files):
            (root / "pkg" / f"mod{i}.py").write_text(
                f'"""Module {i} of repository {r}."""\n\n\n'
                f"def compute_r{r}_m{i}(value):\n    return value * {i + 1}\n\n\n"
                f"class Store{r}x{i}:\n    def load(self):\n        return {r}\n",
                encoding="utf-8",
            )
        _git("init", "-q", cwd=root)
        _git("add", ".", cwd=root)
        _git("commit", "-qm", "initial", cwd=root)
        repos.append((root, _git("rev-parse", "HEAD", cwd=root)))
    return repos


def make_tasks(repos: list[tuple[pathlib.Path, str]], count: int) -> list[BatchTask]:
    """``count`` where-is tasks over ``repos``: every other one through a ``file://`` URL and
    commit (a cached clone), the rest on the directory itself."""
    tasks = []
    for n in range(count):
        r = n % len(repos)
        root, commit = repos[r]
        i = (n // len(repos)) % 6
        question = (
            f"Where is class Store{r}x{i} defined?"
            if n % 4 < 2
            else f"Where is the function compute_r{r}_m{i} defined?"
        )
        # The context keeps every task distinct (it is part of the id).
        context, meta = {"n": n}, {"n": n}
        if n % 2:
            tasks.append(BatchTask(root.as_uri(), question, commit, context=context, meta=meta))
        else:
            tasks.append(BatchTask(str(root), question, context=context, meta=meta))
    return tasks


def comparable(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What must agree between two runs of the same tasks: the task and its answer."""
    return {
        r["id"]: (r["status"], r["reason"], r["question"], r["resolved_commit"], r["result"])
        for r in rows
    }


# --- model factories (import paths a BackendSpec names; Ray workers import them too) -----------


def scripted_factory(
    model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> Callable[[dict[str, Any]], Any]:
    """A model that greps once, then answers partial; what the task says steers it:
    RAISE fails the call; CRASH-ONCE / CRASH-ALWAYS end the worker process (Ray tests)."""

    def call(request: dict[str, Any]) -> Any:
        messages = request["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        if "RAISE" in task:
            raise RuntimeError("the model is down for this task")
        if "CRASH-ALWAYS" in task:
            os._exit(17)
        if "CRASH-ONCE" in task:
            name = re.search(r"marker-\w+", task)
            assert name is not None
            marker = pathlib.Path(os.environ["BATCH_TEST_MARKERS"], name.group())
            if not marker.exists():
                marker.touch()
                os._exit(17)
        if not any(m["role"] == "tool" for m in messages):
            return {"tool_calls": [{"name": "Grep", "arguments": {"pattern": "def "}}]}
        return json.dumps({"status": "partial", "summary": "looked around", "evidence": []})

    return call


# --- a loopback OpenAI-compatible provider -----------------------------------------------------


class MockProvider:
    """Chat completions on 127.0.0.1: a Grep call first, then a partial answer. Records each
    request's arrival (monotonic); ``refuse`` maps a request number (1-based) to a 429 with that
    Retry-After."""

    def __init__(self, refuse: dict[int, str] | None = None) -> None:
        self.arrivals: list[float] = []
        self.refused_at: list[float] = []
        self.refuse = refuse or {}
        self.lock = threading.Lock()
        self.base_url = ""

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        with self.lock:
            self.arrivals.append(time.monotonic())
            number = len(self.arrivals)
            if number in self.refuse:
                self.refused_at.append(self.arrivals[-1])
                return (
                    429,
                    {"Retry-After": self.refuse[number]},
                    {"error": {"message": "slow down", "type": "rate_limit"}},
                )
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        if not any(m.get("role") == "tool" for m in body["messages"]):
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{number}",
                        "type": "function",
                        "function": {"name": "Grep", "arguments": '{"pattern": "def "}'},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            summary = {"status": "partial", "summary": "looked around", "evidence": []}
            message = {"role": "assistant", "content": json.dumps(summary)}
            finish = "stop"
        return (
            200,
            {},
            {
                "id": f"c{number}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model") or "mock",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            },
        )


@contextlib.contextmanager
def mock_provider(refuse: dict[int, str] | None = None) -> Iterator[MockProvider]:
    provider = MockProvider(refuse)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, headers, body = provider.answer(json.loads(raw))
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    provider.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()


def pacing_violations(
    arrivals: list[float], per_second: float, burst: float, slack: float = 0.25
) -> list[str]:
    """Windows [t_i, t_j] holding more requests than ``burst + rate * (width + slack)`` allows.
    The limiter books start times exactly; ``slack`` absorbs a thread that wakes late on this
    shared 2-core machine (its successor, on time, then arrives less than one interval later)."""
    times = sorted(arrivals)
    bad = []
    for i in range(len(times)):
        for j in range(i + 1, len(times)):
            allowed = burst + per_second * (times[j] - times[i] + slack)
            if j - i + 1 > allowed:
                bad.append(f"{j - i + 1} requests in {times[j] - times[i]:.3f} s")
    return bad


# --- tests --------------------------------------------------------------------------------------


def test_local_batch_writes_a_row_and_a_trace_per_task(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 3)
    tasks = make_tasks(repos, 24)
    seen: list[str] = []
    run = explore_many(
        tasks,
        backend="offline",
        sink=tmp_path / "out",
        cache_dir=tmp_path / "cache",
        on_result=lambda row: seen.append(row["id"]),
    )
    assert len(run.rows) == 24 and run.summary.counts == {"completed": 24}
    assert sorted(seen) == sorted(r["id"] for r in run.rows)
    assert read_manifest(tmp_path / "out") == sorted(run.rows, key=lambda r: seen.index(r["id"]))
    for task, row in zip(tasks, run.rows, strict=True):
        assert (row["root"], row["question"], row["meta"]) == (task.root, task.question, task.meta)
        assert row["result"]["status"] == "completed" and row["result"]["evidence"]
        assert row["usage"]["model_calls"] >= 1 and row["attempts"] == 1
        assert row["resolved_commit"] == (task.commit if task.commit else None)
        trace = tmp_path / "out" / row["trace_path"]
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        assert events and {e["session_id"] for e in events} == {events[0]["session_id"]}
        assert row["trace_path"] == f"traces/{row['id']}.jsonl"
    # The clones live in the cache, one checkout per commit, outside every explored root.
    checkouts = list((tmp_path / "cache" / "checkouts").glob("*/*"))
    assert len(checkouts) == 3
    cited = {r["result"]["evidence"][0].split(":")[0] for r in run.rows}
    assert all(c.startswith("pkg/") for c in cited)


def test_task_id_hashes_what_changes_the_answer() -> None:
    task = BatchTask("/r", "Where is x?", commit="abc", context={"k": 1}, meta={"label": 1})
    explore = {"name": "explore", "max_steps": 12}
    backend = {"main": BackendSpec.offline().to_dict(), "light": None}
    base = task_id(task, explore, backend)
    assert base == task_id(task, explore, backend)
    assert (
        task_id(BatchTask("/r", "Where is x?", commit="abc", context={"k": 1}), explore, backend)
        == base
    )
    for other in (
        BatchTask("/r", "Where is y?", commit="abc", context={"k": 1}),
        BatchTask("/r", "Where is x?", commit="abd", context={"k": 1}),
        BatchTask("/s", "Where is x?", commit="abc", context={"k": 1}),
        BatchTask("/r", "Where is x?", commit="abc", context={"k": 2}),
    ):
        assert task_id(other, explore, backend) != base
    assert task_id(task, {**explore, "max_steps": 20}, backend) != base
    openai = {"main": BackendSpec.openai("gpt-4.1-mini").to_dict(), "light": None}
    assert task_id(task, explore, openai) != base


def test_a_failing_task_is_isolated(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 2)
    root, commit = repos[0]
    good = make_tasks(repos, 6)
    bad = [
        BatchTask(str(tmp_path / "missing"), "Where is anything?"),
        BatchTask(root.as_uri(), "Where is anything?", commit="0" * 40),
        BatchTask((tmp_path / "not-a-repo").as_uri(), "Where is anything?", commit=commit),
        BatchTask(str(root), "RAISE: where is anything?"),
    ]
    spec = BackendSpec("test_batch:scripted_factory")
    run = explore_many(
        [*good[:3], *bad, *good[3:]],
        backend=spec,
        sink=tmp_path / "out",
        cache_dir=tmp_path / "cache",
        executor=LocalExecutor(max_in_flight=3),
    )
    by_question = {(r["root"], r["question"]): r for r in run.rows}
    assert [r["status"] for r in run.rows] == ["partial"] * 3 + [
        "error",
        "error",
        "error",
        "failed",
    ] + ["partial"] * 3
    missing = by_question[(str(tmp_path / "missing"), "Where is anything?")]
    assert missing["reason"] == "root_not_found" and str(tmp_path / "missing") in missing["error"]
    failures = run.summary.failures
    assert {k: v["count"] for k, v in failures.items()} == {
        "checkout_failed": 2,
        "root_not_found": 1,
        "model_error": 1,
    }
    assert "0000000000" in failures["checkout_failed"]["example"] or "not-a-repo" in str(
        failures["checkout_failed"]["example"]
    )
    raised = run.rows[6]
    assert "the model is down" in raised["error"] and raised["trace_path"]
    assert run.summary.failed == 4 and len(run.failures()) == 4


def test_resume_after_killing_the_driver_reruns_only_unfinished(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 4)
    tasks = make_tasks(repos, 120)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    out = tmp_path / "out"
    manifest = out / "manifest.jsonl"
    command = [
        sys.executable, "-m", "outrider", "batch", str(tasks_file), "--out", str(out),
        "--backend", "offline", "--max-in-flight", "2", "--cache-dir", str(tmp_path / "cache"),
        "--no-progress",
    ]  # fmt: skip
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if manifest.exists() and manifest.read_bytes().count(b"\n") >= 15:
            break
        assert driver.poll() is None, driver.communicate()
        time.sleep(0.01)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    first = read_manifest(out)
    assert 15 <= len(first) < 120, len(first)

    # With --no-resume the directory is refused, and nothing is run.
    refused = subprocess.run([*command, "--no-resume"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    assert len(read_manifest(out)) == len(first)

    second = subprocess.run([*command, "--resume"], capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    first_ids = {r["id"] for r in first}
    rerun = [r["id"] for r in rows[len(first) :]]
    assert not first_ids & set(rerun)  # nothing finished was run again
    assert len(rerun) == len(set(rerun))
    assert first_ids | set(rerun) == {r["id"] for r in rows}
    assert len(first_ids | set(rerun)) == 120
    assert f"{len(first)} finished before (resumed)" in second.stdout


def test_a_row_cut_short_by_a_kill_is_dropped_and_the_task_rerun(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 1)
    tasks = make_tasks(repos, 4)
    out = tmp_path / "out"
    explore_many(tasks[:3], backend="offline", sink=out)
    manifest = out / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"".join(lines[:2]) + lines[2][:40])  # killed mid-write
    run = explore_many(tasks, backend="offline", sink=out)
    assert run.summary.skipped == 2 and run.summary.ran == 2
    assert [json.loads(line)["id"] for line in manifest.read_text().splitlines()][:2] == [
        json.loads(line)["id"] for line in lines[:2]
    ]
    assert len(read_manifest(out)) == 4


def test_retry_failed_reruns_only_failed_tasks(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 1)
    missing = tmp_path / "later"
    tasks = [*make_tasks(repos, 2), BatchTask(str(missing), "Where is class Store0x0 defined?")]
    out = tmp_path / "out"
    first = explore_many(tasks, backend="offline", sink=out)
    assert [r["status"] for r in first.rows] == ["completed", "completed", "error"]
    (missing / "pkg").mkdir(parents=True)
    (missing / "pkg" / "m.py").write_text("class Store0x0:\n    pass\n")
    again = explore_many(tasks, backend="offline", sink=out)
    assert again.summary.ran == 0
    retried = explore_many(tasks, backend="offline", sink=out, retry_failed=True)
    assert retried.summary.ran == 1 and [r["status"] for r in retried.rows] == ["completed"] * 3


def test_rate_limit_holds_across_tasks(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    repos = make_repos(tmp_path / "src", 2)
    tasks = make_tasks(repos, 12)
    with mock_provider() as unpaced:
        spec = BackendSpec.openai("mock-model", unpaced.base_url, api_key_env=KEY_ENV)
        explore_many(tasks, backend=spec, executor=LocalExecutor(8), cache_dir=tmp_path / "c")
    # Without a limit the same batch bursts (so the check below can fail).
    assert pacing_violations(unpaced.arrivals, per_second=10, burst=1)
    with mock_provider() as provider:
        spec = BackendSpec.openai("mock-model", provider.base_url, api_key_env=KEY_ENV)
        run = explore_many(
            tasks,
            backend=spec,
            executor=LocalExecutor(8),
            cache_dir=tmp_path / "c",
            rate_limits=RateLimit(requests_per_minute=600, burst_requests=1),
        )
    assert run.summary.counts == {"partial": 12}
    assert len(provider.arrivals) == 24  # a Grep call and the answer per task
    assert pacing_violations(provider.arrivals, per_second=10, burst=1) == []
    span = provider.arrivals[-1] - provider.arrivals[0]
    assert span >= 23 / 10 - 0.05


def test_tokens_per_minute_are_paced_by_reported_usage(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    repos = make_repos(tmp_path / "src", 1)
    with mock_provider() as provider:
        spec = BackendSpec.openai("mock-model", provider.base_url, api_key_env=KEY_ENV)
        # One task at a time: each call books its estimate (its request's size plus 1 000
        # tokens for the answer, about 3 500 here), then settles at the reported 120.
        explore_many(
            make_tasks(repos, 6),
            backend=spec,
            executor=LocalExecutor(1),
            rate_limits={
                provider.base_url.split("/")[2]: RateLimit(tokens_per_minute=120 * 60 * 4)
            },
        )
    # 480 tokens/s, a burst of one second's worth: 12 calls of 120 tokens need about 2 s; the
    # estimates alone would take over 80 s, so the settling is what makes it this fast.
    assert len(provider.arrivals) == 12
    assert 1.5 <= provider.arrivals[-1] - provider.arrivals[0] <= 15


def test_retry_after_pauses_every_task(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    repos = make_repos(tmp_path / "src", 2)
    tasks = make_tasks(repos, 8)
    with mock_provider(refuse={3: "1"}) as provider:
        spec = BackendSpec.openai("mock-model", provider.base_url, api_key_env=KEY_ENV)
        run = explore_many(
            tasks,
            backend=spec,
            executor=LocalExecutor(8),
            # 200 ms apart: a call's 429 is back long before the next call is due.
            rate_limits=RateLimit(requests_per_minute=300, burst_requests=1),
        )
    assert run.summary.counts == {"partial": 8}
    (refused,) = provider.refused_at
    after = [t - refused for t in provider.arrivals if t > refused]
    assert len(after) == 8 * 2 + 1 - 3  # the refused call was made again
    # Calls booked before the 429 came back wait out the pause too, then go at the set pace.
    assert min(after) >= 1.0 - 0.05, after[:3]
    assert pacing_violations([t for t in provider.arrivals if t > refused], 5, 1) == []


def test_pacer_never_exceeds_its_rate() -> None:
    pacer = _Pacer(RateLimit(requests_per_minute=120, burst_requests=3))
    now, starts = 0.0, []
    for n in range(50):
        now += 0.05 if n % 7 else 1.3  # bursts and pauses
        starts.append(now + pacer.reserve(100, now))
    assert pacing_violations(starts, per_second=2, burst=3, slack=1e-9) == []
    assert starts[:3] == pytest.approx([1.3, 1.35, 1.4]) and starts[3] > 1.45  # the burst
    pacer.refused(2.0, now)
    assert pacer.reserve(1, now) >= 2.0


def test_summary_counts_percentiles_and_html() -> None:
    rows: list[dict[str, Any]] = [
        {"id": f"t{i}", "status": "completed", "usage": {"tokens": 10, "input_tokens": 8,
         "output_tokens": 2}, "timings": {"total_ms": (i + 1) * 10}}
        for i in range(20)
    ]  # fmt: skip
    rows.append({"id": "bad", "status": "error", "reason": "checkout_failed",
                 "error": "<script>alert(1)</script>", "timings": {"total_ms": 5}})  # fmt: skip
    summary = BatchSummary.of(rows, ran={r["id"] for r in rows}, wall_s=2.0)
    assert summary.to_dict() == {
        "total": 21, "ran": 21, "skipped": 0, "duplicates": 0,
        "counts": {"completed": 20, "error": 1}, "tokens": 200, "input_tokens": 160,
        "output_tokens": 40, "p50_ms": 100, "p95_ms": 190,
        "failures": {"checkout_failed": {"count": 1, "task_ids": ["bad"],
                                         "example": "<script>alert(1)</script>"}},
        "wall_s": 2.0, "tasks_per_s": 10.5,
    }  # fmt: skip
    page = summary._repr_html_()
    assert "&lt;script&gt;" in page and "<script>" not in page and "checkout_failed" in page
    assert "1 x checkout_failed: bad" in str(summary)


def test_bad_inputs_say_what_is_wrong(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: BatchTask("https://example.invalid/x.git", "q"), "a git URL root needs a commit"),
        (lambda: BatchTask(str(root), "q", commit="--upload-pack=x"), "not starting with '-'"),
        (lambda: BatchTask(str(root), ""), "question: must be a non-empty str"),
        (lambda: BackendSpec("openai"), "'module:attribute'"),
        (
            lambda: BackendSpec("outrider.adapters:openai", "m", settings={"api_key": "sk-1"}),
            "pass its name as api_key_env",
        ),
        (lambda: RateLimit(), "give requests_per_minute, tokens_per_minute or both"),
        (lambda: RateLimit(requests_per_minute=0), "requests_per_minute: must be a positive"),
        (
            lambda: explore_many([BatchTask(str(root), "q", profile="deep")], backend="offline"),
            "'deep' is not a profile of this batch",
        ),
        (lambda: explore_many([], backend="offline"), "holds no task"),
        (lambda: explore_many([{"root": str(root), "q": 1}]), "unknown key(s) 'q'"),
        (
            lambda: explore_many([BatchTask(str(root), "q")], backend=lambda r: "x"),  # type: ignore[arg-type]
            "a model callable cannot cross to a worker",
        ),
        (
            lambda: explore_many(
                [BatchTask(str(root), "q")],
                backend="offline",
                rate_limits={"api.example.com": RateLimit(requests_per_minute=1)},
            ),
            "no backend of this batch calls provider 'api.example.com'",
        ),
        (lambda: LocalExecutor(0), "max_in_flight: must be an int of at least 1, got 0"),
    ]
    for make, message in cases:
        with pytest.raises(outrider.ConfigError) as err:
            make()
        assert message in str(err.value)
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"root": "/r", "question": "q"}\n\nnot json\n')
    with pytest.raises(outrider.ConfigError, match=r"tasks.jsonl:3: not a JSON object"):
        explore_many(str(bad))


def test_a_backend_that_cannot_be_built_stops_a_local_batch_at_once(
    tmp_path: pathlib.Path,
) -> None:
    root = tmp_path / "r"
    root.mkdir()
    spec = BackendSpec.openai_compatible(
        "m", "http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR"
    )
    with pytest.raises(outrider.ConfigError) as err:
        explore_many([BatchTask(str(root), "q")], backend=spec, sink=tmp_path / "out")
    assert "the environment variable 'NO_SUCH_KEY_VAR' is not set" in str(err.value)
    assert read_manifest(tmp_path / "out") == []


def test_one_writer_per_sink(tmp_path: pathlib.Path) -> None:
    holder = ManifestSink(tmp_path / "out")
    holder.open()
    try:
        with pytest.raises(outrider.ConfigError, match="another batch is writing to it"):
            (tmp_path / "repo").mkdir()
            task = BatchTask(str(tmp_path / "repo"), "q")
            explore_many([task], backend="offline", sink=tmp_path / "out")
    finally:
        holder.close()


def test_duplicates_run_once_and_async_entry_point(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 1)
    tasks = make_tasks(repos, 3)

    async def main() -> Any:
        # explore_many inside a running loop (Jupyter) runs on a thread of its own.
        inner = explore_many(tasks[:1], backend="offline")
        outer = await outrider.aexplore_many([*tasks, tasks[0]], backend="offline")
        return inner, outer

    inner, outer = asyncio.run(main())
    assert inner.rows[0]["id"] == outer.rows[0]["id"]
    assert len(outer.rows) == 3 and outer.summary.duplicates == 1


def test_cli_batch(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 1)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks = [*make_tasks(repos, 2), BatchTask(str(tmp_path / "nope"), "q")]
    tasks_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks_file), "--out", str(out),
         "--cache-dir", str(tmp_path / "cache"), "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"completed": 2, "error": 1}
    assert list(summary["failures"]) == ["root_not_found"]
    usage = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks_file), "--out", str(out),
         "--resume", "--backend", "{\"factory\": \"x\"}"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert usage.returncode == 2
    assert usage.stderr.startswith("outrider: BackendSpec factory: must be an import path")
    retry = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks_file), "--out", str(out),
         "--retry-failed", "--no-resume"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (retry.returncode, retry.stderr.strip()) == (
        2,
        f"outrider: --retry-failed reruns the failed tasks {str(out)!r} holds, so it resumes; it "
        "cannot "
        "go with --no-resume",
    )


def test_builtin_client_429_pauses_with_a_backoff(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The built-in client does not show Retry-After to Python: a 429 pauses every task for a
    # doubling backoff from 1 s (its own retries are off under a limit, so the 429 is seen).
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    repos = make_repos(tmp_path / "src", 1)
    with mock_provider(refuse={2: "0"}) as provider:
        spec = BackendSpec.openai_compatible("mock-model", provider.base_url, api_key_env=KEY_ENV)
        run = explore_many(
            make_tasks(repos, 3),
            backend=spec,
            rate_limits=RateLimit(requests_per_minute=600, burst_requests=1),
        )
    assert run.summary.counts == {"partial": 3}
    (refused,) = provider.refused_at
    after = [t - refused for t in provider.arrivals if t > refused]
    assert len(after) == 3 * 2 + 1 - 2 and min(after) >= 1.0 - 0.05


def test_progress_without_tqdm_prints_lines(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    repos = make_repos(tmp_path / "src", 1)
    tasks = [*make_tasks(repos, 2), BatchTask(str(tmp_path / "nope"), "q")]
    run = explore_many(tasks, backend="offline", progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines and lines[-1].startswith("outrider batch: 3/3 done, 1 failed,")
    page = run._repr_html_()
    assert "outrider batch" in page and "root_not_found" in page
    assert str(run).startswith("3 task(s): completed 2, error 1")
    quiet = explore_many(tasks[:1], backend="offline", progress=False)
    assert quiet.rows and capsys.readouterr().err == ""


def test_a_revision_name_resolves_to_its_commit(tmp_path: pathlib.Path) -> None:
    ((root, commit),) = make_repos(tmp_path / "src", 1)
    task = BatchTask(root.as_uri(), "Where is class Store0x3 defined?", commit="HEAD")
    run = explore_many([task], backend="offline", cache_dir=tmp_path / "cache")
    (row,) = run.rows
    assert (row["status"], row["commit"], row["resolved_commit"]) == ("completed", "HEAD", commit)
    assert row["result"]["evidence"]


def test_the_sink_is_private_and_never_inside_an_explored_root(tmp_path: pathlib.Path) -> None:
    repos = make_repos(tmp_path / "src", 1)
    tasks = make_tasks(repos, 2)
    local = next(t.root for t in tasks if "://" not in t.root)
    inside = pathlib.Path(local) / "out"
    cache = tmp_path / "cache"
    with pytest.raises(
        outrider.ConfigError, match=r"is inside the explored root .* of tasks\[\d\]"
    ):
        explore_many(tasks, backend="offline", sink=inside, cache_dir=cache, progress=False)
    assert not inside.exists()
    run = explore_many(
        tasks, backend="offline", sink=tmp_path / "out", cache_dir=cache, progress=False
    )
    assert run.summary.counts == {"completed": 2}
    out = tmp_path / "out"
    assert (out.stat().st_mode & 0o777, (out / "traces").stat().st_mode & 0o777) == (0o700, 0o700)
    files = [out / "manifest.jsonl", *(out / "traces").iterdir()]
    assert len(files) == 3 and {f.stat().st_mode & 0o777 for f in files} == {0o600}

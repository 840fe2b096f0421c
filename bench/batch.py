"""Batch throughput: ``outrider.explore_many`` on the local and the Ray executor beside a plain
thread-pool loop over ``SubagentLauncher.launch()``, the same tasks in the same run.

    python bench/batch.py [--tasks 200] [--repos 8] [--in-flight 8] [--model scout|mock]
                          [--latency 0.05] [--rounds 3] [--no-ray] [--quick]

The tasks are where-is questions over generated repositories (local directories: no git clone
is timed). ``--model scout`` (default) is the offline scout, CPU-bound; ``--model mock`` is a
loopback OpenAI-compatible server that answers each call after ``--latency`` seconds (a Grep
call, then an answer), so the figures show what the batch machinery costs while tasks wait on
a model. Every mode keeps ``--in-flight`` tasks running at once (Ray: each task reserves
``2 / in-flight`` CPUs of a local 2-CPU cluster). The batch modes write a manifest and a trace
per task (to a temporary directory), as a user's run does; the pool's launchers write their
traces too.

Per mode: the median wall time of the rounds, tasks/s, and the overhead per task: (wall -
pool's wall) / tasks. Ray's start (``ray.init``) is printed apart and not counted. A mode whose
rows are not all there, or hold a ``failed`` or ``error`` status, stops the script (exit 1).

``--quick`` (what ``make bench-quick`` runs): 8 tasks over 2 repositories, 2 in flight, one
round; figures not judged (Ray's start alone takes 5-9 s: add ``--no-ray`` to skip it).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.server
import json
import pathlib
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import outrider
from outrider.batch import BackendSpec, BatchTask, LocalExecutor, RayExecutor, explore_many


def make_repos(base: pathlib.Path, count: int, files: int = 25) -> list[pathlib.Path]:
    roots = []
    for r in range(count):
        root = base / f"repo{r}"
        (root / "pkg").mkdir(parents=True)
        for i in range(files):
            (root / "pkg" / f"mod{i}.py").write_text(
                f'"""Module {i}."""\n\n\ndef compute_r{r}_m{i}(value):\n    return value * {i}\n\n\n'
                f"class Store{r}x{i}:\n    def load(self):\n        return {r}\n"
            )
        roots.append(root)
    return roots


def make_tasks(roots: list[pathlib.Path], count: int) -> list[BatchTask]:
    return [
        BatchTask(
            str(roots[n % len(roots)]),
            f"Where is class Store{n % len(roots)}x{(n // len(roots)) % 25} defined?",
            context={"n": n},
        )
        for n in range(count)
    ]


@contextlib.contextmanager
def mock_model(latency: float) -> Iterator[str]:
    """A loopback chat-completions endpoint: a Grep call, then a partial answer."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            time.sleep(latency)
            if any(m.get("role") == "tool" for m in body["messages"]):
                answer = {"status": "partial", "summary": "looked", "evidence": []}
                message: dict[str, Any] = {"role": "assistant", "content": json.dumps(answer)}
            else:
                call = {"name": "Grep", "arguments": '{"pattern": "class "}'}
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": call}],
                }
            payload = json.dumps(
                {
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def thread_pool(
    tasks: list[BatchTask], spec: BackendSpec, in_flight: int, traces: pathlib.Path
) -> list[str]:
    """What users write today: a launcher per root, a thread pool over launch() (traces
    written, as a launcher does by default)."""
    model = spec.build()
    launchers: dict[str, outrider.SubagentLauncher] = {}
    lock = threading.Lock()

    def one(task: BatchTask) -> str:
        with lock:
            launcher = launchers.get(task.root)
            if launcher is None:
                launcher = launchers[task.root] = outrider.SubagentLauncher(
                    task.root, model, model, trace_dir=traces, trace_retention=False
                )
        request = outrider.SubagentRequest(task.question, structured_context=dict(task.context))
        return launcher.launch(request).status

    with concurrent.futures.ThreadPoolExecutor(in_flight) as pool:
        return list(pool.map(one, tasks))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--repos", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=8)
    ap.add_argument("--model", choices=("scout", "mock"), default="scout")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--quick", action="store_true", help="8 tasks, 2 repos, 2 in flight, 1 round")
    opts = ap.parse_args()
    if opts.quick:
        opts.tasks, opts.repos, opts.in_flight, opts.rounds = 8, 2, 2, 1

    ray: Any = None
    ray_start = 0.0
    if not opts.no_ray:
        try:
            import ray
        except ImportError:
            print("ray is not installed (pip install 'outrider[ray]'): Ray mode skipped")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        base = pathlib.Path(tmp)
        tasks = make_tasks(make_repos(base / "src", opts.repos), opts.tasks)
        if opts.model == "mock":
            url = stack.enter_context(mock_model(opts.latency))
            spec = BackendSpec.openai_compatible("mock", url, api_key_env=None)
            what = f"loopback mock model, {opts.latency * 1000:.0f} ms a call"
        else:
            spec = BackendSpec.offline()
            what = "offline scout"
        if ray is not None:
            started = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            ray_start = time.perf_counter() - started
            stack.callback(ray.shutdown)
        modes: dict[str, Any] = {
            "thread pool over launch()": lambda: thread_pool(
                tasks, spec, opts.in_flight, base / f"traces-{time.monotonic_ns()}"
            ),
            "explore_many, LocalExecutor": lambda: explore_many(
                tasks,
                backend=spec,
                executor=LocalExecutor(opts.in_flight),
                sink=base / f"out-local-{time.monotonic_ns()}",
            ),
        }
        if ray is not None:
            cpus = 2 / opts.in_flight
            modes[f"explore_many, RayExecutor ({cpus:g} CPU a task)"] = lambda: explore_many(
                tasks,
                backend=spec,
                executor=RayExecutor(num_cpus=cpus, max_in_flight=opts.in_flight),
                sink=base / f"out-ray-{time.monotonic_ns()}",
            )
        # A warm-up round each (imports, Ray workers, file caches), then interleaved rounds.
        walls: dict[str, list[float]] = {name: [] for name in modes}
        for run in modes.values():
            run()
        for _ in range(opts.rounds):
            for name, run in modes.items():
                started = time.perf_counter()
                out = run()
                walls[name].append(time.perf_counter() - started)
                statuses = out if isinstance(out, list) else [r["status"] for r in out.rows]
                if len(statuses) != opts.tasks or "failed" in statuses or "error" in statuses:
                    print(f"{name}: unexpected statuses {sorted(set(statuses))}", file=sys.stderr)
                    return 1
    print(
        f"outrider {outrider.__version__}: {opts.tasks} tasks over {opts.repos} generated "
        f"repositories, {what}, {opts.in_flight} in flight; median of {opts.rounds} rounds"
    )
    pool = statistics.median(walls["thread pool over launch()"])
    print(f"{'mode':<44}{'wall s':>8}{'tasks/s':>10}{'overhead/task':>16}")
    for name, values in walls.items():
        wall = statistics.median(values)
        extra = (
            "-"
            if name.startswith("thread pool")
            else f"{(wall - pool) / opts.tasks * 1000:+.2f} ms"
        )
        print(f"{name:<44}{wall:>8.2f}{opts.tasks / wall:>10.1f}{extra:>16}")
    if ray is not None:
        print(f"(ray.init of a local 2-CPU cluster: {ray_start:.1f} s, not counted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

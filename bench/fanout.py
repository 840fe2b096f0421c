"""Parallel children: wall time of 16 and 64 children whose model call takes 0.3 s.

    python bench/fanout.py [--latency 0.3] [--hint] [--quick]

Three kinds of model, each answering one final ExploreResult (`partial`, no evidence) after
`--latency` seconds: a sync
Python callable (time.sleep), an async one (asyncio.sleep), and `outrider.OpenAICompatible`
against a loopback OpenAI-compatible server started here (127.0.0.1, stopped at the end) that
waits `--latency` before answering. For each it prints one child's time, 16 and 64 children
through `launch_many(requests, max_concurrency=N)` on a launcher built without a limit (the
call's own value governs), the serial time (N x one child), the ratio to one child, and how many
model calls were really in flight at once (counted in the model and in the server).
Target: 16 children within 1.3x of one child's time, and N in flight for N children.

What is measured is how children overlap, so each child makes exactly one model call: the
explore profile runs with `min_tool_calls=0` (its default of 1 would refuse an answer given
before any tool call and ask again, two more calls of `--latency` each) and the repo-map hint off
(its checks of places an answer left out would be more calls). Every child must end as scripted
(its answer accepted after that one call). `--hint`: the repo-map hint on (explore's
default), over `loop.py`'s 20-file tree with where-is tasks, so that each child's offline scout
searches the tree before its one model call (what the hint costs a batch of children).
`--quick`: 0.02 s latency, 4 and 8 children; figures not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import outrider

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from loop import make_tree

# A `partial` answer: the child searched nothing, and a `completed` one must cite lines it saw.
ANSWER = json.dumps(
    {"status": "partial", "summary": "nothing searched", "findings": [], "evidence": []}
)


def completion() -> dict[str, Any]:
    return {
        "id": "bench",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": ANSWER},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def accepted(r: Any) -> bool:
    """The child ended as scripted: its one answer accepted after one model call."""
    return bool(r.status == "partial" and r.terminal_reason == "completed" and r.model_calls == 1)


class InFlight:
    """Model calls in flight now, and the most at once since the last reset."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1

    def reset(self) -> None:
        with self.lock:
            self.peak = 0


def serve(latency: float, flight: InFlight) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with flight:
                time.sleep(latency)
            body = json.dumps(completion()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--hint", action="store_true", help="the repo-map hint on, on a 20-file tree")
    ap.add_argument("--quick", action="store_true", help="0.02 s latency, 4 and 8 children")
    opts = ap.parse_args()
    latency = 0.02 if opts.quick else opts.latency
    small, big = (4, 8) if opts.quick else (16, 64)
    # One model call per child: no tool call required before the answer.
    profile = outrider.EXPLORE_PROFILE.replace(min_tool_calls=0, repo_map_hint=opts.hint)

    def task(i: int) -> str:
        return f"Where is f{i % 33} defined?" if opts.hint else f"t{i}"

    flight = InFlight()

    def sync_model(request: dict[str, Any]) -> str:
        with flight:
            time.sleep(latency)
        return ANSWER

    async def async_model(request: dict[str, Any]) -> str:
        with flight:
            await asyncio.sleep(latency)
        return ANSWER

    server = serve(latency, flight)
    http = outrider.OpenAICompatible(
        "bench-model",
        f"http://127.0.0.1:{server.server_address[1]}/v1",
        timeout=30.0,
        max_retries=0,
    )
    models: list[tuple[str, Any]] = [
        ("sync callable", sync_model),
        ("async callable", async_model),
        ("OpenAICompatible", http),
    ]
    hint = "on (the scout searches 20 files first)" if opts.hint else "off"
    print(
        f"outrider {outrider.__version__}: children answering after {latency:.2f}s "
        f"(one model call each), repo-map hint {hint}"
    )
    print(
        f"{'model':<18}{'1 child':>9}{f'{small} children':>13}{'ratio':>7}{f'serial {small}':>11}"
        f"{'in flight':>11}{f'{big} children':>13}{f'serial {big}':>11}{'in flight':>11}"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "repo"
        if opts.hint:
            make_tree(root)
        else:
            root.mkdir()
            (root / "a.py").write_text("x = 1\n")
        for name, model in models:
            # No launcher-wide limit: each launch_many call's max_concurrency governs.
            launcher = outrider.SubagentLauncher(root, model, trace_dir=False, profiles=[profile])
            one_req = outrider.SubagentRequest(task=task(1))
            launcher.launch(one_req)  # warm up
            t0 = time.perf_counter()
            r = launcher.launch(one_req)
            one = time.perf_counter() - t0
            assert accepted(r), r
            times, peaks = {}, {}
            for n in (small, big):
                flight.reset()
                t0 = time.perf_counter()
                results = launcher.launch_many(
                    [outrider.SubagentRequest(task=task(i)) for i in range(n)], max_concurrency=n
                )
                times[n] = time.perf_counter() - t0
                peaks[n] = flight.peak
                assert len(results) == n, len(results)
                assert all(accepted(x) for x in results), [x for x in results if not accepted(x)]
            worst = max(worst, times[small] / one)
            print(
                f"{name:<18}{one:>8.2f}s{times[small]:>12.2f}s{times[small] / one:>6.2f}x"
                f"{small * one:>10.2f}s{peaks[small]:>11}{times[big]:>12.2f}s{big * one:>10.2f}s"
                f"{peaks[big]:>11}"
            )
    server.shutdown()
    if opts.quick:
        print("quick mode: results checked, figures not judged")
    else:
        print(f"worst 16-children ratio: {worst:.2f}x (target: <= 1.3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

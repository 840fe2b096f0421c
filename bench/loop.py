"""Harness overhead: one launch of a scripted 4-call explore on a 20-file tree.

    python bench/loop.py [--launches 300]

The model is a plain Python callable that answers instantly (turn 1 Glob `src/**/*.py`, turn 2
Grep `def f1` limit 20, turn 3 Read limit 40, turn 4 the final JSON), so what is timed is the
harness: the loop, the real tools, the completion gate with its evidence check, the trace (JSONL
file written outside the root) and the Python boundary. Prints mean / median / p95 per launch and
per model call. The reference system was measured on this machine class with the same script
shape at 39.1 ms per launch (about 9.8 ms per model call; its behaviour notes, §9.5); it cannot be
installed here, so its figure is printed as recorded, beside ours. Target: <= 2 ms per launch.
The harness is timed with the repo-map hint off (the reference has none); a second row times
explore's default, where the offline scout searches the tree before the first model call.
Use a release build (`make dev-release` or `pip install .`).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time
from typing import Any

import outrider

REFERENCE_MS_PER_LAUNCH = 39.1
REFERENCE_MS_PER_CALL = 9.8


def make_tree(root: pathlib.Path) -> None:
    (root / "src").mkdir(parents=True)
    for i in range(20):
        body = "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(33))
        (root / "src" / f"mod{i:02d}.py").write_text(body[: 100 * 40])


def scripted() -> Any:
    answers = [
        {"tool_calls": [{"id": "c1", "name": "Glob", "arguments": {"pattern": "src/**/*.py"}}]},
        {
            "tool_calls": [
                {"id": "c2", "name": "Grep", "arguments": {"pattern": "def f1", "limit": 20}}
            ]
        },
        {
            "tool_calls": [
                {"id": "c3", "name": "Read", "arguments": {"path": "src/mod00.py", "limit": 40}}
            ]
        },
        {
            "content": '{"status": "completed", "summary": "f1 is defined in every module.", '
            '"findings": ["f1 adds 1"], "evidence": ["src/mod00.py:4"], "unresolved_questions": []}'
        },
    ]

    def model(request: dict[str, Any]) -> dict[str, Any]:
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        return answers[turn]

    return model


def timed(root: pathlib.Path, traces: pathlib.Path, hint: bool, launches: int) -> list[float]:
    """Milliseconds per launch; with ``hint`` the explore profile's repo-map hint is on (the
    offline scout searches the tree before the first model call)."""
    profile = outrider.EXPLORE_PROFILE.replace(repo_map_hint=hint)
    launcher = outrider.SubagentLauncher(root, scripted(), trace_dir=traces, profiles=[profile])
    request = outrider.SubagentRequest(task="Where is f1 defined?")
    for _ in range(20):  # warm up
        launcher.launch(request)
    times = []
    for _ in range(launches):
        t0 = time.perf_counter()
        r = launcher.launch(request)
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status == "completed" and r.model_calls == 4, r
    return times


def row(label: str, times: list[float]) -> str:
    mean, median = statistics.mean(times), statistics.median(times)
    p95 = sorted(times)[int(0.95 * len(times)) - 1]
    return f"{label:<28}{mean:>7.2f}ms{median:>7.2f}ms{p95:>7.2f}ms{mean / 4:>8.2f}ms"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--launches", type=int, default=300)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "repo"
        make_tree(root)
        traces = pathlib.Path(tmp) / "traces"
        times = timed(root, traces, False, opts.launches)
        hinted = timed(root, traces, True, opts.launches)
        traced = len(list(traces.iterdir()))
    mean = statistics.mean(times)
    print(
        f"outrider {outrider.__version__}: {opts.launches} launches of a 4-call scripted explore on 20 files ({traced} traces written)"
    )
    print(f"{'':<28}{'mean':>9}{'median':>9}{'p95':>9}{'per call':>10}")
    print(row("outrider (this run)", times))
    print(
        f"{'reference (recorded)':<28}{REFERENCE_MS_PER_LAUNCH:>7.1f}ms{'':>9}{'':>9}{REFERENCE_MS_PER_CALL:>8.1f}ms"
    )
    print(row("outrider + repo-map hint", hinted))
    print(
        f"speed-up: {REFERENCE_MS_PER_LAUNCH / mean:.0f}x; target <= 2 ms per launch: {'met' if mean <= 2 else 'NOT met'}"
    )
    print(
        f"the repo-map hint (explore's default: the scout searches before the first model call) adds {statistics.mean(hinted) - mean:.2f} ms here"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

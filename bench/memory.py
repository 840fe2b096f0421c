"""Memory: resident set size before, at its peak and after many launches.

    python bench/memory.py [--launches 2000] [--children 256] [--no-hint] [--quick]

Runs the 4-call scripted explore of `loop.py` (Glob, Grep, Read, the final JSON; a plain Python
callable; traces written outside the root) `--launches` times in a row, then the same number
again (RSS that keeps growing from one round to the next would be a leak), then `--children`
children at once through `launch_many`, twice (their first model call waits until every
child's first call has come, at most 10 s, then 50 ms more, so that all of them are in flight
together however long each took to get there; the launcher has no limit of its own, the call
passes `max_concurrency=--children`, and the most first calls in flight at once is printed),
and reads RSS once more after 11 s idle. What one child in flight holds is RSS when the last
first call of the first concurrent round came (every child then in flight, waiting on its
model) over RSS before the round, divided by the children. RSS is
sampled every 2 ms by a thread reading /proc/self/statm. The peer figures come from the same
run: a bare interpreter, and one that only imports outrider. Every child must end `completed`
(the script fails otherwise). Explore runs at its defaults, the repo-map hint on (the offline
scout searches the tree before each child's first model call); `--no-hint` turns it off.
`--quick`: 20 launches, 8 children, no idle wait; figures not judged. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import outrider

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from loop import make_tree, scripted

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / (1 << 20)


@contextmanager
def sampled() -> Iterator[dict[str, float]]:
    """Before, peak and after RSS of the block, in MiB."""
    figures = {"before": rss_mib(), "peak": 0.0}
    figures["peak"] = figures["before"]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.002):
            figures["peak"] = max(figures["peak"], rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield figures
    finally:
        done.set()
        sampler.join()
        figures["after"] = rss_mib()
        figures["peak"] = max(figures["peak"], figures["after"])


def slow_first_turn(
    model: Callable[[dict[str, Any]], Any], peak: list[int], full: list[float], children: int
) -> Callable[[dict[str, Any]], Any]:
    """`model` whose first turn waits until `children` first turns are in flight (at most 10 s),
    then 50 ms more; `peak[0]` is the most first turns in flight at once and `full[0]` the RSS
    when the last of them came (reset both before each round)."""
    changed = threading.Condition()
    now = [0]

    def wrapped(request: dict[str, Any]) -> Any:
        if not any(m["role"] == "assistant" for m in request["messages"]):
            with changed:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
                if now[0] == children:
                    full[0] = rss_mib()
                changed.notify_all()
                changed.wait_for(lambda: peak[0] >= children, timeout=10)
            time.sleep(0.05)
            with changed:
                now[0] -= 1
        return model(request)

    return wrapped


def peer(code: str) -> float:
    probe = f"{code}\nimport os\nprint(int(open('/proc/self/statm').read().split()[1]) * {PAGE})"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) / (1 << 20)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--children", type=int, default=256)
    ap.add_argument("--no-hint", action="store_true", help="explore with the repo-map hint off")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, no idle wait")
    opts = ap.parse_args()
    idle = 11
    if opts.quick:
        opts.launches, opts.children, idle = 20, 8, 0
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "repo"
        make_tree(root)
        traces = pathlib.Path(tmp) / "traces"
        profile = outrider.EXPLORE_PROFILE.replace(repo_map_hint=not opts.no_hint)
        launcher = outrider.SubagentLauncher(root, scripted(), trace_dir=traces, profiles=[profile])
        request = outrider.SubagentRequest(task="Where is f1 defined?")
        statuses: set[str] = set()
        for label in (f"{opts.launches} sequential launches", f"{opts.launches} more (leak check)"):
            with sampled() as figures:
                for _ in range(opts.launches):
                    statuses.add(launcher.launch(request).status)
            rows.append((label, figures))
        peak, full = [0], [0.0]
        many = outrider.SubagentLauncher(
            root,
            slow_first_turn(scripted(), peak, full, opts.children),
            trace_dir=traces,
            profiles=[profile],
        )
        held: list[float] = []
        for label in ("concurrent children (launch_many,", "more (leak check,"):
            peak[0], full[0] = 0, 0.0
            with sampled() as figures:
                started = time.perf_counter()
                results = many.launch_many([request] * opts.children, max_concurrency=opts.children)
                elapsed = time.perf_counter() - started
            statuses.update(r.status for r in results)
            if full[0]:
                held.append((full[0] - figures["before"]) / opts.children)
            rows.append((f"{opts.children} {label} {peak[0]} at once, {elapsed:.2f} s)", figures))
        written = sum(1 for _ in traces.rglob("*.jsonl"))
        # The runtime's idle blocking threads (one per concurrent sync model call) exit after
        # 10 s; what is left then is what the process keeps.
        time.sleep(idle)
        settled = rss_mib()
    hint = "off" if opts.no_hint else "on"
    print(
        f"outrider {outrider.__version__}: RSS in MiB, 4-call scripted explore on 20 files, "
        f"repo-map hint {hint}, {written} traces written; statuses {sorted(statuses)}"
    )
    print(f"{'':62} {'before':>8} {'peak':>8} {'after':>8}")
    for label, f in rows:
        print(f"{label:62} {f['before']:8.1f} {f['peak']:8.1f} {f['after']:8.1f}")
    print(f"{f'after {idle} s idle':62} {settled:8.1f}")
    each = (
        " / ".join(f"{h:.3f}" for h in held)
        or "not measured: the children were never all in flight"
    )
    print(f"{'one child in flight (all in flight; round 1 / round 2)':62} {each}")
    for code in ("pass", "import outrider"):
        print(f"{f'peer: python -c {code!r}':62} {peer(code):8.1f}")
    if statuses != {"completed"}:
        print(f"error: a child did not complete: statuses {sorted(statuses)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

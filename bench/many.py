"""Memory of one big fan-out: RSS before, at its peak and after `launch_many` of `--children`
children of `loop.py`'s scripted explore, and after the results are dropped.

    python bench/many.py [--children 5000] [--no-traces] [--max-concurrency N] [--quick]

The launcher is built without a limit of its own; by default the call gives none either (the
launcher's default of 8 at a time applies), as in the report that 5000 children with traces
peaked at 432 MiB and kept it. RSS is sampled every 2 ms from /proc/self/statm. Every child
must end `completed` (the script fails otherwise). `--quick`: 50 children, figures not judged.
Linux only.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import tempfile
import time

import outrider

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from loop import make_tree, scripted
from memory import rss_mib, sampled


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--children", type=int, default=5000)
    ap.add_argument("--no-traces", action="store_true")
    ap.add_argument("--max-concurrency", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="50 children")
    opts = ap.parse_args()
    if opts.quick:
        opts.children = 50
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "repo"
        make_tree(root)
        traces: pathlib.Path | bool = False if opts.no_traces else pathlib.Path(tmp) / "traces"
        launcher = outrider.SubagentLauncher(root, scripted(), trace_dir=traces)
        request = outrider.SubagentRequest(task="Where is f1 defined?")
        with sampled() as figures:
            started = time.perf_counter()
            results = launcher.launch_many(
                [request] * opts.children, max_concurrency=opts.max_concurrency
            )
            elapsed = time.perf_counter() - started
        statuses = sorted({r.status for r in results})
        del results
        gc.collect()
        time.sleep(1)
        dropped = rss_mib()
    kind = "no traces" if opts.no_traces else "traces"
    print(
        f"outrider {outrider.__version__}: launch_many of {opts.children} ({kind}, "
        f"max_concurrency={opts.max_concurrency}) in {elapsed:.1f} s, statuses {statuses}; "
        f"RSS MiB before {figures['before']:.1f}, peak {figures['peak']:.1f}, "
        f"after {figures['after']:.1f}, results dropped {dropped:.1f}"
    )
    if statuses != ["completed"]:
        print(f"error: a child did not complete: statuses {statuses}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

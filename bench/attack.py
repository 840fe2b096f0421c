"""The attack suite's figures: cases tried, escapes, hangs, crashes, worst time past the limit.

    PYTHONPATH=python python bench/attack.py            # every case, as a tool call and as a child
    PYTHONPATH=python python bench/attack.py --only read-link   # the cases whose id has the text
    PYTHONPATH=python python bench/attack.py --quick            # every 10th case, time not judged

Runs the cases of ``tests/attack_cases.py`` (the ones ``tests/test_attack.py`` asserts on) in
temporary trees and prints one line per failing run, then the totals the README quotes. It
exits 1 when a run failed. `--quick` (what `make bench-quick` runs) takes every 10th case and does
not count a run as failed for its time alone (a loaded CI host is slow; `tests/test_attack.py`
judges the limits): an escape, a crash, a changed tree or a wrong answer still fail it.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from attack_cases import CASES, Outcome, run_child_case, run_tool_case, workspace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only the cases whose id contains this")
    parser.add_argument("--mode", choices=["tool", "child", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="every 10th case; time not judged")
    opts = parser.parse_args()
    cases = [c for c in CASES if opts.only in c.id]
    if opts.quick:
        cases = cases[::10]
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="outrider-attack-") as tmp:
        with workspace(pathlib.Path(tmp)) as (trees, traces):
            for case in cases:
                runs = []
                if opts.mode in ("tool", "both"):
                    runs.append(run_tool_case(case, trees))
                if opts.mode in ("child", "both"):
                    runs.append(run_child_case(case, trees, traces))
                for out in runs:
                    outcomes.append(out)
                    if out.problems:
                        print(f"FAIL {out.mode:5} {out.case}: {'; '.join(out.problems)}")
    took = time.perf_counter() - started
    worst = max(outcomes, key=lambda o: o.over)
    # A hang adds exactly one problem (its time); --quick forgives that one alone.
    failed = sum(1 for o in outcomes if len(o.problems) > (o.hung if opts.quick else 0))
    print(
        f"cases: {len(cases)} ({len(outcomes)} runs: tool calls and scripted children) in {took:.1f} s"
    )
    print(f"escapes: {sum(o.escaped for o in outcomes)}")
    print(f"hangs (past the limit + 0.5 s): {sum(o.hung for o in outcomes)}")
    print(f"crashes (exceptions): {sum(o.crashed for o in outcomes)}")
    print(
        f"worst time against the limit: {worst.over:+.3f} s ({worst.mode} {worst.case}, "
        f"{worst.elapsed:.3f} s under {worst.limit:g} s)"
    )
    print(f"slowest run: {max(o.elapsed for o in outcomes):.3f} s")
    print(f"failed runs (any problem): {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The offline scout: explore this repository with no model and no API key.

The scout is a model-free ranked search over definitions, file names and lines; it cites the best
definitions it finds and says that no model interpreted them.

    python examples/offline_scout.py "Where is the completion gate feedback built?"
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import outrider

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(task: str) -> int:
    scout = outrider.OfflineScout()
    print(f"search terms: {outrider.OfflineScout.terms(task)}")
    with tempfile.TemporaryDirectory() as traces:
        launcher = outrider.SubagentLauncher(ROOT, scout, scout, trace_dir=traces)
        result = launcher.launch(outrider.SubagentRequest(task=task))
        print(f"status: {result.status}, model: {result.model_used}, {result.elapsed_ms} ms")
        if isinstance(result.result, outrider.ExploreResult):
            print(result.result.summary)
            for check in outrider.check_evidence(ROOT, result.result.evidence):
                print(f"  {'ok ' if check['grounded'] else 'BAD'} {check['evidence']}")
        print(result.to_json(indent=2)[:300], "...")
    return 0 if result.status in ("completed", "partial") else 1


if __name__ == "__main__":
    raise SystemExit(main(" ".join(sys.argv[1:]) or "Where is the completion gate feedback built?"))

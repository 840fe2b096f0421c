"""Tokens that buy answers: the input tokens of a scripted 10-Read exploration, re-sending every
Read result whole (before) and re-sending a used one as its cited lines (after).

    python bench/tokens.py [--quick]

The model is a script (no network): on a 10-file tree (200 lines each) it makes 10 Reads of 120
lines, one a turn, each turn's text citing the lines it kept from the read before ("src/m03.py:
41-44 defines ...; reading m04 next", as a model thinking aloud writes), the last Read reading
the first file's place again; then its final answer citing four places. Input tokens are the
runtime's estimate (the script reports no usage), summed over the 11 model calls, with
``tuning={"shrink_used_results": 0}`` (every result whole, as before #33's item 6) and with the
default. Also checked: the prefix (system prompt, tool schemas, first user message) is the same
bytes in every request, so a provider's prompt cache hits on it; and tokens per right answer
(the answer is right when its evidence holds the place the script planted).

No figure of the reference system is recorded for this script (issue #33 says a scripted
10-Read exploration billed 84-92k input tokens, 2-10% under the reference; that script is not
in this repository). `--quick` checks the results and judges no figure (what `make bench-quick`
runs).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
from typing import Any

import outrider
from outrider.testing import ScriptedLLM, call, final

FILES = 10
LINES = 200
READ = 120


def make_tree(root: pathlib.Path) -> None:
    (root / "src").mkdir(parents=True)
    for i in range(FILES):
        body = []
        for j in range(LINES // 4):
            body += [
                f"def handler_{i}_{j}(request, retries=3):",
                f'    """Handle request kind {j} of module {i}, retrying on timeouts."""',
                f"    return dispatch(request, kind={j}, module={i}, retries=retries)",
                "",
            ]
        (root / "src" / f"m{i:02d}.py").write_text("\n".join(body) + "\n")


def script() -> list[Any]:
    """10 Reads, each turn citing the lines it kept from the read before, then the answer."""
    steps: list[Any] = []
    for k in range(FILES):
        path = f"src/m{(k if k < FILES - 1 else 0):02d}.py"
        thought = ""
        if k > 0:
            prev = f"src/m{k - 1:02d}.py"
            thought = f"{prev}:{4 * k + 1}-{4 * k + 3} defines handler_{k - 1}_{k}; reading the next module."
        step = call("Read", path=path, start_line=1, limit=READ)
        steps.append({"content": thought, "tool_calls": [step]})
    steps.append(
        final(
            status="completed",
            summary="handler_0_1 in src/m00.py dispatches request kind 1 with retries.",
            findings=["handler_0_1 calls dispatch"],
            evidence=["src/m00.py:5-7", "src/m01.py:9-11", "src/m02.py:13-15", "src/m03.py:17-19"],
            unresolved_questions=[],
        )
    )
    return steps


def run(root: pathlib.Path, shrink: int) -> tuple[outrider.SubagentResult, ScriptedLLM]:
    profile = outrider.EXPLORE_PROFILE.replace(
        repo_map_hint=False,
        scout_fallback=False,
        max_steps=20,
        total_token_budget=1_000_000,
        context_token_budget=200_000,
        tuning={"shrink_used_results": shrink},
    )
    llm = ScriptedLLM(script())
    launcher = outrider.SubagentLauncher(root, llm, profiles=[profile])
    r = launcher.launch(
        outrider.SubagentRequest(task="Where is request kind 1 of module 0 handled?")
    )
    assert r.status == "completed", (r.status, r.error)
    assert r.tool_usage == {"Read": FILES}, r.tool_usage
    assert r.model_calls == FILES + 1, r.model_calls
    return r, llm


def prefix_stable(llm: ScriptedLLM) -> bool:
    """Whether every request starts with the same bytes: system prompt, tools, first message."""
    heads = {json.dumps([q["messages"][:2], q.get("tools")], sort_keys=True) for q in llm.requests}
    return len(heads) == 1


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="check the results; judge no figure")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "repo"
        make_tree(root)
        before, llm_before = run(root, 0)
        after, llm_after = run(root, 1)
    rows = []
    for label, r, llm in (
        ("before (every result whole)", before, llm_before),
        ("after (used results shrink)", after, llm_after),
    ):
        assert isinstance(r.result, outrider.ExploreResult)
        right = "src/m00.py:5-7" in r.result.evidence
        assert prefix_stable(llm), "the request prefix changed between calls"
        per_right = f"{r.input_tokens:>10,}" if right else f"{'no right answer':>10}"
        rows.append((label, r.input_tokens, per_right))
    print(
        f"outrider {outrider.__version__}: a scripted 10-Read exploration ({FILES} files of {LINES} lines, Reads of {READ})"
    )
    print(f"{'':<30}{'input tokens':>14}{'per right answer':>18}")
    for label, tokens, per_right in rows:
        print(f"{label:<30}{tokens:>14,}{per_right:>18}")
    print(f"{'reference':<30}{'not recorded for this script':>32}")
    print("prefix (system prompt, tools, first message): the same bytes in all 11 requests")
    saved = 1 - rows[1][1] / rows[0][1]
    if opts.quick:
        assert rows[1][1] < rows[0][1], rows
        print("quick mode: results checked, figures not judged")
        return 0
    print(f"input tokens saved: {saved:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

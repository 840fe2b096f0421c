"""A real small model as the explore child on flask/gin where-is questions (bench/scout's set), with and without the hint and with scout_fallback, beside the offline scout. bench/real_model.py runs the project's own click/got question set.

The model is Qwen2.5-Coder-1.5B-Instruct served by llama.cpp on 127.0.0.1 (see
../shared/realmodel/README.md): a server already answering on --base-url is used; otherwise
``setup.sh`` installs it into --llm-dir once and ``start.sh`` starts it, and it is stopped again
at the end. Nothing but 127.0.0.1 is contacted.

The questions are where-is questions with checked answer ranges (bench/scout/questions.json's
format; --ids picks them, by default six over flask and six over gin). Each is run by the real
model with the repo-map hint on and off (the explore profile's ``repo_map_hint``), with the hint
and ``scout_fallback`` (the scout answers, saying so, when the model gave no verified completed
answer), and by the offline scout. A run is **right** when its result is not ``unverified`` or ``failed`` and one of
its evidence items (all of them grounded and seen by the child, or the result would be
``unverified``) overlaps a right range, give or take 3 lines. Per question it prints right or
not, status, steps (model calls), tool calls, input/output/cached tokens and seconds; then the
totals of each variant beside the scout's, and the questions where the model did worse than
the scout.

    python bench/real_model_flask_gin.py --repos /work/bench-repos --mirrors /work/.mirror
    python bench/real_model_flask_gin.py --only flask-03 --variants hint --json runs.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from typing import Any

import outrider

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "scout"))
from run import ensure_repo  # type: ignore[import-not-found]  # noqa: E402  (bench/scout/run.py)

EVIDENCE_RE = re.compile(r"^(.+):(\d+)(?:-(\d+))?$")
SLACK = 3
DEFAULT_IDS = [
    "flask-01",
    "flask-02",
    "flask-03",
    "flask-05",
    "flask-07",
    "flask-09",
    "gin-01",
    "gin-02",
    "gin-03",
    "gin-05",
    "gin-07",
    "gin-09",
]
REALMODEL = HERE.parent.parent / "shared" / "realmodel"


def parse_range(item: str) -> tuple[str, int, int] | None:
    m = EVIDENCE_RE.match(item.strip())
    if not m:
        return None
    start = int(m.group(2))
    return m.group(1).strip().lstrip("./"), start, int(m.group(3) or start)


def is_right(data: dict[str, Any], answers: list[str]) -> bool:
    if data["status"] in ("failed", "unverified") or not isinstance(data.get("result"), dict):
        return False
    wanted = [r for r in (parse_range(a) for a in answers) if r]
    for item in data["result"].get("evidence") or []:
        got = parse_range(item)
        if got is None:
            continue
        for path, start, end in wanted:
            if got[0] == path and got[1] <= end + SLACK and got[2] >= start - SLACK:
                return True
    return False


def server_up(base_url: str) -> bool:
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def start_server(base_url: str, llm_dir: pathlib.Path) -> int | None:
    """Start the model server when none answers; its PID when this script started it."""
    if server_up(base_url):
        return None
    if not base_url.startswith(("http://127.0.0.1", "http://localhost")):
        raise SystemExit(f"error: {base_url} does not answer, and only a local server is started")
    if not (llm_dir / "start.sh").exists():
        print(f"installing the model into {llm_dir} (about 25 s, 1.3 GB) ...", flush=True)
        subprocess.run(["bash", str(REALMODEL / "setup.sh"), str(llm_dir)], check=True)
    subprocess.run(["bash", str(llm_dir / "start.sh")], check=True)
    return int((llm_dir / "server.pid").read_text().strip())


def run_one(
    root: pathlib.Path, model: Any, question: str, profile: outrider.RuntimeProfile, traces: str
) -> dict[str, Any]:
    launcher = outrider.SubagentLauncher(root, model, trace_dir=traces, profiles=[profile])
    started = time.perf_counter()
    result = launcher.launch(outrider.SubagentRequest(task=question))
    data = result.to_dict()
    data["seconds"] = round(time.perf_counter() - started, 1)
    return data


def row(qid: str, variant: str, data: dict[str, Any], right: bool) -> str:
    tools = sum((data.get("tool_usage") or {}).values())
    cached = data.get("cached_input_tokens", 0)
    return (
        f"{qid:<10} {variant:<7} {'RIGHT' if right else 'wrong':<6} {data['status']:<11} "
        f"{data['model_calls']:>5} {tools:>5} {data['input_tokens']:>7} {data['output_tokens']:>6} "
        f"{cached:>7} {data['seconds']:>7.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=pathlib.Path, default=pathlib.Path("/work/bench-repos"))
    ap.add_argument("--mirrors", type=pathlib.Path, default=pathlib.Path("/work/.mirror"))
    ap.add_argument("--questions", type=pathlib.Path, default=HERE / "scout" / "questions.json")
    ap.add_argument("--ids", default=",".join(DEFAULT_IDS), help="question ids, comma-separated")
    ap.add_argument("--only", help="one question id")
    ap.add_argument(
        "--variants",
        default="hint,nohint,fallback",
        help="hint, nohint, fallback (hint with scout_fallback=True); comma-separated",
    )
    ap.add_argument("--no-scout", action="store_true", help="skip the offline scout's runs")
    ap.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--llm-dir", type=pathlib.Path, default=pathlib.Path("/work/llm"))
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per exploration")
    ap.add_argument(
        "--temperature", type=float, help="sent to the server (default: none, the server's own)"
    )
    ap.add_argument("--traces", default=os.environ.get("TMPDIR", "/tmp") + "/real-model-traces")
    ap.add_argument("--json", type=pathlib.Path, help="write every run's record here")
    args = ap.parse_args(argv)

    spec = json.loads(args.questions.read_text())
    wanted = [args.only] if args.only else [i for i in args.ids.split(",") if i]
    by_id = {q["id"]: q for q in spec["questions"]}
    missing = [i for i in wanted if i not in by_id]
    if missing:
        raise SystemExit(f"error: no question {', '.join(missing)} in {args.questions}")
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in ("hint", "nohint", "fallback"):
            raise SystemExit(f"error: variant {v!r}; expected hint, nohint or fallback")

    print("command:", shlex.join([sys.executable, *sys.argv]))
    started_pid = start_server(args.base_url, args.llm_dir)
    llm = outrider.OpenAICompatible(
        args.model, args.base_url, timeout=args.timeout, temperature=args.temperature
    )
    print(f"model: {args.model} at {args.base_url}; {len(wanted)} questions; variants {variants}")
    explore = outrider.EXPLORE_PROFILE.replace(timeout_seconds=args.timeout)
    profiles = {
        "hint": explore.replace(repo_map_hint=True),
        "nohint": explore.replace(repo_map_hint=False),
        "fallback": explore.replace(repo_map_hint=True, scout_fallback=True),
        "scout": explore,
    }
    header = (
        f"{'question':<10} {'variant':<7} {'right':<6} {'status':<11} {'steps':>5} {'tools':>5} "
        f"{'input':>7} {'output':>6} {'cached':>7} {'seconds':>7}"
    )
    print(header)
    records: list[dict[str, Any]] = []
    try:
        for qid in wanted:
            q = by_id[qid]
            root = ensure_repo(q["repo"], spec["repos"][q["repo"]], args.repos, args.mirrors)
            runs: list[tuple[str, Any]] = [(v, llm) for v in variants]
            if not args.no_scout:
                runs.append(("scout", outrider.OfflineScout()))
            for variant, model in runs:
                data = run_one(root, model, q["question"], profiles[variant], args.traces)
                right = is_right(data, q["answers"])
                print(row(qid, variant, data, right), flush=True)
                records.append({"id": qid, "variant": variant, "right": right, **data})
    finally:
        if started_pid is not None:
            os.kill(started_pid, 15)

    print()
    print(
        f"{'variant':<7} {'right':>7} {'completed&wrong':>15} {'unverified':>10} {'partial':>7} "
        f"{'failed':>6} {'mean s':>7} {'input':>8} {'output':>7} {'cached':>8}"
    )
    for variant in [*variants, *([] if args.no_scout else ["scout"])]:
        rs = [r for r in records if r["variant"] == variant]
        if not rs:
            continue

        def count(status: str, rs: list[dict[str, Any]] = rs) -> int:
            return sum(1 for r in rs if r["status"] == status)

        print(
            f"{variant:<7} {sum(r['right'] for r in rs):>3}/{len(rs):<3} "
            f"{sum(1 for r in rs if r['status'] == 'completed' and not r['right']):>15} "
            f"{count('unverified'):>10} {count('partial'):>7} {count('failed'):>6} "
            f"{sum(r['seconds'] for r in rs) / len(rs):>7.1f} "
            f"{sum(r['input_tokens'] for r in rs):>8} {sum(r['output_tokens'] for r in rs):>7} "
            f"{sum(r.get('cached_input_tokens', 0) for r in rs):>8}"
        )
    if not args.no_scout:
        for variant in variants:
            worse = [
                r["id"]
                for r in records
                if r["variant"] == variant
                and not r["right"]
                and any(
                    s["id"] == r["id"] and s["variant"] == "scout" and s["right"] for s in records
                )
            ]
            print(f"{variant}: worse than the scout on {len(worse)}: {', '.join(worse) or '-'}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1, default=str))
        print(f"records: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A real small model as the explore child, at the defaults a user gets, beside the code index alone.

The model is Qwen2.5-Coder-1.5B-Instruct served by llama.cpp as an OpenAI-compatible endpoint on
127.0.0.1 (../shared/realmodel/README.md). A server already answering on --base-url is used as it
is; otherwise ``setup.sh`` installs it into --llm-dir once and ``start.sh`` starts it, and it is
stopped again at the end. Nothing but 127.0.0.1 is contacted.

Each question set (bench/real_model/*.json; ``dev_*`` sets were looked at while choosing changes,
a ``holdout_*`` set is run once and then renamed ``dev_``) names public repositories at pinned
commits (checked out under --repos from local mirrors, --mirrors) and questions with accepted line
ranges. Every question is run twice: by the real model as the explore child
(``outrider.OpenAICompatible(model, base_url)`` and ``EXPLORE_PROFILE``, nothing changed), and by
the code index alone (``outrider.OfflineScout()``).

**Right**: the run is not ``failed`` or ``unverified`` and one of the first three evidence items
overlaps an accepted range (give or take 3 lines). For a ``how`` question the summary must also
name at least one of the question's ``keywords`` (the summary is printed: read it, the keyword
check is only a floor). Per set it prints: right, worse than the index (the index right, the
model wrong), completed but wrong, runs where the model made tool calls of its own, model calls
per run, tokens per right answer, and seconds per run; the index's right beside it.

    python bench/real_model.py --sets bench/real_model/dev_uvicorn_koa.json
    python bench/real_model.py --sets bench/real_model/holdout_x.json --json runs.json
    python bench/real_model.py --quick     # a few seconds: the judge and the table on stub runs
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

HERE = pathlib.Path(__file__).resolve().parent
SETS = HERE / "real_model"
REALMODEL = HERE.parent.parent / "shared" / "realmodel"
EVIDENCE_RE = re.compile(r"^(.+?):(\d+)(?:-(\d+))?$")
SLACK = 3
TOP = 3


def parse_range(item: str) -> tuple[str, int, int] | None:
    m = EVIDENCE_RE.match(item.strip())
    if not m:
        return None
    start = int(m.group(2))
    return m.group(1).strip().removeprefix("./"), start, int(m.group(3) or start)


def places_right(data: dict[str, Any], answers: list[str]) -> bool:
    """One of the first three grounded evidence items overlaps an accepted range."""
    if data["status"] in ("failed", "unverified") or not isinstance(data.get("result"), dict):
        return False
    wanted = [r for r in (parse_range(a) for a in answers) if r]
    for item in (data["result"].get("evidence") or [])[:TOP]:
        got = parse_range(item)
        if got is None:
            continue
        for path, start, end in wanted:
            if got[0] == path and got[1] <= end + SLACK and got[2] >= start - SLACK:
                return True
    return False


def judge(data: dict[str, Any], q: dict[str, Any]) -> bool:
    if not places_right(data, q["answers"]):
        return False
    if q.get("kind") != "how":
        return True
    summary = str((data.get("result") or {}).get("summary", "")).lower()
    return any(k.lower() in summary for k in q.get("keywords", []))


def server_up(base_url: str) -> bool:
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{root}/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def start_server(base_url: str, llm_dir: pathlib.Path) -> int | None:
    """Start the model server when none answers; its PID when this script started it."""
    if server_up(base_url):
        return None
    if not base_url.startswith("http://127.0.0.1:8080"):
        raise SystemExit(f"error: {base_url} does not answer, and only 127.0.0.1:8080 is started")
    if not (llm_dir / "start.sh").exists():
        print(f"installing the model into {llm_dir} (about 25 s, 1.3 GB) ...", flush=True)
        subprocess.run(["bash", str(REALMODEL / "setup.sh"), str(llm_dir)], check=True)
    subprocess.run(["bash", str(llm_dir / "start.sh")], check=True)
    return int((llm_dir / "server.pid").read_text().strip())


def ensure_repo(
    name: str, spec: dict[str, Any], repos: pathlib.Path, mirrors: pathlib.Path
) -> pathlib.Path:
    """repos/name at the pinned commit, cloned from a local mirror when missing."""
    dest = repos / name
    if not dest.exists():
        source = next(
            (
                c
                for c in (mirrors / spec["mirror"] / "repo", mirrors / spec["mirror"])
                if c.is_dir()
            ),
            None,
        )
        if source is None:
            raise SystemExit(
                f"error: {name} is not in {repos} and no mirror is in {mirrors / spec['mirror']}; "
                f"clone {spec['url']} into {dest} and check out {spec['commit']}"
            )
        repos.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(source), str(dest)], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True, check=True
    ).stdout.strip()
    if head != spec["commit"]:
        subprocess.run(
            ["git", "-c", "advice.detachedHead=false", "checkout", "-q", spec["commit"]],
            cwd=dest,
            check=True,
        )
    return dest


def run_one(root: pathlib.Path, model: Any, question: str, traces: str) -> dict[str, Any]:
    import outrider

    launcher = outrider.SubagentLauncher(root, model, trace_dir=traces)
    started = time.perf_counter()
    result = launcher.launch(outrider.SubagentRequest(task=question))
    data = result.to_dict()
    data["seconds"] = round(time.perf_counter() - started, 1)
    return data


def summarize(records: list[dict[str, Any]], label: str) -> list[str]:
    """The per-set lines: the model's figures, then the index's right beside them."""
    out = []
    for name in [*sorted({r["set"] for r in records}), "all"]:
        rs = [r for r in records if name in ("all", r["set"])]
        model = [r for r in rs if r["by"] == "model"]
        index = {r["id"]: r for r in rs if r["by"] == "index"}
        if not model:
            continue
        right = sum(r["right"] for r in model)
        worse = [r["id"] for r in model if not r["right"] and index.get(r["id"], {}).get("right")]
        better = [
            r["id"]
            for r in model
            if r["right"] and r["id"] in index and not index[r["id"]]["right"]
        ]
        wrong_completed = sum(1 for r in model if r["status"] == "completed" and not r["right"])
        completed = sum(1 for r in model if r["status"] == "completed")
        own_tools = sum(1 for r in model if sum((r.get("tool_usage") or {}).values()) > 0)
        calls = sum(r.get("model_calls", 0) for r in model) / len(model)
        tokens = sum(r.get("token_usage", 0) for r in model)
        per_right = f"{tokens / right:,.0f}" if right else "-"
        seconds = sum(r["seconds"] for r in model) / len(model)
        failed = sum(1 for r in model if r["status"] == "failed")
        how = [r for r in model if r.get("kind") == "how"]
        how_right = f"{sum(r['right'] for r in how)}/{len(how)}" if how else "-"
        index_right = f"{sum(r['right'] for r in index.values())}/{len(index)}" if index else "-"
        out.append(
            f"{label} {name:<24} right {right}/{len(model)} (index {index_right}); how {how_right}; "
            f"worse than the index {len(worse)} {worse or ''}; better {len(better)}; "
            f"completed but wrong {wrong_completed}/{completed}; own tool calls {own_tools}/{len(model)}; "
            f"failed {failed}; model calls {calls:.1f}; tokens per right {per_right}; {seconds:.1f} s per run"
        )
    return out


def quick() -> int:
    """The judge and the table on stub runs (no model, no repository): seconds, for CI."""
    q_where = {"id": "w-1", "kind": "where", "answers": ["a/b.py:10-20"]}
    q_how = {"id": "h-1", "kind": "how", "answers": ["c.go:5-9"], "keywords": ["Parse"]}
    ok = {
        "status": "completed",
        "result": {"evidence": ["x.py:1", "y.py:2", "a/b.py:22"], "summary": "s"},
    }
    late = {
        "status": "completed",
        "result": {"evidence": ["x.py:1", "y.py:2", "z.py:3", "a/b.py:12"]},
    }
    how = {"status": "partial", "result": {"evidence": ["c.go:7"], "summary": "calls parse()"}}
    assert judge(ok, q_where) and not judge(late, q_where), "top-3 judge"
    assert judge(how, q_how) and not judge({**how, "status": "unverified"}, q_how), "how judge"
    assert not judge(
        {"status": "completed", "result": {"evidence": ["c.go:7"], "summary": "x"}}, q_how
    )
    records = [
        {
            "set": "s",
            "id": "w-1",
            "by": "model",
            "right": True,
            "status": "completed",
            "kind": "where",
            "tool_usage": {"Read": 1},
            "model_calls": 2,
            "token_usage": 100,
            "seconds": 1.0,
        },
        {
            "set": "s",
            "id": "w-1",
            "by": "index",
            "right": True,
            "status": "partial",
            "kind": "where",
            "seconds": 0.1,
        },
    ]
    lines = summarize(records, "quick")
    assert "right 1/1 (index 1/1)" in lines[0] and "own tool calls 1/1" in lines[0], lines
    print("\n".join(lines))
    print("quick: ok")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sets", help="question files, comma-separated (default: every set in bench/real_model/)"
    )
    ap.add_argument("--ids", help="question ids, comma-separated (default: all)")
    ap.add_argument("--repos", type=pathlib.Path, default=pathlib.Path("/work/bench-repos"))
    ap.add_argument("--mirrors", type=pathlib.Path, default=pathlib.Path("/work/.mirror"))
    ap.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--llm-dir", type=pathlib.Path, default=pathlib.Path("/work/llm"))
    ap.add_argument("--no-index", action="store_true", help="skip the index-alone runs")
    ap.add_argument("--traces", default=os.environ.get("TMPDIR", "/tmp") + "/real-model-traces")
    ap.add_argument("--json", type=pathlib.Path, help="write every run's record here")
    ap.add_argument("--quick", action="store_true", help="check the judge and the table, no model")
    args = ap.parse_args(argv)
    if args.quick:
        return quick()
    import outrider

    files = (
        [pathlib.Path(p) for p in args.sets.split(",")]
        if args.sets
        else sorted(SETS.glob("*.json"))
    )
    wanted = set(args.ids.split(",")) if args.ids else None
    print("command:", shlex.join([sys.executable, *sys.argv]), flush=True)
    started_pid = start_server(args.base_url, args.llm_dir)
    llm = outrider.OpenAICompatible(args.model, args.base_url)
    print(f"model: {llm!r}; profile: explore as shipped", flush=True)
    records: list[dict[str, Any]] = []
    try:
        for path in files:
            spec = json.loads(path.read_text())
            for q in spec["questions"]:
                if wanted is not None and q["id"] not in wanted:
                    continue
                root = ensure_repo(q["repo"], spec["repos"][q["repo"]], args.repos, args.mirrors)
                question = q.get("question") or q.get("task")
                answers = q.get("answers") or q.get("accepted")
                q = {**q, "answers": answers}
                runs = [("model", llm)] + (
                    [] if args.no_index else [("index", outrider.OfflineScout())]
                )
                for by, model in runs:
                    data = run_one(root, model, question, args.traces)
                    right = judge(data, q)
                    ev = (data.get("result") or {}).get("evidence") or []
                    src = (data.get("result") or {}).get("evidence_sources") or []
                    tools = sum((data.get("tool_usage") or {}).values())
                    print(
                        f"{path.stem:<22} {q['id']:<8} {by:<5} {'RIGHT' if right else 'wrong':<5} "
                        f"{data['status']:<10} calls {data.get('model_calls', 0):>2} tools {tools:>2} "
                        f"{data['seconds']:>6.1f}s  {list(zip(ev[:3], src[:3], strict=False))}",
                        flush=True,
                    )
                    if by == "model" and q.get("kind") == "how":
                        print(f"    summary: {(data.get('result') or {}).get('summary', '')!r}")
                        print(f"    truth:   {q.get('truth', '')!r}")
                    records.append(
                        {
                            "set": path.stem,
                            "id": q["id"],
                            "kind": q.get("kind", "where"),
                            "by": by,
                            "right": right,
                            **data,
                        }
                    )
    finally:
        if started_pid is not None:
            os.kill(started_pid, 15)
    print()
    print("\n".join(summarize(records, "model")))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1, default=str))
        print(f"records: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

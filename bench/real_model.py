"""A real small model as the explore child, hint on and off, beside the offline scout.

The model is Qwen2.5-Coder-1.5B-Instruct served by llama.cpp as an OpenAI-compatible endpoint
on 127.0.0.1 (../shared/realmodel/README.md). A server already answering on --base-url is
used as it is; otherwise ``setup.sh`` installs the model into --llm-dir once, ``start.sh``
starts it, and this script stops it again when it ends. Nothing but 127.0.0.1 is contacted.

The questions (bench/real_model_questions.json) are tasks a main agent would delegate, over
public repositories checked out at pinned commits under --repos (DIR/click, DIR/got; see
bench/README.md for how to get them). Each question is run by:

  hint     the real model, explore profile with ``repo_map_hint=True`` (the default)
  nohint   the real model, explore profile with ``repo_map_hint=False``
  scout    ``outrider.OfflineScout()``, no model

**Right** (the judge): the run's status is ``completed`` or ``partial``, and one of its evidence
items that is not listed in ``ungrounded_evidence`` names an accepted file and overlaps an
accepted line range, give or take the question file's ``slack`` (3 lines). An ``unverified`` or
``failed`` run is never right. "file" in the right column means a grounded item named an
accepted file but no accepted range. With the profile's ``scout_fallback`` on, a model run
whose own answer was not verified may carry the scout's answer instead; the "by" column says
whose answer it is (``--no-scout-fallback`` measures the model alone). "hinted" is how many of
the evidence items are exactly a place the repo-map hint listed (read from the child's trace),
of all the items cited: an answer that only copies the hint shows n/n.

    python bench/real_model.py --repos /work/bench-repos
    python bench/real_model.py --only got-02,click-04 --variants hint,scout --json runs.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import outrider

HERE = pathlib.Path(__file__).resolve().parent
REALMODEL = HERE.parent.parent / "shared" / "realmodel"
VARIANTS = ("hint", "nohint", "scout")
EVIDENCE_RE = re.compile(r"^(.+?):(\d+)(?:-(\d+))?$")
FALLBACK_PREFIX = "The model gave no verified answer"
# "1. path:line (...)" (the hint since #18's follow-up), or "- path:line  text" (before it).
HINT_LINE_RE = re.compile(r"^(?:\d+\.|-) (\S+?):(\d+)(?:-(\d+))?(?: |:|$)", re.M)


def fail(message: str) -> None:
    raise SystemExit(f"error: {message}")


def to_json(value: object) -> object:
    """For json.dumps: sets (a profile's allow-list) as sorted lists, anything else as text."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def save(path: pathlib.Path, header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({**header, "runs": records}, indent=1, default=to_json))


# --- the model server ------------------------------------------------------------------------


def loopback_only(base_url: str) -> str:
    """The base URL's server root (scheme://host:port), refusing anything but 127.0.0.1."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1":
        fail(f"--base-url {base_url}: this benchmark only talks to http://127.0.0.1")
    return f"{parts.scheme}://{parts.netloc}"


# No proxy from the environment may see (or redirect) a loopback request.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get_json(url: str, timeout: float = 3.0) -> Any:
    with _OPENER.open(url, timeout=timeout) as response:
        return json.loads(response.read())


def server_models(base_url: str) -> list[dict[str, Any]] | None:
    """The server's ``/models`` list, or None when nothing answers."""
    try:
        data = get_json(base_url.rstrip("/") + "/models")
    except (OSError, ValueError):
        return None
    models = data.get("data") if isinstance(data, dict) else None
    return [m for m in models if isinstance(m, dict)] if isinstance(models, list) else []


def ensure_server(base_url: str, llm_dir: pathlib.Path, realmodel: pathlib.Path) -> int | None:
    """Use a server answering on ``base_url``, else set one up and start it; its PID then."""
    root = loopback_only(base_url)
    if server_models(base_url) is not None:
        return None
    if urllib.parse.urlsplit(root).port != 8080:
        fail(f"nothing answers on {base_url}, and start.sh serves on 127.0.0.1:8080 only")
    if not (llm_dir / "start.sh").exists():
        print(f"setting the model up in {llm_dir} (about 25 s and 1.3 GB, once) ...", flush=True)
        subprocess.run(["bash", str(realmodel / "setup.sh"), str(llm_dir)], check=True)
    print(f"starting the model server: {llm_dir / 'start.sh'}", flush=True)
    subprocess.run(["bash", str(llm_dir / "start.sh")], check=True)
    pid = int((llm_dir / "server.pid").read_text().strip())
    if server_models(base_url) is None:
        stop_server(pid)
        fail(f"the server started but does not answer on {base_url}; see {llm_dir}/server.log")
    return pid


def stop_server(pid: int) -> None:
    """Stop the server this script started (its own PID only) and wait for it to go."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    print(f"stopped the model server this script started (pid {pid})", flush=True)


def describe_model(models: list[dict[str, Any]], model_id: str) -> str:
    """What the server says about ``model_id``; an error when it does not serve it."""
    ids = [str(m.get("id")) for m in models]
    if model_id not in ids and ids:
        fail(f"the server serves {', '.join(ids)}, not {model_id!r} (--model)")
    meta = next((m.get("meta") for m in models if m.get("id") == model_id), None)
    if not isinstance(meta, dict):
        return model_id
    params = meta.get("n_params")
    shown = [
        f"{params / 1e9:.2f}B parameters" if isinstance(params, (int, float)) else None,
        str(meta["ftype"]) if "ftype" in meta else None,
        f"context {meta['n_ctx']}" if "n_ctx" in meta else None,
    ]
    return f"{model_id} ({', '.join(s for s in shown if s)})"


# --- the repositories ------------------------------------------------------------------------


def git(*args: str, cwd: pathlib.Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def check_repo(name: str, spec: dict[str, Any], repos: pathlib.Path, check: bool) -> pathlib.Path:
    """DIR/name; when it is a git checkout, at the pinned commit (or a clear error)."""
    root = repos / name
    how = (
        f"git clone {spec['url']} {root} && git -C {root} checkout {spec['commit']}"
        " (bench/README.md, 'A real model')"
    )
    if not root.is_dir():
        fail(f"no checkout of {name} at {root}: {how}")
    head = git("rev-parse", "HEAD", cwd=root) if (root / ".git").exists() else ""
    if not head:
        print(f"note: {root} is not a git checkout; its commit is not checked", flush=True)
    elif head != spec["commit"] and check:
        fail(
            f"{root} is at {head[:10]}, not the pinned {spec['commit'][:10]}: "
            f"git -C {root} checkout {spec['commit']} (or --no-commit-check)"
        )
    elif head != spec["commit"]:
        print(f"note: {root} is at {head[:10]}, not the pinned {spec['commit'][:10]}")
    return root


# --- the judge -------------------------------------------------------------------------------


def parse_item(item: str) -> tuple[str, int, int] | None:
    """``path:line`` or ``path:start-end`` as (path, start, end); None when it is neither."""
    m = EVIDENCE_RE.match(item.strip())
    if not m:
        return None
    path = m.group(1).strip()
    while path.startswith("./"):
        path = path[2:]
    start = int(m.group(2))
    return path, start, int(m.group(3) or start)


def judge(data: dict[str, Any], accepted: list[str], slack: int) -> tuple[str, str | None]:
    """("right" | "file" | "wrong", the evidence item that decided it)."""
    result = data.get("result")
    if data["status"] not in ("completed", "partial") or not isinstance(result, dict):
        return "wrong", None
    ungrounded = {str(u.get("evidence")) for u in data.get("ungrounded_evidence") or []}
    ranges = [r for r in map(parse_item, accepted) if r is not None]
    file_item = None
    for item in result.get("evidence") or []:
        got = parse_item(str(item)) if item not in ungrounded else None
        if got is None:
            continue
        for path, start, end in ranges:
            if got[0] != path:
                continue
            if got[1] <= end + slack and got[2] >= start - slack:
                return "right", str(item)
            file_item = file_item or str(item)
    return ("file", file_item) if file_item else ("wrong", None)


# --- one run ---------------------------------------------------------------------------------


def run_one(
    root: pathlib.Path,
    model: outrider.OpenAICompatible | outrider.OfflineScout,
    profile: outrider.RuntimeProfile,
    task: str,
    traces: pathlib.Path,
) -> dict[str, Any]:
    """One launch's ``to_dict()`` plus wall-clock ``seconds``; a raised error as a failed run."""
    started = time.perf_counter()
    try:
        launcher = outrider.SubagentLauncher(root, model, trace_dir=traces, profiles=[profile])
        result = launcher.launch(outrider.SubagentRequest(profile_name="explore", task=task))
        data = result.to_dict()
    except outrider.OutriderError as error:
        data = {"status": "failed", "result": None, "error": f"{type(error).__name__}: {error}"}
    data["seconds"] = round(time.perf_counter() - started, 1)
    return data


def hint_lines(data: dict[str, Any]) -> set[tuple[str, int, int]]:
    """The places (``path:line`` or ``path:start-end``, as (path, start, end)) the repo-map hint
    listed in the child's first message (from its trace); empty without a hint or a trace."""
    try:
        with open(str(data.get("trace_path")), encoding="utf-8") as trace:
            for line in trace:
                event = json.loads(line)
                if event.get("event") == "user_input":
                    text = str(event.get("payload", {}).get("content", ""))
                    marker = text.find("\nLikely places")
                    if marker < 0:
                        return set()
                    found = HINT_LINE_RE.findall(text[marker:])
                    return {(path, int(a), int(b or a)) for path, a, b in found}
    except (OSError, ValueError):
        pass
    return set()


def copied_from_hint(data: dict[str, Any], hints: set[tuple[str, int, int]]) -> tuple[int, int]:
    """(evidence items that are exactly a place as the hint listed it, all evidence items)."""
    result = data.get("result")
    items = result.get("evidence") or [] if isinstance(result, dict) else []
    parsed = [parse_item(str(i)) for i in items]
    return sum(1 for p in parsed if p and p in hints), len(items)


def answered_by(variant: str, data: dict[str, Any]) -> str:
    if variant == "scout":
        return "scout"
    result = data.get("result")
    summary = str(result.get("summary", "")) if isinstance(result, dict) else ""
    return "scout-fb" if summary.startswith(FALLBACK_PREFIX) else "model"


def reason(data: dict[str, Any]) -> str:
    return str(data.get("failure_reason") or data.get("terminal_reason") or "-")


def tokens(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return str(value) if isinstance(value, int) else "-"


COLUMNS = (
    f"{'question':<9} {'variant':<7} {'right':<5} {'status':<10} {'by':<8} {'reason':<21} "
    f"{'steps':>5} {'tools':>5} {'input':>7} {'output':>6} {'cached':>7} {'secs':>6} "
    f"{'hinted':>6}"
)


def row(record: dict[str, Any]) -> str:
    data = record["data"]
    tools = sum((data.get("tool_usage") or {}).values())
    return (
        f"{record['id']:<9} {record['variant']:<7} {record['right']:<5} {data['status']:<10} "
        f"{record['by']:<8} {reason(data)[:21]:<21} {data.get('model_calls', 0):>5} {tools:>5} "
        f"{tokens(data, 'input_tokens'):>7} {tokens(data, 'output_tokens'):>6} "
        f"{tokens(data, 'cached_input_tokens'):>7} {data['seconds']:>6.1f} "
        f"{record['hinted']:>6}"
    )


# --- totals ----------------------------------------------------------------------------------


def totals(records: list[dict[str, Any]], variants: list[str]) -> None:
    print()
    print(
        f"{'variant':<7} {'runs':>4} {'right':>5} {'by model':>8} {'file':>4} "
        f"{'compl&wrong':>11} {'completed':>9} {'partial':>7} {'unverif':>7} {'failed':>6} "
        f"{'mean s':>6} {'input':>8} {'output':>7} {'cached':>8}"
    )
    for variant in variants:
        rs = [r for r in records if r["variant"] == variant]
        if not rs:
            continue

        def count(status: str, rs: list[dict[str, Any]] = rs) -> int:
            return sum(1 for r in rs if r["data"]["status"] == status)

        def total(key: str, rs: list[dict[str, Any]] = rs) -> int:
            return sum(int(r["data"].get(key) or 0) for r in rs)

        right = sum(r["right"] == "right" for r in rs)
        by_model = sum(r["right"] == "right" and r["by"] != "scout-fb" for r in rs)
        print(
            f"{variant:<7} {len(rs):>4} {right:>5} {by_model if variant != 'scout' else '-':>8} "
            f"{sum(r['right'] == 'file' for r in rs):>4} "
            f"{sum(r['right'] != 'right' and r['data']['status'] == 'completed' for r in rs):>11} "
            f"{count('completed'):>9} {count('partial'):>7} {count('unverified'):>7} "
            f"{count('failed'):>6} {sum(r['data']['seconds'] for r in rs) / len(rs):>6.1f} "
            f"{total('input_tokens'):>8} {total('output_tokens'):>7} "
            f"{total('cached_input_tokens'):>8}"
        )
    right = {(r["id"], r["variant"]) for r in records if r["right"] == "right"}
    ids = list(dict.fromkeys(r["id"] for r in records))
    ran = {(r["id"], r["variant"]) for r in records}
    for variant in (v for v in variants if v != "scout"):
        worse = [
            i
            for i in ids
            if (i, "scout") in right and (i, variant) in ran and (i, variant) not in right
        ]
        print(f"{variant}: wrong where the scout was right: {len(worse)} {' '.join(worse)}")
    via_hint = [r["id"] for r in records if r["variant"] == "hint" and r["matched_is_hint_line"]]
    if "hint" in variants:
        print(f"hint: right on a line the hint listed: {len(via_hint)} {' '.join(via_hint)}")
    if "hint" in variants and "nohint" in variants:
        both = [i for i in ids if (i, "hint") in ran and (i, "nohint") in ran]
        only_hint = [i for i in both if (i, "hint") in right and (i, "nohint") not in right]
        only_nohint = [i for i in both if (i, "nohint") in right and (i, "hint") not in right]
        print(f"right with the hint only: {len(only_hint)} {' '.join(only_hint)}")
        print(f"right without the hint only: {len(only_nohint)} {' '.join(only_nohint)}")


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--repos", type=pathlib.Path, default=pathlib.Path("/work/bench-repos"))
    ap.add_argument("--questions", type=pathlib.Path, default=HERE / "real_model_questions.json")
    ap.add_argument("--only", help="question ids, comma-separated (default: all)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="hint, nohint, scout")
    ap.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="the model id to request")
    ap.add_argument(
        "--llm-dir",
        type=pathlib.Path,
        default=pathlib.Path.home() / ".cache" / "outrider-realmodel",
        help="where setup.sh installs the model when no server answers",
    )
    ap.add_argument("--realmodel", type=pathlib.Path, default=REALMODEL, help="setup.sh's dir")
    ap.add_argument(
        "--timeout", type=float, help="cap per run, seconds (default: the explore profile's, 300)"
    )
    ap.add_argument("--no-scout-fallback", action="store_true", help="the model's answers only")
    ap.add_argument("--no-commit-check", action="store_true")
    ap.add_argument(
        "--traces",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / "outrider-real-model-traces",
    )
    ap.add_argument("--json", type=pathlib.Path, help="write every run's record here")
    args = ap.parse_args(argv)

    spec = json.loads(args.questions.read_text())
    slack = int(spec.get("slack", 3))
    questions = spec["questions"]
    if args.only:
        wanted = [i.strip() for i in args.only.split(",") if i.strip()]
        unknown = [i for i in wanted if i not in {q["id"] for q in questions}]
        if unknown:
            fail(f"no question {', '.join(unknown)} in {args.questions}")
        questions = [q for q in questions if q["id"] in wanted]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            fail(f"variant {v!r}; expected some of {', '.join(VARIANTS)}")

    print("command:", shlex.join([sys.executable, *sys.argv]), flush=True)
    if args.timeout is None:
        args.timeout = outrider.EXPLORE_PROFILE.timeout_seconds
    explore = outrider.EXPLORE_PROFILE.replace(timeout_seconds=args.timeout)
    if args.no_scout_fallback:
        if hasattr(explore, "scout_fallback"):
            explore = explore.replace(scout_fallback=False)
        else:
            print("note: this build has no scout_fallback; --no-scout-fallback changes nothing")
    profiles: dict[str, outrider.RuntimeProfile] = {"scout": explore}
    if hasattr(explore, "repo_map_hint"):
        profiles["hint"] = explore.replace(repo_map_hint=True)
        profiles["nohint"] = explore.replace(repo_map_hint=False)
    else:
        print(
            "this build has no repo_map_hint: the model runs with the build's explore profile "
            "under the name 'hint', and 'nohint' is not run"
        )
        profiles["hint"] = explore
        variants = [v for v in variants if v != "nohint"]

    repos = {
        name: check_repo(name, spec["repos"][name], args.repos, not args.no_commit_check)
        for name in dict.fromkeys(q["repo"] for q in questions)
    }
    for name, root in repos.items():
        print(f"repo {name}: {root} @ {spec['repos'][name]['commit'][:10]}")

    needs_model = any(v != "scout" for v in variants)
    started_pid = (
        ensure_server(args.base_url, args.llm_dir, args.realmodel) if needs_model else None
    )
    records: list[dict[str, Any]] = []
    header: dict[str, Any] = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "outrider": outrider.__version__,
        "base_url": args.base_url,
        "model": args.model,
        "timeout": args.timeout,
        "profiles": {v: profiles[v].to_dict() for v in variants},
    }
    try:
        if needs_model:
            models = server_models(args.base_url) or []
            header["server_model"] = describe_model(models, args.model)
            print(f"model: {header['server_model']} at {args.base_url}")
        fallback = getattr(explore, "scout_fallback", None)
        print(
            f"outrider {outrider.__version__}; {len(questions)} questions; variants "
            f"{','.join(variants)}; cap {args.timeout:g} s per run; scout_fallback {fallback}; "
            f"right = a grounded evidence item within {slack} lines of an accepted range"
        )
        print(COLUMNS, flush=True)
        llm = outrider.OpenAICompatible(
            args.model, args.base_url, None, timeout=args.timeout, max_retries=1
        )
        scout = outrider.OfflineScout()
        args.traces.mkdir(parents=True, exist_ok=True)
        for q in questions:
            for variant in sorted(variants, key=lambda v: v != "scout"):
                model = scout if variant == "scout" else llm
                data = run_one(repos[q["repo"]], model, profiles[variant], q["task"], args.traces)
                verdict, item = judge(data, q["accepted"], slack)
                hints = hint_lines(data)
                copied, cited = copied_from_hint(data, hints)
                record = {
                    "id": q["id"],
                    "repo": q["repo"],
                    "variant": variant,
                    "right": verdict,
                    "matched": item,
                    "by": answered_by(variant, data),
                    "hinted": f"{copied}/{cited}" if hints else "-",
                    "matched_is_hint_line": bool(item and (p := parse_item(item)) and p in hints),
                    "data": data,
                }
                records.append(record)
                print(row(record), flush=True)
                if args.json:
                    save(args.json, header, records)
    except KeyboardInterrupt:
        print("interrupted: the totals cover the runs that ended", flush=True)
    finally:
        if started_pid is not None:
            stop_server(started_pid)
    totals(records, [v for v in VARIANTS if v in variants])
    if args.json:
        save(args.json, header, records)
        print(f"records: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

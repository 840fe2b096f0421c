"""Interpreter exit with outrider work still running on daemon threads.

Each run starts two daemon threads that launch in a loop (one scenario per kind of work: sync and
async entry points, launch_many, the Task tool, a main agent, the built-in HTTP client against a
loopback server, the evidence check, traces and logging on), lets them run for a random 50-600 ms
and lets the interpreter exit under them. A run fails when the process does not exit 0 within
30 s (a segfault, an abort, a hang) or prints to stderr.

    python bench/exit.py [--runs 60] [--jobs 4] [--compare DIR] [--quick]

`--compare DIR` runs every scenario a second time with DIR first on PYTHONPATH (an older build
installed with `pip install --target DIR ...`) and prints its figure beside this build's.
The script exits 1 when a run of this build failed. `--quick` (what `make bench-quick` runs):
2 runs per scenario, 2 at once.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

SCENARIO = textwrap.dedent(
    """
    import asyncio, http.server, json, logging, random, sys, threading, time
    import outrider
    root, mode, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    random.seed(seed)
    FINAL = json.dumps(
        {"status": "completed", "summary": "f1 in src/m1.py", "evidence": ["src/m1.py:1"]}
    )
    req = outrider.SubagentRequest(task="where is f1")
    TASK = {"description": "find", "prompt": "where is f1", "subagent_type": "explore"}

    def slow(request):
        time.sleep(random.uniform(0.0, 0.08))
        return FINAL

    def tool_call(name, args):
        call = {"id": "c%d" % random.randint(0, 10**9), "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"choices": [{"message": message, "finish_reason": "tool_calls"}]}

    def reader(request):
        time.sleep(random.uniform(0.0, 0.03))
        if len(request["messages"]) < 6:
            return tool_call("Grep", {"pattern": "def f1", "path": "."})
        return FINAL

    def serve():
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                time.sleep(random.uniform(0.0, 0.08))
                message = {"role": "assistant", "content": FINAL}
                body = json.dumps({"choices": [{"message": message, "finish_reason": "stop"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_port}/v1"

    def work():
        if mode == "launch":
            launcher = outrider.SubagentLauncher(root, slow, trace_dir=False)
            while True:
                launcher.launch(req)
        elif mode == "launch_many":
            launcher = outrider.SubagentLauncher(root, slow, trace_dir=False)
            while True:
                launcher.launch_many([req] * 8, max_concurrency=4)
        elif mode == "tools+traces":
            launcher = outrider.SubagentLauncher(root, reader, trace_dir=root + "-traces")
            while True:
                launcher.launch(req)
        elif mode == "task_tool":
            tool = outrider.TaskTool(outrider.SubagentLauncher(root, slow, trace_dir=False))
            while True:
                tool.run(TASK)
        elif mode == "main_agent":
            def main_model(request):
                time.sleep(random.uniform(0.0, 0.03))
                if len(request["messages"]) < 3:
                    return tool_call("Task", TASK)
                return "done"
            agent = outrider.MainAgent(root, main_model, slow, trace_dir=False)
            while True:
                agent.run("find f1", on_event=lambda event: None)
        elif mode == "async_model":
            async def model(request):
                await asyncio.sleep(random.uniform(0.0, 0.05))
                return FINAL
            launcher = outrider.SubagentLauncher(root, model, trace_dir=False)
            async def go():
                while True:
                    await launcher.launch_many_async([req] * 6)
            asyncio.run(go())
        elif mode == "launch_async":
            launcher = outrider.SubagentLauncher(root, slow, trace_dir=False)
            async def go():
                while True:
                    await asyncio.gather(*(launcher.launch_async(req) for _ in range(4)))
            asyncio.run(go())
        elif mode == "http_client":
            client = outrider.OpenAICompatible("m", serve(), "k")
            launcher = outrider.SubagentLauncher(root, client, trace_dir=False)
            while True:
                launcher.launch_many([req] * 4)
        elif mode == "check_evidence":
            evidence = [f"src/m{i}.py:1" for i in range(1, 200)]
            while True:
                outrider.check_evidence(root, evidence)

    if seed % 2:
        logging.basicConfig(level=logging.DEBUG, stream=open(__import__("os").devnull, "w"))
    for _ in range(2):
        threading.Thread(target=work, daemon=True).start()
    time.sleep(random.uniform(0.05, 0.6))
    """
)

MODES = [
    "launch",
    "launch_many",
    "tools+traces",
    "task_tool",
    "main_agent",
    "async_model",
    "launch_async",
    "http_client",
    "check_evidence",
]


def one(script: str, root: str, mode: str, seed: int, path: str | None) -> str | None:
    """None when the run exited cleanly, else what went wrong."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    try:
        proc = subprocess.run(
            [sys.executable, script, root, mode, str(seed)],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return "hung (30 s)"
    if proc.returncode != 0 or proc.stderr:
        return f"exit {proc.returncode}: {proc.stderr[-200:]!r}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="runs per scenario")
    parser.add_argument("--jobs", type=int, default=4, help="runs at once")
    parser.add_argument("--compare", help="an older build's site directory")
    parser.add_argument("--quick", action="store_true", help="2 runs per scenario, 2 at once")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.jobs = 2, 2
    builds = [("this build", None)] + ([(args.compare, args.compare)] if args.compare else [])
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp, "repo")
        (root / "src").mkdir(parents=True)
        for i in range(1, 201):
            (root / "src" / f"m{i}.py").write_text(f"def f{i}(x):\n    return x\n")
        script = str(pathlib.Path(tmp, "scenario.py"))
        pathlib.Path(script).write_text(SCENARIO)
        print(f"{args.runs} runs per scenario, {args.jobs} at once; failures (target: 0)")
        print(f"{'scenario':<16}" + "".join(f"{name[-24:]:>26}" for name, _ in builds))
        totals = [0] * len(builds)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for mode in MODES:
                row, shown = [], []
                for b, (name, path) in enumerate(builds):
                    runs = [
                        pool.submit(one, script, str(root), mode, seed, path)
                        for seed in range(args.runs)
                    ]
                    failures = [f for f in (r.result() for r in runs) if f]
                    totals[b] += len(failures)
                    row.append(f"{len(failures)} of {args.runs}")
                    shown += [f"  {name}: {failure}" for failure in failures[:2]]
                print(f"{mode:<16}" + "".join(f"{cell:>26}" for cell in row))
                print("\n".join(shown) if shown else "", end="\n" if shown else "", flush=True)
        runs = args.runs * len(MODES)
        print(f"{'total':<16}" + "".join(f"{f'{t} of {runs}':>26}" for t in totals))
    return 1 if totals[0] else 0


if __name__ == "__main__":
    raise SystemExit(main())

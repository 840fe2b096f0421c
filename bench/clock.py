"""Hostile exits: how long a child runs past its wall-clock limit, and how many tokens it reports
against its total budget, in the three cases issue 9 measured.

    python bench/clock.py [--quick]

1. A final answer citing a 2 GiB sparse file 40 times, timeout_seconds=2 (was 16 s).
2. A loopback server answering 429 with Retry-After: 99999, timeout_seconds=3 (was 60 s per
   attempt).
3. The explore profile (32 000 total tokens) on an exploration of 100-line Reads whose model
   reports usage at about 4 characters a token (was 35 446 to 51 087 tokens).

Each case must also end the way it should (exit 1 otherwise): the sparse evidence `unverified`
as too large, the throttled child `failed` as rate limited, the exploration `partial` on its
token budget and never over it. The times are printed, not judged. The whole run takes about a
second, so `--quick` (what `make bench-quick` runs) is the same run.
"""

from __future__ import annotations

import argparse
import http.server
import json
import pathlib
import sys
import tempfile
import threading
import time
from typing import Any

import outrider


def tree(root: pathlib.Path) -> None:
    with open(root / "huge.bin", "wb") as f:
        f.truncate(2 << 30)
    (root / "big.txt").write_text("".join(f"line {i} {'z' * 60}\n" for i in range(2000)))


def launch(root: pathlib.Path, model: Any, **profile: Any) -> tuple[float, Any]:
    explore = outrider.EXPLORE_PROFILE.replace(**profile)
    launcher = outrider.SubagentLauncher(root, model, trace_dir=False, profiles=[explore])
    started = time.perf_counter()
    result = launcher.launch(outrider.SubagentRequest(profile_name="explore", task="Look around."))
    return time.perf_counter() - started, result


def sparse_evidence(root: pathlib.Path) -> list[str]:
    evidence = [f"huge.bin:{2 + i}" for i in range(40)]
    answer = json.dumps(
        {"status": "completed", "summary": "s", "findings": ["f"], "evidence": evidence}
    )
    took, r = launch(root, lambda request: answer, timeout_seconds=2.0)
    reasons = sorted({c["reason"] for c in r.ungrounded_evidence})
    print(
        f"sparse evidence x40, limit 2 s:   {took:6.2f} s  {r.status} {r.terminal_reason} {reasons}"
    )
    if r.status != "unverified" or reasons != ["too_large"]:
        return [f"sparse evidence: {r.status} {reasons}, not unverified ['too_large']"]
    return []


class Throttled(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"error": {"message": "slow down"}}'
        self.send_response(429)
        self.send_header("Retry-After", "99999")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def retry_after(root: pathlib.Path) -> list[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Throttled)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = outrider.OpenAICompatible(
            model="m", base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k"
        )
        took, r = launch(root, model, timeout_seconds=3.0)
        print(
            f"Retry-After 99999, limit 3 s:    {took:6.2f} s  {r.status} "
            f"{r.terminal_reason}/{r.failure_reason}"
        )
    finally:
        server.shutdown()
    if r.status != "failed" or r.failure_reason != "rate_limited":
        return [f"Retry-After: {r.status} {r.failure_reason}, not failed rate_limited"]
    return []


def exploration(root: pathlib.Path) -> list[str]:
    reads = 0

    def model(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal reads
        prompt = len(json.dumps(request)) // 4
        if request.get("tools"):
            reads += 1
            args = {"path": "big.txt", "start_line": 1 + (reads - 1) * 100, "limit": 100}
            reply: dict[str, Any] = {"tool_calls": [{"name": "Read", "arguments": args}]}
        else:
            reply = {
                "content": json.dumps(
                    {
                        "status": "partial",
                        "summary": "numbered lines",
                        "findings": ["f"],
                        "evidence": [f"big.txt:1-{reads * 100}"],
                    }
                )
            }
        reply["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": 40,
            "total_tokens": prompt + 40,
        }
        return reply

    _, r = launch(root, model)
    print(
        f"100-line Reads, budget 32 000:    {r.token_usage:6d} tokens  {r.status} "
        f"{r.terminal_reason}, {reads} reads + wrap-up"
    )
    budget = outrider.EXPLORE_PROFILE.total_token_budget
    if r.status != "partial" or r.terminal_reason != "token_budget" or r.token_usage > budget:
        return [
            f"exploration: {r.status} {r.terminal_reason} {r.token_usage} tokens, not partial "
            f"token_budget within {budget}"
        ]
    return []


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="the same run (it takes about 1 s)")
    ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        tree(root)
        wrong = sparse_evidence(root) + retry_after(root) + exploration(root)
    for line in wrong:
        print(f"error: {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`outrider.OpenAICompatible` against llmock, a chaos mock of OpenAI-style APIs written by others.

llmock (PyPI) runs as a subprocess on 127.0.0.1. Each test queues faults through its control API
(`POST /_llmock/scenario`), drives the client through them, then asks llmock for its resilience
verdict (`GET /_llmock/verdict`): did the client wait as long as Retry-After asked, back off, stop
retrying errors that cannot succeed? llmock judges from its own journal of every attempt, so these
tests check the client against an independent reading of the same traffic.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

import outrider

MODEL = "gpt-4o-mini"
KEY = "sk-llmock-0a1b2c3d4e5f"
REQUEST: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You explore code."},
        {"role": "user", "content": "Where is login handled?"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "Grep",
                "description": "Search file contents",
                "parameters": {
                    "type": "object",
                    "properties": {"pattern": {"type": "string"}},
                    "required": ["pattern"],
                },
            },
        }
    ],
    "tool_choice": "auto",
}
STARTUP_SECONDS = 20.0

# Control-API calls must not go through a proxy from the environment.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LLMockProcess:
    """A running `llmock serve` subprocess and its control API."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: pathlib.Path) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def control(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with _direct.open(request, timeout=10) as response:
            return json.loads(response.read())

    def queue(self, *behaviors: dict[str, Any]) -> None:
        queued = self.control("POST", "/_llmock/scenario", {"behaviors": list(behaviors)})
        assert queued["queued"] == len(behaviors), queued

    def pending(self) -> list[dict[str, Any]]:
        pending: list[dict[str, Any]] = self.control("GET", "/_llmock/scenario")["pending"]
        return pending

    def journal(self) -> list[dict[str, Any]]:
        """Every request llmock served since the last reset, oldest first."""
        records: list[dict[str, Any]] = self.control("GET", "/_llmock/requests")["requests"]
        return records

    def verdict(self) -> dict[str, Any]:
        verdict: dict[str, Any] = self.control("GET", "/_llmock/verdict")
        return verdict

    def report(self) -> str:
        request = urllib.request.Request(f"{self.url}/_llmock/verdict?format=text")
        with _direct.open(request, timeout=10) as response:
            text: str = response.read().decode()
            return text

    def client(self, **options: Any) -> outrider.OpenAICompatible:
        return outrider.OpenAICompatible(MODEL, self.base_url, KEY, **options)


def fail(status: int, **fields: Any) -> dict[str, Any]:
    return {"type": "fail", "status": status, **fields}


def reply(
    text: str | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"type": "reply", "text": text, "tool_calls": tool_calls or []}


def delay(seconds: float) -> dict[str, Any]:
    return {"type": "delay", "seconds": seconds}


def passing_verdict(calls: int, attempts: int, faults: int) -> dict[str, Any]:
    return {
        "passed": True,
        "calls": calls,
        "attempts": attempts,
        "faults_injected": faults,
        "errors": 0,
        "warnings": 0,
        "findings": [],
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(log: pathlib.Path) -> LLMockProcess:
    port = _free_port()
    # llmock reads LLMOCK_* settings from the environment: start from none of them.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMOCK_")}
    command = [
        sys.executable,
        "-m",
        "llmock.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--response-style",
        "static",
        "--tool-mode",
        "off",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    mock = LLMockProcess(process, port, log)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llmock exited with {process.returncode}:\n{log.read_text()}")
        try:
            if mock.control("GET", "/health")["status"] == "ok":
                return mock
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)
    _stop(process)
    raise RuntimeError(f"llmock did not answer within {STARTUP_SECONDS} s:\n{log.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def llmock_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMockProcess]:
    if importlib.util.find_spec("llmock") is None:
        pytest.fail("llmock is not installed in this environment: pip install 'llmock==0.2.2'")
    log_dir = tmp_path_factory.mktemp("llmock")
    errors: list[str] = []
    # The port is free when picked but may be taken before llmock binds it: try another.
    for attempt in range(3):
        try:
            mock = _start(log_dir / f"server-{attempt}.log")
            break
        except RuntimeError as e:
            errors.append(str(e))
    else:
        pytest.fail("llmock would not start:\n" + "\n".join(errors))
    yield mock
    _stop(mock.process)


@pytest.fixture
def chaos(llmock_process: LLMockProcess, no_llm_env: pathlib.Path) -> LLMockProcess:
    """The shared server with no queued faults and an empty journal.

    Named so as not to shadow the `llmock` / `llmock_server` fixtures of llmock's own pytest
    plugin, which these tests do not use (they need a subprocess stopped by PID).
    """
    llmock_process.control("POST", "/_llmock/reset")
    return llmock_process


def elapsed_call(llm: outrider.OpenAICompatible) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    answer = llm(REQUEST)
    return answer, time.monotonic() - started


def test_429s_with_retry_after_are_waited_out(chaos: LLMockProcess) -> None:
    chaos.queue(fail(429, retry_after=1, times=2), reply("after the storm"))
    answer, elapsed = elapsed_call(chaos.client(max_retries=2))
    assert (answer["content"], answer["tool_calls"], answer["finish_reason"]) == (
        "after the storm",
        [],
        "stop",
    )
    assert elapsed >= 2.0
    assert [r["status"] for r in chaos.journal()] == [429, 429, 200]
    assert chaos.verdict() == passing_verdict(calls=1, attempts=3, faults=2), chaos.report()


def test_a_5xx_burst_is_retried_with_backoff(chaos: LLMockProcess) -> None:
    chaos.queue(
        fail(500),
        fail(502),
        fail(503, retry_after=0),
        reply("back up"),
    )
    answer, _ = elapsed_call(chaos.client(max_retries=3))
    assert answer["content"] == "back up"
    assert [r["status"] for r in chaos.journal()] == [500, 502, 503, 200]
    verdict = chaos.verdict()
    # Full jitter draws each wait at random in [0, 0.5 * 2^n] s, so two waits in a row can come out
    # about equal: llmock then warns "constant interval" (a heuristic). Warnings never fail a verdict.
    assert [f["code"] for f in verdict["findings"]] in ([], ["no_backoff"]), chaos.report()
    assert {**verdict, "warnings": 0, "findings": []} == passing_verdict(
        calls=1, attempts=4, faults=3
    ), chaos.report()


def test_a_401_is_not_retried(chaos: LLMockProcess) -> None:
    chaos.queue(fail(401), reply("never sent"))
    with pytest.raises(RuntimeError) as info:
        chaos.client(max_retries=2)(REQUEST)
    message = str(info.value)
    assert message.startswith(f"auth error: {chaos.base_url}/chat/completions answered HTTP 401: ")
    assert message.endswith(f"; check the API key and that it may use model '{MODEL}'")
    assert KEY not in message
    assert [r["status"] for r in chaos.journal()] == [401]
    assert chaos.verdict() == passing_verdict(calls=1, attempts=1, faults=1), chaos.report()
    assert chaos.pending() == [
        reply("never sent") | {"finish_reason": None, "times": 1, "match": {}}
    ]


def test_a_context_overflow_is_classified_and_not_retried(chaos: LLMockProcess) -> None:
    chaos.queue(
        fail(400, code="context_length_exceeded", message="maximum context length is 8 tokens")
    )
    with pytest.raises(RuntimeError, match=r"^context_too_long error: .* HTTP 400: "):
        chaos.client(max_retries=2)(REQUEST)
    assert [r["status"] for r in chaos.journal()] == [400]
    assert chaos.verdict() == passing_verdict(calls=1, attempts=1, faults=1), chaos.report()


def test_a_slow_answer_within_the_timeout_is_waited_for(chaos: LLMockProcess) -> None:
    chaos.queue(delay(1.0), reply("slow but sure"))
    answer, elapsed = elapsed_call(chaos.client(timeout=5, max_retries=2))
    assert answer["content"] == "slow but sure"
    assert 1.0 <= elapsed < 3.0
    assert [r["status"] for r in chaos.journal()] == [200]
    assert chaos.verdict() == passing_verdict(calls=1, attempts=1, faults=0), chaos.report()


def test_a_slow_answer_past_the_timeout_is_abandoned_and_retried(chaos: LLMockProcess) -> None:
    chaos.queue(delay(1.5), reply("too late"), reply("second try"))
    answer, elapsed = elapsed_call(chaos.client(timeout=0.5, max_retries=1))
    assert answer["content"] == "second try"
    # One timed-out attempt (0.5 s), a backoff of at most 0.5 s, then a prompt answer.
    assert elapsed < 1.5
    journal = chaos.journal()
    assert [r["status"] for r in journal] == [200, 200]
    assert journal[0]["duration"] >= 1.5 and journal[1]["duration"] < 0.5
    # llmock cannot tell that the client hung up on the first answer: to it, the slow answer was
    # delivered (status 200), so the retry counts as a second call, not as an attempt.
    assert chaos.verdict() == passing_verdict(calls=2, attempts=2, faults=0), chaos.report()


def test_retry_after_on_a_504_is_honoured(chaos: LLMockProcess) -> None:
    chaos.queue(fail(504, retry_after=1), reply("through the gateway"))
    answer, _ = elapsed_call(chaos.client(max_retries=1))
    assert answer["content"] == "through the gateway"
    assert chaos.verdict() == passing_verdict(calls=1, attempts=2, faults=1), chaos.report()


def test_a_whole_launch_survives_a_fault_and_is_judged_resilient(
    chaos: LLMockProcess, tmp_path: pathlib.Path
) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text(
        "import hmac\n\ndef handle_login(user, password):\n    return check(user, password)\n"
    )
    final = {
        "status": "completed",
        "summary": "Login is handled by handle_login in src/auth.py.",
        "findings": ["handle_login checks the password"],
        "evidence": ["src/auth.py:3"],
        "unresolved_questions": [],
    }
    chaos.queue(
        fail(500),
        reply(tool_calls=[{"name": "Read", "arguments": {"path": "src/auth.py"}}]),
        reply(json.dumps(final)),
    )
    launcher = outrider.SubagentLauncher(
        root, chaos.client(max_retries=2), trace_dir=tmp_path / "traces"
    )
    result = launcher.launch(outrider.SubagentRequest(task="Where is login handled?"))
    d = result.to_dict()
    assert (d["status"], d["terminal_reason"], d["error"], d["model_used"]) == (
        "completed",
        "completed",
        None,
        "main",
    )
    # The model's line lies in the index's place: cited as that place, from both.
    assert d["result"] == {
        **final,
        "evidence": ["src/auth.py:3-4"],
        "tool_usage": {"Read": 1},
        "terminal_reason": "completed",
        "evidence_sources": ["both"],
    }
    assert (d["model_calls"], d["usage_estimated"]) == (2, False)
    assert d["token_usage"] > 0

    journal = chaos.journal()
    assert [r["status"] for r in journal] == [500, 200, 200]
    assert journal[0]["body"] == journal[1]["body"]
    roles = [m["role"] for m in journal[2]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert chaos.verdict() == passing_verdict(calls=2, attempts=3, faults=1), chaos.report()

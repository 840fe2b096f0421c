"""`outrider.OpenAICompatible` against a loopback OpenAI-compatible server the tests run themselves.

Each test scripts the server's answers (status, headers, body, delay) and reads back every request
it received, so retries, waits and classified errors are checked by exact request counts and
messages. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import pathlib
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest

import outrider

KEY = "sk-loopback-5f1e2d3c4b5a69788796a5b4"
MODEL = "loopback-model"
# What outrider adds for a server on this machine when nothing is configured (LOCAL_MAX_TOKENS,
# LOCAL_STOP and LOCAL_TEMPERATURE in src/llm/openai/client.rs).
LOCAL_MAX_TOKENS = 512
LOCAL = {"max_tokens": LOCAL_MAX_TOKENS, "stop": ["\n\n\n\n"], "temperature": 0.0}
TOOLS: list[dict[str, Any]] = [
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
]
REQUEST: dict[str, Any] = {
    "model": "gpt-test",
    "messages": [
        {"role": "system", "content": "You explore code."},
        {"role": "user", "content": "Where is login handled?"},
    ],
    "tools": TOOLS,
    "tool_choice": "auto",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer. A dict or list body is sent as JSON; str and bytes as they are."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (interrupted when the server stops)."""
    drop: bool = False
    """Close the connection without answering."""


@dataclass(frozen=True)
class Seen:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def completion(
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    *,
    finish_reason: str = "stop",
    usage: tuple[int, int] | None = (11, 7),
) -> dict[str, Any]:
    """A ChatCompletion body; `tool_calls` are (id, name, arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        prompt, answer = usage
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": answer,
            "total_tokens": prompt + answer,
        }
    return body


OK = Reply(body=completion("done"))
OK_ANSWER: dict[str, Any] = {
    "content": "done",
    "tool_calls": [],
    "finish_reason": "stop",
    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    llm: LoopbackLLM

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out has hung up on a delayed answer: expected, not worth a traceback.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        llm = cast(_Server, self.server).llm
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        reply = llm.take(
            Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        if reply.delay and llm.stopping.wait(reply.delay):
            return
        if reply.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(reply.body, (dict, list)):
            payload = json.dumps(reply.body).encode()
            content_type = "application/json"
        else:
            text = reply.body if reply.body is not None else ""
            payload = text if isinstance(text, bytes) else text.encode()
            content_type = "text/plain"
        self.send_response(reply.status)
        self.send_header("Content-Type", content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LoopbackLLM:
    """An OpenAI-compatible server on 127.0.0.1 with a script of answers and a request log."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.llm = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    @property
    def unused(self) -> int:
        with self._lock:
            return len(self._replies)

    def take(self, seen: Seen) -> Reply:
        with self._lock:
            self._seen.append(seen)
            if self._replies:
                return self._replies.popleft()
        # An unscripted request is a test failure: 418 is not retried, so it surfaces at once.
        return Reply(418, {"error": {"message": "loopback: no scripted reply left"}})

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def server(no_llm_env: pathlib.Path) -> Iterator[LoopbackLLM]:
    llm = LoopbackLLM()
    yield llm
    llm.stop()


def client(server: LoopbackLLM, **options: Any) -> outrider.OpenAICompatible:
    return outrider.OpenAICompatible(MODEL, server.base_url, KEY, **options)


def call_error(llm: outrider.OpenAICompatible, request: Mapping[str, Any] = REQUEST) -> str:
    with pytest.raises(RuntimeError) as info:
        llm(request)
    return str(info.value)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- success -------------------------------------------------------------------------------------


def test_tool_call_answer_is_normalised_and_the_request_is_sent_as_given(
    server: LoopbackLLM,
) -> None:
    server.script(
        Reply(
            body=completion(
                None,
                [
                    ("call_1", "Grep", {"pattern": "def login"}),
                    ("call_2", "Glob", {"pattern": "*"}),
                ],
                finish_reason="tool_calls",
                usage=(120, 30),
            )
        )
    )
    answer = client(server)(REQUEST)
    assert answer == {
        "content": "",
        "tool_calls": [
            {"id": "call_1", "name": "Grep", "arguments": '{"pattern": "def login"}'},
            {"id": "call_2", "name": "Glob", "arguments": '{"pattern": "*"}'},
        ],
        "finish_reason": "tool_calls",
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }
    [seen] = server.requests
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["content-type"] == "application/json"
    # A server on this machine also gets outrider's default answer cap.
    assert seen.body == {**REQUEST, **LOCAL}


def test_configured_model_options_and_headers_are_sent_and_tools_left_out_when_none(
    server: LoopbackLLM,
) -> None:
    server.script(OK)
    llm = outrider.OpenAICompatible(
        MODEL,
        f"{server.base_url}/chat/completions/",
        KEY,
        temperature=0.25,
        max_tokens=64,
        headers={"X-Team": "explore"},
    )
    # A server on a loopback address gets the local default (a CPU model reads a long prompt
    # for minutes); a remote one the usual 120 s; a timeout given is kept.
    assert outrider.OpenAICompatible(MODEL, "https://api.example.com/v1", KEY).timeout == 120.0
    assert outrider.OpenAICompatible(MODEL, server.base_url, KEY, timeout=7.0).timeout == 7.0
    assert (llm.model, llm.base_url, llm.timeout, llm.max_retries) == (
        MODEL,
        server.base_url,
        600.0,
        2,
    )
    messages = [{"role": "user", "content": "hi"}]
    assert llm({"messages": messages}) == OK_ANSWER
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["x-team"] == "explore"
    assert seen.body == {
        "model": MODEL,
        "messages": messages,
        "temperature": 0.25,
        "max_tokens": 64,
        "stop": LOCAL["stop"],
    }


def test_no_api_key_sends_no_authorization_header(server: LoopbackLLM) -> None:
    server.script(OK)
    assert outrider.OpenAICompatible(MODEL, server.base_url)(REQUEST) == OK_ANSWER
    assert "authorization" not in server.requests[0].headers


# -- retries -------------------------------------------------------------------------------------


def test_429_waits_for_retry_after_then_succeeds(server: LoopbackLLM) -> None:
    server.script(
        Reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "1"}),
        OK,
    )
    started = time.monotonic()
    assert client(server, max_retries=2)(REQUEST) == OK_ANSWER
    elapsed = time.monotonic() - started
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body == {**REQUEST, **LOCAL}
    assert 1.0 <= elapsed < 3.0


def test_500_then_503_then_success_is_three_requests(server: LoopbackLLM) -> None:
    server.script(
        Reply(500, {"error": {"message": "internal"}}),
        Reply(503, "upstream unavailable"),
        OK,
    )
    assert client(server, max_retries=2)(REQUEST) == OK_ANSWER
    assert len(server.requests) == 3
    assert server.unused == 0


@pytest.mark.parametrize("status", [408, 409, 502, 504])
def test_other_transient_statuses_are_retried(server: LoopbackLLM, status: int) -> None:
    server.script(Reply(status, {"error": {"message": "try again"}}), OK)
    assert client(server, max_retries=1)(REQUEST) == OK_ANSWER
    assert len(server.requests) == 2


def test_a_dropped_connection_is_retried(server: LoopbackLLM) -> None:
    server.script(Reply(drop=True), OK)
    assert client(server, max_retries=1)(REQUEST) == OK_ANSWER
    assert len(server.requests) == 2


def test_retries_stop_after_max_retries_and_say_how_many_attempts(server: LoopbackLLM) -> None:
    limited = Reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0"})
    server.script(limited, limited, limited)
    assert call_error(client(server, max_retries=2)) == (
        f"rate_limit error: {server.endpoint} answered HTTP 429 (rate limited): "
        "Rate limit reached (gave up after 3 attempts)"
    )
    assert len(server.requests) == 3


def test_retry_after_is_honoured_on_other_retryable_statuses(server: LoopbackLLM) -> None:
    server.script(Reply(502, "bad gateway", {"Retry-After": "1"}), OK)
    started = time.monotonic()
    assert client(server, max_retries=1)(REQUEST) == OK_ANSWER
    assert time.monotonic() - started >= 1.0


# -- errors that are not retried -----------------------------------------------------------------


def test_401_is_an_auth_error_without_retry(server: LoopbackLLM) -> None:
    server.script(Reply(401, {"error": {"message": "Invalid token", "type": "auth"}}), OK)
    assert call_error(client(server, max_retries=2)) == (
        f"auth error: {server.endpoint} answered HTTP 401: Invalid token; "
        f"check the API key and that it may use model '{MODEL}'"
    )
    assert len(server.requests) == 1


def test_context_length_400_is_context_too_long_without_retry(server: LoopbackLLM) -> None:
    said = "This model's maximum context length is 8192 tokens. However, you requested 9000."
    server.script(Reply(400, {"error": {"message": said, "code": "context_length_exceeded"}}), OK)
    assert call_error(client(server, max_retries=2)) == (
        f"context_too_long error: {server.endpoint} answered HTTP 400: "
        f"the prompt does not fit the model's context window: {said}"
    )
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request"), (403, "auth"), (404, "invalid_request"), (422, "invalid_request")],
)
def test_other_client_errors_are_not_retried(server: LoopbackLLM, status: int, kind: str) -> None:
    server.script(Reply(status, {"error": {"message": "no"}}), OK)
    message = call_error(client(server, max_retries=2))
    assert message.startswith(f"{kind} error: {server.endpoint} ")
    assert f"HTTP {status}: no" in message
    assert len(server.requests) == 1


def test_a_hung_server_hits_the_timeout_on_every_attempt(server: LoopbackLLM) -> None:
    server.script(
        Reply(body=completion("late"), delay=10), Reply(body=completion("late"), delay=10)
    )
    started = time.monotonic()
    message = call_error(client(server, timeout=0.5, max_retries=1))
    elapsed = time.monotonic() - started
    assert message == (
        f"timeout error: no complete answer from {server.endpoint} within 0.5 s (the timeout); "
        "raise it if the model is slow (gave up after 2 attempts)"
    )
    assert len(server.requests) == 2
    assert 1.0 <= elapsed < 2.5


def test_a_body_that_is_not_json_is_a_bad_response_without_retry(server: LoopbackLLM) -> None:
    server.script(Reply(200, "<html>gateway login</html>"), OK)
    assert call_error(client(server)) == (
        f"bad_response error: {server.endpoint} answered HTTP 200 with a body that is not JSON "
        "(expected value at line 1 column 1): <html>gateway login</html>"
    )
    assert len(server.requests) == 1


def test_json_that_is_not_a_completion_is_a_bad_response(server: LoopbackLLM) -> None:
    server.script(Reply(200, {"error": {"message": "model overloaded"}}))
    assert call_error(client(server)) == (
        f"bad_response error: {server.endpoint} answered HTTP 200 with an error instead of a "
        "completion: model overloaded"
    )
    assert len(server.requests) == 1


def test_a_closed_port_is_a_connection_error_and_is_retried(no_llm_env: pathlib.Path) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}/v1"
    llm = outrider.OpenAICompatible(MODEL, endpoint, KEY, max_retries=1)
    assert call_error(llm) == (
        f"connection error: could not connect to {endpoint}/chat/completions: "
        "Connection refused (os error 111) (gave up after 2 attempts)"
    )


def test_a_bad_request_dict_is_refused_before_sending(server: LoopbackLLM) -> None:
    llm = client(server)
    with pytest.raises(ValueError, match=r"request\['messages'\] must be a list"):
        llm({"model": "x"})
    with pytest.raises(ValueError, match=r"request\['messages'\]\[0\]\['role'\]"):
        llm({"messages": [{"role": "robot", "content": "hi"}]})
    assert server.requests == []


# -- secrets -------------------------------------------------------------------------------------


def test_the_api_key_appears_in_no_error_message_or_repr(server: LoopbackLLM) -> None:
    echo = f"Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}"
    server.script(
        Reply(401, {"error": {"message": echo}}),
        Reply(500, f"upstream said: Authorization: Bearer {KEY}"),
        Reply(500, f"upstream said: Authorization: Bearer {KEY}"),
        Reply(200, f"not json {KEY}"),
    )
    llm = client(server, max_retries=1)
    messages = [call_error(llm) for _ in range(3)]
    down = f"http://127.0.0.1:{closed_port()}/v1"
    llm_down = outrider.OpenAICompatible(MODEL, down, KEY, max_retries=0)
    messages.append(call_error(llm_down))
    assert [m.split(" error: ")[0] for m in messages] == [
        "auth",
        "server",
        "bad_response",
        "connection",
    ]
    for text in [*messages, repr(llm), repr(llm_down)]:
        assert KEY not in text, text
    assert all("[REDACTED]" in m for m in messages[:3]), messages
    assert repr(llm) == (
        f"OpenAICompatible(model='{MODEL}', base_url='{server.base_url}', api_key='***', "
        "timeout=600.0, max_retries=1)"
    )


def test_credentials_in_the_base_url_stay_out_of_the_repr(no_llm_env: pathlib.Path) -> None:
    llm = outrider.OpenAICompatible(
        MODEL, "http://user:hunter2@127.0.0.1:9/v1?api-version=1&api-key=sk-in-query"
    )
    assert "hunter2" not in repr(llm) and "sk-in-query" not in repr(llm), repr(llm)


def test_basic_credentials_from_the_base_url_are_redacted(server: LoopbackLLM) -> None:
    basic = base64.b64encode(b"user:hunter2").decode()
    server.script(Reply(500, f"upstream said: Authorization: Basic {basic}"))
    url = server.base_url.replace("http://", "http://user:hunter2@")
    message = call_error(outrider.OpenAICompatible(MODEL, url, max_retries=0))
    assert message.startswith("server error: ")
    assert server.requests[0].headers["authorization"] == f"Basic {basic}"
    assert basic not in message and "hunter2" not in message, message


# -- from_env ------------------------------------------------------------------------------------


def test_from_env_without_a_model_id_is_an_error_or_none_when_not_required(
    no_llm_env: pathlib.Path,
) -> None:
    for prefix in ("LLM", "LIGHT_LLM"):
        with pytest.raises(outrider.ConfigError, match=f"^{prefix}_MODEL_ID: not set"):
            outrider.OpenAICompatible.from_env(prefix)
        assert outrider.OpenAICompatible.from_env(prefix, required=False) is None


def test_from_env_reads_the_llm_variables(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_MODEL_ID", "env-model")
    monkeypatch.setenv("LLM_API_KEY", "sk-env-main")
    monkeypatch.setenv("LLM_BASE_URL", server.base_url + "/")
    monkeypatch.setenv("LLM_TIMEOUT", "7.5")
    monkeypatch.setenv("LLM_MAX_RETRIES", "4")
    llm = outrider.OpenAICompatible.from_env()
    assert llm is not None
    assert (llm.model, llm.base_url, llm.timeout, llm.max_retries) == (
        "env-model",
        server.base_url,
        7.5,
        4,
    )
    server.script(OK)
    assert llm({"messages": [{"role": "user", "content": "hi"}]}) == OK_ANSWER
    [seen] = server.requests
    assert seen.headers["authorization"] == "Bearer sk-env-main"
    assert seen.body == {
        "model": "env-model",
        "messages": [{"role": "user", "content": "hi"}],
        **LOCAL,
    }


def test_light_llm_falls_back_to_the_llm_key_and_base_url(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_MODEL_ID", "main-model")
    monkeypatch.setenv("LLM_API_KEY", "sk-env-main")
    monkeypatch.setenv("LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "light-model")
    light = outrider.OpenAICompatible.from_env("LIGHT_LLM")
    assert light is not None
    assert (light.model, light.base_url) == ("light-model", server.base_url)
    server.script(OK)
    light({"messages": [{"role": "user", "content": "hi"}]})
    [seen] = server.requests
    assert seen.headers["authorization"] == "Bearer sk-env-main"
    # The light route defaults to temperature 0.5, as the reference does (over a local
    # server's default of 0).
    assert seen.body == {
        "model": "light-model",
        "messages": [{"role": "user", "content": "hi"}],
        **LOCAL,
        "temperature": 0.5,
    }


def test_light_llm_own_key_wins_over_the_llm_key(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-env-main")
    monkeypatch.setenv("LIGHT_LLM_API_KEY", "sk-env-light")
    monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "light-model")
    monkeypatch.setenv("LIGHT_LLM_BASE_URL", server.base_url)
    light = outrider.OpenAICompatible.from_env("LIGHT_LLM")
    assert light is not None
    server.script(OK)
    light({"messages": [{"role": "user", "content": "hi"}]})
    assert server.requests[0].headers["authorization"] == "Bearer sk-env-light"


def test_dotenv_fills_in_but_never_overrides_the_environment(
    server: LoopbackLLM, no_llm_env: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (no_llm_env / ".env").write_text(
        "# written by the test\n"
        "LLM_MODEL_ID=dotenv-model\n"
        "export LLM_API_KEY='sk-dotenv'\n"
        f'LLM_BASE_URL="{server.base_url}"\n'
        "LLM_MAX_RETRIES=5 # trailing comment\n"
    )
    monkeypatch.setenv("LLM_MODEL_ID", "env-model")
    llm = outrider.OpenAICompatible.from_env()
    assert llm is not None
    assert (llm.model, llm.base_url, llm.max_retries) == ("env-model", server.base_url, 5)
    server.script(OK)
    llm({"messages": [{"role": "user", "content": "hi"}]})
    assert server.requests[0].headers["authorization"] == "Bearer sk-dotenv"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "LLM_TIMEOUT",
            "abc",
            "LLM_TIMEOUT: 'abc' is not a number of seconds; set it to a positive number such as 120",
        ),
        ("LLM_TIMEOUT", "-1", "LLM_TIMEOUT: -1 is not a positive number of seconds; use e.g. 120"),
        (
            "LLM_MAX_RETRIES",
            "two",
            "LLM_MAX_RETRIES: 'two' is not a whole number >= 0; set it to the number of retries, "
            "such as 2",
        ),
        (
            "LLM_BASE_URL",
            "ftp://example.invalid",
            "LLM_BASE_URL: 'ftp://example.invalid' is not an http(s) URL; use an http(s) URL such "
            "as https://api.openai.com/v1",
        ),
    ],
)
def test_from_env_names_a_bad_variable_and_its_value(
    no_llm_env: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
    message: str,
) -> None:
    monkeypatch.setenv("LLM_MODEL_ID", "env-model")
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as info:
        outrider.OpenAICompatible.from_env()
    assert str(info.value) == message


# -- a whole launch ------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text(
        "import hmac\n\ndef handle_login(user, password):\n    return check(user, password)\n"
    )
    (root / "README.md").write_text("A tiny service.\n")
    return root


FINAL = {
    "status": "completed",
    "summary": "Login is handled by handle_login in src/auth.py.",
    "findings": ["handle_login checks the password"],
    "evidence": ["src/auth.py:3"],
    "unresolved_questions": [],
}


def test_a_launch_runs_through_the_http_client(
    server: LoopbackLLM, repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    server.script(
        Reply(
            body=completion(
                None,
                [("call_read_1", "Read", {"path": "src/auth.py"})],
                finish_reason="tool_calls",
                usage=(900, 40),
            )
        ),
        Reply(body=completion(json.dumps(FINAL), usage=(1300, 120))),
    )
    launcher = outrider.SubagentLauncher(
        repo, client(server, max_retries=0), trace_dir=tmp_path / "traces"
    )
    result = launcher.launch(outrider.SubagentRequest(task="Where is login handled?"))
    d = result.to_dict()
    assert (d["status"], d["terminal_reason"], d["error"], d["model_used"]) == (
        "completed",
        "completed",
        None,
        "main",
    )
    assert (d["token_usage"], d["usage_estimated"], d["model_calls"]) == (
        900 + 40 + 1300 + 120,
        False,
        2,
    )
    assert d["tool_usage"] == {"Read": 1}
    # The model's line 3 lies in the index's place (3-4): cited as that place, from both.
    assert d["result"] == {
        **FINAL,
        "evidence": ["src/auth.py:3-4"],
        "tool_usage": {"Read": 1},
        "terminal_reason": "completed",
        "evidence_sources": ["both"],
    }

    first, second = server.requests
    assert first.headers["authorization"] == second.headers["authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == MODEL
    # A tool call is required until the child has looked at code (min_tool_calls=1): the
    # hint's leads carry no code, so the first request asks for a call.
    assert "Leads (an offline search" in first.body["messages"][1]["content"]
    assert (first.body["tool_choice"], second.body["tool_choice"]) == ("required", "auto")
    assert sorted(t["function"]["name"] for t in first.body["tools"]) == ["Glob", "Grep", "Read"]
    assert [m["role"] for m in first.body["messages"]] == ["system", "user"]
    assert [m["role"] for m in second.body["messages"]] == ["system", "user", "assistant", "tool"]
    assistant, tool = second.body["messages"][2:]
    assert assistant["tool_calls"] == [
        {
            "id": "call_read_1",
            "type": "function",
            "function": {"name": "Read", "arguments": '{"path": "src/auth.py"}'},
        }
    ]
    assert (tool["tool_call_id"], tool["name"]) == ("call_read_1", "Read")
    assert "src/auth.py" in tool["content"]


def test_a_launch_reports_an_auth_failure_without_the_key(
    server: LoopbackLLM, repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    server.script(Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    traces = tmp_path / "traces"
    launcher = outrider.SubagentLauncher(repo, client(server), trace_dir=traces)
    result = launcher.launch(outrider.SubagentRequest(task="Where is login handled?"))
    assert (result.status, result.terminal_reason, result.failure_reason) == (
        "failed",
        "runtime_error",
        "model_error",
    )
    assert result.error == (
        f"child terminal reason: model_error: auth error: {server.endpoint} answered HTTP 401: "
        f"Incorrect API key provided: [REDACTED]; check the API key and that it may use model "
        f"'{MODEL}'"
    )
    assert len(server.requests) == 1
    written = [p.read_text() for p in traces.rglob("*") if p.is_file()]
    assert written and not any(KEY in text for text in written)

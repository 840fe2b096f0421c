"""Loopback HTTP endpoints for tests: one that gives every POST the same status and JSON body,
and one that answers from a script and records each request."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any


def completion(content: str) -> dict[str, Any]:
    """A chat completion whose answer is `content`."""
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


Answer = Callable[[str, dict[str, str], bytes], tuple[int, bytes]]


@contextlib.contextmanager
def _serve(
    answer: Answer, keep_alive: bool = False, connections: list[int] | None = None
) -> Iterator[str]:
    """Answer every POST with `answer(path, headers, body)` on 127.0.0.1 until the block ends;
    yields the server root (`http://127.0.0.1:PORT`). With `keep_alive` it speaks HTTP/1.1 and
    keeps connections open, as real providers do (clients then pool them); each new connection
    appends to `connections`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def setup(self) -> None:
            super().setup()
            if connections is not None:
                connections.append(1)

        def handle(self) -> None:
            # A pooled connection the client drops mid-wait is its right, not a failure.
            with contextlib.suppress(ConnectionError):
                super().handle()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = answer(self.path, headers, raw)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def answering(status: int, body: dict[str, Any]) -> Iterator[str]:
    """Serve `body` with `status` on 127.0.0.1 until the block ends; yields the `/v1` base URL."""
    payload = json.dumps(body).encode()
    with _serve(lambda *_: (status, payload)) as root:
        yield f"{root}/v1"


class Scripted:
    """A loopback endpoint that answers POSTs from a script, in order, and records each request.

    ``base`` is the server root (``http://127.0.0.1:PORT``); ``requests`` holds, per POST, the
    path, the headers (lower-cased names) and the JSON body. Past the script it answers 500.
    """

    def __init__(self, responses: list[dict[str, Any]]) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []
        self.connections: list[int] = []  # one item per TCP connection accepted
        self.base = ""
        self._lock = threading.Lock()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order."""
        return [r["body"] for r in self.requests]

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": json.loads(raw)})
            if not self.responses:
                error = {"error": {"message": f"script exhausted at request {len(self.requests)}"}}
                return 500, json.dumps(error).encode()
            return 200, json.dumps(self.responses.pop(0)).encode()


@contextlib.contextmanager
def scripted(responses: list[dict[str, Any]], keep_alive: bool = False) -> Iterator[Scripted]:
    """Serve `responses` in order on 127.0.0.1 until the block ends; yields the `Scripted`.
    `keep_alive`: HTTP/1.1 connections kept open (see `_serve`)."""
    state = Scripted(responses)
    with _serve(state._answer, keep_alive, state.connections) as root:
        state.base = root
        yield state

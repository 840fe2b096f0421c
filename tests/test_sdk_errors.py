"""An SDK's HTTP error raised by a model callable is classified by its status."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

import outrider


@pytest.mark.parametrize(
    ("status", "cls", "failure_reason"),
    [
        (429, "RateLimitError", "rate_limited"),
        (401, "AuthenticationError", "model_error"),
        (500, "InternalServerError", "model_error"),
    ],
)
def test_an_sdk_status_error_keeps_its_status(
    tmp_path: pathlib.Path, status: int, cls: str, failure_reason: str
) -> None:
    openai = pytest.importorskip("openai")
    import httpx

    def llm(request: dict[str, Any]) -> Any:
        response = httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1"))
        raise getattr(openai, cls)("provider said no", response=response, body=None)

    (tmp_path / "a.py").write_text("x = 1\n")
    r = outrider.SubagentLauncher(tmp_path, llm, trace_dir=False).launch(
        outrider.SubagentRequest("where is x")
    )
    assert (r.status, r.failure_reason) == ("failed", failure_reason), r
    assert r.error is not None and f"raised {cls}: provider said no" in r.error
    kind = {429: "rate_limit", 401: "auth", 500: "server"}[status]
    assert kind in r.error, r.error

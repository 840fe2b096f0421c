"""Test doubles: drive the real runner with a scripted model.

    from outrider.testing import ScriptedLLM, call, final

    llm = ScriptedLLM([
        [call("Glob", pattern="**/*.py"), call("Grep", pattern="def main")],   # one turn, two calls
        final(status="completed", summary="main is in app.py", evidence=["app.py:1"]),
    ])
    launcher = outrider.SubagentLauncher(root, llm)
    result = launcher.launch(outrider.SubagentRequest(task="Find main"))
    llm.assert_complete()
    llm.requests[0]["messages"][0]["role"]   # 'system'

A step is one model answer: a list of tool calls (a turn), a ``str`` (final text), a dict (a
ChatCompletion or a short response, returned as is), an exception instance (raised), or a
:func:`delay` wrapping any of these. ``usage`` may be attached with :func:`with_usage`.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = ["Delay", "ScriptedLLM", "Usage", "call", "delay", "final", "with_usage"]

_ids = itertools.count()


def call(name: str, /, **arguments: Any) -> dict[str, Any]:
    """One tool call (short form): ``call("Read", path="app.py", limit=20)``."""
    return {"id": f"call_{next(_ids)}", "name": name, "arguments": arguments}


def final(**fields: Any) -> str:
    """A final answer: the JSON object of the given fields, e.g. ``final(status=..., summary=...)``."""
    return json.dumps(fields)


@dataclass(frozen=True)
class Delay:
    """A step answered after ``seconds``."""

    seconds: float
    step: Any


def delay(seconds: float, step: Any) -> Delay:
    """Answer ``step`` after sleeping ``seconds`` (time.sleep, or asyncio.sleep when async)."""
    return Delay(seconds, step)


@dataclass(frozen=True)
class Usage:
    """A step that reports token usage."""

    step: Any
    prompt_tokens: int
    completion_tokens: int


def with_usage(step: Any, prompt_tokens: int, completion_tokens: int = 0) -> Usage:
    """Attach provider usage to a step."""
    return Usage(step, prompt_tokens, completion_tokens)


Step: TypeAlias = (
    str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | BaseException | Delay | Usage
)


class ScriptedLLM:
    """A model callable that answers from a script and records every request.

    ``ScriptedLLM(steps)`` is a sync callable; ``ScriptedLLM(steps, is_async=True)`` returns
    coroutines. Running past the script raises ``AssertionError`` inside the call, which ends the
    child with a model error that names it.
    """

    def __init__(self, steps: Iterable[Step], *, is_async: bool = False) -> None:
        self._steps: list[Step] = list(steps)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        """Every request received, deep-copied, in order."""
        self.is_async = is_async

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.requests)

    @property
    def remaining(self) -> int:
        """Steps not used yet."""
        return len(self._steps)

    def _next(self, request: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(copy.deepcopy(request))
            if not self._steps:
                raise AssertionError(
                    f"ScriptedLLM ran out of steps after {len(self.requests) - 1} calls"
                )
            return self._steps.pop(0)

    @staticmethod
    def _render(step: Step) -> Any:
        usage: dict[str, int] | None = None
        if isinstance(step, Usage):
            usage = {
                "prompt_tokens": step.prompt_tokens,
                "completion_tokens": step.completion_tokens,
                "total_tokens": step.prompt_tokens + step.completion_tokens,
            }
            step = step.step
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            out: Any = {"content": step}
        elif isinstance(step, Mapping):
            out = dict(step)
        elif isinstance(step, Sequence):
            out = {"content": "", "tool_calls": [dict(c) for c in step if isinstance(c, Mapping)]}
        else:
            raise TypeError(f"unsupported ScriptedLLM step: {step!r}")
        if usage is not None and isinstance(out, dict) and "choices" not in out:
            out["usage"] = usage
        return out

    def __call__(self, request: dict[str, Any]) -> Any:
        step = self._next(request)
        if self.is_async:
            return self._async_answer(step)
        if isinstance(step, Delay):
            time.sleep(step.seconds)
            step = step.step
        return self._render(step)

    async def _async_answer(self, step: Step) -> Any:
        if isinstance(step, Delay):
            await asyncio.sleep(step.seconds)
            step = step.step
        return self._render(step)

    def assert_complete(self) -> None:
        """Fail unless every scripted step was used."""
        if self._steps:
            raise AssertionError(
                f"ScriptedLLM has {len(self._steps)} unused step(s): {self._steps!r}"
            )

    def __repr__(self) -> str:
        return (
            f"ScriptedLLM(calls={self.calls}, remaining={self.remaining}, is_async={self.is_async})"
        )

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
ChatCompletion or a short response, returned as is), an exception instance (raised), a callable
``step(request) -> step`` that computes the answer from the request, or a :func:`delay` wrapping
any of these. ``usage`` may be attached with :func:`with_usage`.

**Routing by task.** ``ScriptedLLM({"Find login": [...], re.compile(r"^Where is"): [...]})`` (or
:meth:`ScriptedLLM.by_task`) gives each conversation its own script, chosen by its task: the first
user message (a child's task, a main agent's question). A ``str`` key matches as a substring, a
compiled pattern with ``search``; a task matching no route or several is an ``AssertionError`` in
the call. A routed conversation's n-th call gets its route's n-th step, counted from the assistant
turns in the request itself, so children of one ``launch_many`` never take each other's steps,
whatever order they call in, and two children with the same task both replay the same script. A
plain list of steps is one queue shared by every caller, in call order.

**A main model.** :meth:`ScriptedLLM.as_openai_client` returns an object whose
``chat.completions.create(**kwargs)`` answers with ``openai.types.chat.ChatCompletion`` objects
(plain attribute objects when ``openai`` is not installed), so a main loop written against the
OpenAI SDK runs offline.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, overload

__all__ = [
    "Delay",
    "RouteKey",
    "ScriptedLLM",
    "ScriptedOpenAIClient",
    "Step",
    "Usage",
    "call",
    "delay",
    "final",
    "task_of",
    "with_usage",
]

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
    str
    | Sequence[Mapping[str, Any]]
    | Mapping[str, Any]
    | BaseException
    | Delay
    | Usage
    | Callable[[dict[str, Any]], Any]
)
"""One model answer (see the module docs)."""

RouteKey: TypeAlias = str | re.Pattern[str]
"""A route: a substring of the task, or a compiled pattern searched in it."""

_COMPACTED = "[Compacted child history]"


def _field(message: Any, name: str) -> Any:
    """A message member, from a dict or an SDK object (``resp.choices[0].message`` appended)."""
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def _text(content: Any) -> str:
    """Message content as text (a string, or a list of OpenAI content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(_field(part, "text") or "") for part in content)
    return ""


def task_of(request: Mapping[str, Any]) -> str:
    """The task a request is about: the text of its first user message ("" when there is none)."""
    for message in request.get("messages") or ():
        if _field(message, "role") == "user":
            return _text(_field(message, "content"))
    return ""


def _signature(message: Any) -> tuple[str, ...]:
    """What identifies an answer this script gave: its tool call ids, else its text."""
    calls = _field(message, "tool_calls") or ()
    ids = tuple(str(_field(c, "id")) for c in calls)
    return ("calls", *ids) if ids else ("text", _text(_field(message, "content")))


def _answer_signature(answer: Any) -> tuple[str, ...]:
    if isinstance(answer, Mapping) and "choices" in answer:
        choices = answer.get("choices") or [{}]
        return _signature(choices[0].get("message") or {})
    return _signature(answer)


@dataclass
class _Route:
    key: RouteKey
    steps: list[Step]
    served: dict[tuple[str, ...], set[int]] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)

    def label(self) -> str:
        return repr(self.key.pattern) if isinstance(self.key, re.Pattern) else repr(self.key)

    def matches(self, task: str) -> bool:
        if isinstance(self.key, re.Pattern):
            return self.key.search(task) is not None
        return self.key in task


class ScriptedLLM:
    """A model callable that answers from a script and records every request.

    ``ScriptedLLM(steps)`` is a sync callable; ``ScriptedLLM(steps, is_async=True)`` returns
    coroutines. ``steps`` is a list (one queue) or a mapping of routes to lists (one script per
    task, see the module docs). Running past a script raises ``AssertionError`` inside the call,
    which ends the child with a model error that names it.
    """

    # Overloads, so a dict literal of routes gets the route type as its context (with the union
    # alone, mypy infers `dict[object, object]` for mixed str and pattern keys).
    @overload
    def __init__(
        self, steps: Mapping[RouteKey, Iterable[Step]], *, is_async: bool = False
    ) -> None: ...
    @overload
    def __init__(self, steps: Iterable[Step], *, is_async: bool = False) -> None: ...
    def __init__(
        self,
        steps: Iterable[Step] | Mapping[RouteKey, Iterable[Step]],
        *,
        is_async: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self._routes: list[_Route] | None = None
        self._steps: list[Step] = []
        if isinstance(steps, Mapping):
            routes = []
            for key, script in steps.items():
                if not isinstance(key, (str, re.Pattern)):
                    raise TypeError(
                        f"ScriptedLLM route keys must be a str (a substring of the task) or a "
                        f"compiled re.Pattern, got {type(key).__name__}: {key!r}"
                    )
                if isinstance(script, (str, Mapping)):
                    raise TypeError(
                        f"ScriptedLLM route {key!r}: expected a list of steps, got "
                        f"{type(script).__name__}: {script!r}"
                    )
                routes.append(_Route(key, list(script)))
            self._routes = routes
        else:
            self._steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        """Every request received, deep-copied, in order."""
        self.is_async = is_async

    @classmethod
    def by_task(
        cls, routes: Mapping[RouteKey, Iterable[Step]], *, is_async: bool = False
    ) -> ScriptedLLM:
        """One script per task: ``ScriptedLLM.by_task({"Find login": [...], "Find db": [...]})``."""
        if not isinstance(routes, Mapping):
            raise TypeError(
                f"ScriptedLLM.by_task: expected a mapping of routes to steps, got {type(routes).__name__}"
            )
        return cls(routes, is_async=is_async)

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.requests)

    @property
    def remaining(self) -> int:
        """Steps not used yet (for routes: steps no conversation has reached)."""
        if self._routes is not None:
            return sum(len(r.steps) - len(r.used) for r in self._routes)
        return len(self._steps)

    def _route_for(self, task: str) -> _Route:
        assert self._routes is not None
        found = [r for r in self._routes if r.matches(task)]
        if len(found) != 1:
            labels = ", ".join(r.label() for r in (found or self._routes))
            what = "matches no route" if not found else "matches several routes"
            raise AssertionError(f"ScriptedLLM: the task {task[:200]!r} {what} ({labels})")
        return found[0]

    @staticmethod
    def _turn(route: _Route, request: Mapping[str, Any]) -> int:
        """Which step of its script this request asks for: the assistant turns it carries.

        When the context budget folded older turns into a summary, the latest turn (always kept
        whole) is looked up among the answers this route gave instead.
        """
        messages = list(request.get("messages") or ())
        assistants = [m for m in messages if _field(m, "role") == "assistant"]
        compacted = any(
            _field(m, "role") == "user" and _text(_field(m, "content")).startswith(_COMPACTED)
            for m in messages
        )
        if compacted and assistants:
            seen = route.served.get(_signature(assistants[-1]))
            if seen:
                return max(seen) + 1
        return len(assistants)

    def _next(self, request: dict[str, Any]) -> tuple[Step, _Route | None, int]:
        with self._lock:
            self.requests.append(copy.deepcopy(request))
            if self._routes is None:
                if not self._steps:
                    raise AssertionError(
                        f"ScriptedLLM ran out of steps after {len(self.requests) - 1} calls"
                    )
                return self._steps.pop(0), None, 0
            route = self._route_for(task_of(request))
            turn = self._turn(route, request)
            if turn >= len(route.steps):
                raise AssertionError(
                    f"ScriptedLLM route {route.label()} has {len(route.steps)} step(s) and "
                    f"this call asks for step {turn + 1}"
                )
            route.used.add(turn)
            return route.steps[turn], route, turn

    def _remember(self, route: _Route | None, turn: int, answer: Any) -> Any:
        if route is not None:
            with self._lock:
                route.served.setdefault(_answer_signature(answer), set()).add(turn)
        return answer

    @staticmethod
    def _compute(step: Any, request: dict[str, Any]) -> Any:
        """Unwrap a callable step: its return value is the step."""
        while callable(step) and not isinstance(step, (BaseException, type)):
            step = step(copy.deepcopy(request))
        return step

    @staticmethod
    def _render(step: Any) -> Any:
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

    def _answer(self, request: dict[str, Any]) -> Any:
        step, route, turn = self._next(request)
        step = self._compute(step, request)
        if isinstance(step, Delay):
            time.sleep(step.seconds)
            step = self._compute(step.step, request)
        return self._remember(route, turn, self._render(step))

    async def _answer_async(self, request: dict[str, Any]) -> Any:
        step, route, turn = self._next(request)
        step = self._compute(step, request)
        if isinstance(step, Delay):
            await asyncio.sleep(step.seconds)
            step = self._compute(step.step, request)
        return self._remember(route, turn, self._render(step))

    def __call__(self, request: dict[str, Any]) -> Any:
        if self.is_async:
            return self._answer_async(request)
        return self._answer(request)

    def as_openai_client(self) -> ScriptedOpenAIClient:
        """An OpenAI-style client over this script: ``client.chat.completions.create(**kwargs)``."""
        return ScriptedOpenAIClient(self, is_async=False)

    def as_async_openai_client(self) -> ScriptedOpenAIClient:
        """The same with ``await client.chat.completions.create(**kwargs)``."""
        return ScriptedOpenAIClient(self, is_async=True)

    def assert_complete(self) -> None:
        """Fail unless every scripted step was used."""
        if self._routes is not None:
            unused = {
                r.label(): [s for i, s in enumerate(r.steps) if i not in r.used]
                for r in self._routes
                if len(r.used) < len(r.steps)
            }
            if unused:
                raise AssertionError(f"ScriptedLLM has unused step(s) by route: {unused!r}")
            return
        if self._steps:
            raise AssertionError(
                f"ScriptedLLM has {len(self._steps)} unused step(s): {self._steps!r}"
            )

    def __repr__(self) -> str:
        routes = "" if self._routes is None else f", routes={len(self._routes)}"
        return (
            f"ScriptedLLM(calls={self.calls}, remaining={self.remaining}{routes}, "
            f"is_async={self.is_async})"
        )


# --- an OpenAI-style client ----------------------------------------------------------------------


class _Record:
    """Attribute access over a ChatCompletion dict, for when ``openai`` is not installed."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        for key, value in data.items():
            setattr(self, key, _record(value))

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """The dict this object was made from (so it can be returned to outrider as is)."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


def _record(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _Record(value)
    if isinstance(value, list):
        return [_record(v) for v in value]
    return value


_completion_ids = itertools.count(1)


def _completion_dict(answer: Mapping[str, Any], model: str | None) -> dict[str, Any]:
    """A rendered step as a whole ``chat.completion`` dict (one answered as such is kept)."""
    if "choices" in answer:
        return dict(answer)
    tool_calls = []
    for c in answer.get("tool_calls") or ():
        fn = c.get("function") or {"name": c.get("name"), "arguments": c.get("arguments")}
        args = fn.get("arguments")
        tool_calls.append(
            {
                "id": str(c.get("id") or f"call_{next(_ids)}"),
                "type": "function",
                "function": {
                    "name": fn.get("name"),
                    "arguments": args if isinstance(args, str) else json.dumps(args or {}),
                },
            }
        )
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.get("content") or (None if tool_calls else ""),
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    data: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{next(_completion_ids)}",
        "object": "chat.completion",
        "created": 0,
        "model": model or "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": answer.get("finish_reason")
                or ("tool_calls" if tool_calls else "stop"),
                "logprobs": None,
            }
        ],
    }
    if answer.get("usage"):
        data["usage"] = dict(answer["usage"])
    return data


def _completion(answer: Any, model: str | None) -> Any:
    data = _completion_dict(answer, model)
    try:
        from openai.types.chat import ChatCompletion
    except ImportError:
        return _record(data)
    return ChatCompletion.model_validate(data)


class _Completions:
    def __init__(self, llm: ScriptedLLM, is_async: bool) -> None:
        self._llm = llm
        self._is_async = is_async

    def create(self, **kwargs: Any) -> Any:
        """Answer one chat-completions call from the script."""
        if kwargs.get("stream"):
            raise NotImplementedError(
                "ScriptedLLM's OpenAI client does not stream: call create() without stream=True"
            )
        if self._is_async:
            return self._create_async(kwargs)
        return _completion(self._llm._answer(kwargs), kwargs.get("model"))

    async def _create_async(self, kwargs: dict[str, Any]) -> Any:
        return _completion(await self._llm._answer_async(kwargs), kwargs.get("model"))


class _Chat:
    def __init__(self, completions: _Completions) -> None:
        self.completions = completions


class ScriptedOpenAIClient:
    """Impersonates ``openai.OpenAI`` (or ``AsyncOpenAI``) for ``chat.completions.create``.

    Every call goes through the :class:`ScriptedLLM` (recorded in its ``requests``, routed by task
    like any call) and comes back as a ``ChatCompletion``.
    """

    def __init__(self, llm: ScriptedLLM, *, is_async: bool) -> None:
        self.llm = llm
        """The script behind this client."""
        self.chat = _Chat(_Completions(llm, is_async))

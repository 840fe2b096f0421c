"""What ``MainAgent.run`` returns: a typed result (attributes, a Jupyter view, the children's
launch results and the run's total tokens) that is still the dict it used to be."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from outrider import _core
from outrider._views import Viewed

_KEYS = (
    "session_id",
    "task",
    "final_text",
    "terminal_reason",
    "error",
    "steps",
    "model_calls",
    "tool_usage",
    "model_name",
    "token_usage",
    "input_tokens",
    "output_tokens",
    "children",
    "total_token_usage",
    "total_input_tokens",
    "total_output_tokens",
    "trace_path",
    "trace_error",
)


class MainRunResult(dict[str, Any], Viewed):
    """One main-agent run. It is the plain dict earlier versions returned (``run["final_text"]``,
    ``json.dumps(run)``, ``run == {...}``; the children in it as dicts), with the new keys, and
    typed attributes besides: ``run.children`` holds :class:`SubagentLaunchResult` objects and
    ``run.total_token_usage`` counts the main agent's tokens and its children's."""

    __slots__ = ("_children",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        unknown = sorted(set(data) - set(_KEYS))
        missing = sorted(set(_KEYS) - set(data))
        if unknown or missing:
            from outrider.exceptions import ConfigError

            parts = [f"unknown key(s) {unknown}"] if unknown else []
            parts += [f"missing key(s) {missing}"] if missing else []
            raise ConfigError(f"MainRunResult data: {'; '.join(parts)}")
        children = tuple(
            c
            if isinstance(c, _core.SubagentLaunchResult)
            else _core.SubagentLaunchResult.from_dict(c)
            for c in data["children"]
        )
        plain = {k: data[k] for k in _KEYS}
        plain["children"] = [c.to_dict() for c in children]
        plain["tool_usage"] = dict(data["tool_usage"])
        super().__init__(plain)
        self._children = children

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MainRunResult:
        """Rebuild from :meth:`to_dict` output; a missing or unknown key is a ConfigError."""
        return cls(data)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict copy (JSON-ready)."""
        return json.loads(json.dumps(dict(self)))  # type: ignore[no-any-return]

    def to_json(self) -> str:
        return json.dumps(self, ensure_ascii=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    @property
    def session_id(self) -> str:
        """``main-<32 hex>``."""
        return str(self["session_id"])

    @property
    def task(self) -> str:
        """The task the main agent was given."""
        return str(self["task"])

    @property
    def final_text(self) -> str | None:
        """The answer, when there is one."""
        value = self["final_text"]
        return None if value is None else str(value)

    @property
    def terminal_reason(self) -> str:
        return str(self["terminal_reason"])

    @property
    def error(self) -> str | None:
        value = self["error"]
        return None if value is None else str(value)

    @property
    def steps(self) -> int:
        return int(self["steps"])

    @property
    def model_calls(self) -> int:
        return int(self["model_calls"])

    @property
    def tool_usage(self) -> dict[str, int]:
        """Tool calls by name (Task included); a copy."""
        return dict(self["tool_usage"])

    @property
    def model_name(self) -> str:
        """The main model: the id sent in requests, or the callable's description."""
        return str(self["model_name"])

    @property
    def token_usage(self) -> int:
        """The main agent's own tokens."""
        return int(self["token_usage"])

    @property
    def input_tokens(self) -> int:
        return int(self["input_tokens"])

    @property
    def output_tokens(self) -> int:
        return int(self["output_tokens"])

    @property
    def children(self) -> tuple[_core.SubagentLaunchResult, ...]:
        """The children its Task calls launched, in the order they finished."""
        return self._children

    @property
    def total_token_usage(self) -> int:
        """The whole run's tokens: the main agent's and every child's."""
        return int(self["total_token_usage"])

    @property
    def total_input_tokens(self) -> int:
        return int(self["total_input_tokens"])

    @property
    def total_output_tokens(self) -> int:
        return int(self["total_output_tokens"])

    @property
    def trace_path(self) -> str | None:
        value = self["trace_path"]
        return None if value is None else str(value)

    @property
    def trace_error(self) -> str | None:
        value = self["trace_error"]
        return None if value is None else str(value)

    def __repr__(self) -> str:
        text = self.final_text
        if text is not None and len(text) > 80:
            text = text[:79] + "…"
        return (
            f"MainRunResult(session_id={self.session_id!r}, terminal_reason="
            f"{self.terminal_reason!r}, model_name={self.model_name!r}, children="
            f"{len(self.children)}, total_token_usage={self.total_token_usage}, final_text="
            f"{text!r})"
        )

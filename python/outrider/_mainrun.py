"""What ``MainAgent.run`` returns: a typed result (attributes, a Jupyter view, the children's
launch results and the run's total tokens) that still reads like the dict it used to be."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

from outrider import _core


@dataclasses.dataclass(frozen=True, eq=False)
class MainRunResult(Mapping[str, Any]):
    """One main-agent run. ``result["final_text"]``, ``dict(result)`` and ``result == {...}``
    work as on the plain dict earlier versions returned (that view holds plain data: the
    children as dicts); the attributes are typed, and ``children`` holds
    :class:`SubagentLaunchResult` objects."""

    session_id: str
    task: str
    final_text: str | None
    terminal_reason: str
    error: str | None
    steps: int
    model_calls: int
    tool_usage: dict[str, int]
    model_name: str
    token_usage: int
    """The main agent's own tokens (prompt plus answer, over its model calls)."""
    input_tokens: int
    output_tokens: int
    children: tuple[_core.SubagentLaunchResult, ...]
    """The children its Task calls launched, in the order they finished."""
    total_token_usage: int
    """The whole run's tokens: the main agent's and every child's."""
    total_input_tokens: int
    total_output_tokens: int
    trace_path: str | None
    trace_error: str | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MainRunResult:
        """Rebuild from :meth:`to_dict` output (or the native run's dict)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        missing = sorted(fields - set(data))
        if unknown or missing:
            raise outrider_config_error(unknown, missing)
        values = dict(data)
        values["children"] = tuple(
            c
            if isinstance(c, _core.SubagentLaunchResult)
            else _core.SubagentLaunchResult.from_dict(c)
            for c in data["children"]
        )
        values["tool_usage"] = dict(data["tool_usage"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (dicts, lists, str, numbers, None), as JSON holds it."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["children"] = [c.to_dict() for c in self.children]
        out["tool_usage"] = dict(self.tool_usage)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    # The Mapping view: the dict earlier versions returned, plus the new keys.
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(f.name for f in dataclasses.fields(self))

    def __len__(self) -> int:
        return len(dataclasses.fields(self))

    def __repr__(self) -> str:
        return (
            f"MainRunResult(session_id={self.session_id!r}, terminal_reason="
            f"{self.terminal_reason!r}, model_name={self.model_name!r}, children="
            f"{len(self.children)}, total_token_usage={self.total_token_usage}, final_text="
            f"{_short(self.final_text)!r})"
        )

    def _repr_html_(self) -> str:
        from outrider._display import main_run_html

        return main_run_html(self)

    def _repr_markdown_(self) -> str:
        from outrider._display import main_run_md

        return main_run_md(self)


def _short(text: str | None, limit: int = 80) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def outrider_config_error(unknown: list[str], missing: list[str]) -> Exception:
    from outrider.exceptions import ConfigError

    parts = []
    if unknown:
        parts.append(f"unknown key(s) {unknown}")
    if missing:
        parts.append(f"missing key(s) {missing}")
    return ConfigError(f"MainRunResult.from_dict data: {'; '.join(parts)}")

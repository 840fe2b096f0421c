"""What a model callable may return, turned into the chat-completions shape the core parses."""

from __future__ import annotations

from typing import Any


def to_chat_response(obj: object) -> dict[str, Any] | str:
    """A str or dict as it is; an object with ``model_dump()`` (a pydantic model) as its dump."""
    if isinstance(obj, (str, dict)):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        out = dump()
        if isinstance(out, dict):
            return out
    raise TypeError(f"unusable model return of type {type(obj).__qualname__}")

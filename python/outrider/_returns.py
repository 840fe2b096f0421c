"""What a model callable returned, as the chat-completions shape the core parses.

The core accepts a ``ChatCompletion``-shaped dict, a short dict ``{content, tool_calls, usage?,
finish_reason?}`` or a str. SDK objects carry more: an OpenAI ``ChatCompletionMessage`` has
``refusal``/``audio``/``annotations``/``function_call``, a litellm ``Message`` has
``provider_specific_fields``, and an Anthropic ``Message`` is another shape altogether (content
blocks, ``stop_reason``, ``input_tokens``). :func:`to_chat_response` turns each of them into the
core's shape, recognising them by shape rather than by class, so none of the SDKs is imported.

Objects (anything with ``model_dump()``) come from an SDK, whose versions add fields: only the
fields the core reads are kept. Plain dicts are the user's own: they pass through, except that
the OpenAI/litellm message fields above are folded in and removed, so a typo in a hand-written
short dict still reaches the core and is reported there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["to_chat_response"]

ACCEPTED = (
    "a ChatCompletion-shaped dict (with 'choices'), a dict with 'content'/'tool_calls', a str, "
    "or an SDK response object: an OpenAI ChatCompletion or ChatCompletionMessage, an Anthropic "
    "Message, a litellm ModelResponse or Message (any object whose model_dump() gives one)"
)

# Fields of an OpenAI / litellm assistant message the core does not read.
_MESSAGE_EXTRAS = frozenset(
    {
        "refusal",
        "audio",
        "annotations",
        "function_call",
        "provider_specific_fields",
        "thinking_blocks",
        "reasoning",
        "images",
    }
)

# A dict the core parses has one of these keys.
_SHAPES = frozenset({"choices", "content", "tool_calls"})

# Anthropic stop reasons in chat-completions terms; others pass through as they are.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def to_chat_response(obj: object) -> dict[str, Any] | str:
    """``obj`` (what a model callable returned) as a chat-completions response the core parses.

    Strings pass through; dicts pass through unless they are an SDK message dumped to a dict;
    objects with ``model_dump()`` are dumped and converted. Raises ``TypeError`` naming the type
    for anything else.
    """
    if isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        return _from_dict(obj, from_sdk=False)
    if isinstance(obj, Mapping):
        return _from_dict(dict(obj), from_sdk=False)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        dumped = dump()
        if not isinstance(dumped, Mapping):
            raise TypeError(
                f"a model callable returned {_type_name(obj)} whose model_dump() gave "
                f"{_type_name(dumped)}, not a dict; expected {ACCEPTED}"
            )
        out = _from_dict(dict(dumped), from_sdk=True)
        if not _SHAPES & out.keys():
            # E.g. an OpenAI Responses API object: say which class, not just its fields.
            raise TypeError(
                f"a model callable returned {_type_name(obj)}, whose model_dump() has none of "
                f"{sorted(_SHAPES)}; expected {ACCEPTED}"
            )
        return out
    raise TypeError(
        f"a model callable returned {_type_name(obj)} {_short_repr(obj)}; expected {ACCEPTED}"
    )


def _from_dict(d: dict[str, Any], *, from_sdk: bool) -> dict[str, Any]:
    if _is_anthropic_message(d):
        return _from_anthropic(d)
    if "choices" in d:
        return _from_completion(d) if from_sdk else d
    if d.get("role") == "assistant" or (from_sdk and _MESSAGE_EXTRAS & d.keys()):
        return _from_message(d, from_sdk=from_sdk)
    return d


def _is_anthropic_message(d: Mapping[str, Any]) -> bool:
    return (
        d.get("type") == "message"
        and d.get("role") == "assistant"
        and isinstance(d.get("content"), list)
        and "choices" not in d
    )


def _from_completion(d: dict[str, Any]) -> dict[str, Any]:
    """A dumped ChatCompletion / litellm ModelResponse: choices[0] and usage, nothing else."""
    choices = d.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return d  # the core names what is wrong with the choices
    choice = choices[0]
    message = choice.get("message")
    out_choice: dict[str, Any] = {"index": 0, "finish_reason": choice.get("finish_reason")}
    out_choice["message"] = (
        _from_message(dict(message), from_sdk=True) if isinstance(message, Mapping) else message
    )
    out: dict[str, Any] = {"choices": [out_choice]}
    usage = _usage(d.get("usage"))
    if usage is not None:
        out["usage"] = usage
    return out


def _from_message(d: dict[str, Any], *, from_sdk: bool) -> dict[str, Any]:
    """An assistant message (OpenAI ``ChatCompletionMessage``, litellm ``Message``) as a short dict."""
    out = dict(d)
    if not out.get("tool_calls") and isinstance(out.get("function_call"), Mapping):
        # The legacy single function call.
        out["tool_calls"] = [{"type": "function", "function": dict(out["function_call"])}]
    refusal = out.get("refusal")
    if isinstance(refusal, str) and refusal and not out.get("content"):
        # A refusal is the model's answer: keep it as the text, so the gate and the trace show it.
        out["content"] = refusal
    for key in _MESSAGE_EXTRAS:
        out.pop(key, None)
    if from_sdk:
        keep = ("role", "content", "tool_calls", "reasoning_content", "finish_reason", "usage")
        out = {k: out[k] for k in keep if k in out and out[k] is not None}
        if isinstance(out.get("tool_calls"), list):
            out["tool_calls"] = [_tool_call(c) for c in out["tool_calls"]]
    out.setdefault("content", None)
    return out


def _tool_call(c: Any) -> Any:
    """An SDK tool call with only ``id``, ``type`` and ``function{name, arguments}``."""
    if not isinstance(c, Mapping):
        return c
    func = c.get("function")
    if not isinstance(func, Mapping):
        return {k: v for k, v in c.items() if v is not None}
    return {
        "id": c.get("id"),
        "type": "function",
        "function": {"name": func.get("name"), "arguments": func.get("arguments")},
    }


def _usage(u: Any) -> dict[str, Any] | None:
    if not isinstance(u, Mapping):
        return None
    prompt = u.get("prompt_tokens")
    completion = u.get("completion_tokens")
    if prompt is None and completion is None and ("input_tokens" in u or "output_tokens" in u):
        return _anthropic_usage(u)
    out = {"prompt_tokens": prompt, "completion_tokens": completion}
    if u.get("total_tokens") is not None:
        out["total_tokens"] = u["total_tokens"]
    details = u.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if cached:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    return out


def _anthropic_usage(u: Mapping[str, Any]) -> dict[str, Any]:
    # Anthropic's input_tokens leave out cached tokens; OpenAI's prompt_tokens count them, and a
    # budget counts the whole prompt, so the cache reads and writes are added back.
    prompt = sum(
        int(u.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    completion = int(u.get("output_tokens") or 0)
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    cached = int(u.get("cache_read_input_tokens") or 0)
    if cached:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    return out


def _from_anthropic(d: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic ``Message``: text blocks → content, tool_use blocks → tool_calls."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(d["content"]):
        if not isinstance(block, Mapping):
            raise TypeError(
                f"Anthropic message content[{i}] must be a content block (a dict with 'type'), "
                f"got {_type_name(block)} {_short_repr(block)}"
            )
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {
                        "name": block.get("name"),
                        "arguments": json.dumps(block.get("input") or {}),
                    },
                }
            )
        # Thinking and server-side tool blocks carry nothing the runner acts on.
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    stop = d.get("stop_reason")
    finish = _FINISH_REASONS.get(stop, stop) if isinstance(stop, str) else None
    out: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    usage = d.get("usage")
    if isinstance(usage, Mapping):
        out["usage"] = _anthropic_usage(usage)
    return out


def _type_name(obj: object) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _short_repr(obj: object) -> str:
    text = repr(obj)
    return text if len(text) <= 200 else text[:200] + "…"

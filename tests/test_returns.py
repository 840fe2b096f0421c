"""outrider._returns.to_chat_response: SDK return values as the chat-completions shape the core parses."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest

import outrider
from outrider._returns import to_chat_response
from outrider.testing import final

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches it on import

FINAL = final(status="completed", summary="main is in app.py", evidence=["app.py:1"])
READ_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "Read", "arguments": '{"path": "app.py"}'},
}


def openai_message(**fields: Any) -> Any:
    chat = pytest.importorskip("openai.types.chat")
    return chat.ChatCompletionMessage.model_validate({"role": "assistant", **fields})


def openai_completion(message: dict[str, Any], finish: str = "stop") -> Any:
    chat = pytest.importorskip("openai.types.chat")
    return chat.ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-x",
            "system_fingerprint": "fp",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", **message},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": 11,
                "completion_tokens": 4,
                "total_tokens": 15,
                "prompt_tokens_details": {"cached_tokens": 2},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        }
    )


def anthropic_message(content: list[dict[str, Any]], stop: str, **usage: int) -> Any:
    types = pytest.importorskip("anthropic.types")
    return types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 7, **usage},
        }
    )


# --- pass-through --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "a final answer",
        {"content": "x", "tool_calls": [{"name": "Read", "arguments": {"path": "a"}}]},
        {"choices": [{"message": {"role": "assistant", "content": "x"}}], "extra": 1},
        # A typo in a hand-written short dict reaches the core, which names it.
        {"content": "x", "extra": 1},
    ],
)
def test_strings_and_plain_dicts_pass_through(value: Any) -> None:
    assert to_chat_response(value) == value


# --- OpenAI --------------------------------------------------------------------------------------


def test_openai_message_drops_the_fields_the_core_rejects() -> None:
    assert to_chat_response(openai_message(content="done")) == {
        "role": "assistant",
        "content": "done",
    }
    assert to_chat_response(openai_message(content=None, tool_calls=[READ_CALL])) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [READ_CALL],
    }


def test_openai_message_dumped_to_a_dict_is_cleaned_too() -> None:
    dumped = openai_message(content="done").model_dump()
    assert set(dumped) > {"refusal", "annotations", "audio", "function_call"}
    # A plain dict keeps what the core accepts (tool_calls: None) and loses what it rejects.
    assert to_chat_response(dumped) == {"role": "assistant", "content": "done", "tool_calls": None}


def test_a_refusal_becomes_the_text_and_a_legacy_function_call_a_tool_call() -> None:
    assert to_chat_response(openai_message(content=None, refusal="I can't help")) == {
        "role": "assistant",
        "content": "I can't help",
    }
    legacy = openai_message(content=None, function_call={"name": "Glob", "arguments": "{}"})
    assert to_chat_response(legacy) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": None, "type": "function", "function": {"name": "Glob", "arguments": "{}"}}
        ],
    }


def test_openai_completion_keeps_choice_and_usage_only() -> None:
    resp = openai_completion({"content": None, "tool_calls": [READ_CALL]}, "tool_calls")
    assert to_chat_response(resp) == {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [READ_CALL]},
            }
        ],
        # The cached part of the prompt is kept, reported apart (#18.8).
        "usage": {
            "prompt_tokens": 11,
            "completion_tokens": 4,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 2},
        },
    }


# --- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_message_becomes_a_chat_completion() -> None:
    msg = anthropic_message(
        [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Looking "},
            {"type": "text", "text": "now."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "app.py"}},
            {"type": "tool_use", "id": "toolu_2", "name": "Glob", "input": {}},
        ],
        "tool_use",
        cache_read_input_tokens=100,
        cache_creation_input_tokens=5,
    )
    expected = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Looking now.",
                    "tool_calls": [
                        {
                            "id": "toolu_1",
                            "type": "function",
                            "function": {"name": "Read", "arguments": '{"path": "app.py"}'},
                        },
                        {
                            "id": "toolu_2",
                            "type": "function",
                            "function": {"name": "Glob", "arguments": "{}"},
                        },
                    ],
                },
            }
        ],
        # input_tokens leave cached tokens out; a budget counts the whole prompt, and the cache
        # reads are reported apart (#18.8).
        "usage": {
            "prompt_tokens": 125,
            "completion_tokens": 7,
            "total_tokens": 132,
            "prompt_tokens_details": {"cached_tokens": 100},
        },
    }
    assert to_chat_response(msg) == expected
    assert to_chat_response(msg.model_dump()) == expected
    assert to_chat_response(msg.to_dict()) == expected


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ],
)
def test_anthropic_stop_reasons(stop: str, finish: str) -> None:
    out = to_chat_response(anthropic_message([{"type": "text", "text": "x"}], stop))
    assert isinstance(out, dict)
    assert out["choices"][0]["finish_reason"] == finish
    assert out["choices"][0]["message"] == {"role": "assistant", "content": "x"}


# --- litellm -------------------------------------------------------------------------------------


def test_litellm_model_response_and_message() -> None:
    litellm = pytest.importorskip("litellm")
    resp = litellm.ModelResponse(
        model="x",
        choices=[
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [READ_CALL]},
            }
        ],
        usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    )
    message = {"role": "assistant", "content": None, "tool_calls": [READ_CALL]}
    assert to_chat_response(resp) == {
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    assert to_chat_response(resp.choices[0].message) == message


# --- errors --------------------------------------------------------------------------------------


class Opaque:
    pass


class BadDump:
    def model_dump(self) -> list[int]:
        return [1]


class OtherModel:
    def model_dump(self) -> dict[str, Any]:
        return {"id": "resp_1", "output": []}


class OwnModel:
    """A user's own model with the short form's fields still works."""

    def model_dump(self) -> dict[str, Any]:
        return {"content": "done", "usage": None}


def test_own_models_with_the_short_fields_pass() -> None:
    assert to_chat_response(OwnModel()) == {"content": "done", "usage": None}


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (None, "returned NoneType None; expected a ChatCompletion-shaped dict"),
        (42, "returned int 42; expected"),
        (Opaque(), "returned test_returns.Opaque <test_returns.Opaque object"),
        (BadDump(), "returned test_returns.BadDump whose model_dump() gave list, not a dict"),
        (
            OtherModel(),
            "returned test_returns.OtherModel, whose model_dump() has none of "
            "['choices', 'content', 'tool_calls']",
        ),
    ],
)
def test_unknown_objects_are_a_type_error_naming_them(value: Any, named: str) -> None:
    with pytest.raises(TypeError, match="Anthropic Message") as info:
        to_chat_response(value)
    assert named in str(info.value)


def test_a_non_block_in_anthropic_content_is_named() -> None:
    bad = {"type": "message", "role": "assistant", "content": ["text"], "stop_reason": "end_turn"}
    with pytest.raises(TypeError, match=r"content\[0\] must be a content block .*got str 'text'"):
        to_chat_response(bad)


# --- through the core ----------------------------------------------------------------------------


def sdk_returns() -> list[Any]:
    """Per SDK, the objects a callable returns for one Read turn and the final answer."""
    out: list[Any] = []
    try:
        out.append(
            pytest.param(
                [
                    openai_message(content=None, tool_calls=[READ_CALL]),
                    openai_message(content=FINAL),
                ],
                id="openai-message",
            )
        )
        out.append(
            pytest.param(
                [
                    openai_completion({"content": None, "tool_calls": [READ_CALL]}, "tool_calls"),
                    openai_completion({"content": FINAL}),
                ],
                id="openai-completion",
            )
        )
        use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "app.py"}}
        out.append(
            pytest.param(
                [
                    anthropic_message([use], "tool_use"),
                    anthropic_message([{"type": "text", "text": FINAL}], "end_turn"),
                ],
                id="anthropic",
            )
        )
    except pytest.skip.Exception:
        pass
    return out


def run_child(repo: pathlib.Path, returns: list[Any], *, normalise: bool) -> Any:
    steps = list(returns)

    def model(request: dict[str, Any]) -> Any:
        out = steps.pop(0)
        return to_chat_response(out) if normalise else out

    launcher = outrider.SubagentLauncher(repo, model, trace_dir=repo.parent / "traces")
    return launcher.launch(outrider.SubagentRequest(task="Where is main?"))


@pytest.mark.parametrize("returns", sdk_returns())
def test_normalised_sdk_returns_run_a_child(repo: pathlib.Path, returns: list[Any]) -> None:
    result = run_child(repo, returns, normalise=True)
    assert (result.status, result.tool_usage, result.result.evidence) == (
        "completed",
        {"Read": 1},
        ("app.py:1-2",),  # line 1, in the index's place (1-2): cited as that place
    ), result.error


@pytest.mark.parametrize("returns", sdk_returns())
def test_sdk_returns_as_they_are(repo: pathlib.Path, returns: list[Any]) -> None:
    """Once the binding passes every return through to_chat_response (issue 10), as they are."""
    result = run_child(repo, returns, normalise=False)
    if result.status == "failed" and "unknown key" in str(result.error):
        pytest.skip(f"the binding does not normalise returns yet: {result.error}")
    assert (result.status, result.tool_usage, result.result.evidence) == (
        "completed",
        {"Read": 1},
        ("app.py:1-2",),  # line 1, in the index's place (1-2): cited as that place
    ), result.error


def test_the_normalised_shapes_are_json() -> None:
    for param in sdk_returns():
        for value in param.values[0]:
            json.dumps(to_chat_response(value))


def test_the_callers_dict_is_not_changed() -> None:
    dumped = openai_message(content=None, refusal="no").model_dump()
    before = json.dumps(dumped, sort_keys=True)
    assert to_chat_response(dumped) == {"role": "assistant", "content": "no", "tool_calls": None}
    assert json.dumps(dumped, sort_keys=True) == before

"""Model callables for provider SDKs: the OpenAI SDK, Anthropic's Claude SDK and litellm.

Each function returns a callable that takes outrider's chat-completions request dict and returns
a response the core accepts::

    import anthropic, openai, outrider
    from outrider import adapters

    main = adapters.openai(openai.OpenAI(), "gpt-4.1", temperature=0)
    light = adapters.anthropic(anthropic.AsyncAnthropic(), "claude-haiku-4-5", max_tokens=2048)
    launcher = outrider.SubagentLauncher("path/to/repo", main, light_llm=light)

A launcher also takes the client itself, or its bound ``create``, with ``main_model=`` /
``light_model=`` naming the model, and a model string (:func:`from_string`)::

    launcher = outrider.SubagentLauncher("path/to/repo", openai.OpenAI(), main_model="gpt-4.1")
    launcher = outrider.SubagentLauncher("path/to/repo", "anthropic:claude-haiku-4-5")

An async client gives an async callable. None of the SDKs is imported before an adapter is made,
and none is needed by outrider itself: each is an optional extra (``pip install
'.[openai]'`` from a checkout, ``[anthropic]``, ``[litellm]``).

Settings given to an adapter are defaults: a setting the request itself carries (the launcher's
or profile's model, temperature, ...) wins. Settings the SDK's ``create()`` does not take as a
parameter go into ``extra_body``, so a provider-specific field reaches the provider either way.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from outrider._core import _register_secret
from outrider._returns import to_chat_response
from outrider.exceptions import ArgumentTypeError, ConfigError, MissingExtraError, install_hint

__all__ = ["PROVIDERS", "anthropic", "from_string", "litellm", "openai", "to_anthropic_request"]

Request: TypeAlias = dict[str, Any]
Response: TypeAlias = dict[str, Any] | str
SyncModel: TypeAlias = Callable[[Request], Response]
AsyncModel: TypeAlias = Callable[[Request], Awaitable[Response]]

_ANTHROPIC_DEFAULT_MAX_TOKENS = 4096


def _require(module: str, adapter: str) -> Any:
    try:
        return __import__(module)
    except ImportError as e:
        # The wording predates MissingExtraError.needs and is kept as documented.
        raise MissingExtraError(
            f"outrider.adapters.{adapter}() needs the {module} package, which is not installed: "
            f"{install_hint(module)}",
            module,
        ) from e


def _check(model: object, settings: Mapping[str, Any], adapter: str) -> None:
    if not isinstance(model, str) or not model.strip():
        raise ValueError(
            f"outrider.adapters.{adapter}(): model must be a non-empty str (the provider's model "
            f"id), got {model!r}"
        )
    if settings.get("stream"):
        raise ValueError(
            f"outrider.adapters.{adapter}(): stream=True is not supported (the runner needs the "
            "whole answer); leave stream out"
        )


@functools.cache
def _parameters(create: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword parameters of an SDK ``create()``; None when it takes ``**kwargs``."""
    try:
        params = inspect.signature(create).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params)


def _split(kwargs: dict[str, Any], create: Callable[..., Any]) -> dict[str, Any]:
    """Move keys ``create()`` has no parameter for into ``extra_body``."""
    accepted = _parameters(getattr(create, "__func__", create))
    if accepted is None:
        return kwargs
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in accepted}
    if extra:
        kwargs["extra_body"] = {**extra, **(kwargs.get("extra_body") or {})}
    return kwargs


def _register_keys(*values: object) -> None:
    """Register the credentials an adapter's calls use, so an SDK error that echoes one (a 401
    with the key in its message) is redacted in results, envelopes, traces and logs."""
    for value in values:
        _register_secret(value)


def _client_keys(client: Any) -> list[object]:
    """The credentials an SDK client holds (``api_key``, Anthropic's ``auth_token``)."""
    return [getattr(client, name, None) for name in ("api_key", "auth_token")]


def _merge(settings: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """The adapter's settings overridden by the request's non-None values."""
    out = dict(settings)
    for key, value in request.items():
        if value is None:
            continue
        if key == "extra_body" and isinstance(value, Mapping):
            out[key] = {**(out.get(key) or {}), **value}
        else:
            out[key] = value
    return out


# --- OpenAI ---------------------------------------------------------------------------------


def _openai_create(sdk: Any, client: Any) -> tuple[Callable[[], Any], bool, Any] | None:
    """``(create, is_async, client)`` for an OpenAI client or its bound
    ``chat.completions.create``; None for anything else. ``create()`` gives the method to call,
    looked up on every call for a client, so instrumentation patched in later is used."""
    if isinstance(client, sdk.AsyncOpenAI):
        return (lambda: client.chat.completions.create), True, client
    if isinstance(client, sdk.OpenAI):
        return (lambda: client.chat.completions.create), False, client
    owner = getattr(client, "__self__", None)
    if getattr(client, "__name__", None) == "create":
        chat = sdk.resources.chat
        if isinstance(owner, chat.AsyncCompletions):
            return (lambda: client), True, getattr(owner, "_client", None)
        if isinstance(owner, chat.Completions):
            return (lambda: client), False, getattr(owner, "_client", None)
    return None


def openai(client: Any, model: str, **settings: Any) -> SyncModel | AsyncModel:
    """A model callable over ``client.chat.completions.create`` (``openai.OpenAI`` or
    ``openai.AsyncOpenAI``, Azure clients included, or such a client's bound
    ``chat.completions.create`` itself; an async client gives an async callable).

    ``settings`` (``temperature``, ``max_tokens``, ``extra_body``, ``timeout``, ...) are passed
    to every call, after the request's ``messages``, ``tools`` and ``tool_choice``.
    """
    sdk = _require("openai", "openai")
    _check(model, settings, "openai")
    defaults = {"model": model, **settings}
    found = _openai_create(sdk, client)
    if found is None:
        raise TypeError(
            "outrider.adapters.openai() needs an openai.OpenAI or openai.AsyncOpenAI client (or "
            f"its chat.completions.create), got {_type_name(client)}"
        )
    create_of, is_async, owner = found
    _register_keys(*_client_keys(owner))
    if is_async:

        async def call_async(request: Request) -> Response:
            acreate = create_of()
            kwargs = _split(_merge(defaults, request), acreate)
            return to_chat_response(await acreate(**kwargs))

        call_async.__qualname__ = f"adapters.openai({model!r})"
        return call_async

    def call(request: Request) -> Response:
        create = create_of()
        return to_chat_response(create(**_split(_merge(defaults, request), create)))

    call.__qualname__ = f"adapters.openai({model!r})"
    return call


def _type_name(value: Any) -> str:
    owner = getattr(value, "__self__", None)
    if owner is not None and hasattr(value, "__qualname__"):  # a bound method
        return f"{type(owner).__module__}.{value.__qualname__}"
    return f"{type(value).__module__}.{type(value).__qualname__}"


# --- litellm --------------------------------------------------------------------------------


def litellm(model: str, *, is_async: bool = False, **kwargs: Any) -> SyncModel | AsyncModel:
    """A model callable over ``litellm.completion`` (``litellm.acompletion`` with
    ``is_async=True``); ``kwargs`` (``api_base``, ``api_key``, ``temperature``, ...) go to every
    call.
    """
    _require("litellm", "litellm")
    _check(model, kwargs, "litellm")
    defaults = {"model": model, **kwargs}
    # litellm takes the key from api_key, or from the provider's variable in the environment.
    _register_keys(
        kwargs.get("api_key"), *(v for k, v in os.environ.items() if k.upper().endswith("API_KEY"))
    )
    if is_async:

        async def call_async(request: Request) -> Response:
            import litellm as sdk

            return to_chat_response(await sdk.acompletion(**_merge(defaults, request)))

        call_async.__qualname__ = f"adapters.litellm({model!r})"
        return call_async

    def call(request: Request) -> Response:
        import litellm as sdk

        return to_chat_response(sdk.completion(**_merge(defaults, request)))

    call.__qualname__ = f"adapters.litellm({model!r})"
    return call


# --- Anthropic ------------------------------------------------------------------------------


def anthropic(
    client: Any,
    model: str,
    *,
    max_tokens: int = _ANTHROPIC_DEFAULT_MAX_TOKENS,
    cache: bool = True,
    **settings: Any,
) -> SyncModel | AsyncModel:
    """A model callable over ``client.messages.create`` (``anthropic.Anthropic`` or
    ``anthropic.AsyncAnthropic``, Bedrock/Vertex clients included; an async client gives an
    async callable).

    The chat-completions request is translated into the Messages API (system prompt into
    ``system``, assistant tool calls into ``tool_use`` blocks, tool results into ``tool_result``
    blocks of one user turn, tools into Anthropic schemas) and the ``Message`` back.
    ``max_tokens`` is required by the API; ``settings`` (``temperature``, ``thinking``,
    ``extra_body``, ...) are passed to every call. With ``cache`` (default), each request marks
    two prompt-cache breakpoints (``cache_control: {"type": "ephemeral"}``): the system prompt
    (with the tools before it) and the last message, so every call re-reads the previous
    call's prefix from the cache; ``cache_read_input_tokens`` then shows up as the result's
    ``cached_input_tokens``.
    """
    if not isinstance(cache, bool):
        raise TypeError(
            f"outrider.adapters.anthropic(): cache must be True or False, got {cache!r}"
        )
    sdk = _require("anthropic", "anthropic")
    _check(model, settings, "anthropic")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValueError(
            f"outrider.adapters.anthropic(): max_tokens must be a positive int, got {max_tokens!r}"
        )
    defaults = {"model": model, "max_tokens": max_tokens, **settings}
    found = _anthropic_create(sdk, client)
    if found is None:
        raise TypeError(
            "outrider.adapters.anthropic() needs an anthropic.Anthropic or "
            f"anthropic.AsyncAnthropic client (or its messages.create), got {_type_name(client)}"
        )
    create_of, is_async, owner = found
    _register_keys(*_client_keys(owner))
    if is_async:

        async def call_async(request: Request) -> Response:
            acreate = create_of()
            kwargs = _split(to_anthropic_request(_merge(defaults, request), cache=cache), acreate)
            return to_chat_response(await acreate(**kwargs))

        call_async.__qualname__ = f"adapters.anthropic({model!r})"
        return call_async

    def call(request: Request) -> Response:
        create = create_of()
        kwargs = _split(to_anthropic_request(_merge(defaults, request), cache=cache), create)
        return to_chat_response(create(**kwargs))

    call.__qualname__ = f"adapters.anthropic({model!r})"
    return call


def _anthropic_create(sdk: Any, client: Any) -> tuple[Callable[[], Any], bool, Any] | None:
    """``(create, is_async, client)`` for an Anthropic client (Bedrock and Vertex ones too) or
    its bound ``messages.create``; None for anything else."""
    sync_types = tuple(
        getattr(sdk, n)
        for n in ("Anthropic", "AnthropicBedrock", "AnthropicVertex")
        if hasattr(sdk, n)
    )
    async_types = tuple(
        getattr(sdk, n)
        for n in ("AsyncAnthropic", "AsyncAnthropicBedrock", "AsyncAnthropicVertex")
        if hasattr(sdk, n)
    )
    if isinstance(client, async_types):
        return (lambda: client.messages.create), True, client
    if isinstance(client, sync_types):
        return (lambda: client.messages.create), False, client
    owner = getattr(client, "__self__", None)
    if getattr(client, "__name__", None) == "create":
        if isinstance(owner, sdk.resources.AsyncMessages):
            return (lambda: client), True, getattr(owner, "_client", None)
        if isinstance(owner, sdk.resources.Messages):
            return (lambda: client), False, getattr(owner, "_client", None)
    return None


# --- clients and model strings given to a launcher ----------------------------------------------

PROVIDERS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "litellm": (),
}
"""The providers a ``"provider:model"`` string may name, each with the variables its key is
read from (litellm reads the key variable of the provider its own model string names)."""


def from_string(spec: str, **settings: Any) -> SyncModel | AsyncModel:
    """A model callable for a model string as pydantic-ai and litellm users write it:
    ``"openai:gpt-4.1"`` (an ``openai.OpenAI()`` client: ``OPENAI_API_KEY``, and
    ``OPENAI_BASE_URL`` when set), ``"anthropic:claude-haiku-4-5"`` (``anthropic.Anthropic()``:
    ``ANTHROPIC_API_KEY``, and ``ANTHROPIC_BASE_URL`` when set) or ``"litellm:ollama/qwen3"``
    (:func:`litellm`). The key is read from the environment when the callable is made; an unset
    one is a :class:`~outrider.ConfigError` naming the variable. ``settings`` go to every call,
    as for :func:`openai`. A launcher takes the string itself (``SubagentLauncher(root,
    "openai:gpt-4.1")``).
    """
    provider, model = _split_spec(spec, "from_string()")
    return _from_provider(provider, model, f"{spec!r}", settings)


def _split_spec(spec: str, what: str) -> tuple[str, str]:
    provider, sep, model = spec.partition(":")
    known = ", ".join(repr(p) for p in PROVIDERS)
    if not sep or not provider.strip() or not model.strip():
        raise ConfigError(
            f"{what}: {spec!r} is not a 'provider:model' string such as 'openai:gpt-4.1' "
            f"(providers: {known}; outrider.OfflineScout() runs without a model)"
        )
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ConfigError(
            f"{what}: {spec!r} names the provider {provider!r}, which outrider does not know; "
            f"the known providers are {known} (any other model: a callable, or "
            "outrider.OpenAICompatible for an OpenAI-compatible server)"
        )
    return provider, model.strip()


def _from_provider(
    provider: str, model: str, what: str, settings: Mapping[str, Any]
) -> SyncModel | AsyncModel:
    keys = PROVIDERS[provider]
    if keys and not any((os.environ.get(k) or "").strip() for k in keys):
        base = f"{provider.upper()}_BASE_URL"
        raise ConfigError(
            f"{what}: {keys[0]} is not set; set it to your {provider} key ({base} as well for "
            f"another {provider}-compatible server; one that takes no key: any value, e.g. "
            f"{keys[0]}=none)"
        )
    if provider == "openai":
        return openai(_require("openai", "openai").OpenAI(), model, **settings)
    if provider == "anthropic":
        return anthropic(_require("anthropic", "anthropic").Anthropic(), model, **settings)
    return litellm(model, **settings)


def _sdk_of(obj: Any) -> str | None:
    """``"openai"`` or ``"anthropic"`` when ``obj`` (or the object a bound method belongs to) is
    of that SDK's package, without importing either."""
    for candidate in (obj, getattr(obj, "__self__", None)):
        package = (type(candidate).__module__ or "").partition(".")[0]
        if package in ("openai", "anthropic"):
            return package
    # A client class of another package derived from an SDK's (an instrumentation wrapper).
    for package, names in (
        ("openai", ("OpenAI", "AsyncOpenAI")),
        ("anthropic", ("Anthropic", "AsyncAnthropic")),
    ):
        module = sys.modules.get(package)
        types = tuple(getattr(module, n) for n in names if hasattr(module, n))
        if module is not None and isinstance(obj, types):
            return package
    return None


def _as_model(obj: Any, what: str, model: str | None, param: str) -> tuple[Any, str | None]:
    """What a launcher makes of its model argument ``what`` (``main_llm``, ``light_llm``,
    ``llm``): ``(callable, model name)``. An OpenAI or Anthropic client, or its bound
    ``create``, becomes the adapter over it, named by ``model`` (the route's model name, the
    launcher's ``param`` argument); a ``"provider:model"`` string the adapter for it, whose
    model name then names the route (when ``param`` does not). Anything else comes back as it
    was given (the caller checks that it is callable)."""
    if isinstance(obj, str):
        provider, named = _split_spec(obj, what)
        if model is not None and model != named:
            raise ConfigError(
                f"{what}: {obj!r} names the model {named!r} and {param} names {model!r}; name "
                f"it once (drop {param}, or give {what} a client)"
            )
        return _from_provider(provider, named, f"{what} {obj!r}", {}), named
    sdk = _sdk_of(obj)
    if sdk is None:
        return obj, None
    module = _require(sdk, sdk)
    found = (_openai_create if sdk == "openai" else _anthropic_create)(module, obj)
    method = "chat.completions.create" if sdk == "openai" else "messages.create"
    if found is None:
        raise ArgumentTypeError(
            f"{what}: must be a model callable, a client of the {sdk} SDK or its {method}, got "
            f"{_type_name(obj)}"
        )
    is_method = getattr(obj, "__self__", None) is not None and not isinstance(obj, type)
    shown = f"{sdk}'s {method}" if is_method else f"the {sdk} client {_type_name(obj)}"
    if model is None:
        example = "gpt-4.1" if sdk == "openai" else "claude-haiku-4-5"
        raise ConfigError(
            f"{what}: {shown} needs the name of the model to call: pass {param}='...' (for "
            f"example {param}={example!r}), or give {what} as the string '{sdk}:MODEL'"
        )
    adapter = openai if sdk == "openai" else anthropic
    return adapter(obj, model), None


# Request keys to_anthropic_request translates; the others pass through as they are.
_TRANSLATED = frozenset(
    {"messages", "tools", "tool_choice", "parallel_tool_calls", "stop", "max_completion_tokens"}
)
_TOOL_ID = re.compile(r"[^a-zA-Z0-9_-]")


def _tool_id(raw: Any) -> str:
    # Anthropic ids must match [a-zA-Z0-9_-]+; other providers' ids (e.g. "functions.Read:0")
    # are rewritten the same way in the tool_use and its tool_result, so they still pair up.
    return _TOOL_ID.sub("_", str(raw or "")) or "call"


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text") or "")
            for p in content
            if isinstance(p, str) or isinstance(p, Mapping)
        )
    return str(content)


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        value = None
    # tool_use.input must be an object: unparsable arguments are kept, not dropped, so the model
    # sees what it sent (the tool already answered it with an error).
    return value if isinstance(value, dict) else {"_unparsed_arguments": arguments}


def _is_error(content: str) -> bool:
    # The whole history is re-sent on every call: parse only what may be an error envelope.
    if '"error"' not in content:
        return False
    try:
        envelope = json.loads(content)
    except ValueError:
        return False
    return isinstance(envelope, dict) and envelope.get("status") == "error"


def _anthropic_tool(tool: Any) -> dict[str, Any]:
    if isinstance(tool, Mapping) and tool.get("type") == "function":
        func = tool.get("function") or {}
        out: dict[str, Any] = {
            "name": func.get("name"),
            "input_schema": func.get("parameters") or {"type": "object", "properties": {}},
        }
        if func.get("description"):
            out["description"] = func["description"]
        return out
    if isinstance(tool, Mapping):
        return dict(tool)  # already an Anthropic tool
    raise TypeError(f"request['tools'] items must be dicts, got {type(tool).__qualname__}")


def _anthropic_tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        mapped = {"auto": "auto", "none": "none", "required": "any", "any": "any"}.get(choice)
        if mapped is None:
            raise ValueError(
                f"request['tool_choice'] must be auto, none, required or a function choice, "
                f"got {choice!r}"
            )
        return {"type": mapped}
    if isinstance(choice, Mapping):
        if choice.get("type") == "function":
            return {"type": "tool", "name": (choice.get("function") or {}).get("name")}
        return dict(choice)
    raise ValueError(f"request['tool_choice'] must be a str or a dict, got {choice!r}")


_EPHEMERAL = {"type": "ephemeral"}


def to_anthropic_request(request: Mapping[str, Any], *, cache: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for a chat-completions ``request``; with
    ``cache``, the system prompt and the last message's last block carry prompt-cache
    breakpoints."""
    out = {k: v for k, v in request.items() if k not in _TRANSLATED}
    if request.get("max_completion_tokens") is not None:
        out["max_tokens"] = request["max_completion_tokens"]
    stop = request.get("stop")
    if stop is not None:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)

    system: list[str] = []
    messages: list[dict[str, Any]] = []
    used_tools: dict[str, None] = {}

    def user_blocks() -> list[dict[str, Any]]:
        # Tool results and any text after them share one user turn (the API wants turns to
        # alternate, and the results of parallel calls in one message, in call order).
        if messages and messages[-1]["role"] == "user":
            return messages[-1]["content"]  # type: ignore[no-any-return]
        blocks: list[dict[str, Any]] = []
        messages.append({"role": "user", "content": blocks})
        return blocks

    for i, m in enumerate(request.get("messages") or []):
        if not isinstance(m, Mapping):
            raise TypeError(f"request['messages'][{i}] must be a dict, got {type(m).__qualname__}")
        role = m.get("role")
        if role in ("system", "developer"):
            text = _text(m.get("content"))
            if text:
                system.append(text)
        elif role == "user":
            text = _text(m.get("content"))
            if text:
                user_blocks().append({"type": "text", "text": text})
        elif role == "tool":
            content = _text(m.get("content"))
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": _tool_id(m.get("tool_call_id")),
                "content": content,
            }
            if _is_error(content):
                block["is_error"] = True
            user_blocks().append(block)
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = _text(m.get("content"))
            if text:
                blocks.append({"type": "text", "text": text})
            for call in m.get("tool_calls") or []:
                func = call.get("function") or call
                name = func.get("name")
                used_tools[name] = None
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": _tool_id(call.get("id")),
                        "name": name,
                        "input": _tool_input(func.get("arguments")),
                    }
                )
            # An empty assistant turn says nothing, and the API rejects empty content.
            if blocks:
                messages.append({"role": "assistant", "content": blocks})
        else:
            raise ValueError(
                f"request['messages'][{i}]['role'] must be system, developer, user, assistant "
                f"or tool, got {role!r}"
            )
    if system:
        text = "\n\n".join(system)
        out["system"] = (
            [{"type": "text", "text": text, "cache_control": _EPHEMERAL}] if cache else text
        )
    if cache and messages and messages[-1]["content"]:
        # The history so far is the next call's prefix: mark its end so that call reads it.
        messages[-1]["content"][-1] = {**messages[-1]["content"][-1], "cache_control": _EPHEMERAL}
    out["messages"] = messages

    tools = [_anthropic_tool(t) for t in request.get("tools") or []]
    choice = _anthropic_tool_choice(request.get("tool_choice"))
    if not tools and used_tools:
        # The wrap-up call offers no tools, but a history with tool_use blocks must declare
        # them: declare the ones used, and forbid calling them.
        tools = [
            {"name": n, "input_schema": {"type": "object", "properties": {}}} for n in used_tools
        ]
        choice = {"type": "none"}
    if tools:
        out["tools"] = tools
        if request.get("parallel_tool_calls") is False and (choice or {}).get("type") != "none":
            choice = {**(choice or {"type": "auto"}), "disable_parallel_tool_use": True}
        if choice is not None:
            out["tool_choice"] = choice
    return out

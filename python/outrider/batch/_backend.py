"""Backends as specs: an import path plus settings, rebuilt wherever a task runs.

A model callable cannot cross a process boundary (a client holds sockets, a closure holds
anything), and a key must not travel in a task: a :class:`BackendSpec` names a factory
(``"module:attribute"``), its model, base URL and settings, and the NAME of the environment
variable holding the key, which is read on the worker when the backend is built.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from outrider._core import _register_secret
from outrider.exceptions import ConfigError

__all__ = ["BackendSpec"]

_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_KEYS = frozenset({"api_key", "key", "token", "auth_token", "password", "secret"})

OFFLINE = "outrider:OfflineScout"
BUILTIN_HTTP = "outrider:OpenAICompatible"
_SDK_ADAPTERS = {
    "outrider.adapters:openai": "openai",
    "outrider.adapters:anthropic": "anthropic",
    "outrider.adapters:litellm": "litellm",
}
# Client constructor options of the SDK adapters (the rest are the adapter's call settings).
_CLIENT_OPTIONS = frozenset(
    {"timeout", "max_retries", "default_headers", "organization", "project"}
)


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """How to build a batch's model on any worker.

    ``factory`` is ``"module:attribute"``. Known factories: ``"outrider:OfflineScout"`` (no
    model), ``"outrider:OpenAICompatible"`` (the built-in HTTP client; ``model``, ``base_url``,
    ``settings`` as its keyword arguments), and ``"outrider.adapters:openai"`` /
    ``"outrider.adapters:anthropic"`` / ``"outrider.adapters:litellm"`` (the SDK client is built
    from ``base_url``, the key and the client options ``timeout``/``max_retries``/...; the other
    ``settings`` are the adapter's). Any other factory is called as
    ``factory(model=..., base_url=..., api_key=..., **settings)`` (the ``None`` ones left out)
    and must return a model callable, an :class:`outrider.OpenAICompatible` or an
    :class:`outrider.OfflineScout`.

    ``api_key_env`` is the NAME of the environment variable holding the key, read where the
    backend is built; a key itself is refused. ``provider`` names the rate limiter the backend's
    calls share (default: the base URL's host, else the factory's name).
    """

    factory: str
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    provider: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.factory, str) or not _FACTORY.match(self.factory):
            raise ConfigError(
                f"BackendSpec factory: must be an import path 'module:attribute' (e.g. "
                f"'outrider.adapters:openai'), got {self.factory!r}"
            )
        for name in ("model", "base_url", "provider"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"BackendSpec {name}: must be a non-empty str, got {value!r}")
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not _ENV_NAME.match(self.api_key_env)
        ):
            raise ConfigError(
                "BackendSpec api_key_env: must be the NAME of an environment variable (letters, "
                f"digits, _), got {self.api_key_env!r}"
            )
        if not isinstance(self.settings, Mapping):
            raise ConfigError(f"BackendSpec settings: must be a dict, got {self.settings!r}")
        secret = sorted(k for k in self.settings if str(k).lower() in _SECRET_KEYS)
        if secret:
            raise ConfigError(
                f"BackendSpec settings: {', '.join(map(repr, secret))} must not be in a spec (a "
                "spec is hashed, logged and sent to workers); put the key in an environment "
                "variable and pass its name as api_key_env"
            )
        try:
            json.dumps(self.settings, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"BackendSpec settings: must be JSON data ({e})") from e
        object.__setattr__(self, "settings", dict(self.settings))
        if self.factory == OFFLINE and (self.model or self.base_url or self.api_key_env):
            raise ConfigError(
                "BackendSpec: the offline scout takes no model, base_url or api_key_env"
            )

    # -- constructors ----------------------------------------------------------------------

    @classmethod
    def offline(cls) -> BackendSpec:
        """The offline scout (model-free)."""
        return cls(OFFLINE)

    @classmethod
    def openai_compatible(
        cls,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str | None = "LLM_API_KEY",
        provider: str | None = None,
        **settings: Any,
    ) -> BackendSpec:
        """outrider's built-in HTTP client (``timeout``, ``max_retries``, ``temperature``,
        ``max_tokens``, ``headers`` as settings)."""
        return cls(BUILTIN_HTTP, model, base_url, api_key_env, settings, provider)

    @classmethod
    def openai(
        cls,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        provider: str | None = None,
        **settings: Any,
    ) -> BackendSpec:
        """``outrider.adapters.openai`` over an ``openai.OpenAI`` client (``pip install
        'outrider[openai]'``)."""
        return cls("outrider.adapters:openai", model, base_url, api_key_env, settings, provider)

    @classmethod
    def from_env(cls, prefix: str = "LLM") -> BackendSpec | None:
        """The built-in client as ``{prefix}_MODEL_ID`` / ``_BASE_URL`` say (the key stays in
        ``{prefix}_API_KEY``), with ``LLM_TIMEOUT``, ``LLM_MAX_RETRIES`` and
        ``{prefix}_TEMPERATURE`` as ``outrider explore`` reads them; None when none of
        ``{prefix}_MODEL_ID`` / ``_API_KEY`` / ``_BASE_URL`` is set. A key or base URL without
        a model id is a ConfigError naming ``{prefix}_MODEL_ID``, never a silent offline
        scout."""
        model = os.environ.get(f"{prefix}_MODEL_ID", "").strip()
        if not model:
            given = [
                f"{prefix}_{part}"
                for part in ("API_KEY", "BASE_URL")
                if os.environ.get(f"{prefix}_{part}", "").strip()
            ]
            if given:
                raise ConfigError(
                    f"{prefix}_MODEL_ID: not set, but {' and '.join(given)} "
                    f"{'is' if len(given) == 1 else 'are'} set: set {prefix}_MODEL_ID to the "
                    "model to call (or unset them to run the offline scout)"
                )
            return None
        settings: dict[str, Any] = {}
        for name, key, kind in (
            ("LLM_TIMEOUT", "timeout", float),
            ("LLM_MAX_RETRIES", "max_retries", int),
            (f"{prefix}_TEMPERATURE", "temperature", float),
        ):
            raw = os.environ.get(name, "").strip()
            if not raw:
                continue
            try:
                settings[key] = kind(raw)
            except ValueError:
                raise ConfigError(
                    f"{name}: must be {'an integer' if kind is int else 'a number'}, got {raw!r}"
                ) from None
        return cls(
            BUILTIN_HTTP,
            model,
            os.environ.get(f"{prefix}_BASE_URL") or None,
            f"{prefix}_API_KEY",
            settings,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BackendSpec:
        if not isinstance(data, Mapping):
            raise ConfigError(f"BackendSpec: must be a dict, got {data!r}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(
                f"BackendSpec: unknown key(s) {', '.join(map(repr, unknown))}; a spec has "
                f"{', '.join(sorted(fields))}"
            )
        if "factory" not in data:
            raise ConfigError("BackendSpec: missing 'factory'")
        return cls(**{k: v for k, v in data.items() if v is not None or k == "factory"})

    def to_dict(self) -> dict[str, Any]:
        return {
            "factory": self.factory,
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "settings": dict(self.settings),
            "provider": self.provider,
        }

    @property
    def provider_name(self) -> str:
        """The rate limiter this backend's calls share."""
        if self.provider:
            return self.provider
        if self.base_url:
            netloc = urllib.parse.urlsplit(self.base_url).netloc
            if netloc:
                return netloc.rsplit("@", 1)[-1].lower()
        return self.factory.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lower()

    @property
    def is_offline(self) -> bool:
        return self.factory == OFFLINE

    # -- building ----------------------------------------------------------------------------

    def _key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"BackendSpec api_key_env: the environment variable {self.api_key_env!r} is not "
                f"set where this task runs (host {os.uname().nodename}); set it there (on Ray: "
                "runtime_env={'env_vars': ...} or the cluster's environment)"
            )
        # Registered before anything is built with it: a factory's error, a model error, a
        # trace or a manifest row that quotes it then shows [REDACTED] in this process.
        _register_secret(key)
        return key

    def build(self, *, rate_limited: bool = False) -> Any:
        """The model object this spec describes. ``rate_limited``: the batch paces the calls,
        so the SDK clients' own retries are off unless the settings name them."""
        import outrider

        if self.factory == OFFLINE:
            return outrider.OfflineScout()
        settings = dict(self.settings)
        key = self._key()
        if self.factory == BUILTIN_HTTP:
            if not self.model:
                raise ConfigError("BackendSpec model: outrider:OpenAICompatible needs a model")
            if rate_limited:
                settings.setdefault("max_retries", 0)
            return outrider.OpenAICompatible(self.model, self.base_url, key, **settings)
        sdk_name = _SDK_ADAPTERS.get(self.factory)
        if sdk_name is not None:
            return self._sdk_adapter(sdk_name, key, settings, rate_limited)
        module_name, _, attr = self.factory.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as e:
            raise ConfigError(
                f"BackendSpec factory: {self.factory!r} cannot be imported here ({e})"
            ) from e
        kwargs = {
            k: v
            for k, v in (("model", self.model), ("base_url", self.base_url), ("api_key", key))
            if v is not None
        }
        model = target(**kwargs, **settings)
        if not callable(model) and not isinstance(model, outrider.OfflineScout):
            raise ConfigError(
                f"BackendSpec factory: {self.factory!r} returned {type(model).__qualname__}, not "
                "a model callable"
            )
        return model

    def _sdk_adapter(
        self, sdk_name: str, key: str | None, settings: dict[str, Any], rate_limited: bool
    ) -> Any:
        from outrider import adapters

        if not self.model:
            raise ConfigError(f"BackendSpec model: {self.factory} needs a model")
        if sdk_name == "litellm":
            extra: dict[str, Any] = {"api_base": self.base_url, "api_key": key}
            if rate_limited:
                extra["num_retries"] = settings.pop("num_retries", 0)
            settings.update({k: v for k, v in extra.items() if v is not None})
            return adapters.litellm(self.model, **settings)
        sdk = adapters._require(sdk_name, sdk_name)
        client_options = {k: settings.pop(k) for k in list(settings) if k in _CLIENT_OPTIONS}
        if rate_limited:
            client_options.setdefault("max_retries", 0)
        if key is not None:
            client_options["api_key"] = key
        if self.base_url is not None:
            client_options["base_url"] = self.base_url
        client_class = sdk.OpenAI if sdk_name == "openai" else sdk.Anthropic
        client = client_class(**client_options)
        adapter = adapters.openai if sdk_name == "openai" else adapters.anthropic
        return adapter(client, self.model, **settings)


def as_spec(value: BackendSpec | Mapping[str, Any] | str | None, what: str) -> BackendSpec | None:
    """``backend=`` as given: a spec, its dict, ``"offline"``, an import path, or None."""
    if value is None or isinstance(value, BackendSpec):
        return value
    if isinstance(value, str):
        if value == "offline":
            return BackendSpec.offline()
        if _FACTORY.match(value):
            return BackendSpec(value)
        raise ConfigError(
            f"{what}: must be a BackendSpec, its dict, 'offline' or an import path "
            f"'module:attribute', got {value!r}"
        )
    if isinstance(value, Mapping):
        try:
            return BackendSpec.from_dict(value)
        except ConfigError as e:
            raise ConfigError(f"{what}: {e}") from None
    raise ConfigError(
        f"{what}: must be a BackendSpec (a model callable cannot cross to a worker: name its "
        f"factory instead), got {type(value).__qualname__}"
    )

"""The exceptions outrider raises. Every one derives from :class:`OutriderError`."""

from __future__ import annotations

import copy
import re
from typing import Any, TypedDict


class ErrorDetails(TypedDict):
    """One contract violation, shaped like a pydantic error."""

    type: str
    """A stable machine name, e.g. ``"summary_missing"`` or ``"string_array"``."""
    loc: tuple[str | int, ...]
    """Where in the answer: keys and list indexes, ``()`` for the whole answer."""
    msg: str
    """What was wrong, in words."""
    input: Any
    """The offending value."""


class OutriderError(Exception):
    """Base class of every exception raised by outrider."""


class ProfileError(OutriderError, ValueError):
    """A :class:`~outrider.RuntimeProfile` failed validation."""


class ConfigError(OutriderError, ValueError):
    """A setting or argument has a value outside what is accepted.

    The message starts with the field's name: ``max_concurrency: must be at least 1, got 0``.
    """


class ArgumentTypeError(OutriderError, TypeError):
    """A setting or argument has the wrong type (``trace_dir: must be ..., got int``)."""


class PathError(OutriderError, ValueError):
    """A root or path cannot be used (missing, not a directory, outside the root, ...)."""


class TraceDirError(OutriderError, ValueError):
    """A trace directory cannot be used (inside the explored root, or not creatable)."""


class TraceError(OutriderError, ValueError):
    """A trace file cannot be read: missing, unreadable, empty, or a line that is not an event.

    ``path`` is the file; ``line`` the 1-based line at fault, when one is.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path, self.line))


class LaunchError(OutriderError, ValueError):
    """The launcher refused a request before starting a child (unknown profile or model choice),
    or a blocking launch that would stall the event loop its async model runs on."""


class ResultError(OutriderError, ValueError):
    """A launch result is not of the kind asked for: ``launch.explore`` on a failed child (no
    result) or on a verification verdict. Not an ``AttributeError``, so ``getattr(r, "explore",
    None)`` does not hide a failed child."""


class ModelError(OutriderError, RuntimeError):
    """A direct model call failed. ``kind`` classifies it (``auth``, ``rate_limit``, ...)."""

    def __init__(self, message: str, kind: str = "unknown", status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        """``auth``, ``rate_limit``, ``context_too_long``, ``server``, ``timeout``, ..."""
        self.status = status
        """The HTTP status, when there was one."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.kind, self.status))


class InternalError(OutriderError, RuntimeError):
    """Something inside outrider failed that the caller could not have caused. Please report it."""


class ContractError(OutriderError, ValueError):
    """A child's answer does not meet its result contract.

    ``str(err)`` is the first violation's message (the reference system's wording, which the
    completion gate feeds back to the model); :meth:`errors` lists every violation.
    """

    def __init__(self, message: str, errors: list[ErrorDetails], contract: str) -> None:
        super().__init__(message)
        # ``loc`` is a tuple, as in pydantic (the core sends a list).
        self._errors: list[ErrorDetails] = [{**e, "loc": tuple(e["loc"])} for e in errors]
        self.contract = contract
        """Which contract was checked: ``"ExploreResult"`` or ``"VerificationResult"``."""

    def errors(self) -> list[ErrorDetails]:
        """Every violation, in the order the contract checks them (a fresh copy)."""
        return copy.deepcopy(self._errors)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self._errors, self.contract))

    def __repr__(self) -> str:
        return (
            f"ContractError({str(self)!r}, contract={self.contract!r}, errors={len(self._errors)})"
        )


__all__ = [
    "ArgumentTypeError",
    "ConfigError",
    "ContractError",
    "ErrorDetails",
    "InternalError",
    "LaunchError",
    "MissingExtraError",
    "ModelError",
    "OutriderError",
    "PathError",
    "ProfileError",
    "ResultError",
    "TraceDirError",
    "TraceError",
]


def install_hint(extra: str) -> str:
    """How to install what outrider's ``extra`` holds: the packages themselves (outrider may
    not come from a package index), and the extra from a checkout."""
    import importlib.metadata
    import shlex

    marker = re.compile(r";\s*extra\s*==\s*['\"]" + re.escape(extra) + r"['\"]\s*$")
    try:
        requires = importlib.metadata.requires("outrider") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    wanted = [marker.split(r)[0].strip() for r in requires if marker.search(r)]
    packages = " ".join(shlex.quote(r) for r in wanted)
    checkout = f"from an outrider checkout: pip install '.[{extra}]'"
    if not packages:
        return f"pip install the '{extra}' extra ({checkout})"
    return f"pip install {packages} (outrider's '{extra}' extra; {checkout})"


class MissingExtraError(ConfigError, ImportError):
    """An optional feature needs a package that is not installed. The message says how to
    install it (:func:`install_hint`: the packages, or the extra from a checkout, ``pip install
    '.[langchain]'``); ``extra`` names the extra.

    Every "install the X extra" error outrider raises is this one type (build it with
    :meth:`needs`). It is an ``ImportError`` (what a missing package raised before) and a
    :class:`ConfigError` (what ``launch_many(progress=True)`` without tqdm raised), so an
    ``except`` clause written for either still catches it."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra
        """The outrider extra that installs what is missing."""

    @classmethod
    def needs(
        cls, feature: str, package: str, extra: str, error: BaseException | None = None
    ) -> MissingExtraError:
        """The error for ``feature`` (``"TaskTool.as_langchain_tool()"``) without ``package``,
        in the one message format: what needs which package, why it could not be imported,
        and :func:`install_hint`'s command."""
        why = f"could not be imported ({error})" if error is not None else "is not installed"
        return cls(
            f"{feature} needs the {package} package, which {why}; install it with: "
            f"{install_hint(extra)}",
            extra,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.extra))

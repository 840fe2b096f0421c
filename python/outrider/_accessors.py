"""The Python bodies of ``SubagentLaunchResult.explore``, ``.verification`` and ``.output(cls)``
(declared on the native class in ``src/py/launcher.rs`` and in ``_core.pyi``).

``launch_result.result`` is ``ExploreResult | VerificationResult | None``, or the caller's own
type with an ``output_schema``: ``.explore``, ``.verification`` and ``.output(cls)`` narrow it
for the type checker and say plainly why when it is not that type.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from outrider._core import ExploreResult, SubagentLaunchResult, VerificationResult
from outrider.exceptions import ResultError

_R = TypeVar("_R", ExploreResult, VerificationResult)
_T = TypeVar("_T")


def _narrow(launch: SubagentLaunchResult, kind: type[_R], accessor: str) -> _R:
    result: Any = launch.result
    if isinstance(result, kind):
        return result
    if result is None:
        cause = launch.failure_reason or launch.terminal_reason
        raise ResultError(
            f"{accessor}: the {launch.profile_name!r} child has no result (status "
            f"{launch.status!r}, {cause}: {launch.error or 'no error message'})"
        )
    other = "verification" if isinstance(result, VerificationResult) else "explore"
    if launch.output_schema is not None:
        other = f"result or .output(...) (it follows the output_schema {launch.output_schema!r})"
    raise ResultError(
        f"{accessor}: the {launch.profile_name!r} child returned a {type(result).__name__}, not "
        f"{'an' if kind.__name__[:1] in 'AEIOU' else 'a'} {kind.__name__}; use .{other}"
    )


def explore(self: SubagentLaunchResult) -> ExploreResult:
    return _narrow(self, ExploreResult, "explore")


def verification(self: SubagentLaunchResult) -> VerificationResult:
    return _narrow(self, VerificationResult, "verification")


def output(self: SubagentLaunchResult, cls: type[_T]) -> _T:
    result: Any = self.result
    if isinstance(result, cls):
        return result
    if result is None:
        cause = self.failure_reason or self.terminal_reason
        raise ResultError(
            f"output: the {self.profile_name!r} child has no result (status {self.status!r}, "
            f"{cause}: {self.error or 'no error message'})"
        )
    # A result rebuilt from to_dict() or a pickle, or a JSON-schema child's dict, holds the
    # object as data: a pydantic class validates it (its own rules, as at the launch).
    validate = getattr(cls, "model_validate", None)
    if isinstance(result, dict) and callable(validate):
        try:
            return cast(_T, validate(result))
        except Exception as error:  # pydantic.ValidationError, or the class's own error
            raise ResultError(
                f"output: the {self.profile_name!r} child's result does not validate as "
                f"{cls.__name__}: {error}"
            ) from error
    article = "an" if cls.__name__[:1].lower() in "aeiou" else "a"
    raise ResultError(
        f"output: the {self.profile_name!r} child returned a {type(result).__name__}, not "
        f"{article} {cls.__name__}"
    )

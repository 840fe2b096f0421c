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
    if self.schema_errors:
        raise ResultError(
            f"output: the {self.profile_name!r} child's answer did not fit "
            f"{self.output_schema or 'its output_schema'} (status {self.status!r}): "
            f"{'; '.join(self.schema_errors)}; .result holds the object as it was written"
        )
    # A result rebuilt from to_dict() or a pickle, or a JSON-schema child's dict, holds the
    # object as data: a pydantic class validates it (its own rules, as at the launch). The
    # evidence the gate checked is kept beside it: an object whose validation now makes other
    # evidence of it is refused, never handed back unchecked.
    validate = getattr(cls, "model_validate", None)
    if isinstance(result, dict) and callable(validate):
        try:
            value = validate(result)
        except Exception as error:  # pydantic.ValidationError, or the class's own error
            raise ResultError(
                f"output: the {self.profile_name!r} child's result does not validate as "
                f"{cls.__name__}: {error}"
            ) from error
        evidence = getattr(value, "evidence", None)
        if "evidence" in result and evidence != self.evidence:
            raise ResultError(
                f"output: validating the {self.profile_name!r} child's result as {cls.__name__} "
                f"changed its evidence to {evidence!r}, which the gate never checked (it checked "
                f"{self.evidence!r})"
            )
        return cast(_T, value)
    article = "an" if cls.__name__[:1].lower() in "aeiou" else "a"
    raise ResultError(
        f"output: the {self.profile_name!r} child returned a {type(result).__name__}, not "
        f"{article} {cls.__name__}"
    )
